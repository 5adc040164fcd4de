package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/share"
	"ndiro/internal/user"
)

func TestMain(m *testing.M) {
	photo.MaybeHEICWorker() // the WebP worker of the tests that make sized copies
	os.Exit(m.Run())
}

// maxImageShare is the most the sized copies may cost of what the legacy
// copies cost, for the same photos in the same slots (issue: each ≤ 45 %).
const maxImageShare = 0.45

// phoneCopies are the copies of testdata's four phone photos, through the
// pipeline as an upload makes them and the variant job after it.
type phoneCopy struct {
	proc   *photo.Processed
	sized  map[photo.Size][]byte
	dims   photo.Dims
	legacy photo.Set
	full   photo.Set
}

func makePhoneCopies(t *testing.T) []phoneCopy {
	t.Helper()
	enc := photo.NewWebPEncoder(nil, photo.WebPLimits(), time.Minute, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { enc.Close() })
	p := photo.NewPipeline(photo.DefaultBudget, time.Minute).WithWebP(enc)
	var out []phoneCopy
	for _, f := range []string{"phone-portrait.jpg", "phone-landscape.jpg", "phone-portrait-small.jpg", "phone-landscape-small.jpg"} {
		proc, err := p.Process(context.Background(), apptest.Photo(t, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		full := photo.Full(photo.LegacySet, proc.Width, proc.Height)
		sized, err := p.MakeVariants(context.Background(), proc.Display, full)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		n := 0
		for _, b := range sized {
			n += len(b)
		}
		t.Logf("%s: display %d B, thumbnail %d B; %d sized copies %d B", f, len(proc.Display), len(proc.Thumb), len(sized), n)
		out = append(out, phoneCopy{proc: proc, sized: sized, full: full, legacy: photo.LegacySet,
			dims: photo.Dims{W: proc.Width, H: proc.Height, TW: proc.ThumbWidth, TH: proc.ThumbHeight}})
	}
	return out
}

// fillPhoneMonth writes 90 meals of email into browserMonth, three a day,
// each with one of the phone photos, as sized (every copy) or not (the
// legacy two), and a share link over the month; it returns the link's
// token.
func fillPhoneMonth(t *testing.T, app *apptest.App, email string, copies []phoneCopy, sized bool) string {
	t.Helper()
	ctx := context.Background()
	owner := localenv.Subject(email)
	if err := app.Users.Create(ctx, &user.User{ID: owner, Email: email, Role: user.RoleOwner, Status: user.StatusActive, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	store := photo.NewStore(app.Env.S3, "test-photos")
	for i := range 90 {
		day, h := i/3+1, []int{8, 12, 19}[i%3]
		c := copies[(i+i/3)%len(copies)]
		m := meal.Meal{UserID: owner, Date: fmt.Sprintf("%s-%02d", browserMonth, day), Time: fmt.Sprintf("%02d:%02d:00", h, i%60),
			Kind: []meal.Kind{meal.Breakfast, meal.Lunch, meal.Dinner}[i%3], Notes: "Lentil soup with bread",
			ID: fmt.Sprintf("%02d%02d00-%06x", h, i%60, i), CreatedAt: time.Now(), UpdatedAt: time.Now()}
		m.PhotoV, m.PhotoW, m.PhotoH, m.ThumbW, m.ThumbH = photo.Version(1_700_000_000_000_000_000+int64(i)), c.dims.W, c.dims.H, c.dims.TW, c.dims.TH
		bodies := map[photo.Size][]byte{photo.SizeDisplay: c.proc.Display, photo.SizeThumb: c.proc.Thumb}
		if sized {
			m.PhotoSet = c.full
			for s, b := range c.sized {
				bodies[s] = b
			}
		}
		for _, s := range m.PhotoSet.Sizes() {
			if err := store.Put(ctx, photo.Key(owner, m.Date, m.ID, s), bodies[s], m.PhotoV); err != nil {
				t.Fatal(err)
			}
		}
		if err := app.Meals.Create(ctx, &m); err != nil {
			t.Fatal(err)
		}
	}
	sh, err := app.Shares.Create(ctx, share.Share{OwnerID: owner, Label: "dietitian", From: browserMonth + "-01", To: browserMonth + "-30", CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return sh.Token
}

// imageBytes are the photo bytes a page cost: to its first screen, and
// scrolled to its end.
type imageBytes struct{ first, all, firstN, allN int }

// measureImages opens url with an empty cache and counts the photo bytes
// the app sends until the network is quiet, then scrolls to the end a
// screen at a time (waiting for the lazy images each screen brings) and
// counts again.
func measureImages(t *testing.T, ctx context.Context, tr *traffic, url string) imageBytes {
	t.Helper()
	clear := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, network.ClearBrowserCache, cdp.Empty{})
		return err
	})
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank"), clear); err != nil {
		t.Fatal(err)
	}
	tr.quiet(t, 300*time.Millisecond)
	tr.reset()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	var ib imageBytes
	ib.first, ib.firstN = photoBytes(tr.quiet(t, 1500*time.Millisecond))
	// Every photo brought into view in turn, a frame or two each, as a
	// person scrolling through would, then every one loaded.
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(async () => {
		const imgs = [...document.querySelectorAll("main img")];
		const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
		for (const img of imgs) { img.scrollIntoView({block: "center"}); await frame(); }
		for (const t0 = Date.now(); !imgs.every(i => i.complete) && Date.now() - t0 < 30000; ) await new Promise(r => setTimeout(r, 100));
		return imgs.filter(i => i.complete && i.naturalWidth > 0).length;
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if shown != 90 {
		t.Errorf("%d photos shown after scrolling, want all 90", shown)
	}
	ib.all, ib.allN = photoBytes(tr.quiet(t, 1000*time.Millisecond))

	return ib
}

func photoBytes(hits []hit) (total, n int) {
	for _, h := range hits {
		if strings.Contains(h.path, "/photo/") {
			total += h.bytes
			n++
		}
	}
	return total, n
}

// TestImageBytes is the figure the sized copies exist for, with
// testdata's real phone photos (make imagebytes; CI runs it): a 90-meal
// month on a phone (390×844, 3× pixels) and the recipient's weeks of
// the same month on a desktop (1280×800), each once with the legacy
// copies only and once with every sized copy, in Chromium with an empty
// cache. The photo bytes to the first screen, and scrolled to the end,
// with the sized copies must each be at most maxImageShare of the legacy
// ones.
func TestImageBytes(t *testing.T) {
	if os.Getenv("NDIRO_TEST_IMAGEBYTES") == "" {
		t.Skip("NDIRO_TEST_IMAGEBYTES unset: make imagebytes runs it")
	}
	copies := makePhoneCopies(t)
	var tr traffic
	app := apptest.New(t, apptest.Options{Wrap: tr.wrap})
	before := fillPhoneMonth(t, app, "before@example.com", copies, false)
	after := fillPhoneMonth(t, app, "after@example.com", copies, true)
	ctx := browser(t)
	for _, c := range []struct {
		name     string
		viewport chromedp.Action[chromedp.Void]
		email    string
		url      func(tok string) string
	}{
		// A query of its own for each owner: the same URL twice would
		// have Chromium restore the first visit's scroll position.
		{"owner's month, phone", phone(), "", func(tok string) string { return app.URL + "/meals?month=" + browserMonth + "&for=" + tok[:8] }},
		{"recipient's weeks, desktop", desktop(), "", func(tok string) string { return app.URL + "/s/" + tok }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := chromedp.Do(ctx, c.viewport); err != nil {
				t.Fatal(err)
			}
			var got [2]imageBytes
			for i, who := range []struct{ email, tok string }{{"before@example.com", before}, {"after@example.com", after}} {
				if strings.HasPrefix(c.name, "owner") {
					signOut := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
						_, err := cdp.Call(ctx, t, network.ClearBrowserCookies, cdp.Empty{})
						return err
					})
					if err := chromedp.Do(ctx, signOut); err != nil {
						t.Fatal(err)
					}
					signInBrowser(t, ctx, app, who.email)
				}
				got[i] = measureImages(t, ctx, &tr, c.url(who.tok))
			}
			b, a := got[0], got[1]
			t.Logf("first screen: %d photos %d bytes before, %d photos %d bytes after (%.0f %%)", b.firstN, b.first, a.firstN, a.first, 100*float64(a.first)/float64(b.first))
			t.Logf("scrolled to the end: %d photos %d bytes before, %d photos %d bytes after (%.0f %%)", b.allN, b.all, a.allN, a.all, 100*float64(a.all)/float64(b.all))
			if b.firstN == 0 || b.allN <= b.firstN || a.allN <= a.firstN {
				t.Errorf("photos loaded: first %d then %d before, %d then %d after: want some on the first screen and more scrolled", b.firstN, b.allN, a.firstN, a.allN)
			}
			if float64(a.first) > maxImageShare*float64(b.first) {
				t.Errorf("first screen: %d bytes after, over %.0f %% of the %d before", a.first, 100*maxImageShare, b.first)
			}
			if float64(a.all) > maxImageShare*float64(b.all) {
				t.Errorf("scrolled: %d bytes after, over %.0f %% of the %d before", a.all, 100*maxImageShare, b.all)
			}
		})
	}
}
