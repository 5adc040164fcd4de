package server_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"ndiro/internal/apptest"
	"ndiro/internal/demo"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/user"
)

// traffic records every response the app sends: its path and its size on
// the wire (status line, headers and body), for the byte budget of a
// first screen.
type traffic struct {
	mu       sync.Mutex
	hits     []hit
	inflight int
	last     time.Time
}

type hit struct {
	path  string
	bytes int
}

func (tr *traffic) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.mu.Lock()
		tr.inflight++
		tr.mu.Unlock()
		cw := &countingWriter{ResponseWriter: w}
		next.ServeHTTP(cw, r)
		if !cw.wroteHeader {
			cw.WriteHeader(http.StatusOK)
		}
		tr.mu.Lock()
		tr.inflight--
		tr.last = time.Now()
		tr.hits = append(tr.hits, hit{r.URL.Path, cw.n})
		tr.mu.Unlock()
	})
}

// reset forgets what was recorded.
func (tr *traffic) reset() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.hits = nil
	tr.last = time.Now()
}

// quiet waits until no request has been under way for d, then returns
// what was recorded.
func (tr *traffic) quiet(t *testing.T, d time.Duration) []hit {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		tr.mu.Lock()
		idle := tr.inflight == 0 && time.Since(tr.last) >= d
		hits := append([]hit(nil), tr.hits...)
		tr.mu.Unlock()
		if idle {
			return hits
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the page kept loading for 30 s")
	return nil
}

// countingWriter counts the bytes of a response as HTTP/1.1 sends them.
type countingWriter struct {
	http.ResponseWriter
	n           int
	wroteHeader bool
}

func (w *countingWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.wroteHeader = true
		w.n += len("HTTP/1.1 200 OK\r\n\r\n")
		for k, vs := range w.Header() {
			for _, v := range vs {
				w.n += len(k) + len(v) + 4
			}
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(b)
	w.n += n
	return n, err
}

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// browserPhotos are three generated photos of plates through the upload
// pipeline: their thumbnails (480×360, 20–30 KB, as the pipeline makes
// of phone photos) and one display copy. Made once per test binary: under
// the race detector each takes a second or two.
var browserPhotos = sync.OnceValues(func() (*photoSet, error) {
	p := photo.NewPipeline(photo.DefaultBudget, photo.DefaultWait)
	set := &photoSet{}
	for i := range 3 {
		b, err := demo.FoodPhoto(uint64(i+1), 640, 480)
		if err != nil {
			return nil, err
		}
		proc, err := p.Process(context.Background(), b)
		if err != nil {
			return nil, err
		}
		set.thumbs, set.display = append(set.thumbs, proc.Thumb), proc.Display
	}
	return set, nil
})

type photoSet struct {
	thumbs  [][]byte
	display []byte
}

// browserMonth is the month the browser tests fill: 90 meals, three a day.
const browserMonth = "2026-09"

// fillMonth writes 90 meals of email into September 2026, three a day,
// each with a photo of a realistic size, straight to the table and the
// bucket (no uploads), plus a share link and a few other accounts. It
// returns the meals, oldest first.
func fillMonth(t *testing.T, app *apptest.App, email string) []meal.Meal {
	t.Helper()
	ctx := context.Background()
	owner := localenv.Subject(email)
	store := photo.NewStore(app.Env.S3, "test-photos")
	photos, err := browserPhotos()
	if err != nil {
		t.Fatal(err)
	}
	thumbs, display := photos.thumbs, photos.display
	notes := []string{
		"Porridge with blueberries",
		"Lentil soup with bread, and a green salad with lemon, olive oil and far too much parmesan on top of it",
		"Vegetable curry",
		"",
		"Pneumonoultramicroscopicsilicovolcanoconiosis-free-zone-sandwich-with-extra-long-words",
	}
	var ms []meal.Meal
	for i := 0; i < 90; i++ {
		day := i/3 + 1
		h := []int{8, 12, 19}[i%3]
		m := meal.Meal{
			UserID: owner, Date: fmt.Sprintf("%s-%02d", browserMonth, day),
			Time: fmt.Sprintf("%02d:%02d:00", h, i%60), Kind: []meal.Kind{meal.Breakfast, meal.Lunch, meal.Dinner}[i%3],
			Notes: notes[i%len(notes)],
			ID:    fmt.Sprintf("%02d%02d00-%06x", h, i%60, i),
		}
		if i%4 != 3 {
			k := decimalTenths(3000 + 517*i%6000)
			p, c, f := decimalTenths(150+i), decimalTenths(400+3*i), decimalTenths(120+i%7)
			m.Kcal, m.ProteinG, m.CarbsG, m.FatG = &k, &p, &c, &f
		}
		m.PhotoV, m.PhotoW, m.PhotoH, m.ThumbW, m.ThumbH = photo.Version(1_700_000_000_000_000_000+int64(i)), 640, 480, 480, 360
		keys := m.PhotoKeys()
		if err := store.Put(ctx, keys[0], display, m.PhotoV); err != nil {
			t.Fatal(err)
		}
		if err := store.Put(ctx, keys[1], thumbs[(i+i/3)%len(thumbs)], m.PhotoV); err != nil {
			t.Fatal(err)
		}
		m.CreatedAt, m.UpdatedAt = time.Now(), time.Now()
		if err := app.Meals.Create(ctx, &m); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	for _, e := range []string{"ana.lima@example.com", "a.very.long.email.address.for.testing@clinic.example.org"} {
		if err := app.Users.Create(ctx, &user.User{ID: localenv.Subject(e), Email: e, Role: user.RoleOwner, Status: user.StatusActive, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	return ms
}

func decimalTenths(n int) meal.Number {
	v, err := meal.ParseNumber(strconv.Itoa(n/10)+"."+strconv.Itoa(n%10), meal.MaxKcal)
	if err != nil || v == nil {
		panic(fmt.Sprint(n, err))
	}
	return *v
}

// pageReport is what pageChecks finds on a page.
type pageReport struct {
	Width, ScrollWidth int
	// Wide are elements reaching past the viewport's edges; Small are
	// controls under 44×44 px; Images are img elements without width,
	// height or alt; Fonts are form fields with text under 16 px.
	Wide, Small, Images, Fonts []string
	// Boxes are checkboxes and radio buttons drawn under 20 px (their
	// label wrapping squeezed them), but the segmented scales', which
	// draw their label instead.
	Boxes    []string
	Controls int
}

// pageChecks opens every details element (so that what they hold is
// measured too) and reports, for the current viewport: elements wider
// than it, controls (a, button, input, select, textarea, summary,
// label.chip) smaller than 44×44 CSS px, images without width, height
// and alt, and form fields under 16 px. A checkbox, radio button or file
// input is measured by its label, which is what a finger hits; elements
// not shown (hidden, display: none, the visually-hidden class) are not
// measured.
const pageChecks = `(() => {
	document.querySelectorAll("details").forEach(d => d.open = true);
	const W = document.documentElement.clientWidth;
	const name = el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
		(typeof el.className === "string" && el.className.trim() ? "." + el.className.trim().split(/\s+/).join(".") : "") +
		" \"" + (el.textContent || el.value || "").trim().replace(/\s+/g, " ").slice(0, 40) + "\"";
	const shown = el => {
		if (el.closest("[hidden], .visually-hidden")) return false;
		const cs = getComputedStyle(el);
		if (cs.display === "none" || cs.visibility === "hidden") return false;
		const r = el.getBoundingClientRect();
		return r.width > 0 && r.height > 0;
	};
	// Inside a box that scrolls or clips sideways (the printable week's
	// table, a totals line cut with an ellipsis), an element may be wider:
	// the page itself does not widen.
	const inScroller = el => {
		for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
			if (["auto", "scroll", "hidden", "clip"].includes(getComputedStyle(a).overflowX)) return true;
		}
		return false;
	};
	const out = {Width: W, ScrollWidth: document.documentElement.scrollWidth, Wide: [], Small: [], Images: [], Fonts: [], Boxes: [], Controls: 0};
	for (const el of document.querySelectorAll("body *")) {
		if (!shown(el) || inScroller(el)) continue;
		const r = el.getBoundingClientRect();
		if (r.right > W + 0.5 || r.left < -0.5) out.Wide.push(name(el) + " spans " + Math.round(r.left) + " to " + Math.round(r.right));
	}
	for (const el of document.querySelectorAll("a, button, input, select, textarea, summary, label.chip")) {
		if (el.type === "hidden") continue;
		let target = el;
		if (el.tagName === "INPUT" && ["checkbox", "radio", "file"].includes(el.type)) {
			target = (el.labels && el.labels[0]) || el.closest("label") || el;
		}
		if (!shown(target)) continue;
		out.Controls++;
		const r = target.getBoundingClientRect();
		if (r.width < 44 || r.height < 44) out.Small.push(name(el) + " is " + r.width.toFixed(1) + "×" + r.height.toFixed(1));
	}
	for (const el of document.querySelectorAll("input[type=checkbox], input[type=radio]")) {
		if (!shown(el) || el.closest(".segments")) continue;
		const r = el.getBoundingClientRect();
		if (r.width < 19.5 || r.height < 19.5) out.Boxes.push(name(el.labels && el.labels[0] || el) + " box is " + r.width.toFixed(1) + "×" + r.height.toFixed(1));
	}
	for (const img of document.querySelectorAll("img")) {
		if (!img.hasAttribute("alt") || !(+img.getAttribute("width") > 0) || !(+img.getAttribute("height") > 0)) out.Images.push(img.outerHTML.slice(0, 120));
	}
	for (const el of document.querySelectorAll("input, select, textarea")) {
		if (el.type === "hidden" || !shown(el.labels && el.labels[0] && el.type === "file" ? el.labels[0] : el)) continue;
		const fs = parseFloat(getComputedStyle(el).fontSize);
		if (fs < 16) out.Fonts.push(name(el) + " has " + fs + " px text");
	}
	return out;
})()`

// browser starts headless Chromium for t (1280×800, no scrollbars, so
// widths measure the page) and returns a tab's context.
func browser(t *testing.T) context.Context {
	return apptest.Browser(t, 1280, 800, 6*time.Minute, chromedp.Flag("hide-scrollbars", true))
}

// phone and desktop are the two viewports: a 390×844 phone (touch, 3×
// pixels) and a 1280×800 desktop.
func phone() chromedp.Action[chromedp.Void] {
	return chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulateScale(3), chromedp.EmulatePortrait)
}

func desktop() chromedp.Action[chromedp.Void] {
	return chromedp.EmulateViewport(1280, 800)
}

// colorScheme emulates prefers-color-scheme ("light" or "dark").
func colorScheme(v string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}},
		})
		return err
	})
}

