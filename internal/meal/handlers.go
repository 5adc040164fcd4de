// Package meal owns meals: the meals table and its sort keys, the decimal
// numbers, the month and day-window queries, and the diary pages.
package meal

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"ndiro/internal/user"
	"ndiro/internal/web"
	"time"
)

// MaxFormBytes caps a meal form's request body: a phone photo plus fields.
const MaxFormBytes = 25 << 20

// Handler serves the diary pages.
type Handler struct {
	store *Store
	users *user.Store
	pages *web.Pages
	now   func() time.Time
	log   *slog.Logger
}

// NewHandler returns the diary pages.
func NewHandler(store *Store, users *user.Store, pages *web.Pages, now func() time.Time, log *slog.Logger) *Handler {
	return &Handler{store: store, users: users, pages: pages, now: now, log: log}
}

type listPage struct {
	web.Base
	Heading    string
	Days       []Day
	Count      int
	Prev, Next string // links to the neighbouring month or window
	PrevLabel  string
	NextLabel  string
	Month      string // "2026-09" on month pages, for the add link
	From, To   string // the window, on window pages
	IsWindow   bool
}

// List is GET /meals: with ?from=&to= the day window (inclusive, at most 93
// days), otherwise the month ?month=2026-09, by default the current month in
// the owner's time zone. Each is ONE Query.
func (h *Handler) List(w http.ResponseWriter, r *http.Request) error {
	u := user.FromContext(r.Context())
	q := r.URL.Query()
	if q.Has("from") || q.Has("to") {
		return h.window(w, r, u, q.Get("from"), q.Get("to"))
	}
	m := DateOf(h.now().In(u.Location())).Month()
	if s := q.Get("month"); s != "" {
		var err error
		if m, err = ParseMonth(s); err != nil {
			return web.BadRequest("Month must look like 2026-09.")
		}
	}
	meals, err := h.store.Month(r.Context(), u.ID, m)
	if err != nil {
		return err
	}
	return h.pages.Render(w, r, http.StatusOK, "meal/list", &listPage{
		Base:      web.Base{Title: m.Time().Format("January 2006")},
		Heading:   m.Time().Format("January 2006"),
		Days:      GroupByDay(meals),
		Count:     len(meals),
		Prev:      "/meals?month=" + m.Prev().String(),
		PrevLabel: m.Prev().Time().Format("Jan 2006"),
		Next:      "/meals?month=" + m.Next().String(),
		NextLabel: m.Next().Time().Format("Jan 2006"),
		Month:     m.String(),
	})
}

func (h *Handler) window(w http.ResponseWriter, r *http.Request, u *user.User, fromS, toS string) error {
	from, err := ParseDate(fromS)
	if err != nil {
		return web.BadRequest("The window's start (from) must be a real day written like 2026-08-28.")
	}
	to, err := ParseDate(toS)
	if err != nil {
		return web.BadRequest("The window's end (to) must be a real day written like 2026-09-03.")
	}
	meals, err := h.store.Window(r.Context(), u.ID, from, to)
	switch {
	case errors.Is(err, ErrBadRange):
		return web.BadRequest("The window must start on or before the day it ends (from ≤ to).")
	case errors.Is(err, ErrLongRange):
		return web.BadRequest(fmt.Sprintf("A window may span at most %d days; this one spans %d. Pick a shorter range or browse by month.", MaxWindowDays, from.DaysUntil(to)+1))
	case err != nil:
		return err
	}
	n := from.DaysUntil(to) + 1
	link := func(a, b Date) string { return "/meals?from=" + a.String() + "&to=" + b.String() }
	heading := from.Time().Format("2 Jan 2006") + " – " + to.Time().Format("2 Jan 2006")
	return h.pages.Render(w, r, http.StatusOK, "meal/list", &listPage{
		Base:      web.Base{Title: heading},
		Heading:   heading,
		Days:      GroupByDay(meals),
		Count:     len(meals),
		Prev:      link(from.AddDays(-n), to.AddDays(-n)),
		PrevLabel: fmt.Sprintf("Previous %d days", n),
		Next:      link(from.AddDays(n), to.AddDays(n)),
		NextLabel: fmt.Sprintf("Next %d days", n),
		From:      from.String(),
		To:        to.String(),
		IsWindow:  true,
	})
}

