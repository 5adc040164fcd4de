package meal_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"ndiro/internal/apptest"
)

// posts records the bodies the server receives for POST /meals.
type posts struct {
	mu    sync.Mutex
	sizes []int
}

func (p *posts) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/meals" {
			body, _ := io.ReadAll(r.Body)
			p.mu.Lock()
			p.sizes = append(p.sizes, len(body))
			p.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		next.ServeHTTP(w, r)
	})
}

func (p *posts) list() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int{}, p.sizes...)
}

// browse starts the app and Chromium at a phone's width, signed in as the
// admin, with scripts on or off.
func browse(t *testing.T, js bool) (*apptest.App, context.Context, *posts) {
	t.Helper()
	ctx := apptest.Browser(t, 390, 844, 3*time.Minute)
	p := &posts{}
	app := apptest.New(t, apptest.Options{Wrap: p.wrap})
	if !js {
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
			t.Fatal(err)
		}
	}
	err := chromedp.Do(ctx,
		app.BrowserSignIn(admin),
	)
	if err != nil {
		t.Fatalf("sign in: %v", err)
	}
	return app, ctx, p
}

func fixture(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join(apptest.PhotosDir(t), name)
}

// TestBrowserKeepsPhotoThroughACorrection: a bad number, then the fix,
// and the photo chosen once is saved. With scripts the field is checked in
// the browser before anything is sent; without, the server keeps the photo
// as a pending upload while the form is corrected.
func TestBrowserKeepsPhotoThroughACorrection(t *testing.T) {
	apptest.NeedBrowser(t)
	t.Parallel()
	for _, js := range []bool{true, false} {
		t.Run(fmt.Sprintf("js=%v", js), func(t *testing.T) {
			t.Parallel()
			app, ctx, sent := browse(t, js)
			err := chromedp.Do(ctx,
				chromedp.Navigate(app.URL+"/meals/new"),
				chromedp.WaitReady(chromedp.CSS(`#photo`)),
				// No capture time in it: no offer to move the meal, the saved
				// month page comes next.
				chromedp.SetUploadFiles(chromedp.CSS(`#photo`), []string{fixture(t, "small.jpg")}),
				chromedp.SendKeys(chromedp.CSS(`#notes`), "pasta"),
				chromedp.Click(chromedp.CSS(`details.numbers-box summary`)),
				chromedp.SendKeys(chromedp.CSS(`#carbs_g`), "65.25"),
				chromedp.Click(chromedp.CSS(`form.meal-form button[type=submit]`)),
				chromedp.WaitVisible(chromedp.CSS(`#carbs_g-err`)),
			)
			if err != nil {
				t.Fatalf("bad number: %v", err)
			}
			msg, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#carbs_g-err`)))
			if msg != "Carbs (g) may have at most one decimal place." {
				t.Errorf("message = %q", msg)
			}
			if js {
				if n := len(sent.list()); n != 0 {
					t.Errorf("%d posts sent with a bad number, want the browser to stop it", n)
				}
			} else {
				kept, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#photo-kept figcaption`)))
				if !strings.HasPrefix(kept, "Photo kept") {
					t.Errorf("the corrected form says %q about the photo, want it kept", kept)
				}
			}
			err = chromedp.Do(ctx,
				chromedp.SendKeys(chromedp.CSS(`#carbs_g`), kb.End+strings.Repeat(kb.Backspace, 5)+"65.2"),
				chromedp.Click(chromedp.CSS(`form.meal-form button[type=submit]`)),
				chromedp.WaitVisible(chromedp.CSS(`.flash`)),
			)
			if err != nil {
				t.Fatalf("fixed number: %v", err)
			}
			ms := allMeals(t, app, admin)
			if len(ms) != 1 || !ms[0].HasPhoto() || ms[0].CarbsG == nil || ms[0].CarbsG.String() != "65.2" {
				t.Fatalf("meals = %+v, want one with the photo and 65.2 g carbs", ms)
			}
			flash, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.flash`)))
			url, _ := chromedp.Run(ctx, chromedp.Location())
			shown, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#meal-`+ms[0].ID+`").length`))
			if flash != "Meal saved." || shown != 1 || !strings.HasSuffix(url, "#meal-"+ms[0].ID) {
				t.Errorf("saved page: flash %q, meal shown %d, at %s", flash, shown, url)
			}
		})
	}
}

