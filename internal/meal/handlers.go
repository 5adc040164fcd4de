// Package meal owns meals: the meals table and its sort keys, the decimal
// numbers, the month and day-window queries, and the diary pages.
package meal

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"ndiro/internal/photo"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// MaxFormBytes caps a meal form's request body: a phone photo plus fields.
const MaxFormBytes = 25 << 20

// formMemory is how much of a multipart form is kept in memory; larger
// parts (photos) are spooled to temp files (os.TempDir).
const formMemory = 256 << 10

// Handler serves the diary pages and the owner's photos.
type Handler struct {
	store    *Store
	users    *user.Store
	photos   *photo.Store
	server   *photo.Server
	pipeline *photo.Pipeline
	pages    *web.Pages
	now      func() time.Time
	log      *slog.Logger
}

// Deps are the Handler's collaborators.
type Deps struct {
	Store    *Store
	Users    *user.Store
	Photos   *photo.Store
	Server   *photo.Server
	Pipeline *photo.Pipeline
	Pages    *web.Pages
	Now      func() time.Time
	Log      *slog.Logger
}

// NewHandler returns the diary pages.
func NewHandler(d Deps) *Handler {
	return &Handler{store: d.Store, users: d.Users, photos: d.Photos, server: d.Server, pipeline: d.Pipeline, pages: d.Pages, now: d.Now, log: d.Log}
}

type listPage struct {
	web.Base
	Heading    string
	Days       []listDay
	Count      int
	Prev, Next string // links to the neighbouring month or window; "" at the ends
	PrevLabel  string
	NextLabel  string
	From, To   string // the window, on window pages
	IsWindow   bool
	// WindowError explains why the requested window was refused.
	WindowError string
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
			return web.BadRequest(fmt.Sprintf("Month must look like 2026-09, between %d and %d.", MinYear, MaxYear))
		}
	}
	meals, err := h.store.Month(r.Context(), u.ID, m)
	if err != nil {
		return err
	}
	p := &listPage{
		Base:    web.Base{Title: m.Time().Format("January 2006")},
		Heading: m.Time().Format("January 2006"),
		Days:    listDays(meals),
		Count:   len(meals),
	}
	if prev := m.Prev(); prev.InRange() {
		p.Prev, p.PrevLabel = "/meals?month="+prev.String(), prev.Time().Format("Jan 2006")
	}
	if next := m.Next(); next.InRange() {
		p.Next, p.NextLabel = "/meals?month="+next.String(), next.Time().Format("Jan 2006")
	}
	return h.pages.Render(w, r, http.StatusOK, "meal/list", p)
}

// window renders a day window, or, for a window it refuses, the same page
// with a 400, the message and the range form as typed.
func (h *Handler) window(w http.ResponseWriter, r *http.Request, u *user.User, fromS, toS string) error {
	refuse := func(msg string) error {
		return h.pages.Render(w, r, http.StatusBadRequest, "meal/list", &listPage{
			Base: web.Base{Title: "Pick a range of days"}, Heading: "Pick a range of days",
			From: fromS, To: toS, IsWindow: true, WindowError: msg,
		})
	}
	from, err := ParseDate(fromS)
	if err != nil {
		return refuse("The window's start (from) must be a real day written like 2026-08-28.")
	}
	to, err := ParseDate(toS)
	if err != nil {
		return refuse("The window's end (to) must be a real day written like 2026-09-03.")
	}
	meals, err := h.store.Window(r.Context(), u.ID, from, to)
	switch {
	case errors.Is(err, ErrBadRange):
		return refuse("The window must start on or before the day it ends (from ≤ to).")
	case errors.Is(err, ErrLongRange):
		return refuse(fmt.Sprintf("A window may span at most %d days; this one spans %d. Pick a shorter range or browse by month.", MaxWindowDays, from.DaysUntil(to)+1))
	case err != nil:
		return err
	}
	n := from.DaysUntil(to) + 1
	link := func(a, b Date) string { return "/meals?from=" + a.String() + "&to=" + b.String() }
	heading := from.Time().Format("2 Jan 2006") + " – " + to.Time().Format("2 Jan 2006")
	if n == 1 {
		heading = from.Time().Format("Monday 2 January 2006")
	}
	p := &listPage{
		Base:     web.Base{Title: heading},
		Heading:  heading,
		Days:     listDays(meals),
		Count:    len(meals),
		From:     from.String(),
		To:       to.String(),
		IsWindow: true,
	}
	if a := from.AddDays(-n); a.Time().Year() >= MinYear {
		p.Prev, p.PrevLabel = link(a, to.AddDays(-n)), fmt.Sprintf("%d days", n)
	}
	if b := to.AddDays(n); b.Time().Year() <= MaxYear {
		p.Next, p.NextLabel = link(from.AddDays(n), b), fmt.Sprintf("%d days", n)
	}
	return h.pages.Render(w, r, http.StatusOK, "meal/list", p)
}

