package share_test

import (
	"fmt"
	"image/color"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/go-chi/chi/v5/middleware"

	"ndiro/internal/apptest"
)

// photoLog records the status of every share photo request that reaches
// the server.
type photoLog struct {
	mu       sync.Mutex
	statuses []int
}

func (l *photoLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/s/") || !strings.Contains(r.URL.Path, "/photo/") {
			next.ServeHTTP(w, r)
			return
		}
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		l.mu.Lock()
		l.statuses = append(l.statuses, ww.Status())
		l.mu.Unlock()
	})
}

// since returns the statuses recorded after the first n.
func (l *photoLog) since(n int) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.statuses[n:]...)
}

func (l *photoLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.statuses)
}

// TestBrowserRevokeStopsPhotos drives headless Chromium as a recipient on a
// clinic PC: open the link and let its photos load, tap one to view it,
// then the owner revokes the link. Reloading the photo reaches the server
// (the browser's cached copy must be revalidated) and is refused, and so
// is every thumbnail the browser had cached; the page itself is gone.
func TestBrowserRevokeStopsPhotos(t *testing.T) {
	apptest.NeedBrowser(t)
	t.Parallel()
	var log photoLog
	app := apptest.New(t, apptest.Options{Wrap: log.wrap})
	owner := signUp(t, app, ownerEmail, ownerName)
	addMeal(t, app, owner, ownerEmail, "2026-09-02", "12:30", "lunch", jpegOf(t, 64, 48, color.RGBA{200, 40, 40, 255}))
	addMeal(t, app, owner, ownerEmail, "2026-09-03", "19:00", "dinner", jpegOf(t, 64, 48, color.RGBA{40, 40, 200, 255}))
	tok := createShare(t, owner, shareForm())

	ctx := apptest.Browser(t, 412, 915, 2*time.Minute)

	// 1. The link, with both thumbnails loaded.
	loaded := poll(`(() => { const i = [...document.querySelectorAll("main img")]; return i.length === 2 && i.every(x => x.complete && x.naturalWidth > 0); })()`)
	if err := chromedp.Do(ctx, chromedp.Navigate(app.URL+"/s/"+tok), loaded); err != nil {
		t.Fatalf("share page: %v", err)
	}
	if got := log.since(0); fmt.Sprint(got) != "[200 200]" {
		t.Fatalf("thumbnail requests = %v, want two 200s", got)
	}
	thumbs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("main img")].map(i => i.src)`))
	if err != nil {
		t.Fatal(err)
	}

	// 2. Open a photo's display size by its address.
	isImage := poll(`document.contentType === "image/jpeg"`)
	n := log.len()
	display, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("li.cell img").src.replace("&size=thumb", "")`))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(display), isImage); err != nil {
		t.Fatalf("open the photo: %v", err)
	}
	// While the link holds, a reload asks the server and gets a 304.
	if err := chromedp.Do(ctx, chromedp.Reload(), isImage); err != nil {
		t.Fatalf("reload the photo: %v", err)
	}
	if got := log.since(n); fmt.Sprint(got) != "[200 304]" {
		t.Fatalf("photo requests for open and reload = %v, want [200 304]", got)
	}

	// 3. The owner revokes the link.
	if resp := owner.PostForm("/shares/"+tok+"/revoke", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke = %d, want 303", resp.StatusCode)
	}

	// 4. Reload the photo: the request reaches the server and is refused;
	// the browser shows the refusal, not its cached copy.
	n = log.len()
	if err := chromedp.Do(ctx, chromedp.Reload(), poll(`document.contentType === "text/html"`)); err != nil {
		t.Fatalf("reload the photo after revoke: %v", err)
	}
	if got := log.since(n); fmt.Sprint(got) != "[404]" {
		t.Errorf("photo requests on reload after revoke = %v, want [404]", got)
	}
	h1, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("h1")))
	if err != nil {
		t.Fatal(err)
	}
	if h1 != "Link not found" {
		t.Errorf("after revoke the photo tab shows %q, want Link not found", h1)
	}

	// 5. Back to the link: the page is not kept (no-store) and is refused;
	// the cached thumbnails, asked for again, reach the server and are
	// refused too.
	n = log.len()
	if err := chromedp.Do(ctx, chromedp.Navigate(app.URL+"/s/"+tok)); err != nil {
		t.Fatal(err)
	}
	imgs, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("img").length`))
	if err != nil {
		t.Fatal(err)
	}
	if imgs != 0 {
		t.Errorf("revoked link's page shows %d images, want 0", imgs)
	}
	js := fmt.Sprintf(`Promise.all(%s.map(u => fetch(u).then(r => r.status)))`, jsList(thumbs))
	statuses, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(statuses) != "[404 404]" {
		t.Errorf("browser's fetches of cached thumbnails = %v, want [404 404]", statuses)
	}
	if got := log.since(n); fmt.Sprint(got) != "[404 404]" {
		t.Errorf("thumbnail requests reaching the server after revoke = %v, want [404 404]", got)
	}
}

// poll waits up to 20 s, checking every 50 ms, until the JavaScript
// expression is truthy.
func poll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(20*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))
}

// jsList writes ss as a JavaScript array literal.
func jsList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ",") + "]"
}

// TestBrowserWeekPrintsOnOnePage prints a full week (four meals a day,
// each with a photo, a note and numbers) with Chromium's print-to-PDF,
// honouring the page's own print CSS: one landscape page.
func TestBrowserWeekPrintsOnOnePage(t *testing.T) {
	apptest.NeedBrowser(t)
	t.Parallel()
	app := apptest.New(t)
	owner := signUp(t, app, ownerEmail, ownerName)
	img := jpegOf(t, 64, 48, color.RGBA{120, 90, 60, 255})
	for day := 1; day <= 7; day++ {
		date := fmt.Sprintf("2026-09-%02d", day)
		for i, kind := range []string{"breakfast", "lunch", "dinner", "snack"} {
			addMeal(t, app, owner, ownerEmail, date, fmt.Sprintf("%02d:00", 8+4*i), kind, img,
				"notes", "A plate of rice, beans and greens with a little olive oil, eaten slowly at the table.", "kcal", "512.5", "protein_g", "20")
		}
	}
	tok := createShare(t, owner, shareForm())

	ctx := apptest.Browser(t, 1280, 800, 2*time.Minute)
	loaded := poll(`[...document.images].length === 28 && [...document.images].every(i => i.complete && i.naturalWidth > 0)`)
	if err := chromedp.Do(ctx, chromedp.Navigate(app.URL+"/s/"+tok+"/week?start=2026-09-01"), loaded); err != nil {
		t.Fatalf("week page: %v", err)
	}
	css := true
	res, err := chromedp.Call(ctx, page.PrintToPDF, page.PrintToPDFParams{PreferCSSPageSize: &css})
	if err != nil {
		t.Fatal(err)
	}
	pages := regexp.MustCompile(`/Type\s*/Page[^s]`).FindAll(res.Data, -1)
	if len(pages) != 1 {
		t.Errorf("the printed week has %d pages, want 1", len(pages))
	}
	// The overview (two weeks, the second empty) prints its week grids,
	// one landscape page each, and so does the print page.
	for _, p := range []string{"/s/" + tok, "/s/" + tok + "/print"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(app.URL+p), chromedp.Evaluate[chromedp.Void](`Promise.all([...document.images].map(i => i.loading = "eager"))`), loaded); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		res, err := chromedp.Call(ctx, page.PrintToPDF, page.PrintToPDFParams{PreferCSSPageSize: &css})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(regexp.MustCompile(`/Type\s*/Page[^s]`).FindAll(res.Data, -1)); n != 2 {
			t.Errorf("%s prints on %d pages, want 2 (a page a week)", strings.Replace(p, tok, "{token}", 1), n)
		}
	}
	// A4 landscape: 842 × 595 points.
	box := regexp.MustCompile(`/MediaBox\s*\[\s*0\s+0\s+([\d.]+)\s+([\d.]+)`).FindSubmatch(res.Data)
	if box == nil {
		t.Fatal("no MediaBox in the PDF")
	}
	w, _ := strconv.ParseFloat(string(box[1]), 64)
	h, _ := strconv.ParseFloat(string(box[2]), 64)
	if w < 841 || w > 843 || h < 594 || h > 596 {
		t.Errorf("printed page is %.0f × %.0f pt, want A4 landscape 842 × 595", w, h)
	}
}
