package meal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"ndiro/internal/apptest"
	"ndiro/internal/meal"
)

// phoneTouch is a 390×844 phone with touch, as the UI rules measure it.
func phoneTouch() chromedp.Action[chromedp.Void] {
	return chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulateScale(3), chromedp.EmulatePortrait)
}

// TestBrowserCapture: on a 390×844 phone, from the month page one tap on
// the camera control opens the add form with the camera input first, and
// one photo choice fills date and time from the photo's capture time
// (the page script) or leaves them for the server to file the meal there
// (no script); Save lands on the photo's month at the new card,
// highlighted, with "Meal saved" in view. Hunger and fullness are chosen
// on their 1–5 scales, by keyboard with the script and by tapping without.
func TestBrowserCapture(t *testing.T) {
	apptest.NeedBrowser(t)
	t.Parallel()
	for _, js := range []bool{true, false} {
		t.Run(fmt.Sprintf("js=%v", js), func(t *testing.T) {
			t.Parallel()
			app, ctx, _ := browse(t, js)
			// June 2024 already holds the later days, so the new card of
			// the 14th lands several screens down its month.
			for day := 15; day <= 30; day++ {
				for i := range 2 {
					putMeal(t, app, admin, withPhoto(meal.Meal{Date: fmt.Sprintf("2024-06-%02d", day), Time: fmt.Sprintf("%02d:00", 9+8*i), Notes: "earlier meal"}, int64(1+i)))
				}
			}
			err := chromedp.Do(ctx,
				phoneTouch(),
				chromedp.Navigate(app.URL+"/meals"),
				chromedp.WaitVisible(chromedp.CSS(`a.fab`)),
				chromedp.Tap(chromedp.CSS(`a.fab`)),
				chromedp.WaitVisible(chromedp.CSS(`label[for=photo-camera]`)),
				chromedp.Poll[chromedp.Void](`document.readyState === "complete"`, chromedp.WithPollingTimeout(10*time.Second)),
			)
			if err != nil {
				t.Fatalf("tap the camera control: %v", err)
			}
			first, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("form.meal-form input:not([type=hidden]), form.meal-form button").id`))
			if err != nil || first != "photo-camera" {
				t.Errorf("the form's first control is %q (%v), want the camera input", first, err)
			}
			if err := chromedp.Do(ctx, chromedp.SetUploadFiles(chromedp.CSS(`#photo-camera`), []string{fixture(t, portrait)})); err != nil {
				t.Fatalf("choose the photo: %v", err)
			}
			if js {
				checkFilledFromPhoto(t, ctx)
			} else if got := readWhen(t, ctx); got.Note != "" || got.Date == "2024-06-14" {
				t.Errorf("without the script the form shows %+v, want its own date and time, untouched", got)
			}
			saveWithScales(t, ctx, js)
			ms := allMeals(t, app, admin)
			if len(ms) != 33 || ms[0].Date != "2024-06-14" || ms[0].Time[:5] != "12:31" {
				t.Fatalf("meals = %+v, want the new one at the photo's 2024-06-14 12:31 first", ms)
			}
			if ms[0].Hunger == nil || *ms[0].Hunger != 4 || ms[0].Fullness == nil || *ms[0].Fullness != 2 {
				t.Errorf("hunger %v, fullness %v, want 4 and 2", ms[0].Hunger, ms[0].Fullness)
			}
			wantFlash := "Meal saved."
			if !js {
				wantFlash = "Meal saved. Filed on Fri 14 Jun 2024, 12:31 from the photo."
			}
			checkLanded(t, ctx, "/meals?month=2024-06#meal-"+ms[0].ID, wantFlash)
			if js {
				return
			}
			// Without the script the month offers to move it to now.
			if err := chromedp.Do(ctx, chromedp.Tap(chromedp.CSS(`#filed button`)), chromedp.WaitNotPresent(chromedp.CSS(`#filed`)), chromedp.WaitVisible(chromedp.CSS(`.flash`))); err != nil {
				t.Fatalf("move to now: %v", err)
			}
			if flash, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.flash`))); !strings.HasPrefix(flash, "Meal moved to") {
				t.Errorf("after move to now the flash says %q", flash)
			}
			for _, m := range allMeals(t, app, admin) {
				if m.Date == "2024-06-14" {
					t.Errorf("after move to now the meal is still at %s %s, want the form's own date", m.Date, m.Time)
				}
			}
		})
	}
}

// when is what the add form shows of date and time: the fields, the kind
// chosen, and the note that the time is the photo's ("" when hidden).
type when struct{ Date, Time, Kind, Note string }

func readWhen(t *testing.T, ctx context.Context) when {
	t.Helper()
	f, err := chromedp.Run(ctx, chromedp.Evaluate[when](`({Date: document.querySelector("#date").value, Time: document.querySelector("#time").value,
		Kind: (document.querySelector("input[name=kind]:checked") || {}).value || "",
		Note: (() => { const n = document.querySelector("#from-photo"); return n && !n.hidden ? n.textContent.replace(/\s+/g, " ").trim() : ""; })()})`))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// checkFilledFromPhoto checks the page script's work after the portrait
// was chosen: date and time are the photo's and the form says so; "use
// now instead" puts the device's clock back; the photo chosen again fills
// its time again.
func checkFilledFromPhoto(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#from-photo`))); err != nil {
		t.Fatalf("no note that the time is the photo's: %v", err)
	}
	want := when{"2024-06-14", "12:31", "lunch", "Time from the photo · use now instead"}
	if got := readWhen(t, ctx); got != want {
		t.Errorf("after one photo choice the form shows %+v, want %+v", got, want)
	}
	defaults, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[document.querySelector("input[name=default_date]").value, document.querySelector("input[name=default_time]").value]`))
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#from-photo .use-now`))); err != nil {
		t.Fatal(err)
	}
	if got := readWhen(t, ctx); len(defaults) != 2 || got.Date != defaults[0] || got.Time != defaults[1] || got.Note != "" {
		t.Errorf("after use now instead the form shows %+v, want the device's %v and no note", got, defaults)
	}
	// The same photo under another name, as a browser sends no change for
	// the very file chosen before.
	b, err := os.ReadFile(fixture(t, portrait))
	if err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(t.TempDir(), "again.jpg")
	if err := os.WriteFile(again, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.SetUploadFiles(chromedp.CSS(`#photo-camera`), []string{again}),
		chromedp.WaitVisible(chromedp.CSS(`#from-photo`)),
	); err != nil {
		t.Fatal(err)
	}
	if got := readWhen(t, ctx); got.Date != "2024-06-14" || got.Time != "12:31" {
		t.Errorf("the photo chosen again fills %+v", got)
	}
}

