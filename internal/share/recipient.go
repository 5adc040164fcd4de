package share

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"ndiro/internal/limit"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// PageDays is the most days one recipient page shows. A longer range
// pages by windows of PageDays, each ONE Query on the meals table
// (meal.Store.Window, BETWEEN with the "#~" upper bound).
const PageDays = 31

// pageTitle is every recipient page's title: generic, because chat apps
// and browser histories show it (no name, no label, no dates).
const pageTitle = "Shared meal diary"

// anonymousHeading heads the page of an owner with no display name.
const anonymousHeading = "A meal diary"

// RecipientHeaders sets, on every response under /s/{token} (pages,
// photos, refusals alike): no Referer from these pages (the token is in
// the URL) and no indexing or link following by robots.
func RecipientHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("X-Robots-Tag", "noindex, nofollow")
		next.ServeHTTP(w, r)
	})
}

// Refusals of recipient requests. Unknown, revoked and stopped shares
// look the same.
var (
	errNoShare = &web.Error{Status: http.StatusNotFound, Title: "Link not found",
		Msg: "This link does not open a shared diary. It may be mistyped, or the person who shared it may have withdrawn it."}
	errExpired = &web.Error{Status: http.StatusGone, Title: "Link expired",
		Msg: "This shared diary link has expired. Ask the person who shared it for a new one."}
	errNoPhoto = &web.Error{Status: http.StatusNotFound, Title: "Photo not found",
		Msg: "There is no such photo in this shared diary."}
)

// tooMany is the 429 for a spent rate limit, with Retry-After and a
// message saying when to try again.
func tooMany(w http.ResponseWriter, wait time.Duration) error {
	return web.TooManyRequests(w, wait, "There were too many requests for shared links from here.")
}

// open finds the share named by the {token} URL parameter for a
// recipient, checking in the order every share request takes, before any
// cache: the client address's allowance of unknown tokens; the share
// (one consistent GetItem, so a revoke stops the next request); its
// expiry (410); its owner's users row (missing, deleting or otherwise not
// active stops the share as a revoke does).
func (h *Handler) open(w http.ResponseWriter, r *http.Request) (*Share, *user.User, error) {
	ctx := r.Context()
	ip := limit.ClientIP(r, h.proxyHeader)
	if blocked, wait := h.misses.Blocked(ip); blocked {
		return nil, nil, tooMany(w, wait)
	}
	sh, err := h.store.Get(ctx, chi.URLParam(r, "token"))
	if errors.Is(err, ErrNotFound) {
		h.misses.Allow(ip)
		return nil, nil, errNoShare
	}
	if err != nil {
		return nil, nil, err
	}
	if sh.Expired(h.now()) {
		return nil, nil, errExpired
	}
	owner, err := h.users.Get(ctx, sh.OwnerID)
	if errors.Is(err, user.ErrNotFound) || err == nil && !owner.Active() {
		return nil, nil, errNoShare
	}
	if err != nil {
		return nil, nil, err
	}
	return sh, owner, nil
}

// sharedMeal is what a recipient may see of one meal: redact decides.
type sharedMeal struct {
	ID, Time, HHMM string
	Kind           meal.Kind
	Notes          string
	// Numbers; all nil unless the share shows numbers.
	Kcal, ProteinG, CarbsG, FatG *meal.Number
	Hunger, Fullness             *int
	HasPhoto                     bool
	ThumbURL, DisplayURL         string
	ThumbW, ThumbH               int
}

// sharedDay is one day of shared meals, oldest first, with its kcal total
// (nil unless numbers are shown and some meal has kcal).
type sharedDay struct {
	Date  meal.Date
	Meals []sharedMeal
	Kcal  *meal.Number
}

// redact returns what the recipient of sh may see of m, built field by
// field from an allow-list so that a field added to meal.Meal later is
// hidden until someone decides otherwise: kind, date, time and photo
// always; notes only if sh.Notes; numbers only if sh.Numbers; never the
// owner's ID or the photo's capture time (meal.Photo.PhotoTaken: where
// the owner was when), which is why the photo too is copied field by
// field rather than whole.
func redact(m meal.Meal, sh *Share) meal.Meal {
	out := meal.Meal{
		ID: m.ID, Date: m.Date, Time: m.Time, Kind: m.Kind,
		Photo: meal.Photo{PhotoV: m.PhotoV, PhotoW: m.PhotoW, PhotoH: m.PhotoH, ThumbW: m.ThumbW, ThumbH: m.ThumbH},
	}
	if sh.Notes {
		out.Notes = m.Notes
	}
	if sh.Numbers {
		out.Kcal, out.ProteinG, out.CarbsG, out.FatG = m.Kcal, m.ProteinG, m.CarbsG, m.FatG
		out.Hunger, out.Fullness = m.Hunger, m.Fullness
	}
	return out
}

