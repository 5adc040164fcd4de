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

// PageDays is the most days one Query of the print page reads: the whole
// range, up to MaxDays, is read in windows of PageDays, each ONE Query on
// the meals table (meal.Store.Window, BETWEEN with the "#~" upper bound).
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
		Msg:  "This link does not open a shared diary. It may be mistyped, or the person who shared it may have withdrawn it.",
		Back: AboutPath, BackText: "What is a shared diary link?", Unlisted: true}
	errExpired = &web.Error{Status: http.StatusGone, Title: "Link expired",
		Msg:  "This shared diary link has expired. Ask the person who shared it for a new one.",
		Back: AboutPath, BackText: "What is a shared diary link?", Unlisted: true}
	errNoPhoto = &web.Error{Status: http.StatusNotFound, Title: "Photo not found",
		Msg: "There is no such photo in this shared diary.", Unlisted: true}
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

// redact returns what the recipient of sh may see of m, built field by
// field from an allow-list so that a field added to meal.Meal later is
// hidden until someone decides otherwise: kind, date, time and photo
// always; notes only if sh.Notes; numbers only if sh.Numbers; the
// comments written through sh itself, without their label; never the
// owner's ID or the photo's capture time (meal.Photo.PhotoTaken: where
// the owner was when), which is why the photo too is copied field by
// field rather than whole.
func redact(m meal.Meal, sh *Share) meal.Meal {
	out := meal.Meal{
		ID: m.ID, Date: m.Date, Time: m.Time, Kind: m.Kind,
		Photo: meal.Photo{PhotoV: m.PhotoV, PhotoW: m.PhotoW, PhotoH: m.PhotoH, ThumbW: m.ThumbW, ThumbH: m.ThumbH, PhotoSet: m.PhotoSet},
	}
	if sh.Notes {
		out.Notes = m.Notes
	}
	if sh.Numbers {
		out.Kcal, out.ProteinG, out.CarbsG, out.FatG = m.Kcal, m.ProteinG, m.CarbsG, m.FatG
		out.Hunger, out.Fullness = m.Hunger, m.Fullness
	}
	// Only the comments written through this very link, without the
	// label (the owner's to see).
	for _, c := range m.CommentsFrom(ID(sh.Token)) {
		if out.Comments == nil {
			out.Comments = map[string]meal.Comment{}
		}
		out.Comments[c.ID] = meal.Comment{ID: c.ID, ShareID: c.ShareID, Text: c.Text, At: c.At}
	}
	return out
}

// heading is the recipient page's <h1>: the owner's display name, never
// their email or IDs.
func heading(owner *user.User) string {
	if owner.Name != "" {
		return owner.Name
	}
	return anonymousHeading
}

// Preview metadata (Open Graph) of every recipient page and of the page
// preview fetchers get: generic, so a chat's card of the link says what
// it is and nothing personal (no name, no dates, no photo of a meal).
const (
	ogTitle       = "A shared meal diary"
	ogDescription = "A read-only view of someone's meal diary, shared through ndiro."
)

// AboutPath is the note a recipient's brand link and refusals lead to:
// what a shared diary link is, in a few lines, with nothing personal.
const AboutPath = "/shared"

// meta is the generic part of every recipient page: its Open Graph
// card, with the app icon as image (an absolute URL, as the protocol
// wants).
type meta struct {
	OGTitle, OGDescription, OGImage, OGURL string
}

func (h *Handler) meta() meta {
	return meta{OGTitle: ogTitle, OGDescription: ogDescription, OGImage: h.baseURL + h.iconPath, OGURL: h.baseURL + AboutPath}
}

type previewPage struct {
	web.Base
	meta
}

// preview answers a link preview or HEAD: a generic page with the
// generic card, no photos, notes or name, not counted.
func (h *Handler) preview(w http.ResponseWriter, r *http.Request) error {
	return h.pages.Render(w, r, http.StatusOK, "share/preview", &previewPage{Base: web.Base{Title: pageTitle, Unlisted: true}, meta: h.meta()})
}

type aboutPage struct {
	web.Base
	meta
}

// About is GET /shared: what a shared diary link is, for someone who was
// sent one. It reads nothing and names nobody.
func (h *Handler) About(w http.ResponseWriter, r *http.Request) error {
	return h.pages.Render(w, r, http.StatusOK, "share/about", &aboutPage{Base: web.Base{Title: "What is a shared diary link?", Unlisted: true}, meta: h.meta()})
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
	e.Back, e.BackText, e.Unlisted = "/s/"+sh.Token, "Back to the shared diary", true
	return e
}

// head is what every recipient page shows above its content.
type head struct {
	meta
	// Heading is the owner's display name (heading).
	Heading   string
	RangeText string
	// Until is when the link stops, in the owner's zone, named ("30 Sep
	// 2026 18:07 CEST"); "" for never.
	Until string
	// Home is the link's first page, PrintURL its print page.
	Home, PrintURL string
	// Comments: the link takes comments.
	Comments bool
}

func (h *Handler) head(sh *Share, owner *user.User) head {
	hd := head{meta: h.meta(), Heading: heading(owner), RangeText: sh.RangeText(),
		Home: "/s/" + sh.Token, PrintURL: "/s/" + sh.Token + "/print", Comments: sh.Comments}
	if e := sh.Expires(); e != nil {
		hd.Until = when(*e, owner)
	}
	return hd
}

type overviewPage struct {
	web.Base
	head
	Summary summary
	Weeks   []week
	// Paged: the range needs more than one page; WindowText names this
	// one's days, Prev and Next link the neighbours ("" at the ends).
	Paged          bool
	WindowText     string
	Prev, Next     string
	Notes, Numbers bool
}

