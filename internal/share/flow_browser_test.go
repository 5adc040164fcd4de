package share_test

import (
	"context"
	"fmt"
	"image/color"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"ndiro/internal/apptest"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
)

// swipeLeft drags one finger from right to left across the middle of
// the screen, as a phone user does to see the next meal.
func swipeLeft() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for _, ev := range []input.DispatchTouchEventParams{
			{Type: input.DispatchTouchEventTypeTouchStart, TouchPoints: []*input.TouchPoint{{X: 320, Y: 420}}},
			{Type: input.DispatchTouchEventTypeTouchMove, TouchPoints: []*input.TouchPoint{{X: 200, Y: 425}}},
			{Type: input.DispatchTouchEventTypeTouchMove, TouchPoints: []*input.TouchPoint{{X: 80, Y: 430}}},
			{Type: input.DispatchTouchEventTypeTouchEnd, TouchPoints: []*input.TouchPoint{}},
		} {
			if _, err := cdp.Call(ctx, t, input.DispatchTouchEvent, ev); err != nil {
				return err
			}
		}
		return nil
	})
}

// layout is where a page's first parts sit, in CSS pixels.
type layout struct {
	Width, ScrollWidth                   int
	SummaryRight, WeekRight, WeekLeft    float64
	SummaryTop, FirstDayTop, ViewportTop float64
	Height                               float64
	// Thumb is the first thumbnail's width and height.
	ThumbW, ThumbH float64
}

const layoutJS = `(() => {
	const s = document.querySelector("#summary").getBoundingClientRect();
	const w = document.querySelector("section.sweek").getBoundingClientRect();
	const d = document.querySelector("section.sweek li.wday").getBoundingClientRect();
	const i = document.querySelector("section.sweek li.cell img").getBoundingClientRect();
	return {Width: document.documentElement.clientWidth, ScrollWidth: document.documentElement.scrollWidth,
		SummaryRight: s.right, WeekRight: w.right, WeekLeft: w.left, SummaryTop: s.top, FirstDayTop: d.top, Height: innerHeight,
		ThumbW: i.width, ThumbH: i.height};
})()`