// TestBrowserDownscales: a 12-megapixel phone photo leaves the browser at
// most 2048 px and 600 KB, keeps its capture time, and stands upright.
func TestBrowserDownscales(t *testing.T) {
	apptest.NeedBrowser(t)
	t.Parallel()
	app, ctx, sent := browse(t, true)
	err := chromedp.Do(ctx,
		chromedp.Navigate(app.URL+"/meals/new"),
		chromedp.WaitReady(chromedp.CSS(`#photo`)),
		chromedp.SetUploadFiles(chromedp.CSS(`#photo`), []string{fixture(t, "phone-portrait.jpg")}),
		chromedp.SendKeys(chromedp.CSS(`#notes`), "big photo"),
		chromedp.Click(chromedp.CSS(`form.meal-form button[type=submit]`)),
		// Date and time were left at the device clock: the page script
		// filed the meal at the capture time, and Save opens its month.
		chromedp.WaitVisible(chromedp.CSS(`.flash`)),
	)
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	sizes := sent.list()
	if len(sizes) != 1 || sizes[0] > 600<<10 {
		t.Errorf("bodies received = %v bytes, want one of at most 600 KB (the original is 2.5 MB)", sizes)
	}
	ms := allMeals(t, app, admin)
	if len(ms) != 1 || ms[0].PhotoTaken != "2024-06-14T12:31:07" || ms[0].PhotoH > 2048 || ms[0].PhotoW >= ms[0].PhotoH {
		t.Fatalf("meal = %+v, want a portrait ≤ 2048 px taken 2024-06-14T12:31:07", ms)
	}
	if got := ms[0].Date + " " + ms[0].Time; got != "2024-06-14 12:31:00" {
		t.Errorf("meal at %s, want the photo's date and minute, 2024-06-14 12:31:00", got)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(app.URL+ms[0].DisplayURL()), chromedp.WaitReady(chromedp.CSS(`img`))); err != nil {
		t.Fatal(err)
	}
	checkUpright(t, ctx, "img")
}

// TestBrowserBackfill: three camera-roll photos at once become three meals
// at the times they were taken, the kind guessed from the hour.
func TestBrowserBackfill(t *testing.T) {
	apptest.NeedBrowser(t)
	t.Parallel()
	app, ctx, _ := browse(t, true)
	// A third photo, taken on another morning: the portrait's EXIF with
	// other dates (the same length, so the segment stays valid).
	b, err := os.ReadFile(fixture(t, "phone-portrait-small.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte("2024:06:14 12:31:07"), []byte("2024:06:15 08:05:00"))
	third := filepath.Join(t.TempDir(), "breakfast.jpg")
	if err := os.WriteFile(third, b, 0o644); err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx,
		chromedp.Navigate(app.URL+"/meals/new"),
		chromedp.WaitReady(chromedp.CSS(`#backfill-photos`)),
		chromedp.SetUploadFiles(chromedp.CSS(`#backfill-photos`), []string{fixture(t, "phone-portrait-small.jpg"), fixture(t, "phone-landscape-small.jpg"), third}),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll(".backfill-item").length === 3`, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Click(chromedp.CSS(`.backfill-save`)),
		// Once all are saved the page opens the month of the last.
		chromedp.WaitReady(chromedp.CSS(`body[data-page="meal/list"]`)),
	)
	if err != nil {
		t.Fatalf("backfill: %v", err)
	}
	got := map[string]string{}
	for _, m := range allMeals(t, app, admin) {
		got[m.Date+" "+m.Time] = string(m.Kind)
		if !m.HasPhoto() {
			t.Errorf("meal %s has no photo", m.SK)
		}
	}
	want := map[string]string{"2024-06-14 12:31:00": "lunch", "2024-09-02 19:47:00": "dinner", "2024-06-15 08:05:00": "breakfast"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("meals = %v, want %v", got, want)
	}
	// The page of the last saved, at its card, highlighted, with the
	// batch counted in the flash.
	type landed struct{ Flash, Target, Hash string }
	l, err := chromedp.Run(ctx, chromedp.Evaluate[landed](`({Flash: (document.querySelector(".flash") || {}).textContent || "", Target: (document.querySelector(":target") || {}).id || "", Hash: location.hash})`))
	if err != nil || l.Flash != "3 meals saved." || l.Target == "" || "#"+l.Target != l.Hash {
		t.Errorf("after the batch: flash %q, target %q at %q (%v); want 3 meals saved. at the last card", l.Flash, l.Target, l.Hash, err)
	}
}
