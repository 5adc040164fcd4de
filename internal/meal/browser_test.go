package meal_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"ndiro/internal/apptest"
	"ndiro/internal/meal"
)

// TestBrowserPhotoCaching drives headless Chromium through the app: sign
// in, add a meal with phone-portrait-small.jpg (stored landscape, EXIF
// orientation 6), open the month page, reload it twice. The second reload
// must send no photo request to the server (the thumbnail is immutable for
// a year), and the thumbnail must stand upright.
func TestBrowserPhotoCaching(t *testing.T) {
	apptest.NeedBrowser(t)
	t.Parallel()
	ctx := apptest.Browser(t, 412, 915, 2*time.Minute)
	var photoRequests atomic.Int64
	app := apptest.New(t, apptest.Options{Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/photo/") {
				photoRequests.Add(1)
			}
			next.ServeHTTP(w, r)
		})
	}})

	photoFile := filepath.Join(apptest.PhotosDir(t), "phone-portrait-small.jpg")
	if _, err := os.Stat(photoFile); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Do(ctx,
		app.BrowserSignIn(admin),
		chromedp.Navigate(app.URL+"/meals/new"),
		chromedp.WaitReady(chromedp.CSS(`#photo`)),
		chromedp.SetUploadFiles(chromedp.CSS(`#photo`), []string{photoFile}),
		chromedp.SendKeys(chromedp.CSS(`#notes`), "browser lunch"),
		// A click, so the page script uploads it with its progress bar.
		chromedp.Click(chromedp.CSS(`form.meal-form button[type=submit]`)),
		// Date and time were left at the device clock, so the page script
		// filed the meal at the photo's capture time; Save opens its month.
		chromedp.WaitVisible(chromedp.CSS(`.flash`)),
	)
	if err != nil {
		t.Fatalf("sign in and add a meal: %v", err)
	}
	ms := allMeals(t, app, admin)
	if len(ms) != 1 || !ms[0].HasPhoto() {
		t.Fatalf("meals after the browser's upload: %+v", ms)
	}
	month := app.URL + "/meals?month=" + ms[0].Date[:7]
	thumb := `#meal-` + ms[0].ID + ` img`

	loaded := func() chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](`(() => { const i = document.querySelector("`+thumb+`"); return i && i.complete && i.naturalWidth > 0; })()`, chromedp.WithPollingTimeout(20*time.Second))
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(month), loaded()); err != nil {
		t.Fatalf("month page: %v", err)
	}
	if n := photoRequests.Load(); n == 0 {
		t.Fatal("the first load of the month page made no photo request")
	}
	if err := chromedp.Do(ctx, chromedp.Reload(), loaded()); err != nil {
		t.Fatalf("first reload: %v", err)
	}
	photoRequests.Store(0)
	if err := chromedp.Do(ctx, chromedp.Reload(), loaded()); err != nil {
		t.Fatalf("second reload: %v", err)
	}
	if n := photoRequests.Load(); n != 0 {
		t.Errorf("second reload made %d photo requests, want 0", n)
	}

	checkUpright(t, ctx, thumb)
}

// checkUpright checks the image at selector as the browser displays it:
// taller than wide, the light card top-left and the other corners dark
// (testdata/photos/README.md).
func checkUpright(t *testing.T, ctx context.Context, selector string) {
	t.Helper()
	type result struct {
		W, H   int
		Card   float64
		Others []float64
	}
	js := `(() => {
		const img = document.querySelector("` + selector + `");
		const c = document.createElement("canvas");
		c.width = img.naturalWidth; c.height = img.naturalHeight;
		const g = c.getContext("2d"); g.drawImage(img, 0, 0);
		const box = (x0, x1, y0, y1) => {
			const d = g.getImageData(x0*c.width, y0*c.height, (x1-x0)*c.width, (y1-y0)*c.height).data;
			let s = 0; for (let i = 0; i < d.length; i += 4) s += 0.299*d[i] + 0.587*d[i+1] + 0.114*d[i+2];
			return s / (d.length / 4);
		};
		return {W: c.width, H: c.height, Card: box(.06,.20,.05,.12),
			Others: [box(.80,.94,.05,.12), box(.06,.20,.88,.95), box(.80,.94,.88,.95)]};
	})()`
	res, err := chromedp.Run(ctx, chromedp.Evaluate[result](js))
	if err != nil {
		t.Fatal(err)
	}
	if res.H <= res.W {
		t.Errorf("%s displayed %dx%d, want portrait", selector, res.W, res.H)
	}
	if res.Card <= 150 {
		t.Errorf("%s card box luma %.0f, want > 150 (image not upright)", selector, res.Card)
	}
	for i, l := range res.Others {
		if l >= 110 {
			t.Errorf("%s corner %d luma %.0f, want < 110 (image turned or mirrored)", selector, i, l)
		}
	}
}

