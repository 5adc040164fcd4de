package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/share"
)

// slotCheck measures, for every img of sel that has a sizes attribute,
// its laid-out width and the width its sizes attribute gives at this
// viewport (the first entry whose media condition matches, its length
// evaluated on a probe element), and the device pixel ratio.
const slotCheck = `((sel) => {
	const probe = document.createElement("div");
	probe.style.cssText = "position:absolute;visibility:hidden;height:1px";
	document.body.append(probe);
	const out = [];
	for (const img of document.querySelectorAll(sel)) {
		if (!img.sizes) continue;
		let said = -1;
		for (const entry of img.sizes.split(/,(?![^(]*\))/)) {
			const e = entry.trim();
			const m = e.match(/^(\(.*\))\s+([^()]+|calc\(.*\)|min\(.*\))$/);
			const media = m ? m[1] : "", len = m ? m[2] : e;
			if (media && !matchMedia(media).matches) continue;
			probe.style.width = len;
			said = probe.getBoundingClientRect().width;
			break;
		}
		out.push({Shown: img.getBoundingClientRect().width, Said: said, DPR: devicePixelRatio});
	}
	probe.remove();
	return out;
})`

type slotWidth struct{ Shown, Said, DPR float64 }

// TestBrowserSlots holds every photo slot's sizes attribute
// (photo.Slot) to the width the slot is laid out at, on a phone (390 px,
// 3×), a tablet (800 px, 2×), a desktop (1280 px) and a wide screen
// (1600 px): never narrower (a blurry photo) and at most 15 % wider (the
// bytes this all saves). A thumbnail slot on a screen of 2.5× or more
// says 2/3 of its width (photo.thumbDensity).
func TestBrowserSlots(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser")
	}
	app := apptest.New(t)
	owner := "admin@example.com"
	ms := fillMonth(t, app, owner)
	// Every meal with every copy recorded: the sizes attributes are
	// what is measured, not the bytes.
	for i := range ms {
		ms[i].PhotoSet = photo.Full(photo.LegacySet, 2048, 1536)
		ms[i].PhotoW, ms[i].PhotoH = 2048, 1536
		if err := app.Meals.RecordSet(context.Background(), &ms[i], ms[i].PhotoSet); err != nil {
			t.Fatal(err)
		}
	}
	sh, err := app.Shares.Create(context.Background(), share.Share{OwnerID: localenv.Subject(owner), Label: "slots",
		From: browserMonth + "-01", To: browserMonth + "-30", CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	m := ms[40]
	d, _ := meal.ParseDate(m.Date)
	if err := app.Meals.AddComment(context.Background(), m.UserID, d, m.ID,
		meal.Comment{ID: meal.NewCommentID(time.Now()), ShareID: share.ID(sh.Token), Label: sh.Label, Text: "Lovely", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// click, when set, is clicked once the page has loaded: the denser
	// grid's switch in place must change the sizes with the cells.
	pages := []struct{ name, path, sel, click string }{
		{"month grid", "/meals?grid=normal&month=" + browserMonth, "ul.grid img", ""},
		{"denser grid", "/meals?grid=dense&month=" + browserMonth, "ul.grid img", ""},
		{"denser grid switched in place", "/meals?grid=normal&month=" + browserMonth, "ul.grid img", "[data-grid-toggle]"},
		{"meal page", m.DetailURL(), ".detail-body img", ""},
		{"day strip", "/s/" + sh.Token, "ul.strip img", ""},
		{"week table", "/s/" + sh.Token + "/week?start=" + browserMonth + "-01", "table.week img", ""},
		{"recipient's meal page", "/s/" + sh.Token + "/meals/" + m.Date + "/" + m.ID, ".detail-body img", ""},
		{"link's comments", "/shares/" + sh.Token + "/comments", ".commented-meal img", ""},
	}
	ctx := browser(t)
	signInBrowser(t, ctx, app, owner)
	for _, vp := range []struct {
		name string
		w, h int
		dpr  float64
	}{{"phone", 390, 844, 3}, {"tablet", 800, 1000, 2}, {"desktop", 1280, 800, 1}, {"wide", 1600, 900, 1}} {
		opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(vp.dpr)}
		if vp.name == "phone" {
			opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch)
		}
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(vp.w), int64(vp.h), opts...)); err != nil {
			t.Fatal(err)
		}
		for _, p := range pages {
			if err := chromedp.Do(ctx, chromedp.Navigate(app.URL+p.path)); err != nil {
				t.Fatal(err)
			}
			if p.click != "" {
				dense, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf("document.querySelector(%q).click(), document.querySelector('.days').classList.contains('dense')", p.click)))
				if err != nil || !dense {
					t.Fatalf("%s, %s: clicking %s: dense %v, %v", vp.name, p.name, p.click, dense, err)
				}
			}
			got, err := chromedp.Run(ctx, chromedp.Evaluate[[]slotWidth](fmt.Sprintf("%s(%q)", slotCheck, p.sel)))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 {
				t.Errorf("%s, %s: no img with sizes under %q", vp.name, p.name, p.sel)
				continue
			}
			thumb := p.name != "meal page" && p.name != "recipient's meal page"
			bad := 0
			for _, s := range got {
				want := s.Shown
				if thumb && s.DPR >= 2.5 {
					want = s.Shown * 2 / 3
				}
				if s.Said < want-1 || s.Said > want*1.15+2 {
					if bad++; bad <= 3 {
						t.Errorf("%s, %s: slot laid out %.1f px wide, sizes says %.1f, want %.1f to %.1f", vp.name, p.name, s.Shown, s.Said, want, want*1.15+2)
					}
				}
			}
		}
	}
}