// screenshots is where the browser tests write what they saw: the
// directory NDIRO_SCREENSHOTS names (make screenshots), with whole pages,
// else a temporary one, with the first screen of each page only (a whole
// page at 3× pixels takes a while to encode).
func screenshots(t *testing.T) (dir string, fullPages bool) {
	if dir := os.Getenv("NDIRO_SCREENSHOTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir, true
	}
	return t.TempDir(), false
}

// signInBrowser signs the browser in as email through the local sign-in
// page and waits for the diary.
func signInBrowser(t *testing.T, ctx context.Context, app *apptest.App, email string) {
	t.Helper()
	if err := chromedp.Do(ctx, app.BrowserSignIn(email)); err != nil {
		t.Fatalf("sign in as %s: %v", email, err)
	}
}

// TestBrowserPages opens every main page (the diary month, a meal, the
// add form, the account page, share links, the admin's users and invites)
// in headless Chromium as a phone (390×844, touch, 3× pixels) and as a
// desktop (1280×800). On the phone: no element reaches past the screen's
// edge, every control is at least 44×44 px, every image has its width,
// height and alt, form fields use 16 px text, and the keyboard focus is
// visible; the month shows three square thumbnails a row, notes clamped to
// two lines and each day's totals on one; the meal page is reached by tapping a thumbnail; the dark
// scheme gives a dark page. On the desktop: nothing wider than the
// window, and the days use the width. Without JavaScript, a meal is added
// and a time zone saved. Screenshots of every page at both
// sizes (and the phone in dark) go to NDIRO_SCREENSHOTS (make
// screenshots).
func TestBrowserPages(t *testing.T) {
	apptest.NeedBrowser(t)
	var tr traffic
	app := apptest.New(t, apptest.Options{Wrap: tr.wrap})
	ms := fillMonth(t, app, "admin@example.com")
	owner := app.Client()
	owner.SignIn("admin@example.com")
	tok := owner.CreateShare(url.Values{"label": {"Dr. Rossi, dietitian"}, "from": {"2026-09-01"}, "to": {"2026-09-14"}, "expiry": {"30"}, "notes": {"1"}, "numbers": {"1"}, "comments": {"1"}})
	shared := ms[13] // 5 Sep, lunch
	if resp := app.Client().PostForm("/s/"+tok+"/meals/"+shared.Date+"/"+shared.ID+"/comments", url.Values{"text": {"Lovely plate. Could you add a portion of greens to lunches this week?"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("comment = %d", resp.StatusCode)
	}
	owner.CreateInvite(url.Values{"email": {"friend@example.com"}, "role": {"owner"}})
	dir, fullPages := screenshots(t)
	ctx := browser(t)
	if err := chromedp.Do(ctx, phone()); err != nil {
		t.Fatal(err)
	}
	signInBrowser(t, ctx, app, "admin@example.com")

	last := ms[len(ms)-1]
	pages := []struct{ name, path string }{
		{"diary-month", "/meals?month=" + browserMonth},
		{"meal", last.DetailURL()},
		{"add", "/meals/new"},
		{"edit", last.DetailURL() + "/edit"},
		{"account", "/account"},
		{"search", "/meals/search?q=lentil"},
		{"shares", "/shares"},
		{"admin-users", "/admin/users"},
		{"admin-invites", "/admin/invites"},
		{"shared", "/s/" + tok},
		// Checked on the phone only:
		{"shared-week", "/s/" + tok + "/week?start=2026-09-07"},
		{"admin-shares", "/admin/shares"},
		{"admin-monitor", "/admin/monitor"},
		{"account-delete", "/account/delete"},
		{"moved-meal", "/meals/2026-09-02/" + last.ID},
	}
	shoot := func(name string, full bool) {
		t.Helper()
		shot := chromedp.CaptureScreenshot()
		if full && fullPages {
			shot = chromedp.FullScreenshot(100)
		}
		png, err := chromedp.Run(ctx, shot)
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(size, name string, strict bool) {
		t.Helper()
		r, err := chromedp.Run(ctx, chromedp.Evaluate[pageReport](pageChecks))
		if err != nil {
			t.Fatalf("%s %s: %v", size, name, err)
		}
		if r.ScrollWidth > r.Width {
			t.Errorf("%s %s scrolls sideways: %d px wide in a %d px viewport", size, name, r.ScrollWidth, r.Width)
		}
		for _, w := range r.Wide {
			t.Errorf("%s %s: %s, past the %d px viewport", size, name, w, r.Width)
		}
		for _, img := range r.Images {
			t.Errorf("%s %s: image without width, height or alt: %s", size, name, img)
		}
		if !strict {
			return
		}
		if r.Controls < 5 {
			t.Errorf("%s %s: only %d controls measured", size, name, r.Controls)
		}
		for _, s := range r.Small {
			t.Errorf("%s %s: %s, under 44×44 px", size, name, s)
		}
		for _, f := range r.Fonts {
			t.Errorf("%s %s: %s (iOS zooms into fields under 16 px)", size, name, f)
		}
		for _, b := range r.Boxes {
			t.Errorf("%s %s: %s, under 20×20 px", size, name, b)
		}
	}
	// within runs steps with a deadline of their own, so a page that never
	// shows what a step waits for fails in seconds, not at the test's end.
	within := func(steps ...chromedp.Action[chromedp.Void]) error {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		return chromedp.Do(sctx, steps...)
	}
	open := func(path string) {
		t.Helper()
		if err := within(chromedp.Navigate(app.URL+path), chromedp.WaitVisible(chromedp.CSS(`main h1`))); err != nil {
			t.Fatalf("open %s: %v", path, err)
		}
	}

	// The phone.
	for _, p := range pages {
		open(p.path)
		shoot("390-"+p.name, p.name != "diary-month" && p.name != "shared")
		check("390", p.name, true)
	}

	// On the phone's month: notes clamped to two lines, each day's totals
	// on one, three thumbnails a row, square.
	open("/meals?month=" + browserMonth)
	type grid struct {
		NotesLines, TotalsLines, PerRow float64
		Square                          bool
	}
	g, err := chromedp.Run(ctx, chromedp.Evaluate[grid](`(() => {
		const lines = el => el.getBoundingClientRect().height / parseFloat(getComputedStyle(el).lineHeight);
		const notes = [...document.querySelectorAll("li.meal .notes")].map(lines);
		const totals = [...document.querySelectorAll(".day-totals")].map(lines);
		const imgs = [...document.querySelectorAll("#day-2026-09-30 img")].map(i => i.getBoundingClientRect());
		return {NotesLines: Math.max(...notes), TotalsLines: Math.max(...totals),
			PerRow: new Set(imgs.map(r => Math.round(r.top))).size === 1 ? imgs.length : 0,
			Square: imgs.every(r => Math.abs(r.width - r.height) < 1)};
	})()`))
	if err != nil || g.NotesLines > 2.05 || g.TotalsLines > 1.05 || g.PerRow != 3 || !g.Square {
		t.Errorf("phone grid: notes up to %.2f lines, totals up to %.2f lines, %v thumbnails a row, square %v (%v); want 2, 1, 3, square", g.NotesLines, g.TotalsLines, g.PerRow, g.Square, err)
	}

	// From a thumbnail to its meal's page, by touch.
	first := ms[len(ms)-3] // the newest day's breakfast, top left of the grid
	if err := within(
		chromedp.Tap(chromedp.CSS(`#meal-`+first.ID+` img`)),
		chromedp.WaitVisible(chromedp.CSS(`article.detail img.photo`)),
	); err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		t.Fatalf("tap the thumbnail: %v; the browser shows %s", err, loc)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || loc != app.URL+first.DetailURL() {
		t.Errorf("tapping the thumbnail opened %q (%v), want %s", loc, err, first.DetailURL())
	}

	// A new share link: its card is in view under the sticky flash,
	// highlighted, and says it is new.
	open("/shares")
	if err := within(
		chromedp.SendKeys(chromedp.CSS(`#label`), "Coach"),
		chromedp.Click(chromedp.CSS(`#share-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`li.share:target .created-note`)),
	); err != nil {
		t.Fatalf("create a share link: %v", err)
	}
	type created struct {
		Flash, Note, Label, CardOutline string
		FlashTop, FlashBottom, CardTop  float64
		NoteTop, NoteBottom, Viewport   float64
	}
	cr, err := chromedp.Run(ctx, chromedp.Evaluate[created](`(() => {
		const li = document.querySelector("li.share:target"), f = document.querySelector(".flash"), n = li.querySelector(".created-note");
		return {Flash: f.textContent.trim(), Note: n.textContent.trim(), Label: li.querySelector(".share-label").textContent,
			FlashTop: f.getBoundingClientRect().top, FlashBottom: f.getBoundingClientRect().bottom, CardTop: li.getBoundingClientRect().top,
			NoteTop: n.getBoundingClientRect().top, NoteBottom: n.getBoundingClientRect().bottom,
			CardOutline: getComputedStyle(li).outlineStyle, Viewport: innerHeight};
	})()`))
	if err != nil || cr.Label != "Coach" || !strings.HasPrefix(cr.Flash, "Link created.") || cr.Note != "New link: copy it below and send it." {
		t.Errorf("after creating a link: %+v (%v)", cr, err)
	}
	if cr.FlashTop < 0 || cr.FlashBottom > cr.CardTop || cr.NoteTop < 0 || cr.NoteBottom > cr.Viewport || cr.CardOutline != "solid" {
		t.Errorf("the new link's card at %.0f px (note %.0f–%.0f, outline %s) and the flash at %.0f–%.0f px, want both in view, the card highlighted below the flash", cr.CardTop, cr.NoteTop, cr.NoteBottom, cr.CardOutline, cr.FlashTop, cr.FlashBottom)
	}

	// The keyboard focus is visible.
	open("/meals/new")
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
		t.Fatal(err)
	}
	focus, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const e = document.activeElement, s = getComputedStyle(e); return e.tagName + " " + s.outlineStyle + " " + s.outlineWidth; })()`))
	if err != nil || !strings.HasPrefix(focus, "A solid ") || strings.HasSuffix(focus, " 0px") {
		t.Errorf("the first Tab focuses %q (%v), want a link with a solid outline", focus, err)
	}
	// It is the skip link, shown while focused, leading to the content.
	type skip struct {
		Text, Href  string
		Top, Bottom float64
	}
	sk, err := chromedp.Run(ctx, chromedp.Evaluate[skip](`(() => { const e = document.activeElement, r = e.getBoundingClientRect(); return {Text: e.textContent.trim(), Href: e.getAttribute("href"), Top: r.top, Bottom: r.bottom}; })()`))
	if err != nil || sk.Text != "Skip to content" || sk.Href != "#main" || sk.Top < 0 || sk.Bottom > 100 {
		t.Errorf("the first Tab focuses %+v (%v), want the skip link to #main, in view at the top", sk, err)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("main#main").length`)); n != 1 {
		t.Error("the skip link's target is not the page's main")
	}

	// Dark: the same pages on a dark page.
	if err := chromedp.Do(ctx, colorScheme("dark")); err != nil {
		t.Fatal(err)
	}
	for _, p := range pages[:5] {
		open(p.path)
		shoot("390-dark-"+p.name, false)
		bg, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`getComputedStyle(document.body).backgroundColor.match(/[\d.]+/g).slice(0, 3).map(Number)`))
		if err != nil || len(bg) != 3 || luminance(bg) > 0.1 {
			t.Errorf("dark %s: body background %v (%v), want a dark colour", p.name, bg, err)
		}
		fg, _ := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`getComputedStyle(document.querySelector("main h1")).color.match(/[\d.]+/g).slice(0, 3).map(Number)`))
		if len(fg) != 3 || luminance(fg) < 0.5 {
			t.Errorf("dark %s: heading colour %v, want a light one", p.name, fg)
		}
	}
	if err := chromedp.Do(ctx, colorScheme("light")); err != nil {
		t.Fatal(err)
	}
	open("/meals")
	bg, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`getComputedStyle(document.body).backgroundColor.match(/[\d.]+/g).slice(0, 3).map(Number)`))
	if err != nil || luminance(bg) < 0.8 {
		t.Errorf("light: body background %v (%v), want a light colour", bg, err)
	}

	// The desktop.
	if err := chromedp.Do(ctx, desktop()); err != nil {
		t.Fatal(err)
	}
	for _, p := range pages[:10] { // the rest are checked on the phone only
		open(p.path)
		shoot("1280-"+p.name, p.name != "diary-month" && p.name != "shared")
		check("1280", p.name, false)
	}
	open("/meals?month=" + browserMonth)
	cols, err := chromedp.Run(ctx, chromedp.Evaluate[int](`new Set([...document.querySelectorAll("section.day")].slice(0, 4).map(s => Math.round(s.getBoundingClientRect().left))).size`))
	if err != nil || cols < 2 {
		t.Errorf("the desktop diary lays days out in %d columns (%v), want at least 2", cols, err)
	}
	thumb, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.querySelector("section.day img").getBoundingClientRect().width`))
	if err != nil || thumb < 150 {
		t.Errorf("desktop thumbnails are %.0f px wide (%v), want at least 150", thumb, err)
	}

	// Without JavaScript: a meal is added with the form as the server
	// filled it, and a time zone is saved by typing a city.
	noJS := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	})
	if err := within(noJS, phone()); err != nil {
		t.Fatal(err)
	}
	open("/meals/new")
	if err := within(
		chromedp.SendKeys(chromedp.CSS(`#notes`), "typed without JavaScript"),
		chromedp.Submit(chromedp.CSS(`form.meal-form`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)),
	); err != nil {
		t.Fatalf("add a meal without JavaScript: %v", err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`[...document.querySelectorAll("li.meal .notes")].filter(n => n.textContent === "typed without JavaScript").length`)); err != nil || n != 1 {
		t.Errorf("the meal added without JavaScript shows %d times (%v), want once", n, err)
	}
	open("/account")
	if err := within(
		chromedp.SetValue(chromedp.CSS(`#tz`), "Berlin"),
		chromedp.Submit(chromedp.CSS(`#tz`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)),
	); err != nil {
		t.Fatalf("save a time zone without JavaScript: %v", err)
	}
	if u, err := app.Users.Get(context.Background(), localenv.Subject("admin@example.com")); err != nil || u.TimeZone != "Europe/Berlin" {
		t.Errorf("time zone saved without JavaScript = %v (%v), want Europe/Berlin", u, err)
	}
	shoot("390-nojs-account", false)

	// A share's recipient: the overview, a week and a meal, at both sizes
	// and in both colour schemes, checked as every page is.
	js := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: false})
		return err
	})
	if err := within(js); err != nil {
		t.Fatal(err)
	}
	sharePages := []struct{ name, path string }{
		{"shared-overview", "/s/" + tok},
		{"shared-week", "/s/" + tok + "/week?start=2026-09-01"},
		{"shared-meal", "/s/" + tok + "/meals/" + shared.Date + "/" + shared.ID},
	}
	for _, size := range []struct {
		name   string
		strict bool
		set    chromedp.Action[chromedp.Void]
	}{{"390", true, phone()}, {"1280", false, desktop()}} {
		for _, scheme := range []string{"light", "dark"} {
			if err := within(size.set, colorScheme(scheme)); err != nil {
				t.Fatal(err)
			}
			for _, p := range sharePages {
				open(p.path)
				name := size.name + "-" + p.name
				if scheme == "dark" {
					name = size.name + "-dark-" + p.name
				}
				shoot(name, true)
				check(size.name+" "+scheme, p.name, size.strict && p.name != "shared-week")
			}
		}
	}
	t.Logf("screenshots in %s", dir)
}