// TestBrowserWideGamut uploads wide-gamut-p3.jpg (Display P3 pixels and
// profile) through the add form in headless Chromium, opens its stored
// thumbnail and reads the screen: each swatch's centre must show within a
// few levels of its colour-managed sRGB value (testdata/photos/README.md),
// not the raw values a copy without its profile shows, such as
// (234,51,35) for the red.
func TestBrowserWideGamut(t *testing.T) {
	apptest.NeedBrowser(t)
	t.Parallel()
	// An sRGB screen, whatever the machine.
	ctx := apptest.Browser(t, 800, 600, 2*time.Minute, chromedp.Flag("force-color-profile", "srgb"))
	app := apptest.New(t)

	file := filepath.Join(apptest.PhotosDir(t), "wide-gamut-p3.jpg")
	err := chromedp.Do(ctx,
		app.BrowserSignIn(admin),
		chromedp.Navigate(app.URL+"/meals/new"),
		chromedp.WaitReady(chromedp.CSS(`#photo`)),
		chromedp.SetUploadFiles(chromedp.CSS(`#photo`), []string{file}),
		chromedp.Click(chromedp.CSS(`form.meal-form button[type=submit]`)),
		// Saved: the page script opens the month.
		chromedp.WaitVisible(chromedp.CSS(`.flash`)),
	)
	if err != nil {
		t.Fatalf("sign in and add a meal: %v", err)
	}
	var ms []meal.Meal
	for deadline := time.Now().Add(time.Minute); len(ms) == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ms = allMeals(t, app, admin)
	}
	if len(ms) != 1 || !ms[0].HasPhoto() || ms[0].ThumbW != 480 || ms[0].ThumbH != 320 {
		t.Fatalf("meals after the upload: %+v, want one with a 480x320 thumbnail", ms)
	}

	// The thumbnail alone, as Chromium shows an image: where it sits, then
	// the screen's pixels.
	type box struct{ X, Y, W, H float64 }
	if err := chromedp.Do(ctx, chromedp.Navigate(app.URL+ms[0].ThumbURL()),
		chromedp.Poll[chromedp.Void](`document.images.length === 1 && document.images[0].complete`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("open the thumbnail: %v", err)
	}
	at, err := chromedp.Run(ctx, chromedp.Evaluate[box](`(() => { const r = document.images[0].getBoundingClientRect(); return {X: r.x, Y: r.y, W: r.width, H: r.height}; })()`))
	if err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	screen, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	for _, sw := range []struct {
		name    string
		x, y    float64 // centre in the 1200x800 original
		r, g, b int
	}{
		{"red", 300, 400, 255, 0, 0},
		{"orange", 900, 400, 200, 120, 80},
		{"green", 600, 690, 0, 255, 0},
	} {
		px, py := int(at.X+sw.x/1200*at.W), int(at.Y+sw.y/800*at.H)
		r, g, b, _ := screen.At(px, py).RGBA()
		got := [3]int{int(r >> 8), int(g >> 8), int(b >> 8)}
		for i, want := range [3]int{sw.r, sw.g, sw.b} {
			if d := got[i] - want; d < -6 || d > 6 {
				t.Errorf("%s swatch on screen at (%d,%d) = %v, want within 6 levels of (%d,%d,%d)", sw.name, px, py, got, sw.r, sw.g, sw.b)
				break
			}
		}
	}
}