// Page is GET /s/{token}: the shared range, opening on a summary of what
// the page shows and then its week grid, PageWeeks weeks a page from
// ?from= (default: the first day; a day in the middle of a week opens its
// week). ONE Query (meal.Store.Window) reads the page's days, and the
// summary comes from those same items, redacted: nothing outside the
// range, or outside what the link shows, shapes what is seen. Opening the
// link itself (no ?from=) counts one open, unless it is a preview
// (isPreview).
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
		start = weekStart(from, d)
	}
	end := start.AddDays(WeekDays*PageWeeks - 1)
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
	red := redactAll(sh, meals)
	whole := start.String() == from.String() && end.String() == to.String()
	of := "the shared days"
	if !whole {
		of = rangeText(start, end)
	}
	tok := sh.Token
	p := &overviewPage{
		Base:       web.Base{Title: pageTitle, Unlisted: true},
		head:       h.head(sh, owner),
		Summary:    summarize(sh, red, start.DaysUntil(end)+1, of),
		Weeks:      weeks(sh, red, start, end),
		Paged:      !whole,
		WindowText: rangeText(start, end),
		Notes:      sh.Notes,
		Numbers:    sh.Numbers,
	}
	if from.Before(start) {
		p.Prev = "/s/" + tok + "?from=" + start.AddDays(-WeekDays*PageWeeks).String()
	}
	if end.Before(to) {
		p.Next = "/s/" + tok + "?from=" + end.AddDays(1).String()
	}
	return h.pages.Render(w, r, http.StatusOK, "share/page", p)
}

// weekRow is one day of a printable week table: its meals by kind, in
// the order of meal.Kinds.
type weekRow struct {
	Date    string
	Heading string
	Cells   [][]cell
	Kcal    string
}

// weekTable is a week as the printable table shows it, with what its
// printed page names: the owner and the shared range.
type weekTable struct {
	week
	Rows    []weekRow
	Kinds   []meal.Kind
	Owner   string
	Shared  string
	Numbers bool
}

type weekPage struct {
	web.Base
	head
	Kinds   []meal.Kind
	Tables  []weekTable
	Notes   bool
	Numbers bool
	Prev    string
	Next    string
	Back    string
}

// tables turns weeks of sh into printable tables, days by meal kind.
func tables(sh *Share, owner *user.User, ws []week) []weekTable {
	out := make([]weekTable, len(ws))
	for i, w := range ws {
		out[i] = weekTable{week: w, Kinds: meal.Kinds, Owner: heading(owner), Shared: sh.RangeText(), Numbers: sh.Numbers}
		for _, d := range w.Days {
			row := weekRow{Date: d.Date, Heading: d.Heading, Kcal: d.Kcal, Cells: make([][]cell, len(meal.Kinds))}
			for _, c := range d.Cells {
				for k, kind := range meal.Kinds {
					if c.Kind == kind {
						row.Cells[k] = append(row.Cells[k], c)
					}
				}
			}
			out[i].Rows = append(out[i].Rows, row)
		}
	}
	return out
}

// Week is GET /s/{token}/week?start=YYYY-MM-DD: seven days from start (the
// share's first day by default), cut to the shared range, as a grid of
// days by meal kind that prints on one landscape page. It is ONE Query
// and never counts as an open. A start outside the range is a 404 saying
// which days are shared.
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
	end := start.AddDays(WeekDays - 1)
	if to.Before(end) {
		end = to
	}
	meals, err := h.meals.Window(r.Context(), sh.OwnerID, start, end)
	if err != nil {
		return err
	}
	tok := sh.Token
	p := &weekPage{
		Base:    web.Base{Title: pageTitle, Unlisted: true},
		head:    h.head(sh, owner),
		Kinds:   meal.Kinds,
		Tables:  tables(sh, owner, weeks(sh, redactAll(sh, meals), start, end)),
		Notes:   sh.Notes,
		Numbers: sh.Numbers,
		Back:    "/s/" + tok + "?from=" + start.String() + "#week-" + weekStart(from, start).String(),
	}
	if from.Before(start) {
		prev := start.AddDays(-WeekDays)
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

// Print is GET /s/{token}/print: the whole shared range (up to MaxDays)
// as week tables, one per landscape page when printed, each with the
// range and the owner's name. It reads the range in windows of PageDays,
// ONE Query each, and never counts as an open.
func (h *Handler) Print(w http.ResponseWriter, r *http.Request) error {
	sh, owner, err := h.open(w, r)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	if isPreview(r) {
		return h.preview(w, r)
	}
	from, to := sh.Range()
	var meals []meal.Meal
	for ws := from; !to.Before(ws); ws = ws.AddDays(PageDays) {
		we := ws.AddDays(PageDays - 1)
		if to.Before(we) {
			we = to
		}
		part, err := h.meals.Window(r.Context(), sh.OwnerID, ws, we)
		if err != nil {
			return err
		}
		meals = append(meals, part...)
	}
	p := &weekPage{
		Base:    web.Base{Title: pageTitle, Unlisted: true},
		head:    h.head(sh, owner),
		Kinds:   meal.Kinds,
		Tables:  tables(sh, owner, weeks(sh, redactAll(sh, meals), from, to)),
		Notes:   sh.Notes,
		Numbers: sh.Numbers,
		Back:    "/s/" + sh.Token,
	}
	return h.pages.Render(w, r, http.StatusOK, "share/print", p)
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