// TestBrowserRecipientFlow drives headless Chromium as a dietitian on a
// phone (390×844, touch) and on a clinic desktop (1280×800): the link
// opens on the summary and the first week, neither reaching past the
// screen's sides; a thumbnail opens its meal, a swipe (phone) or the
// right arrow key (desktop) the next one; a comment is left. The owner
// then sees both comments on the meal and the badge on the month, and
// revokes the link: the recipient's next request for the page, the meal
// page and a photo is refused.
func TestBrowserRecipientFlow(t *testing.T) {
	apptest.NeedBrowser(t)
	t.Parallel()
	app := apptest.New(t)
	owner := signUp(t, app, ownerEmail, ownerName)
	var ms []meal.Meal
	for i, tc := range []struct{ date, tod, kind string }{
		{"2026-09-01", "08:00", "breakfast"}, {"2026-09-01", "12:30", "lunch"}, {"2026-09-02", "19:00", "dinner"},
		// A day of four meals: wider than a phone, its strip scrolls.
		{"2026-09-01", "16:00", "snack"}, {"2026-09-01", "21:00", "drink"},
	} {
		ms = append(ms, addMeal(t, app, owner, ownerEmail, tc.date, tc.tod, tc.kind, jpegOf(t, 64, 48, color.RGBA{uint8(60 * i), 120, 60, 255}), "notes", "plate "+tc.kind, "kcal", "512.5"))
	}
	tok := createShare(t, owner, shareForm("comments", "1"))
	mealURL := func(m meal.Meal) string { return app.URL + "/s/" + tok + "/meals/" + m.Date + "/" + m.ID }

	phone := apptest.Browser(t, 390, 844, 2*time.Minute)
	desk := apptest.Browser(t, 1280, 800, 2*time.Minute)
	if err := chromedp.Do(phone, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulateScale(2))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(desk, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		next chromedp.Action[chromedp.Void]
		text string
		nth  int // the comment's place on the meal
	}{
		{"phone", phone, swipeLeft(), "Swiped here: more greens, please.", 1},
		{"desktop", desk, chromedp.KeyEvent(kb.ArrowRight), "From the clinic: a good plate.", 2},
	} {
		visit(t, tc.ctx, tc.name, app.URL+"/s/"+tok, ms[0].ID, mealURL(ms[0]), ms[1].ID, tc.next, tc.text, tc.nth)
	}

	// 4. The owner, signed in on the desktop: both comments on the meal,
	// the badge on the month.
	ctx, cancel := context.WithTimeout(desk, 40*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, app.BrowserSignIn(ownerEmail),
		chromedp.Navigate(app.URL+"/meals/"+ms[1].Date+"/"+ms[1].ID), chromedp.WaitVisible(chromedp.CSS(`#comments`))); err != nil {
		t.Fatalf("owner's meal page: %v", err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#comments li.comment")].map(li => li.innerText)`))
	if err != nil || len(got) != 2 || !strings.Contains(strings.Join(got, "|"), "more greens") || !strings.Contains(strings.Join(got, "|"), "a good plate") || !strings.Contains(got[1], "From the link for Dr. Rossi") {
		t.Errorf("owner's meal page comments = %q (%v), want both, from the link for Dr. Rossi", got, err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(app.URL+"/meals?month=2026-09"), chromedp.WaitVisible(chromedp.CSS(`#meal-`+ms[1].ID))); err != nil {
		t.Fatal(err)
	}
	badge, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector("#meal-`+ms[1].ID+` .comments-badge") || {}).textContent || ""`))
	if err != nil || badge != "2 comments" {
		t.Errorf("the month's badge reads %q (%v), want 2 comments", badge, err)
	}

	// 5. Revoke; the recipient's next requests are refused.
	if resp := owner.PostForm("/shares/"+tok+"/revoke", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke = %d", resp.StatusCode)
	}
	pctx, pcancel := context.WithTimeout(phone, 40*time.Second)
	defer pcancel()
	for _, u := range []string{app.URL + "/s/" + tok, mealURL(ms[1])} {
		if err := chromedp.Do(pctx, chromedp.Navigate(u), chromedp.WaitVisible(chromedp.CSS(`main h1`))); err != nil {
			t.Fatal(err)
		}
		if h1, _ := chromedp.Run(pctx, chromedp.Text(chromedp.CSS(`main h1`))); h1 != "Link not found" {
			t.Errorf("after revoke %s shows %q, want Link not found", strings.Replace(u, tok, "{token}", 1), h1)
		}
	}
	status, err := chromedp.Run(pctx, chromedp.Evaluate[int](fmt.Sprintf(`fetch(%q).then(r => r.status)`, photoPath(tok, ms[1], photo.SizeThumb)), chromedp.EvalAwaitPromise))
	if err != nil || status != http.StatusNotFound {
		t.Errorf("a photo after revoke = %d (%v), want 404", status, err)
	}
}

// visit is one recipient's visit on the device of ctx: the overview at
// link, its summary and first week on the screen with nothing past its
// sides; the thumbnail of the meal first (at firstURL) opened, then the
// meal next by the action next; the comment text left there, the nth on
// that meal.
func visit(t *testing.T, bctx context.Context, name, link, first, firstURL, next string, step chromedp.Action[chromedp.Void], text string, nth int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(bctx, 40*time.Second)
	defer cancel()
	// 1. The overview: the summary and the first week on the screen,
	// nothing past its sides.
	if err := chromedp.Do(ctx, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`#summary`))); err != nil {
		t.Fatalf("%s: overview: %v", name, err)
	}
	l, err := chromedp.Run(ctx, chromedp.Evaluate[layout](layoutJS))
	if err != nil {
		t.Fatal(err)
	}
	if l.ScrollWidth > l.Width {
		wide, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5).map(e => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right))`))
		t.Logf("%s: wide: %q", name, wide)
	}
	if l.ScrollWidth > l.Width || l.SummaryRight > float64(l.Width)+0.5 || l.WeekRight > float64(l.Width)+0.5 || l.WeekLeft < 0 {
		t.Errorf("%s: page %d px wide in %d, summary to %.0f, week %.0f–%.0f: want nothing past the sides", name, l.ScrollWidth, l.Width, l.SummaryRight, l.WeekLeft, l.WeekRight)
	}
	if l.SummaryTop < 0 || l.FirstDayTop > l.Height {
		t.Errorf("%s: summary at %.0f, first day at %.0f in a %.0f px screen: want both on the first screen", name, l.SummaryTop, l.FirstDayTop, l.Height)
	}
	if l.ThumbW < 96 || l.ThumbH < 96 || l.ThumbW-l.ThumbH > 1 || l.ThumbH-l.ThumbW > 1 {
		t.Errorf("%s: thumbnails are %.0f×%.0f px, want square and at least 96", name, l.ThumbW, l.ThumbH)
	}
	// 2. A thumbnail opens its meal; then the next one.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#meal-`+first+` a.cell-link`)), chromedp.WaitVisible(chromedp.CSS(`article.smeal img.photo`))); err != nil {
		t.Fatalf("%s: open a meal: %v", name, err)
	}
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); loc != firstURL {
		t.Errorf("%s: the thumbnail opened %s, want %s", name, loc, firstURL)
	}
	if err := chromedp.Do(ctx, step, chromedp.WaitVisible(chromedp.CSS(`article#meal-`+next+` img.photo`))); err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		t.Fatalf("%s: to the next meal: %v; at %s", name, err, loc)
	}
	// 3. A comment.
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#text`), text),
		chromedp.Submit(chromedp.CSS(`#text`)),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#comments li.comment:nth-child(%d)`, nth))),
	); err != nil {
		t.Fatalf("%s: comment: %v", name, err)
	}
	if got, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#comments .comment-text")].map(p => p.textContent)`)); !slices.Contains(got, text) {
		t.Errorf("%s: the comments show as %q, want %q among them", name, got, text)
	}
}