type formPage struct {
	web.Base
	Form   Form
	Kinds  []Kind
	Edit   bool
	Action string
	// AskTZ: the account has no time zone yet, so the page script sends the
	// device's.
	AskTZ bool
	// Version is the meal version the edit form was opened on.
	Version int64
	// Meal is the meal being edited (its photo), nil on the add form.
	Meal *Meal
	// Taken, if set, is the photo's capture time to offer moving the meal to.
	Taken *time.Time
	// Fresh marks an untouched new form, whose time (and date, unless
	// FixedDate) the page script may replace with the device's clock, never
	// the owner's input.
	Fresh     bool
	FixedDate bool
	// PhotoLost says a valid photo came with a form that had to be
	// corrected: browsers cannot keep a chosen file, so it must be chosen
	// again.
	PhotoLost bool
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
	fixed := false
	if d, err := ParseDate(r.URL.Query().Get("date")); err == nil {
		f.Date, f.DefaultDate, fixed = d.String(), d.String(), true
	}
	return h.renderForm(w, r, http.StatusOK, &formPage{Form: f, Action: "/meals", AskTZ: u.TimeZone == "", Fresh: true, FixedDate: fixed})
}

// parseForm reads a (multipart or urlencoded) meal form with the body
// capped at MaxFormBytes, and always removes multipart temp files.
func parseForm(w http.ResponseWriter, r *http.Request) (cleanup func(), err error) {
	cleanup = func() {
		if r.MultipartForm != nil {
			r.MultipartForm.RemoveAll()
		}
	}
	tooLarge := &web.Error{Status: http.StatusRequestEntityTooLarge, Title: "Too large", Msg: fmt.Sprintf("The form was larger than %d MB. Choose a smaller photo.", MaxFormBytes>>20)}
	if r.ContentLength > MaxFormBytes {
		return cleanup, tooLarge
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	// Files beyond formMemory go to temp files, not memory: twenty phone
	// photos arriving at once would otherwise hold 50 MB before any of
	// them is decoded.
	err = r.ParseMultipartForm(formMemory)
	if errors.Is(err, http.ErrNotMultipart) {
		err = r.ParseForm()
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return cleanup, tooLarge
	case err != nil:
		return cleanup, &web.Error{Status: http.StatusBadRequest, Msg: "The form could not be read. Please try again.", Err: err}
	}
	return cleanup, nil
}

// Create logs a new meal, with its photo if one was chosen, and shows its
// month. The order keeps a failure clean: both photo copies are put first,
// tagged with their photo_v; then the meal row is written (conditional);
// if that fails the new objects are deleted again.
func (h *Handler) Create(w http.ResponseWriter, r *http.Request) error {
	cleanup, err := parseForm(w, r)
	defer cleanup()
	if err != nil {
		return err
	}
	ctx := r.Context()
	u := user.FromContext(ctx)
	f := FormFrom(r.Form)
	m, ok := f.Validate(false)
	proc, err := h.processUpload(w, r, &f)
	if err != nil {
		return err
	}
	if !ok || f.Errors["photo"] != "" {
		return h.renderForm(w, r, http.StatusUnprocessableEntity, &formPage{Form: f, Action: "/meals", AskTZ: u.TimeZone == "", PhotoLost: proc != nil})
	}
	now := h.now().UTC()
	m.UserID, m.CreatedAt, m.UpdatedAt = u.ID, now, now
	if proc != nil {
		tod, _ := ParseTimeOfDay(m.Time)
		m.ID = NewID(tod)
		setPhoto(&m, proc, photo.Version(now.UnixNano()))
		if err := h.putPhoto(ctx, &m, proc); err != nil {
			return err
		}
	}
	if err := h.store.Create(ctx, &m); err != nil {
		if proc != nil {
			h.deletePhoto(ctx, u.ID, m.PhotoKeys())
		}
		return err
	}
	h.adoptTimeZone(r, u)
	if proc != nil && f.DateTimeDefault() && farFrom(proc.Taken, m.Date, m.Time) {
		// Date and time were left at their defaults, but the photo was
		// taken at another time: offer to move the meal there (camera-roll
		// backfill).
		web.Redirect(w, r, "/meals/"+m.Date+"/"+m.ID+"/edit?offer=taken")
		return nil
	}
	web.SetFlash(w, "Meal saved.")
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
func (h *Handler) mealFromURL(r *http.Request) (*Meal, error) {
	d, id, ok := keyFromURL(r)
	if !ok {
		return nil, errNoMeal
	}
	m, err := h.store.Get(r.Context(), user.ID(r.Context()), d, id)
	if errors.Is(err, ErrNotFound) {
		return nil, errNoMeal
	}
	return m, err
}

// keyFromURL reads and checks the {date} and {meal_id} URL parameters.
func keyFromURL(r *http.Request) (Date, string, bool) {
	d, err := ParseDate(r.PathValue("date"))
	id := r.PathValue("meal_id")
	if _, err2 := ParseID(id); err != nil || err2 != nil {
		return Date{}, "", false
	}
	return d, id, true
}

var errNoMeal = &web.Error{Status: http.StatusNotFound, Title: "Meal not found", Msg: "There is no such meal in your diary. It may have been deleted."}

// Edit shows the edit form; date and time are shown but cannot change.
func (h *Handler) Edit(w http.ResponseWriter, r *http.Request) error {
	m, err := h.mealFromURL(r)
	if err != nil {
		return err
	}
	return h.renderForm(w, r, http.StatusOK, h.editPage(m, FormOf(m), r.URL.Query().Get("offer")))
}

// editPage is the edit form for m showing f; offer "taken" proposes moving
// the meal to its photo's capture time.
func (h *Handler) editPage(m *Meal, f Form, offer string) *formPage {
	p := &formPage{Form: f, Edit: true, Action: editAction(m), Version: m.Version, Meal: m}
	if offer == "taken" && m.PhotoTaken != "" {
		if t, err := time.Parse("2006-01-02T15:04:05", m.PhotoTaken); err == nil && farFrom(t, m.Date, m.Time) {
			p.Taken = &t
		}
	}
	return p
}

func editAction(m *Meal) string { return "/meals/" + m.Date + "/" + m.ID }

// Update saves the edit form: the fields, and a new photo or "remove
// photo". The meal row write is conditional on the version the form was
// opened on: editing a meal deleted meanwhile, or changed in another window,
// says so and writes nothing. A new photo's objects are put before the row
// (replacing the old bytes under the same keys, each tagged with its
// version, so every URL still gets the bytes of its own version); if the
// meal turns out to be gone they are deleted again. A removed photo's objects
// are deleted after the row.
func (h *Handler) Update(w http.ResponseWriter, r *http.Request) error {
	cleanup, err := parseForm(w, r)
	defer cleanup()
	if err != nil {
		return err
	}
	ctx := r.Context()
	cur, err := h.mealFromURL(r)
	if err != nil {
		return err
	}
	f := FormFrom(r.Form)
	edit, ok := f.Validate(true)
	proc, err := h.processUpload(w, r, &f)
	if err != nil {
		return err
	}
	f.Date, f.Time = cur.Date, cur.HHMM()
	if !ok || f.Errors["photo"] != "" {
		p := h.editPage(cur, f, "")
		p.PhotoLost = proc != nil
		return h.renderForm(w, r, http.StatusUnprocessableEntity, p)
	}
	if r.Form.Get("version") != strconv.FormatInt(cur.Version, 10) {
		return errChanged
	}
	remove := r.Form.Get("remove_photo") == "1" && proc == nil
	apply := func(m *Meal) {
		m.Kind, m.Notes = edit.Kind, edit.Notes
		m.Kcal, m.ProteinG, m.CarbsG, m.FatG = edit.Kcal, edit.ProteinG, edit.CarbsG, edit.FatG
		m.Hunger, m.Fullness = edit.Hunger, edit.Fullness
		m.UpdatedAt = h.now().UTC()
	}
	apply(cur)
	oldKeys := cur.PhotoKeys()
	hadPhoto := cur.HasPhoto()
	if proc != nil {
		v := photo.Version(max(h.now().UnixNano(), int64(cur.PhotoV)+1))
		setPhoto(cur, proc, v)
		if err := h.putPhoto(ctx, cur, proc); err != nil {
			return err
		}
	} else if remove {
		cur.clearPhoto()
	}
	err = h.store.Update(ctx, cur)
	if errors.Is(err, ErrConflict) && proc != nil {
		// Changed in the moment between reading and writing, after the new
		// photo's bytes replaced the old: record the new photo on the latest
		// version, so the row and the objects agree, and report the other
		// fields as not saved.
		latest, lerr := h.mealFromURL(r)
		if lerr != nil {
			err = lerr
		} else {
			setPhoto(latest, proc, cur.PhotoV)
			latest.UpdatedAt = h.now().UTC()
			if err = h.store.Update(ctx, latest); err == nil {
				return &web.Error{Status: http.StatusConflict, Title: "Meal changed meanwhile", Msg: "This meal was changed in another window after you opened it. Your new photo was saved; your other changes were not. Open the meal again to see it."}
			}
		}
	}
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, errNoMeal):
		if proc != nil {
			h.deletePhoto(ctx, cur.UserID, oldKeys)
		}
		return &web.Error{Status: http.StatusNotFound, Title: "Meal not found", Msg: "This meal no longer exists (it may have been deleted in another window), so nothing was saved."}
	case errors.Is(err, ErrConflict):
		return errChanged
	case err != nil:
		return err
	}
	if remove && hadPhoto {
		h.deletePhoto(ctx, cur.UserID, oldKeys)
	}
	web.SetFlash(w, "Changes saved.")
	web.Redirect(w, r, "/meals?month="+cur.Date[:7]+"#meal-"+cur.ID)
	return nil
}

var errChanged = &web.Error{Status: http.StatusConflict, Title: "Meal changed meanwhile", Msg: "This meal was changed in another window after you opened it, so nothing was saved. Open it again to see the latest version."}

// Delete removes a meal and shows its month.
func (h *Handler) Delete(w http.ResponseWriter, r *http.Request) error {
	d, id, ok := keyFromURL(r)
	if !ok {
		return errNoMeal
	}
	old, err := h.store.Delete(r.Context(), user.ID(r.Context()), d, id)
	if errors.Is(err, ErrNotFound) {
		return errNoMeal
	} else if err != nil {
		return err
	}
	if old.HasPhoto() {
		h.deletePhoto(r.Context(), old.UserID, old.PhotoKeys())
	}
	web.SetFlash(w, "Meal deleted.")
	web.Redirect(w, r, "/meals?month="+d.Month().String())
	return nil
}