type formPage struct {
	web.Base
	Form   Form
	Kinds  []Kind
	Edit   bool
	Action string
	// TZ is the zone the defaults were computed in; the page script sends
	// the device's zone when the account has none yet.
	TZ     string
	AskTZ  bool
	MealID string
	// Version is the meal version the edit form was opened on.
	Version int64
	// Fresh marks an untouched new form, whose date and time the page
	// script may replace with the device's clock (never the owner's input).
	Fresh bool
}

func (h *Handler) renderForm(w http.ResponseWriter, r *http.Request, status int, p *formPage) error {
	p.Kinds = Kinds
	if p.Title == "" {
		p.Title = "Add a meal"
		if p.Edit {
			p.Title = "Edit meal"
		}
	}
	return h.pages.Render(w, r, status, "meal/form", p)
}

// New shows the add-meal form, its date and time set to now in the owner's
// time zone; a small script replaces them with the device's clock.
func (h *Handler) New(w http.ResponseWriter, r *http.Request) error {
	u := user.FromContext(r.Context())
	f := Defaults(h.now().In(u.Location()))
	if d, err := ParseDate(r.URL.Query().Get("date")); err == nil {
		f.Date = d.String()
	}
	return h.renderForm(w, r, http.StatusOK, &formPage{Form: f, Action: "/meals", TZ: u.Location().String(), AskTZ: u.TimeZone == "", Fresh: true})
}

// parseForm reads a (multipart or urlencoded) meal form with the body
// capped at MaxFormBytes, and always removes multipart temp files.
func parseForm(w http.ResponseWriter, r *http.Request) (cleanup func(), err error) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	cleanup = func() {
		if r.MultipartForm != nil {
			r.MultipartForm.RemoveAll()
		}
	}
	err = r.ParseMultipartForm(8 << 20)
	if errors.Is(err, http.ErrNotMultipart) {
		err = r.ParseForm()
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return cleanup, &web.Error{Status: http.StatusRequestEntityTooLarge, Title: "Too large", Msg: fmt.Sprintf("The form was larger than %d MB. Choose a smaller photo.", MaxFormBytes>>20)}
	case err != nil:
		return cleanup, &web.Error{Status: http.StatusBadRequest, Msg: "The form could not be read. Please try again.", Err: err}
	}
	return cleanup, nil
}

// Create logs a new meal and shows its month.
func (h *Handler) Create(w http.ResponseWriter, r *http.Request) error {
	cleanup, err := parseForm(w, r)
	defer cleanup()
	if err != nil {
		return err
	}
	u := user.FromContext(r.Context())
	f := FormFrom(r.Form)
	m, ok := f.Validate(false)
	if !ok {
		return h.renderForm(w, r, http.StatusUnprocessableEntity, &formPage{Form: f, Action: "/meals", TZ: u.Location().String(), AskTZ: u.TimeZone == ""})
	}
	now := h.now().UTC()
	m.UserID, m.CreatedAt, m.UpdatedAt = u.ID, now, now
	if err := h.store.Create(r.Context(), &m); err != nil {
		return err
	}
	h.adoptTimeZone(r, u)
	web.Redirect(w, r, "/meals?month="+m.Date[:7]+"#meal-"+m.ID)
	return nil
}

// adoptTimeZone saves the device's time zone (sent by the page script) as
// the account's, if the account has none yet: "default from the browser".
func (h *Handler) adoptTimeZone(r *http.Request, u *user.User) {
	tz := r.Form.Get("tz")
	if u.TimeZone != "" || !user.ValidTimeZone(tz) {
		return
	}
	if err := h.users.SetTimeZone(r.Context(), u.ID, tz); err != nil {
		h.log.Warn("could not save time zone", "user_id", u.ID, "err", err)
	}
}

