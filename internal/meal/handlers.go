// Package meal owns meals: the meals table and its sort keys, the decimal
// numbers, the month and day-window queries, and the diary pages.
package meal

import (
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"ndiro/internal/limit"
	"ndiro/internal/photo"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// Limits of the meal form, which carries a photo (routes.go gives them
// to its web.Form).
const (
	// MaxFormBytes caps a meal form's request body: a phone photo plus
	// fields. A larger body is refused with 413 before the handler runs.
	MaxFormBytes = 25 << 20
	// FormMemory is how much of a multipart form is kept in memory;
	// larger parts (photos) are spooled to temp files (os.TempDir): twenty
	// phone photos arriving at once would otherwise hold 50 MB before any
	// of them is decoded.
	FormMemory = 256 << 10
)

// Photo uploads (a new meal or an edit carrying a photo) are limited per
// owner: UploadBurst at once, then one every UploadEvery. A camera-roll
// backfill sent one photo at a time (the page script sends each chosen
// photo as its own form) keeps going at that pace; each upload costs a
// decode against the pipeline's memory budget, so nobody can queue more.
const (
	UploadBurst = 30
	UploadEvery = 2 * time.Second
	// uploadKeys bounds the limiter's memory: owners tracked at once.
	uploadKeys = 10_000
)

// Handler serves the diary pages and the owner's photos.
type Handler struct {
	w        *writer
	store    *Store
	users    *user.Store
	photos   *photo.Store
	server   *photo.Server
	pipeline *photo.Pipeline
	pages    *web.Pages
	now      func() time.Time
	log      *slog.Logger
	uploads  *limit.Limiter // photo uploads, per owner
	quota    user.Quota
	// searchPace holds every owner's searches together to
	// SearchReadUnitsPerSecond.
	searchPace *limit.Pacer
}

// Deps are the Handler's collaborators.
type Deps struct {
	Store    *Store
	Users    *user.Store
	Photos   *photo.Store
	Server   *photo.Server
	Pipeline *photo.Pipeline
	// Variants, if set, is told of every photo saved, to make its sized
	// copies soon (Variants.Kick).
	Variants *Variants
	Pages    *web.Pages
	// Now is the clock of every rule (the owner's today, rate limits).
	Now func() time.Time
	// Clock is what searches wait on for read units (limit.Pacer); nil is
	// the wall clock.
	Clock limit.Clock
	// Quota bounds each account: an edit bringing a photo to an account
	// at its byte bound is refused (a new meal is refused before its
	// form is read, by the route's guard: server.refuseFull).
	Quota user.Quota
	Log   *slog.Logger
}

// NewHandler returns the diary pages.
func NewHandler(d Deps) *Handler {
	var clock limit.Clock = limit.SystemClock{}
	if d.Clock != nil {
		clock = d.Clock
	}
	return &Handler{
		w:     &writer{rows: d.Store, objects: d.Photos, forget: d.Server.Cache().Forget, kick: d.Variants.Kick, usage: d.Users.AddUsage, log: d.Log},
		store: d.Store, users: d.Users, photos: d.Photos, server: d.Server, pipeline: d.Pipeline, pages: d.Pages, now: d.Now, log: d.Log, quota: d.Quota,
		uploads:    limit.New(limit.Rule{Every: UploadEvery, Burst: UploadBurst, MaxKeys: uploadKeys}, d.Now),
		searchPace: limit.NewPacer(SearchReadUnitsPerSecond, SearchReadUnitsBurst, clock),
	}
}

// SizesGrid is the sizes attribute of the usual grid's thumbnails
// (photo.SlotGrid). The page carries it and SizesDense, so app.js can
// switch the grid in place and the browser picks the new cells' copies.
func (*listPage) SizesGrid() string { return photo.SlotGrid.Sizes() }

// SizesDense is the sizes attribute of the denser grid's thumbnails
// (photo.SlotDense).
func (*listPage) SizesDense() string { return photo.SlotDense.Sizes() }

type listPage struct {
	web.Base
	Heading string
	Days    []gridDay
	// Summary sums up the days shown: days logged, the average day.
	Summary    Summary
	Prev, Next string // links to the neighbouring month or window; "" at the ends
	PrevLabel  string
	NextLabel  string
	// From and To are the window shown, or on a month page its first and
	// last day, which the range form starts from.
	From, To string
	IsWindow bool
	// WindowError explains why the requested window was refused.
	WindowError string
	// Strip is the month page's calendar strip, its list items (stripHTML;
	// "" on other pages); StripLabel names it: "Days of September 2026".
	Strip      template.HTML
	StripLabel string
	// Dense shows the denser grid (gridCookie); GridURL switches it.
	Dense   bool
	GridURL string
	// Filed is the note about a meal just filed at its photo's time.
	Filed *filedNote
	// Search is the search page's state; nil on the other pages.
	Search *searchView
}

// List is GET /meals: with ?from=&to= the day window (inclusive, at most 93
// days), otherwise the month ?month=2026-09, by default the current month in
// the owner's time zone. Each is ONE Query. There is no link into the
// future: the pager stops at the current month, or the window that holds
// today.
func (h *Handler) List(w http.ResponseWriter, r *http.Request) error {
	u := user.FromContext(r.Context())
	q := r.URL.Query()
	if q.Has("from") || q.Has("to") {
		return h.window(w, r, u, q.Get("from"), q.Get("to"))
	}
	today := DateOf(h.now().In(u.Location()))
	m := today.Month()
	if s := q.Get("month"); s != "" {
		var err error
		if m, err = ParseMonth(s); err != nil {
			return &web.Error{Status: http.StatusBadRequest, Title: "Month not recognised", Msg: fmt.Sprintf("Month must look like 2026-09, between %d and %d.", MinYear, MaxYear)}
		}
	}
	meals, err := h.store.Month(r.Context(), u.ID, m)
	if err != nil {
		return err
	}
	p := &listPage{
		Base:       web.Base{Title: m.Time().Format("January 2006")},
		Heading:    m.Time().Format("January 2006"),
		From:       m.First().String(),
		To:         m.Last().String(),
		StripLabel: "Days of " + m.Time().Format("January 2006"),
	}
	p.Dense = denseGrid(w, r, q)
	p.Days, p.Summary = diaryGrid(meals, false, p.Dense)
	p.Strip = stripHTML(calendarStrip(m, p.Days, today))
	p.GridURL = gridToggle("/meals", url.Values{"month": {m.String()}}, p.Dense)
	p.Filed = filed(w, r, meals)
	if prev := m.Prev(); prev.InRange() {
		p.Prev, p.PrevLabel = "/meals?month="+prev.String(), prev.Time().Format("Jan 2006")
	}
	if next := m.Next(); next.InRange() && !today.Before(next.First()) {
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
		return refuse(fmt.Sprintf("The window's start (from) must be a real day from %d to %d, written like 2026-08-28.", MinYear, MaxYear))
	}
	to, err := ParseDate(toS)
	if err != nil {
		return refuse(fmt.Sprintf("The window's end (to) must be a real day from %d to %d, written like 2026-09-03.", MinYear, MaxYear))
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
		From:     from.String(),
		To:       to.String(),
		IsWindow: true,
	}
	p.Dense = denseGrid(w, r, r.URL.Query())
	p.Days, p.Summary = diaryGrid(meals, true, p.Dense)
	p.GridURL = gridToggle("/meals", url.Values{"from": {p.From}, "to": {p.To}}, p.Dense)
	if a := from.AddDays(-n); a.Time().Year() >= MinYear {
		p.Prev, p.PrevLabel = link(a, to.AddDays(-n)), days(n)
	}
	today := DateOf(h.now().In(u.Location()))
	if b := to.AddDays(n); b.Time().Year() <= MaxYear && !today.Before(from.AddDays(n)) {
		p.Next, p.NextLabel = link(from.AddDays(n), b), days(n)
	}
	return h.pages.Render(w, r, http.StatusOK, "meal/list", p)
}

// days words a number of days: "1 day", "7 days".
func days(n int) string {
	if n == 1 {
		return "1 day"
	}
	return fmt.Sprintf("%d days", n)
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
	// PhotoTime, on an add form shown again with a kept photo whose
	// capture time will file the meal (fileByPhoto), words that time:
	// "Fri 14 Jun 2024, 12:31"; "" otherwise.
	PhotoTime string
	// Fresh marks an untouched new form, whose time (and date, unless
	// FixedDate) the page script may replace with the device's clock, never
	// the owner's input.
	Fresh     bool
	FixedDate bool
	// Kept is the photo kept from an earlier submission of the form (a
	// pending upload), shown and carried by its token; nil if none.
	Kept *photo.Pending
	// Conflict is the latest version of a meal another window changed
	// after this form was opened, shown beside this form's values;
	// ConflictNote says what was saved all the same.
	Conflict     *Meal
	ConflictNote string
	// ReusedURL, on an add form refused because its key made another
	// meal (keyReused), links to that meal; "" if there is none.
	ReusedURL string
	// MsgEmpty and MsgFuture are the form-level messages, for the page
	// script's own checks and to tell the future-date error apart.
	MsgEmpty, MsgFuture string
}

func (h *Handler) renderForm(w http.ResponseWriter, r *http.Request, status int, p *formPage) error {
	p.Kinds, p.MsgEmpty, p.MsgFuture = Kinds, MsgEmpty, MsgFuture
	if p.Form.Errors == nil {
		p.Form.Errors = map[string]string{}
	}
	if !p.Edit && p.Kept != nil {
		probe := Meal{Date: p.Form.Date, Time: p.Form.Time, Kind: Kind(p.Form.Kind)}
		if t, err := ParseTimeOfDay(p.Form.Time); err == nil {
			probe.Time = t.String()
		}
		if fileByPhoto(&p.Form, &probe, p.Kept.Taken, DateOf(h.now().In(user.FromContext(r.Context()).Location()))) {
			p.PhotoTime = probe.DateTime().Format("Mon 2 Jan 2006, 15:04")
		}
	}
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
		f.Date, f.DefaultDate, f.FixedDate = d.String(), d.String(), true
	}
	return h.renderForm(w, r, http.StatusOK, &formPage{Form: f, Action: "/meals", AskTZ: u.TimeZone == "", Fresh: true, FixedDate: f.FixedDate})
}

// errFormNotRead is the 500 of a meal form route without its web.Form
// middleware: a wiring mistake, never the user's.
var errFormNotRead = errors.New("meal: form not read: the route needs web.Form (routes.go)")

// keyFromURL reads and checks the {date} and {meal_id} URL parameters.
func keyFromURL(r *http.Request) (Date, string, bool) {
	d, err := ParseDate(r.PathValue("date"))
	id := r.PathValue("meal_id")
	if _, err2 := ParseID(id); err != nil || err2 != nil {
		return Date{}, "", false
	}
	return d, id, true
}

// Edit shows the edit form. Date and time can change: saving a new one
// moves the meal.
func (h *Handler) Edit(w http.ResponseWriter, r *http.Request) error {
	m, found, err := h.load(w, r, nil)
	if !found {
		return err
	}
	return h.renderForm(w, r, http.StatusOK, h.editPage(m, FormOf(m)))
}

// editPage is the edit form for m showing f. It never offers to move the
// meal by its photo: the meal stays where it was saved unless its date or
// time is edited.
func (h *Handler) editPage(m *Meal, f Form) *formPage {
	return &formPage{Form: f, Edit: true, Action: m.DetailURL(), Version: m.Version, Meal: m}
}