// sharedDays redacts meals (sorted by sort key, as a Query returns them)
// and groups them into days, oldest first.
func (h *Handler) sharedDays(sh *Share, meals []meal.Meal) []sharedDay {
	red := make([]meal.Meal, len(meals))
	for i, m := range meals {
		red[i] = redact(m, sh)
	}
	grouped := meal.GroupByDay(red) // newest first, totals from redacted numbers
	days := make([]sharedDay, len(grouped))
	for i, g := range grouped {
		d := sharedDay{Date: g.Date, Kcal: g.Kcal}
		for _, m := range g.Meals {
			d.Meals = append(d.Meals, h.sharedMeal(sh.Token, m))
		}
		days[len(grouped)-1-i] = d
	}
	return days
}

// sharedMeal turns a redacted meal into its view, with photo URLs under
// the share: "/s/{token}/photo/{date}/{meal_id}?v=…(&size=thumb)".
func (h *Handler) sharedMeal(tok string, m meal.Meal) sharedMeal {
	sm := sharedMeal{
		ID: m.ID, Time: m.Time, HHMM: m.HHMM(), Kind: m.Kind, Notes: m.Notes,
		Kcal: m.Kcal, ProteinG: m.ProteinG, CarbsG: m.CarbsG, FatG: m.FatG,
		Hunger: m.Hunger, Fullness: m.Fullness,
		HasPhoto: m.HasPhoto(), ThumbW: m.ThumbW, ThumbH: m.ThumbH,
	}
	if m.HasPhoto() {
		base := "/s/" + tok + "/photo/" + m.Date + "/" + m.ID + "?v=" + m.PhotoV.Tag()
		sm.DisplayURL, sm.ThumbURL = base, base+"&size=thumb"
	}
	return sm
}

// heading is the recipient page's <h1>: the owner's display name, never
// their email or IDs.
func heading(owner *user.User) string {
	if owner.Name != "" {
		return owner.Name
	}
	return anonymousHeading
}

type recipientPage struct {
	web.Base
	Heading    string
	RangeText  string
	WindowText string
	Paged      bool
	Days       []sharedDay
	Count      int
	Notes      bool
	Numbers    bool
	Prev, Next string
	WeekURL    string
	Expires    *time.Time
}

type previewPage struct{ web.Base }

// preview answers a link preview or HEAD: a generic page, no photos,
// notes or name, not counted.
func (h *Handler) preview(w http.ResponseWriter, r *http.Request) error {
	return h.pages.Render(w, r, http.StatusOK, "share/preview", &previewPage{Base: web.Base{Title: pageTitle, Unlisted: true}})
}

// outside is the 404 for a day the share does not cover.
func outside(sh *Share, d meal.Date) error {
	return backTo(sh, &web.Error{Status: http.StatusNotFound, Title: "Day not shared",
		Msg: fmt.Sprintf("This link shows %s; %s is not part of it.", sh.RangeText(), d.Time().Format("2 Jan 2006"))})
}

// noPhoto is errNoPhoto under a share that opened, leading back to it (a
// thumbnail links straight to its photo, which may be gone by the click).
func noPhoto(sh *Share) error {
	e := *errNoPhoto
	return backTo(sh, &e)
}

// backTo makes e, a refusal under a share that opened, lead back to the
// share's first page: its recipient has no account, so the usual way on
// (the start page) would only offer them a sign-in.
func backTo(sh *Share, e *web.Error) *web.Error {
	e.Back, e.BackText = "/s/"+sh.Token, "Back to the shared diary"
	return e
}

// Page is GET /s/{token}: the shared range, PageDays at a time from
// ?from= (default: the first day), grouped by day with thumbnails
// linking to the display size. Opening the link itself (no ?from=) counts
// one open, unless it is a preview (isPreview).
func (h *Handler) Page(w http.ResponseWriter, r *http.Request) error {
	sh, owner, err := h.open(w, r)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	if isPreview(r) {
		return h.preview(w, r)
	}
	from, to := sh.Range()
	q := r.URL.Query()
	start := from
	if q.Has("from") {
		d, err := meal.ParseDate(q.Get("from"))
		if err != nil {
			return backTo(sh, web.BadRequest("The page's first day (from) must be written like 2026-09-01."))
		}
		if !sh.Contains(d) {
			return outside(sh, d)
		}
		start = d
	}
	end := start.AddDays(PageDays - 1)
	if to.Before(end) {
		end = to
	}
	meals, err := h.meals.Window(r.Context(), sh.OwnerID, start, end)
	if err != nil {
		return err
	}
	if !q.Has("from") {
		h.store.CountOpen(sh.Token, h.now()) // in memory: the page never waits for the write
	}
	tok := sh.Token
	p := &recipientPage{
		Base:       web.Base{Title: pageTitle, Unlisted: true},
		Heading:    heading(owner),
		RangeText:  sh.RangeText(),
		WindowText: rangeText(start, end),
		Paged:      from.DaysUntil(to)+1 > PageDays,
		Days:       h.sharedDays(sh, meals),
		Count:      len(meals),
		Notes:      sh.Notes,
		Numbers:    sh.Numbers,
		WeekURL:    "/s/" + tok + "/week?start=" + start.String(),
		Expires:    sh.Expires(),
	}
	if from.Before(start) {
		prev := start.AddDays(-PageDays)
		if prev.Before(from) {
			prev = from
		}
		p.Prev = "/s/" + tok + "?from=" + prev.String()
	}
	if end.Before(to) {
		p.Next = "/s/" + tok + "?from=" + end.AddDays(1).String()
	}
	return h.pages.Render(w, r, http.StatusOK, "share/page", p)
}