// mealFromURL loads the signed-in owner's meal named by the {date} and
// {meal_id} URL parameters. Malformed parameters, missing meals and other
// people's meals are all the same 404.
func (h *Handler) mealFromURL(r *http.Request) (*Meal, Date, string, error) {
	d, err1 := ParseDate(chi.URLParam(r, "date"))
	id := chi.URLParam(r, "meal_id")
	_, err2 := ParseID(id)
	if err1 != nil || err2 != nil {
		return nil, Date{}, "", errNoMeal
	}
	m, err := h.store.Get(r.Context(), user.ID(r.Context()), d, id)
	if errors.Is(err, ErrNotFound) {
		return nil, d, id, errNoMeal
	}
	return m, d, id, err
}

var errNoMeal = &web.Error{Status: http.StatusNotFound, Title: "Meal not found", Msg: "There is no such meal in your diary. It may have been deleted."}

// Edit shows the edit form; date and time are shown but cannot change.
func (h *Handler) Edit(w http.ResponseWriter, r *http.Request) error {
	m, _, _, err := h.mealFromURL(r)
	if err != nil {
		return err
	}
	return h.renderForm(w, r, http.StatusOK, &formPage{Form: FormOf(m), Edit: true, Action: editAction(m), MealID: m.ID, Version: m.Version})
}

func editAction(m *Meal) string { return "/meals/" + m.Date + "/" + m.ID }

// Update saves the edit form. The write is conditional on the meal still
// existing at the version the form was opened on: editing a meal deleted
// meanwhile, or changed in another window, says so and writes nothing.
func (h *Handler) Update(w http.ResponseWriter, r *http.Request) error {
	cleanup, err := parseForm(w, r)
	defer cleanup()
	if err != nil {
		return err
	}
	cur, _, _, err := h.mealFromURL(r)
	if err != nil {
		return err
	}
	f := FormFrom(r.Form)
	edit, ok := f.Validate(true)
	f.Date, f.Time = cur.Date, cur.HHMM()
	page := &formPage{Form: f, Edit: true, Action: editAction(cur), MealID: cur.ID, Version: cur.Version}
	if !ok {
		return h.renderForm(w, r, http.StatusUnprocessableEntity, page)
	}
	if v := r.Form.Get("version"); v != "" && v != strconv.FormatInt(cur.Version, 10) {
		return errChanged
	}
	cur.Kind, cur.Notes = edit.Kind, edit.Notes
	cur.Kcal, cur.ProteinG, cur.CarbsG, cur.FatG = edit.Kcal, edit.ProteinG, edit.CarbsG, edit.FatG
	cur.Hunger, cur.Fullness = edit.Hunger, edit.Fullness
	cur.UpdatedAt = h.now().UTC()
	err = h.store.Update(r.Context(), cur)
	switch {
	case errors.Is(err, ErrNotFound):
		return &web.Error{Status: http.StatusNotFound, Title: "Meal not found", Msg: "This meal no longer exists (it may have been deleted in another window), so nothing was saved."}
	case errors.Is(err, ErrConflict):
		return errChanged
	case err != nil:
		return err
	}
	web.Redirect(w, r, "/meals?month="+cur.Date[:7]+"#meal-"+cur.ID)
	return nil
}

var errChanged = &web.Error{Status: http.StatusConflict, Title: "Meal changed meanwhile", Msg: "This meal was changed in another window after you opened it, so nothing was saved. Open it again to see the latest version."}

// Delete removes a meal and shows its month.
func (h *Handler) Delete(w http.ResponseWriter, r *http.Request) error {
	d, err1 := ParseDate(chi.URLParam(r, "date"))
	id := chi.URLParam(r, "meal_id")
	_, err2 := ParseID(id)
	if err1 != nil || err2 != nil {
		return errNoMeal
	}
	if _, err := h.store.Delete(r.Context(), user.ID(r.Context()), d, id); errors.Is(err, ErrNotFound) {
		return errNoMeal
	} else if err != nil {
		return err
	}
	web.Redirect(w, r, "/meals?month="+d.Month().String())
	return nil
}