// TestBrowserWideGamutWebP: a Display P3 photo's WebP copies keep its
// colours as its JPEGs do (TestBrowserWideGamut): the variant job's
// d720.webp of wide-gamut-p3.jpg, served by the app, shows its P3 red
// swatch as sRGB (255,0,0) on an sRGB screen, and the same WebP with its
// ICCP chunk dropped (what an encoder that takes no profile writes) shows
// it dull, (234,51,35).
func TestBrowserWideGamutWebP(t *testing.T) {
	apptest.NeedBrowser(t)
	t.Parallel()
	app, c := signedIn(t)
	if resp := upload(c, "/meals", "wide-gamut-p3.jpg", apptest.Photo(t, "wide-gamut-p3.jpg")); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("upload = %d", resp.StatusCode)
	}
	m := allMeals(t, app, admin)[0]
	if err := newVariantJob(t, app, nil).Make(context.Background(), m.UserID, m.Date, m.ID); err != nil {
		t.Fatal(err)
	}
	// The browser's time starts once the copies are made: on a loaded
	// machine the upload and the encodes take a good part of it.
	ctx := apptest.Browser(t, 800, 600, 2*time.Minute, chromedp.Flag("force-color-profile", "srgb"))
	u := "/photo/" + m.Date + "/" + m.ID + "?v=" + m.PhotoV.Tag() + "&size=d720.webp"
	tagged := c.Get(u)
	if tagged.StatusCode != http.StatusOK || tagged.Header.Get("Content-Type") != "image/webp" {
		t.Fatalf("%s = %d %q", u, tagged.StatusCode, tagged.Header.Get("Content-Type"))
	}
	plain := stripICCP(t, []byte(tagged.Body))
	if err := chromedp.Do(ctx, app.BrowserSignIn(admin)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		src  string
		red  [3]int
	}{
		{"served, tagged", app.URL + u, [3]int{255, 0, 0}},
		{"profile dropped", "data:image/webp;base64," + base64.StdEncoding.EncodeToString(plain), [3]int{234, 51, 35}},
	} {
		got := swatch(t, ctx, app.URL+u, tc.src, 300.0/1200, 400.0/800)
		for i := range 3 {
			if d := got[i] - tc.red[i]; d < -6 || d > 6 {
				t.Errorf("%s: red swatch on screen = %v, want within 6 levels of %v", tc.name, got, tc.red)
				break
			}
		}
	}
}

// swatch opens page (of the app's origin, so its cookies go with src),
// shows src alone on it and returns the screen's pixel
// at (fx, fy), fractions of the image's width and height.
func swatch(t *testing.T, ctx context.Context, page, src string, fx, fy float64) [3]int {
	t.Helper()
	type box struct{ X, Y, W, H float64 }
	if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
		t.Fatal(err)
	}
	at, err := chromedp.Run(ctx, chromedp.Evaluate[box](`new Promise(done => {
		document.body.replaceChildren();
		document.body.style.margin = "0";
		const img = new Image();
		img.onload = () => { const r = img.getBoundingClientRect(); done({X: r.x, Y: r.y, W: r.width, H: r.height}); };
		img.src = `+strconvQuote(src)+`;
		document.body.append(img);
	})`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("show %.60s: %v", src, err)
	}
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	screen, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	r, g, b, _ := screen.At(int(at.X+fx*at.W), int(at.Y+fy*at.H)).RGBA()
	return [3]int{int(r >> 8), int(g >> 8), int(b >> 8)}
}

func strconvQuote(s string) string { return strconv.Quote(s) }

// stripICCP returns the WebP b without its ICCP chunk and with the ICC
// flag of its VP8X cleared.
func stripICCP(t *testing.T, b []byte) []byte {
	t.Helper()
	out := append([]byte(nil), b[:12]...)
	for rest := b[12:]; len(rest) >= 8; {
		n := int(binary.LittleEndian.Uint32(rest[4:]))
		end := min(len(rest), 8+n+n&1)
		switch string(rest[:4]) {
		case "ICCP":
		case "VP8X":
			c := append([]byte(nil), rest[:end]...)
			c[8] &^= 0x20
			out = append(out, c...)
		default:
			out = append(out, rest[:end]...)
		}
		rest = rest[end:]
	}
	binary.LittleEndian.PutUint32(out[4:], uint32(len(out)-8))
	return out
}