type weekRow struct {
	Date meal.Date
	// Cells holds the day's meals by kind, in the order of meal.Kinds.
	Cells [][]sharedMeal
	Kcal  *meal.Number
}

type weekPage struct {
	web.Base
	Heading   string
	RangeText string
	WeekText  string
	Kinds     []meal.Kind
	Rows      []weekRow
	Notes     bool
	Numbers   bool
	Prev      string
	Next      string
	Back      string
}

// Week is GET /s/{token}/week?start=YYYY-MM-DD: seven days from start (the
// share's first day by default), cut to the shared range, as a grid of
// days by meal kind that prints on one page. It is ONE Query and never
// counts as an open. A start outside the range is a 404 saying which days
// are shared.
func (h *Handler) Week(w http.ResponseWriter, r *http.Request) error {
	sh, owner, err := h.open(w, r)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	if isPreview(r) {
		return h.preview(w, r)
	}
	from, to := sh.Range()
	start := from
	if s := r.URL.Query().Get("start"); s != "" {
		d, err := meal.ParseDate(s)
		if err != nil {
			return backTo(sh, web.BadRequest("The week's first day (start) must be written like 2026-09-01."))
		}
		if !sh.Contains(d) {
			return outside(sh, d)
		}
		start = d
	}
	end := start.AddDays(6)
	if to.Before(end) {
		end = to
	}
	meals, err := h.meals.Window(r.Context(), sh.OwnerID, start, end)
	if err != nil {
		return err
	}
	byDate := map[string]sharedDay{}
	for _, d := range h.sharedDays(sh, meals) {
		byDate[d.Date.String()] = d
	}
	tok := sh.Token
	p := &weekPage{
		Base:      web.Base{Title: pageTitle, Unlisted: true},
		Heading:   heading(owner),
		RangeText: sh.RangeText(),
		WeekText:  rangeText(start, end),
		Kinds:     meal.Kinds,
		Notes:     sh.Notes,
		Numbers:   sh.Numbers,
		Back:      "/s/" + tok + "?from=" + start.String(),
	}
	for d := start; !end.Before(d); d = d.AddDays(1) {
		day := byDate[d.String()]
		row := weekRow{Date: d, Cells: make([][]sharedMeal, len(meal.Kinds)), Kcal: day.Kcal}
		for _, m := range day.Meals {
			for i, k := range meal.Kinds {
				if m.Kind == k {
					row.Cells[i] = append(row.Cells[i], m)
				}
			}
		}
		p.Rows = append(p.Rows, row)
	}
	if from.Before(start) {
		prev := start.AddDays(-7)
		if prev.Before(from) {
			prev = from
		}
		p.Prev = "/s/" + tok + "/week?start=" + prev.String()
	}
	if end.Before(to) {
		p.Next = "/s/" + tok + "/week?start=" + end.AddDays(1).String()
	}
	return h.pages.Render(w, r, http.StatusOK, "share/week", p)
}

// Photo is GET /s/{token}/photo/{date}/{meal_id}?v=…(&size=thumb): a photo
// of a meal on a day the share covers. The S3 key is built from the
// share's owner and the checked date and meal ID only (photo.Key), after
// the checks of open, which run before the photo cache, so a revoked or
// expired link stops at the next request even for a cached photo. It is
// served "private, no-cache" with a strong ETag: every view revalidates
// (a cheap 304 while the share holds). Days outside the range are 404
// even for a real meal; preview fetchers get no photo; reads are limited
// per share (PhotoBurst, PhotoEvery).
func (h *Handler) Photo(w http.ResponseWriter, r *http.Request) error {
	sh, _, err := h.open(w, r)
	if err != nil {
		return err
	}
	if previewAgent(r) {
		return errNoPhoto
	}
	if ok, wait := h.photoReads.Allow(sh.Token); !ok {
		return tooMany(w, wait)
	}
	d, err := meal.ParseDate(chi.URLParam(r, "date"))
	id := chi.URLParam(r, "meal_id")
	_, idErr := meal.ParseID(id)
	size, sizeOK := photo.ParseSize(r.URL.Query().Get("size"))
	if err != nil || idErr != nil || !sizeOK || !sh.Contains(d) {
		return noPhoto(sh)
	}
	err = h.photos.Serve(w, r, photo.Ref{Owner: sh.OwnerID, Date: d.String(), Meal: id, Size: size}, r.URL.Query().Get("v"), photo.RecipientCacheControl)
	if photo.IsNotFound(err) {
		return noPhoto(sh)
	}
	return err
}
