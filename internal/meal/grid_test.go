package meal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/go-cmp/cmp"
	"github.com/shopspring/decimal"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
)

// putMeal writes m for email straight to the meals table (no upload): a
// photo is only its row's version and sizes. It returns the stored meal.
func putMeal(t testing.TB, app *apptest.App, email string, m meal.Meal) meal.Meal {
	t.Helper()
	m.UserID = localenv.Subject(email)
	if m.Kind == "" {
		m.Kind = meal.Lunch
	}
	tod, err := meal.ParseTimeOfDay(m.Time)
	if err != nil {
		t.Fatal(err)
	}
	m.Time = tod.String()
	m.ID = meal.NewID(tod)
	m.CreatedAt, m.UpdatedAt = time.Now().UTC(), time.Now().UTC()
	if err := app.Meals.Create(context.Background(), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// withPhoto gives m a photo row: version v, display 800×600, thumb 480×360.
func withPhoto(m meal.Meal, v int64) meal.Meal {
	m.PhotoV, m.PhotoW, m.PhotoH, m.ThumbW, m.ThumbH = photo.Version(v), 800, 600, 480, 360
	return m
}

func num(s string) *meal.Number {
	n := meal.NumberOf(decimal.RequireFromString(s))
	return &n
}

// TestMonthTotalsAndSummary: each day's kcal and macros on one line, summed
// in decimal, and the month's days logged and average day.
func TestMonthTotalsAndSummary(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	putMeal(t, app, admin, meal.Meal{Date: "2026-09-01", Time: "08:00", Kcal: num("0.1"), ProteinG: num("10.5")})
	putMeal(t, app, admin, meal.Meal{Date: "2026-09-01", Time: "12:00", Kcal: num("0.2"), CarbsG: num("3")})
	putMeal(t, app, admin, meal.Meal{Date: "2026-09-02", Time: "12:00", Kcal: num("100"), ProteinG: num("20"), FatG: num("1.5")})
	putMeal(t, app, admin, meal.Meal{Date: "2026-09-03", Time: "12:00", Notes: "no numbers today"})
	// Another month and another owner change nothing.
	putMeal(t, app, admin, meal.Meal{Date: "2026-10-01", Time: "12:00", Kcal: num("5000")})
	putMeal(t, app, "other@example.com", meal.Meal{Date: "2026-09-01", Time: "12:00", Kcal: num("5000")})

	doc := c.Get("/meals?month=2026-09").Doc()
	for sel, want := range map[string]string{
		"#day-2026-09-01 .day-totals": "0 kcalP 10.5 gC 3 g",
		"#day-2026-09-02 .day-totals": "100 kcalP 20 gF 1.5 g",
		"#summary .logged":            "3 days logged · 4 meals",
		"#summary .averages":          "Average per logged day: 50 kcal (2 days)P 15.3 g (2 days)C 3 g (1 day)F 1.5 g (1 day)",
		"#day-2026-09-02 h2":          "Wednesday 2 September",
	} {
		if got := strings.TrimSpace(doc.Find(sel).Text()); got != want {
			t.Errorf("%s = %q, want %q", sel, got, want)
		}
	}
	if n := doc.Find("#day-2026-09-03 .day-totals").Length(); n != 0 {
		t.Errorf("a day without numbers shows %d totals lines, want none", n)
	}
	if got := doc.Find("#day-2026-09-01 .day-totals span").Length(); got != 3 {
		t.Errorf("1 September totals %d numbers, want 3 (no fat recorded)", got)
	}

	// A month where every day records every number: plain averages.
	app2, c2 := signedIn(t)
	putMeal(t, app2, admin, meal.Meal{Date: "2026-09-01", Time: "12:00", Kcal: num("1000"), ProteinG: num("50"), CarbsG: num("100"), FatG: num("30")})
	putMeal(t, app2, admin, meal.Meal{Date: "2026-09-02", Time: "12:00", Kcal: num("2001"), ProteinG: num("60.5"), CarbsG: num("0"), FatG: num("30")})
	if got := c2.Get("/meals?month=2026-09").Text("#summary .averages"); got != "Average per logged day: 1501 kcalP 55.3 gC 50 gF 30 g" {
		t.Errorf("averages = %q", got)
	}
}

// TestKcalWhole: kcal are stored as typed and shown whole everywhere an
// owner reads them (card, day total, summary, meal page), each sum rounded
// once from the exact stored values, so the day total and the summary of
// a one-day month say the same; the edit form and the export keep the
// decimal (both edges of the number).
func TestKcalWhole(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	resp := c.PostForm("/meals", mealForm("date", "2026-09-01", "time", "12:30", "kcal", "491.4"))
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("add = %d", resp.StatusCode)
	}
	c.PostForm("/meals", mealForm("date", "2026-09-01", "time", "19:30", "kcal", "2072"))
	lunch := allMeals(t, app, admin)[0]
	if lunch.Kcal.String() != "491.4" {
		t.Fatalf("stored kcal = %s, want 491.4 as typed", lunch.Kcal)
	}
	doc := c.Get("/meals?month=2026-09").Doc()
	for sel, want := range map[string]string{
		"#meal-" + lunch.ID + " .kcal": "491 kcal",
		"#day-2026-09-01 .total":       "2563 kcal",
		"#summary .averages .kcal":     "2563 kcal",
	} {
		if got := strings.TrimSpace(doc.Find(sel).Text()); got != want {
			t.Errorf("month %s = %q, want %q", sel, got, want)
		}
	}
	if got := c.Get(lunch.DetailURL()).Text(".numbers .kcal"); got != "491 kcal" {
		t.Errorf("meal page kcal = %q, want 491 kcal", got)
	}
	if v, _ := c.Get(lunch.DetailURL() + "/edit").Doc().Find("#kcal").Attr("value"); v != "491.4" {
		t.Errorf("edit form kcal = %q, want 491.4 as stored", v)
	}
	var out struct {
		Meals []map[string]json.RawMessage `json:"meals"`
	}
	if err := json.Unmarshal([]byte(c.Get("/account/export.json").Body), &out); err != nil || len(out.Meals) != 2 {
		t.Fatalf("export: %v, %d meals", err, len(out.Meals))
	}
	if got := string(out.Meals[0]["kcal"]); got != "491.4" {
		t.Errorf("export kcal = %s, want the number 491.4", got)
	}
}

func TestSummarize(t *testing.T) {
	day := func(date string, kcal ...string) meal.Day {
		d := meal.Day{}
		for _, k := range kcal {
			d.Meals = append(d.Meals, meal.Meal{Date: date, Kcal: num(k)})
		}
		return meal.GroupByDay(d.Meals)[0]
	}
	for _, tc := range []struct {
		name string
		days []meal.Day
		want string // Kcal's value, days, of; "" for nil
	}{
		{"none", nil, ""},
		{"exact tenths", []meal.Day{day("2026-09-01", "0.1", "0.2")}, "0 1/1"},
		{"half rounds away from zero", []meal.Day{day("2026-09-01", "1"), day("2026-09-02", "2")}, "2 2/2"},
		{"large", []meal.Day{day("2026-09-01", "19999.9", "19999.9"), day("2026-09-02", "0")}, "20000 2/2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := meal.Summarize(tc.days)
			got := ""
			if s.Kcal != nil {
				got = fmt.Sprintf("%s %d/%d", s.Kcal.Value, s.Kcal.Days, s.Kcal.Of)
			}
			if got != tc.want {
				t.Errorf("Summarize(%s).Kcal = %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

// TestThumbnailsLoadLazilyBelowTheFirstScreen: the first EagerThumbs
// thumbnails load at once, the rest lazily, all with their sizes and alt
// text; a meal without a photo has no img.
func TestThumbnailsLoadLazilyBelowTheFirstScreen(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	n := meal.EagerThumbs + 4
	for i := 0; i < n; i++ {
		putMeal(t, app, admin, withPhoto(meal.Meal{Date: fmt.Sprintf("2026-09-%02d", 1+i/3), Time: fmt.Sprintf("%02d:00", 8+i%3*5)}, int64(i+1)))
	}
	putMeal(t, app, admin, meal.Meal{Date: "2026-09-28", Time: "12:00"})
	doc := c.Get("/meals?month=2026-09").Doc()
	var lazy []bool
	doc.Find("main img").Each(func(i int, img *goquery.Selection) {
		_, l := img.Attr("loading")
		lazy = append(lazy, l)
		for _, a := range []string{"width", "height", "alt"} {
			if v, _ := img.Attr(a); v == "" || v == "0" {
				t.Errorf("image %d has %s=%q", i, a, v)
			}
		}
	})
	var want []bool
	for i := 0; i < n; i++ {
		want = append(want, i >= meal.EagerThumbs)
	}
	if d := cmp.Diff(want, lazy); d != "" {
		t.Errorf("loading=lazy by image, newest day first (-want +got):\n%s", d)
	}
	if got := doc.Find("#day-2026-09-28 .no-photo").Length(); got != 1 {
		t.Errorf("the meal without a photo shows %d placeholders, want 1", got)
	}
}

// TestDetailPage: a meal's page shows its photo, words for its date,
// full notes and numbers, its neighbours (same day and days around it,
// however far, never another owner's) and edit; it costs one Query when
// both neighbours are within DetailDays. A moved meal's old address is a
// 404 that links to its day.
func TestDetailPage(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	lastYear := putMeal(t, app, admin, meal.Meal{Date: "2025-12-30", Time: "13:15", Kind: meal.Lunch})
	far := putMeal(t, app, admin, meal.Meal{Date: "2026-08-20", Time: "12:00", Kind: meal.Snack})
	dinner := putMeal(t, app, admin, meal.Meal{Date: "2026-08-31", Time: "19:00", Kind: meal.Dinner})
	breakfast := putMeal(t, app, admin, meal.Meal{Date: "2026-09-01", Time: "08:00", Kind: meal.Breakfast})
	lunch := putMeal(t, app, admin, withPhoto(meal.Meal{Date: "2026-09-01", Time: "12:30", Kind: meal.Lunch,
		Notes: strings.Repeat("A long note. ", 40) + "The end.", Kcal: num("512.5"), Hunger: new(4)}, 7))
	drink := putMeal(t, app, admin, meal.Meal{Date: "2026-09-03", Time: "07:05", Kind: meal.Drink})
	putMeal(t, app, "other@example.com", meal.Meal{Date: "2026-09-01", Time: "10:00"})

	app.Calls.Reset()
	resp := c.Get(lunch.DetailURL())
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d", lunch.DetailURL(), resp.StatusCode)
	}
	// ONE Query; the guard's users row comes from the cache.
	if d := cmp.Diff(map[string]int{"Query": 1}, app.Calls.Counts()); d != "" {
		t.Errorf("SDK calls (-want +got):\n%s", d)
	}
	if got := app.Calls.Scanned()["Query"]; got != 4 {
		t.Errorf("the Query read %d items, want the 4 meals from 25 August to 8 September", got)
	}
	doc := resp.Doc()
	attr := func(sel, a string) string { v, _ := doc.Find(sel).Attr(a); return v }
	for _, tc := range []struct{ got, want string }{
		{doc.Find("h1").Text(), "Lunch"},
		{doc.Find("title").Text(), "Lunch, 1 September 2026 · ndiro"},
		{doc.Find(".when").Text(), "Tuesday 1 September 2026, 12:30"},
		{doc.Find("main .notes").Text(), lunch.Notes},
		{doc.Find(".numbers .kcal").Text(), "513 kcal"},
		{doc.Find(".numbers .hunger").Text(), "4 of 5"},
		{attr("img.photo", "src"), lunch.DisplayURL()},
		{attr("img.photo", "width") + "x" + attr("img.photo", "height"), "800x600"},
		{attr("a.edit", "href"), lunch.DetailURL() + "/edit"},
		{attr(".back a", "href"), "/meals?month=2026-09#meal-" + lunch.ID},
		{attr("a[rel=prev]", "href"), breakfast.DetailURL()},
		{strings.TrimSpace(doc.Find("a[rel=prev]").Text()), "← Breakfast at 08:00"},
		{attr("a[rel=next]", "href"), drink.DetailURL()},
		{strings.TrimSpace(doc.Find("a[rel=next]").Text()), "Drink at 07:05, Thu 3 Sep →"},
	} {
		if strings.TrimSpace(tc.got) != tc.want {
			t.Errorf("got %q, want %q", strings.TrimSpace(tc.got), tc.want)
		}
	}
	if v, _ := doc.Find(`header nav a[aria-current]`).Attr("href"); v != "/meals" {
		t.Errorf("the header marks %q, want the diary", v)
	}

	// Across days: the first meal of a day follows the last of the day
	// before; a neighbour beyond DetailDays costs one Query with Limit 1
	// more, and one in another year names it.
	d := c.Get(breakfast.DetailURL()).Doc()
	if v, _ := d.Find("a[rel=prev]").Attr("href"); v != dinner.DetailURL() || strings.TrimSpace(d.Find("a[rel=prev]").Text()) != "← Dinner at 19:00, Mon 31 Aug" {
		t.Errorf("breakfast's previous meal = %q %q, want the dinner of 31 August", v, d.Find("a[rel=prev]").Text())
	}
	for _, tc := range []struct {
		page       meal.Meal
		prev, text string
		queries    int
	}{
		{dinner, far.DetailURL(), "← Snack at 12:00, Thu 20 Aug", 2},
		{far, lastYear.DetailURL(), "← Lunch at 13:15, Tue 30 Dec 2025", 3},
		{lastYear, "", "", 3},
	} {
		app.Calls.Reset()
		d := c.Get(tc.page.DetailURL()).Doc()
		if v, _ := d.Find("a[rel=prev]").Attr("href"); v != tc.prev || strings.TrimSpace(d.Find("a[rel=prev]").Text()) != tc.text {
			t.Errorf("%s: previous meal = %q %q, want %q %q", tc.page.Date, v, strings.TrimSpace(d.Find("a[rel=prev]").Text()), tc.prev, tc.text)
		}
		if got := app.Calls.Counts()["Query"]; got != tc.queries {
			t.Errorf("%s: %d Queries, want %d", tc.page.Date, got, tc.queries)
		}
	}

	// From the month: the thumbnail leads here.
	if v, _ := c.Get("/meals?month=2026-09").Doc().Find("#meal-" + lunch.ID + " a").Attr("href"); v != "/meals/2026-09-01/"+lunch.ID {
		t.Errorf("the month's card links to %q, want %q", v, lunch.DetailURL())
	}

	// The meal moved (or an old link to another day): a 404 that says so
	// and leads to the day it was on.
	for _, path := range []string{"/meals/2026-09-02/" + lunch.ID, "/meals/2026-09-01/" + strings.Replace(lunch.ID, lunch.ID[7:], "000000", 1)} {
		r := c.Get(path)
		day := path[7:17]
		back := r.Doc().Find("main a.button").First()
		href, _ := back.Attr("href")
		if r.StatusCode != http.StatusNotFound || r.Text("h1") != "Meal moved or deleted" || href != "/meals?month=2026-09#day-"+day {
			t.Errorf("GET %s = %d %q linking to %q, want 404 Meal moved or deleted linking to the day", path, r.StatusCode, r.Text("h1"), href)
		}
		if day == "2026-09-02" && strings.TrimSpace(back.Text()) != "See Wednesday 2 September 2026" {
			t.Errorf("the link says %q", back.Text())
		}
	}
	for _, path := range []string{"/meals/2026-02-30/" + lunch.ID, "/meals/2026-09-01/nonsense"} {
		if r := c.Get(path); r.StatusCode != http.StatusNotFound || r.Text("h1") != "Meal not found" {
			t.Errorf("GET %s = %d %q, want 404 Meal not found", path, r.StatusCode, r.Text("h1"))
		}
	}
}

// TestMovedMeal: moving a meal says where to in words, and the meal's old
// page then says it moved and leads to its old day.
func TestMovedMeal(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	m := putMeal(t, app, admin, meal.Meal{Date: "2026-09-01", Time: "12:30"})
	resp := c.PostForm(m.DetailURL()+"/move", url.Values{"date": {"2026-10-05"}, "time": {"09:15"}, "version": {"1"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("move = %d", resp.StatusCode)
	}
	if flash := c.Get(resp.Location()).Text(".flash"); flash != "Meal moved to Monday 5 October 2026, 09:15." {
		t.Errorf("flash = %q, want the new date and time in words", flash)
	}
	old := c.Get(m.DetailURL())
	href, _ := old.Doc().Find("main a.button").Attr("href")
	if old.StatusCode != http.StatusNotFound || old.Text("h1") != "Meal moved or deleted" || href != "/meals?month=2026-09#day-2026-09-01" {
		t.Errorf("old address = %d %q linking to %q, want 404 Meal moved or deleted linking to 1 September", old.StatusCode, old.Text("h1"), href)
	}
}

// septemberMonth signs in an owner whose today is 15 September 2026, with
// meals on the 3rd (two) and the 14th, and returns the client.
func septemberMonth(t *testing.T) *apptest.Client {
	t.Helper()
	app, c := signedIn(t)
	app.Clock.Set(time.Date(2026, 9, 15, 10, 0, 0, 0, time.UTC))
	putMeal(t, app, admin, meal.Meal{Date: "2026-09-03", Time: "08:00", Notes: "a"})
	putMeal(t, app, admin, meal.Meal{Date: "2026-09-03", Time: "12:00", Notes: "b"})
	putMeal(t, app, admin, meal.Meal{Date: "2026-09-14", Time: "12:00", Notes: "c"})
	return c
}

// TestMonthStrip: the month page's calendar strip lists each day of the
// month, the logged ones linked to their sections, today and the days
// after it marked; each day's "+" is named by its own content.
func TestMonthStrip(t *testing.T) {
	t.Parallel()
	c := septemberMonth(t)
	doc := c.Get("/meals").Doc()
	var strip []string
	doc.Find("#strip li").Each(func(_ int, s *goquery.Selection) {
		href, _ := s.Find("a").Attr("href")
		cur, _ := s.Attr("aria-current")
		if c, ok := s.Find("a").Attr("aria-current"); ok {
			cur = c
		}
		cls, _ := s.Attr("class")
		strip = append(strip, strings.Join(strings.Fields(href+" "+s.Text()+" "+cur+" "+cls), " "))
	})
	if len(strip) != 30 {
		t.Fatalf("strip has %d days, want September's 30", len(strip))
	}
	for i, want := range map[int]string{
		0: "Tu 1", 2: "#day-2026-09-03 Th 3, 2 meals", 13: "#day-2026-09-14 Mo 14, 1 meal",
		14: "Tu 15 date", 15: "We 16 f", 29: "We 30 f",
	} {
		if strip[i] != want {
			t.Errorf("strip day %d = %q, want %q", i+1, strip[i], want)
		}
	}
	if label, _ := doc.Find("#strip").Attr("aria-label"); label != "Days of September 2026" {
		t.Errorf("strip label = %q", label)
	}
	for _, id := range []string{"day-2026-09-03", "day-2026-09-14"} {
		if doc.Find("section#"+id).Length() != 1 {
			t.Errorf("the strip links to #%s, which the page does not hold", id)
		}
	}
	// "+": its accessible name comes from its content, which holds the
	// day; the visible "+" is hidden from screen readers.
	add := doc.Find("#day-2026-09-03 a.add-day")
	if _, has := add.Attr("aria-label"); has || strings.TrimSpace(add.Find(".visually-hidden").Text()) != "Add a meal on 3 September" || add.Find(`[aria-hidden=true]`).Text() != "+" {
		t.Errorf("the day's + link is %q", goquery.NewDocumentFromNode(add.Nodes[0]).Text())
	}

}

// TestMonthPager: no link into the future, from a month or a window; the
// range form sits by the pager, filled with the month.
func TestMonthPager(t *testing.T) {
	t.Parallel()
	c := septemberMonth(t)
	doc := c.Get("/meals").Doc()
	// No link into the future: September is the current month.
	if n := doc.Find("a[rel=next]").Length(); n != 0 {
		t.Errorf("the current month links to the next month")
	}
	if href, _ := doc.Find("a[rel=prev]").Attr("href"); href != "/meals?month=2026-08" {
		t.Errorf("prev = %q", href)
	}
	if href, _ := c.Get("/meals?month=2026-08").Doc().Find("a[rel=next]").Attr("href"); href != "/meals?month=2026-09" {
		t.Errorf("August links on to %q, want September", href)
	}
	if n := c.Get("/meals?month=2026-10").Doc().Find("a[rel=next]").Length(); n != 0 {
		t.Error("a future month links further into the future")
	}
	// The range form: next to the pager, the month's first and last day.
	from, _ := doc.Find("#window input[name=from]").Attr("value")
	to, _ := doc.Find("#window input[name=to]").Attr("value")
	if from != "2026-09-01" || to != "2026-09-30" || doc.Find("nav.pager + .tools #window").Length() != 1 {
		t.Errorf("range form from %q to %q (by the pager: %d), want 2026-09-01 to 2026-09-30 right after the pager", from, to, doc.Find("nav.pager + .tools #window").Length())
	}
	// A window ending after today has no next window.
	w := c.Get("/meals?from=2026-09-01&to=2026-09-07").Doc()
	if href, _ := w.Find("a[rel=next]").Attr("href"); href != "/meals?from=2026-09-08&to=2026-09-14" {
		t.Errorf("the first week links on to %q", href)
	}
	if n := c.Get("/meals?from=2026-09-09&to=2026-09-15").Doc().Find("a[rel=next]").Length(); n != 0 {
		t.Error("the window holding today links into the future")
	}
}

// TestMonthDenseGrid: the denser grid is chosen by ?grid= and remembered
// in a cookie of the browser's, across pages, until ?grid=normal.
func TestMonthDenseGrid(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	app.Clock.Set(time.Date(2026, 9, 15, 10, 0, 0, 0, time.UTC))
	putMeal(t, app, admin, meal.Meal{Date: "2026-09-03", Time: "08:00", Notes: "a",
		Photo: meal.Photo{PhotoV: 1_790_000_000_000_000_001, PhotoW: 1536, PhotoH: 2048, ThumbW: 480, ThumbH: 640, PhotoSet: photo.Full(photo.LegacySet, 1536, 2048)}})
	putMeal(t, app, admin, meal.Meal{Date: "2026-09-14", Time: "12:00", Notes: "c"})
	// Each grid's thumbnails are sized for its cells, and the page
	// carries both sizes for the switch in place.
	sizes := func(doc *goquery.Document) []string {
		var out []string
		doc.Find(".days [sizes]").Each(func(_ int, s *goquery.Selection) { out = append(out, s.AttrOr("sizes", "")) })
		return out
	}
	doc := c.Get("/meals").Doc()
	if got, want := sizes(doc), []string{photo.SlotGrid.Sizes(), photo.SlotGrid.Sizes()}; !slices.Equal(got, want) {
		t.Errorf("usual grid's sizes = %q, want %q", got, want)
	}
	if got := doc.Find(".days").AttrOr("data-sizes-dense", ""); got != photo.SlotDense.Sizes() {
		t.Errorf("data-sizes-dense = %q, want %q", got, photo.SlotDense.Sizes())
	}
	if got := doc.Find(".days").AttrOr("data-sizes-grid", ""); got != photo.SlotGrid.Sizes() {
		t.Errorf("data-sizes-grid = %q, want %q", got, photo.SlotGrid.Sizes())
	}
	if got, want := sizes(c.Get("/meals?grid=dense").Doc()), []string{photo.SlotDense.Sizes(), photo.SlotDense.Sizes()}; !slices.Equal(got, want) {
		t.Errorf("denser grid's sizes = %q, want %q", got, want)
	}
	c.Get("/meals?grid=normal")
	// The denser grid.
	if doc.Find(".days.dense").Length() != 0 {
		t.Error("the denser grid without asking")
	}
	toggle, _ := doc.Find("[data-grid-toggle]").Attr("href")
	if toggle != "/meals?grid=dense&month=2026-09" {
		t.Errorf("grid toggle = %q", toggle)
	}
	resp := c.Get(toggle)
	if resp.Doc().Find(".days.dense").Length() != 1 {
		t.Error("?grid=dense shows the usual grid")
	}
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "ndiro_grid" {
			cookie = ck
		}
	}
	if cookie == nil || cookie.Value != "dense" || cookie.MaxAge < 300*24*3600 || cookie.Path != "/meals" {
		t.Fatalf("?grid=dense set the cookie %v, want ndiro_grid=dense for a year on /meals", cookie)
	}
	if c.Get("/meals?month=2026-08").Doc().Find(".days.dense, #empty").Length() == 0 {
		t.Error("the choice is not remembered")
	}
	if c.Get("/meals").Doc().Find(".days.dense").Length() != 1 {
		t.Error("the denser grid is not remembered on the next page")
	}
	if href, _ := c.Get("/meals").Doc().Find("[data-grid-toggle]").Attr("href"); href != "/meals?grid=normal&month=2026-09" {
		t.Errorf("grid toggle back = %q", href)
	}
	if c.Get("/meals?grid=normal").Doc().Find(".days.dense").Length() != 0 || c.Get("/meals").Doc().Find(".days.dense").Length() != 0 {
		t.Error("?grid=normal does not bring the usual grid back")
	}
}