// luminance is the relative luminance (0 black to 1 white) of an sRGB
// colour given as 0–255 channels.
func luminance(rgb []float64) float64 {
	lin := func(c float64) float64 {
		c /= 255
		if c <= 0.04045 {
			return c / 12.92
		}
		return math.Pow((c+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(rgb[0]) + 0.7152*lin(rgb[1]) + 0.0722*lin(rgb[2])
}

// FirstScreenBudget is the most a phone may download to show the first
// screen of a full month, everything included (page, styles, script,
// icons, photos).
const FirstScreenBudget = 600 << 10

// TestBrowserFirstScreen opens a 90-meal month with photos on a phone with
// an empty cache and counts every byte the app sends until the network is
// quiet: at most FirstScreenBudget. Thumbnails below the first screen wait
// until they are scrolled near. A reload then fetches the page and
// nothing else: no photo, no style sheet, no script.
func TestBrowserFirstScreen(t *testing.T) {
	apptest.NeedBrowser(t)
	var tr traffic
	app := apptest.New(t, apptest.Options{Wrap: tr.wrap})
	fillMonth(t, app, "admin@example.com")
	ctx := browser(t)
	if err := chromedp.Do(ctx, phone()); err != nil {
		t.Fatal(err)
	}
	signInBrowser(t, ctx, app, "admin@example.com")
	clear := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, network.ClearBrowserCache, cdp.Empty{})
		return err
	})
	month := app.URL + "/meals?month=" + browserMonth
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank"), clear); err != nil {
		t.Fatal(err)
	}
	tr.quiet(t, 300*time.Millisecond)
	tr.reset()
	if err := chromedp.Do(ctx, chromedp.Navigate(month)); err != nil {
		t.Fatal(err)
	}
	hits := tr.quiet(t, 1500*time.Millisecond)
	total, photos := 0, 0
	var list []string
	for _, h := range hits {
		total += h.bytes
		if strings.HasPrefix(h.path, "/photo/") {
			photos++
		}
		list = append(list, fmt.Sprintf("%s %d", h.path, h.bytes))
	}
	t.Logf("first screen: %d requests, %d photos, %d bytes (%.0f KB)", len(hits), photos, total, float64(total)/1024)
	if total > FirstScreenBudget {
		t.Errorf("the first screen of a 90-meal month transferred %d bytes, over the %d budget:\n%s", total, FirstScreenBudget, strings.Join(list, "\n"))
	}
	if photos < 6 || photos >= 90 {
		t.Errorf("the first screen loaded %d thumbnails, want those of the first screen and not all 90", photos)
	}
	inView, err := chromedp.Run(ctx, chromedp.Evaluate[int](`[...document.querySelectorAll("main img")].filter(i => i.getBoundingClientRect().top < innerHeight && i.complete && i.naturalWidth > 0).length`))
	if err != nil || inView < 6 {
		t.Errorf("%d thumbnails shown on the first screen (%v), want its two days' at least", inView, err)
	}

	// A reload asks for the page only. The service worker keeps the Add
	// form and the page's files in the background (warm), fetching what
	// the HTTP cache does not hold; on a loaded machine that can come
	// after the first screen's quiet spell, so wait for it to be done.
	if err := chromedp.Do(ctx, warmed); err != nil {
		t.Fatalf("the service worker did not keep the Add form: %v; %s", err, workerState(ctx))
	}
	tr.quiet(t, 300*time.Millisecond)
	tr.reset()
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, h := range tr.quiet(t, 1500*time.Millisecond) {
		paths = append(paths, h.path)
	}
	if strings.Join(paths, " ") != "/meals" {
		t.Errorf("a reload requested %q, want the page /meals only", paths)
	}
}
