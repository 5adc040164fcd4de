package share_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"ndiro/internal/localenv"
	"ndiro/internal/share"
)

// TestPrintPage: the print page shows the whole range as week tables,
// reading it in windows of PageDays days, ONE Query each and nothing but
// the range's items; printed, each week is a landscape page of its own.
func TestPrintPage(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	app := w.app
	// 1 Jan – 10 Apr 2026: 100 days, so 4 windows of 31 days; a meal on
	// each end and one on either side outside.
	in := []string{"2026-01-01", "2026-02-14", "2026-04-10"}
	for _, d := range append(in, "2025-12-31", "2026-04-11") {
		addMeal(t, app, w.owner, ownerEmail, d, "12:00", "lunch", nil)
	}
	tok := createShare(t, w.owner, shareForm("from", "2026-01-01", "to", "2026-04-10"))
	app.Calls.Reset()
	resp := app.Client().Get("/s/" + tok + "/print")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("print = %d, Cache-Control %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
	if n := app.Calls.Counts()["Query"]; n != 4 {
		t.Errorf("the print page made %d Queries, want 4 (one per %d days)", n, share.PageDays)
	}
	if n := app.Calls.Scanned()["Query"]; n != len(in) {
		t.Errorf("the print page read %d items, want the %d in the range", n, len(in))
	}
	doc := resp.Doc()
	if n := doc.Find("section.week-view").Length(); n != 15 {
		t.Errorf("%d weeks printed, want 15 (100 days)", n)
	}
	var days []string
	doc.Find("section.week-view tbody tr").Each(func(_ int, s *goquery.Selection) {
		if s.Find(".week-meal").Length() > 0 {
			days = append(days, strings.TrimPrefix(s.AttrOr("id", ""), "week-"))
		}
	})
	if strings.Join(days, " ") != strings.Join(in, " ") {
		t.Errorf("days with meals printed = %v, want %v", days, in)
	}
	if got := doc.Find("section.week-view .print-head .owner").First().Text(); got != ownerName {
		t.Errorf("each printed week names %q, want the owner %q", got, ownerName)
	}
	css := app.Client().Get(doc.Find(`link[rel=stylesheet]`).AttrOr("href", "")).Body
	for _, want := range []string{"size:A4 landscape", ".week-view{break-after:page", ".sweek{break-after:page"} {
		if !strings.Contains(css, want) {
			t.Errorf("stylesheet lacks %q", want)
		}
	}
	if href := app.Client().Get("/s/"+tok).Doc().Find(`a[href$="/print"]`).AttrOr("href", ""); href != "/s/"+tok+"/print" {
		t.Errorf("the overview's Print leads to %q, want the print page", href)
	}
}

// TestRecipientPagesMeta: every recipient page, and a refusal under a
// link, carries the generic preview card and asks robots to keep out;
// the brand link leads to the note on shared links, not to the sign-in,
// which owners' pages keep; the expiry is in the owner's zone, named.
func TestRecipientPagesMeta(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	app := w.app
	if err := app.Users.SetTimeZone(context.Background(), localenv.Subject(ownerEmail), "Asia/Tokyo"); err != nil {
		t.Fatal(err)
	}
	expiring := createShare(t, w.owner, shareForm("expiry", "30"))
	anon := app.Client()
	for _, p := range []string{
		"/s/" + w.valid, "/s/" + w.valid + "/week", "/s/" + w.valid + "/print", mealPath(w.valid, w.inRange), "/shared",
		"/s/" + w.valid + "?from=2026-09-20", "/s/" + w.unknown, "/s/" + w.expired,
	} {
		resp := anon.Get(p)
		doc := resp.Doc()
		name := strings.NewReplacer(w.valid, "{valid}", w.unknown, "{unknown}", w.expired, "{expired}").Replace(p)
		if brand := doc.Find("a.brand").AttrOr("href", ""); brand != share.AboutPath {
			t.Errorf("%s (%d): brand link = %q, want %s", name, resp.StatusCode, brand, share.AboutPath)
		}
		if doc.Find(`meta[name=robots][content="noindex, nofollow"]`).Length() != 1 {
			t.Errorf("%s: no robots noindex", name)
		}
		if resp.StatusCode == http.StatusOK {
			checkPreviewCard(t, app, doc)
		}
	}
	if brand := w.owner.Get("/shares").Doc().Find("a.brand").AttrOr("href", ""); brand != "/" {
		t.Errorf("an owner's page has its brand link to %q, want /", brand)
	}
	until := anon.Get("/s/" + expiring).Text(".until")
	if !strings.HasSuffix(until, " JST") {
		t.Errorf("the expiry reads %q, want it in the owner's zone, named (JST)", until)
	}
}