// saveWithScales chooses hunger 4 and fullness 2, by keyboard with the
// script (arrow keys move within a radio group) and by tapping without,
// taps Save and waits for the month.
func saveWithScales(t *testing.T, ctx context.Context, js bool) {
	t.Helper()
	steps := []chromedp.Action[chromedp.Void]{chromedp.Click(chromedp.CSS(`details.numbers-box summary`))}
	if js {
		steps = append(steps,
			chromedp.Focus(chromedp.CSS(`input[name=hunger][value=""]`)), chromedp.KeyEvent(strings.Repeat(kb.ArrowRight, 4)),
			chromedp.Focus(chromedp.CSS(`input[name=fullness][value=""]`)), chromedp.KeyEvent(strings.Repeat(kb.ArrowRight, 2)))
	} else {
		steps = append(steps,
			chromedp.Tap(chromedp.CSS(`label:has(> input[name=hunger][value="4"])`)),
			chromedp.Tap(chromedp.CSS(`label:has(> input[name=fullness][value="2"])`)))
	}
	steps = append(steps, chromedp.Tap(chromedp.CSS(`form.meal-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`body[data-page="meal/list"] .flash`)))
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("save: %v", err)
	}
}

// checkLanded checks the page after Save: at url, its card the target,
// highlighted, and the flash saying flash, both in the 844 px screen, the
// card below the flash.
func checkLanded(t *testing.T, ctx context.Context, url, flash string) {
	t.Helper()
	type landed struct {
		URL, Flash, Target, Outline, Background    string
		FlashTop, FlashBottom, CardTop, CardBottom float64
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[landed](`(() => {
		const f = document.querySelector(".flash").getBoundingClientRect();
		const li = document.querySelector(":target");
		const c = li ? li.getBoundingClientRect() : {top: -1, bottom: -1};
		const card = li ? getComputedStyle(li.querySelector(".card-link")) : null;
		return {URL: location.pathname + location.search + location.hash,
			Flash: (document.querySelector("#filed p") || document.querySelector(".flash")).textContent.replace(/\s+/g, " ").trim(),
			Target: li ? li.id : "", FlashTop: f.top, FlashBottom: f.bottom, CardTop: c.top, CardBottom: c.bottom,
			Outline: card ? card.outlineStyle + " " + card.outlineWidth : "", Background: card ? card.backgroundColor : ""};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != url || "#"+got.Target != url[strings.Index(url, "#"):] || got.Flash != flash {
		t.Errorf("landed on %s (target %q) saying %q; want %s, at the new card, saying %q", got.URL, got.Target, got.Flash, url, flash)
	}
	if got.Outline != "solid 3px" || got.Background == "rgba(0, 0, 0, 0)" {
		t.Errorf("the new card has outline %q and background %q, want it highlighted", got.Outline, got.Background)
	}
	if got.FlashTop < 0 || got.FlashBottom > 844 || got.CardTop < got.FlashBottom || got.CardBottom > 844 {
		t.Errorf("flash at %.0f–%.0f px, card at %.0f–%.0f px: want both in the 844 px screen, the card below the flash", got.FlashTop, got.FlashBottom, got.CardTop, got.CardBottom)
	}
}

// TestBrowserMonthStrip: the month page's calendar strip lists every day,
// and each logged day's link jumps to that day's section; the current
// month has no link to the next; the denser grid shows five thumbnails a
// row on the phone and is remembered across pages, with and without the
// script.
func TestBrowserMonthStrip(t *testing.T) {
	apptest.NeedBrowser(t)
	t.Parallel()
	for _, js := range []bool{true, false} {
		t.Run(fmt.Sprintf("js=%v", js), func(t *testing.T) {
			t.Parallel()
			app, ctx, _ := browse(t, js)
			for _, d := range []string{"2026-09-03", "2026-09-11", "2026-09-12", "2026-09-27"} {
				for i := range 3 {
					putMeal(t, app, admin, withPhoto(meal.Meal{Date: d, Time: fmt.Sprintf("%02d:00", 8+4*i), Notes: "meal on " + d}, int64(1+i)))
				}
			}
			if err := chromedp.Do(ctx, phoneTouch(), chromedp.Navigate(app.URL+"/meals?month=2026-09"), chromedp.WaitVisible(chromedp.CSS(`#strip`))); err != nil {
				t.Fatal(err)
			}
			days, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#strip li")].map(li => { const a = li.querySelector("a"); return (a ? a.getAttribute("href") : "-") + " " + li.textContent.replace(/\s+/g, " ").trim(); })`))
			if err != nil {
				t.Fatal(err)
			}
			if len(days) != 30 || days[0] != "- Tu 1" || days[2] != "#day-2026-09-03 Th 3, 3 meals" || days[29] != "- We 30" {
				t.Errorf("strip = %q, want 30 days, the logged ones linked", days)
			}
			for _, d := range []string{"2026-09-27", "2026-09-03", "2026-09-12"} {
				if err := chromedp.Do(ctx, chromedp.Tap(chromedp.CSS(`#strip a[href="#day-`+d+`"]`))); err != nil {
					t.Fatalf("tap %s: %v", d, err)
				}
				// The day's section is the target and at the top of the
				// screen, or as near as the page's end lets it come.
				type at struct {
					Hash   string
					Top    float64
					AtEnd  bool
					Target string
				}
				js := `({Hash: location.hash, Top: document.querySelector("#day-` + d + `").getBoundingClientRect().top,
					AtEnd: scrollY >= document.documentElement.scrollHeight - innerHeight - 1, Target: (document.querySelector(":target") || {}).id || ""})`
				var got at
				err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`(() => { const r = `+js+`; return r.Hash === "#day-`+d+`" && r.Top >= 0 && (r.Top <= 130 || (r.AtEnd && r.Top < innerHeight - 200)); })()`, chromedp.WithPollingTimeout(5*time.Second)))
				got, _ = chromedp.Run(ctx, chromedp.Evaluate[at](js))
				if err != nil || got.Target != "day-"+d {
					t.Errorf("the strip's %s jumped to %s (target %q) with the day at %.0f px (page end %v), want the day at the top", d, got.Hash, got.Target, got.Top, got.AtEnd)
				}
			}

			// The denser grid: a tap, five a row, and the next page too.
			perRow := func() int {
				t.Helper()
				n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(() => { const imgs = [...document.querySelectorAll("section.day")[0].querySelectorAll("img")].map(i => Math.round(i.getBoundingClientRect().top)); return imgs.filter(y => y === imgs[0]).length; })()`))
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			if n := perRow(); n != 3 {
				t.Errorf("%d thumbnails a row, want 3 before the denser grid", n)
			}
			if err := chromedp.Do(ctx, chromedp.Tap(chromedp.CSS(`[data-grid-toggle]`)), chromedp.WaitReady(chromedp.CSS(`.days.dense`))); err != nil {
				t.Fatal(err)
			}
			// Five meals on one day show five a row.
			for i := range 2 {
				putMeal(t, app, admin, withPhoto(meal.Meal{Date: "2026-09-27", Time: fmt.Sprintf("%02d:30", 20+i), Notes: "late"}, 9))
			}
			if err := chromedp.Do(ctx, chromedp.Navigate(app.URL+"/meals?month=2026-08"), chromedp.WaitVisible(chromedp.CSS(`main h1`)),
				chromedp.Navigate(app.URL+"/meals?month=2026-09"), chromedp.WaitVisible(chromedp.CSS(`.days.dense`))); err != nil {
				t.Fatalf("the denser grid is not remembered: %v", err)
			}
			if n := perRow(); n != 5 {
				t.Errorf("%d thumbnails a row in the denser grid, want 5", n)
			}

			// The current month (the app's clock) has no link to the next.
			if err := chromedp.Do(ctx, chromedp.Navigate(app.URL+"/meals"), chromedp.WaitVisible(chromedp.CSS(`main h1`))); err != nil {
				t.Fatal(err)
			}
			if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("a[rel=next]").length`)); n != 0 {
				t.Errorf("the current month links to the next month")
			}
		})
	}
}
