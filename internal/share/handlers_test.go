package share_test

import (
	"context"
	"image/color"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/go-cmp/cmp"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/photo"
)

// TestShareFlow: an owner creates a link, a recipient with no account opens
// it and sees the owner's name, the range and the meals by day, oldest
// first, every day of the range in its week, with thumbnails linking to
// the meal's page; the open is counted on the owner's list.
func TestShareFlow(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	owner := signUp(t, app, ownerEmail, ownerName)
	lunch := addMeal(t, app, owner, ownerEmail, "2026-09-02", "12:30", "lunch", jpegOf(t, 64, 48, color.RGBA{200, 40, 40, 255}), "notes", "Lentil soup", "kcal", "512.5")
	addMeal(t, app, owner, ownerEmail, "2026-09-01", "08:00", "breakfast", nil, "kcal", "300")
	addMeal(t, app, owner, ownerEmail, "2026-09-02", "19:00", "dinner", nil, "kcal", "0.5")

	// The create form defaults to the last 14 days in the owner's zone.
	form := owner.Get("/shares").Doc()
	from, _ := form.Find("#from").Attr("value")
	to, _ := form.Find("#to").Attr("value")
	if from == "" || to == "" {
		t.Fatalf("create form dates = %q..%q, want defaults", from, to)
	}

	tok := createShare(t, owner, shareForm())
	recipient := app.Client()
	resp := recipient.Get("/s/" + tok)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /s/{token} = %d, want 200; body %s", resp.StatusCode, resp.Body)
	}
	doc := resp.Doc()
	if got := strings.TrimSpace(doc.Find("h1").Text()); got != ownerName {
		t.Errorf("h1 = %q, want the owner's name %q", got, ownerName)
	}
	if got := strings.TrimSpace(doc.Find("title").Text()); got != "Shared meal diary · ndiro" {
		t.Errorf("title = %q, want the generic title", got)
	}
	if got := doc.Find(".range strong").Text(); got != "1 Sep – 14 Sep 2026" {
		t.Errorf("range = %q, want 1 Sep – 14 Sep 2026", got)
	}
	var days, logged, weeks []string
	doc.Find("li.wday").Each(func(_ int, s *goquery.Selection) {
		days = append(days, s.AttrOr("id", ""))
		if s.Find("li.cell").Length() > 0 {
			logged = append(logged, s.AttrOr("id", ""))
		}
	})
	doc.Find("section.sweek").Each(func(_ int, s *goquery.Selection) { weeks = append(weeks, s.AttrOr("id", "")) })
	if d := cmp.Diff([]string{"day-2026-09-01", "day-2026-09-02"}, logged); d != "" || len(days) != 14 || days[0] != "day-2026-09-01" || days[13] != "day-2026-09-14" {
		t.Errorf("days %v; logged days, oldest first (-want +got):\n%s", days, d)
	}
	if d := cmp.Diff([]string{"week-2026-09-01", "week-2026-09-08"}, weeks); d != "" {
		t.Errorf("weeks (-want +got):\n%s", d)
	}
	if got := strings.TrimSpace(doc.Find("#day-2026-09-02 .total").Text()); got != "513 kcal" {
		t.Errorf("day total = %q, want 513 kcal", got)
	}
	li := doc.Find("#meal-" + lunch.ID)
	if got := li.Find(".notes").Text(); got != "Lentil soup" {
		t.Errorf("notes = %q, want Lentil soup", got)
	}
	if got, want := li.Find("a.cell-link").AttrOr("href", ""), "/s/"+tok+"/meals/"+lunch.Date+"/"+lunch.ID; got != want {
		t.Errorf("thumbnail link = %q, want the meal's page %q", got, want)
	}
	if got := li.Find("img").AttrOr("src", ""); got != photoPath(tok, lunch, photo.SizeThumb) {
		t.Errorf("thumbnail = %q, want %q", got, photoPath(tok, lunch, photo.SizeThumb))
	}
	for _, size := range []photo.Size{photo.SizeThumb, photo.SizeDisplay} {
		p := recipient.Get(photoPath(tok, lunch, size))
		want := object(t, app, photo.Key(localenv.Subject(ownerEmail), lunch.Date, lunch.ID, size))
		if p.StatusCode != http.StatusOK || p.Body != string(want) {
			t.Errorf("photo %s = %d, %d bytes; want 200 with the stored %d bytes", size, p.StatusCode, len(p.Body), len(want))
		}
	}

	row := owner.Get("/shares").Doc().Find("li.share")
	if got := row.Find(".open-count").Text(); got != "1" {
		t.Errorf("open count on the owner's list = %q, want 1 (photos do not count)", got)
	}
	if err := app.Shares.FlushOpens(context.Background()); err != nil {
		t.Fatal(err)
	}
	sh, err := app.Shares.Get(context.Background(), tok)
	if err != nil || sh.Opens != 1 {
		t.Fatalf("stored opens = %v, %v; want 1", sh, err)
	}
	// In the owner's zone, named: the recipient's page and the admin
	// lists say UTC.
	u, err := app.Users.Get(context.Background(), localenv.Subject(ownerEmail))
	if err != nil || sh.FirstOpenedAt == nil {
		t.Fatalf("owner %v, %v; first opened %v", u, err, sh.FirstOpenedAt)
	}
	if want := sh.FirstOpenedAt.In(u.Location()).Format("2 Jan 2006 15:04 MST"); row.Find(".first-opened").Text() != want || row.Find(".last-opened").Text() != want {
		t.Errorf("first and last opened = %q, %q; want %q", row.Find(".first-opened").Text(), row.Find(".last-opened").Text(), want)
	}
}
