package meal_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"ndiro/internal/localenv"
	"ndiro/internal/meal"
)

func TestFold(t *testing.T) {
	for in, want := range map[string]string{
		"Crème Brûlée":    "creme brulee",
		"CRÈME BRÛLÉE":    "creme brulee",
		"Straße":          "strasse",
		"ﬁsh and chips":   "fish and chips",
		"Łódź pierogi":    "lodz pierogi",
		"Smørrebrød":      "smorrebrod",
		"İstanbul kebab":  "istanbul kebab",
		"SoUp":            "soup",
		"jalapeño, açaí":  "jalapeno, acai",
		"Ελληνική σαλάτα": "ελληνικη σαλατα",
		"":                "",
	} {
		if got := meal.Fold(in); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMatcher(t *testing.T) {
	m := &meal.Meal{Kind: meal.Dinner, Notes: "Crème brûlée at Lucía's,\nthen a walk"}
	for _, tc := range []struct {
		q    string
		want bool
	}{
		{"creme brulee", true},
		{"BRÛLÉE", true},
		{"brul", true},
		{"lucia walk", true},
		{"walk lucia", true},
		{"dinner", true},
		{"DINNER creme", true},
		{"lunch", false},
		{"creme soup", false},
		{"   ", false},
	} {
		if got := meal.Matcher(tc.q)(m); got != tc.want {
			t.Errorf("Matcher(%q)(%q) = %v, want %v", tc.q, m.Notes, got, tc.want)
		}
	}
}

// searchDays returns the day headings and card notes a search page shows.
func searchDays(doc *goquery.Document) (days, notes []string) {
	doc.Find("section.day h2").Each(func(_ int, s *goquery.Selection) { days = append(days, s.Text()) })
	doc.Find("li.meal .notes").Each(func(_ int, s *goquery.Selection) { notes = append(notes, s.Text()) })
	return days, notes
}

// TestSearch: a search finds every meal of the owner's whose notes (or
// kind) hold the words, whatever their case and accents, newest day
// first, as the diary's cards under their days, and nobody else's.
func TestSearch(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	putMeal(t, app, admin, meal.Meal{Date: "2024-03-02", Time: "20:00", Kind: meal.Dinner, Notes: "Crème brûlée at Lucía's", Kcal: num("491.4")})
	putMeal(t, app, admin, meal.Meal{Date: "2026-09-01", Time: "19:00", Kind: meal.Dinner, Notes: "creme brulee again"})
	putMeal(t, app, admin, meal.Meal{Date: "2026-09-01", Time: "12:30", Kind: meal.Lunch, Notes: "lentil soup"})
	putMeal(t, app, admin, meal.Meal{Date: "2025-01-10", Time: "08:00", Kind: meal.Breakfast, Notes: "CRÈME BRÛLÉE for breakfast!"})
	putMeal(t, app, "other@example.com", meal.Meal{Date: "2026-09-02", Time: "20:00", Notes: "their crème brûlée"})

	for _, q := range []string{"creme brulee", "CRÈME BRÛLÉE", "Brûlée crème", "brul"} {
		resp := c.Get("/meals/search?" + url.Values{"q": {q}}.Encode())
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("search %q = %d", q, resp.StatusCode)
		}
		days, notes := searchDays(resp.Doc())
		if d := cmp.Diff([]string{"Tue 1 Sep 2026", "Fri 10 Jan 2025", "Sat 2 Mar 2024"}, days); d != "" {
			t.Errorf("search %q days (-want +got):\n%s", q, d)
		}
		if d := cmp.Diff([]string{"creme brulee again", "CRÈME BRÛLÉE for breakfast!", "Crème brûlée at Lucía's"}, notes); d != "" {
			t.Errorf("search %q cards (-want +got):\n%s", q, d)
		}
		doc := resp.Doc()
		if got := strings.Join(strings.Fields(doc.Find("#search-status").Text()), " "); got != "3 meals found, searching your whole diary. Capitals and accents do not matter." {
			t.Errorf("search %q status = %q", q, got)
		}
		if v, _ := doc.Find("#q").Attr("value"); v != q {
			t.Errorf("the search box holds %q, want %q", v, q)
		}
		if doc.Find(".day-totals, .add-day, #summary, #strip, .older").Length() != 0 {
			t.Errorf("search %q shows day totals, add links, a summary, a strip or older results", q)
		}
	}
	// The same cards, linking to each meal, kcal whole; the kind matches.
	doc := c.Get("/meals/search?q=lunch").Doc()
	if _, notes := searchDays(doc); len(notes) != 1 || notes[0] != "lentil soup" {
		t.Errorf("search lunch = %q, want the lentil soup", notes)
	}
	doc = c.Get("/meals/search?q=lucia").Doc()
	if href, _ := doc.Find("li.meal a").Attr("href"); !strings.HasPrefix(href, "/meals/2024-03-02/200000-") || doc.Find("li.meal .kcal").Text() != "491 kcal" {
		t.Errorf("the card links to %q and shows %q", href, doc.Find("li.meal .kcal").Text())
	}
	if got := strings.TrimSpace(c.Get("/meals/search?q=quinoa").Text("#search-status")); !strings.HasPrefix(got, "No meals found, searching your whole diary.") {
		t.Errorf("a search with no match says %q", got)
	}
	// Without words: the form only, no Query.
	app.Calls.Reset()
	resp := c.Get("/meals/search")
	if resp.StatusCode != http.StatusOK || resp.Doc().Find("#q").Length() != 1 || resp.Doc().Find("#search-status").Length() != 0 {
		t.Errorf("the empty search page = %d", resp.StatusCode)
	}
	if n := app.Calls.Counts()["Query"]; n != 0 {
		t.Errorf("the empty search page made %d Queries", n)
	}
	if v, _ := doc.Find(`header nav a[aria-current]`).Attr("href"); v != "/meals" {
		t.Errorf("the header marks %q, want the diary", v)
	}
}

// TestSearchBadInput: a search that cannot be run is a 400 with the form,
// the search cleaned and cut, and a message; nothing is read.
func TestSearchBadInput(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	for _, tc := range []struct {
		name, query, msg, shown string
	}{
		{"too long", "q=" + strings.Repeat("é", meal.MaxSearchRunes+1), "Search for at most 100 characters; this was 101.", strings.Repeat("é", meal.MaxSearchRunes)},
		{"control character", "q=" + url.QueryEscape("soup\x1b[31m"), "Search for words only: the control character U+001B cannot be searched for.", "soup[31m"},
		{"line break", "q=" + url.QueryEscape("soup\nbread"), "Search for words only: a line break cannot be searched for.", "soupbread"},
		{"bidi override", "q=" + url.QueryEscape("soup\u202e"), "Search for words only: the text-direction character U+202E (right-to-left override) cannot be searched for.", "soup"},
		{"damaged older link", "q=soup&before=2026-09-01%23nonsense", "This “older results” link is damaged: search again from the newest meals.", "soup"},
		{"older link outside the keys", "q=soup&before=..%2F..", "This “older results” link is damaged: search again from the newest meals.", "soup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app.Calls.Reset()
			resp := c.Get("/meals/search?" + tc.query)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status = %d, want 400", resp.StatusCode)
			}
			if got := resp.Text("#q-err"); got != tc.msg {
				t.Errorf("message = %q, want %q", got, tc.msg)
			}
			if v, _ := resp.Doc().Find("#q").Attr("value"); v != tc.shown {
				t.Errorf("search box = %q, want %q", v, tc.shown)
			}
			if inv, _ := resp.Doc().Find("#q").Attr("aria-invalid"); inv != "true" {
				t.Error("the search box is not marked invalid")
			}
			if n := app.Calls.Counts()["Query"]; n != 0 {
				t.Errorf("%d Queries for a refused search", n)
			}
		})
	}
}

// noteItem is a meals item of uid on day with notes.
func noteItem(uid, day, id, notes string) map[string]types.AttributeValue {
	it := mealItem(uid, day, id)
	it["notes"] = &types.AttributeValueMemberS{Value: notes}
	return it
}

// TestSearchPagesAreBounded: a page reads at most meal.SearchPageItems
// items (ScannedCount, through the SDK), shows at most
// meal.SearchResults matches, and "older results" goes on below where it
// stopped until the oldest meal, missing none and repeating none.
func TestSearchPagesAreBounded(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	owner := localenv.Subject(admin)
	var items []map[string]types.AttributeValue
	start := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1300 {
		day := start.AddDate(0, 0, i/3).Format("2006-01-02")
		notes := "plain rice"
		if i == 0 || i == 700 || (i >= 1000 && i%10 == 0) { // the oldest, one in the middle, 30 among the newest
			notes = "Quinoa bowl"
		}
		items = append(items, noteItem(owner, day, fmt.Sprintf("%02d0000-%06x", 8+4*(i%3), i), notes))
	}
	// Another owner's meals are never read.
	for i := range 200 {
		items = append(items, noteItem("someone-else", start.AddDate(0, 0, i).Format("2006-01-02"), fmt.Sprintf("120000-%06x", i), "quinoa"))
	}
	batchPut(t, app, items)

	var found []string
	next := "/meals/search?q=QUINOA"
	var reads []int
	for pages := 0; next != ""; pages++ {
		if pages > 5 {
			t.Fatal("more than 5 pages")
		}
		app.Calls.Reset()
		resp := c.Get(next)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d", next, resp.StatusCode)
		}
		read := app.Calls.Scanned()["Query"]
		reads = append(reads, read)
		if read > meal.SearchPageItems {
			t.Errorf("page %d read %d items, over %d", pages+1, read, meal.SearchPageItems)
		}
		doc := resp.Doc()
		n := doc.Find("li.meal").Length()
		if n > meal.SearchResults {
			t.Errorf("page %d shows %d meals, over %d", pages+1, n, meal.SearchResults)
		}
		doc.Find("li.meal").Each(func(_ int, s *goquery.Selection) { id, _ := s.Attr("id"); found = append(found, id) })
		next, _ = doc.Find("a[rel=next]").Attr("href")
	}
	if len(found) != 32 {
		t.Errorf("found %d meals over all pages, want 32", len(found))
	}
	seen := map[string]bool{}
	for _, id := range found {
		if seen[id] {
			t.Errorf("meal %s shown twice", id)
		}
		seen[id] = true
	}
	// 30 matches among the newest 300, ten a Query call: the first page
	// stops at the 24th, in its third call; the second reads the rest of
	// that call again and runs to the page bound; the third reaches the
	// oldest meal.
	if d := cmp.Diff([]int{300, 1000, 60}, reads); d != "" {
		t.Errorf("items read per page (-want +got):\n%s", d)
	}
}

// TestSearchPaced: every Query of a search is paid for through the pace
// first (units of the call before it ahead, the rest after), and the
// whole stays within what the searches' pacer allows: past its burst, the
// clock (the app's, which a wait advances) moves on.
func TestSearchPaced(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	owner := localenv.Subject(admin)
	var items []map[string]types.AttributeValue
	for i := range 1000 {
		items = append(items, noteItem(owner, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i/2).Format("2006-01-02"),
			fmt.Sprintf("%02d0000-%06x", 8+10*(i%2), i), strings.Repeat("a long note about lunch ", 20)))
	}
	batchPut(t, app, items)

	var paid int
	calls := 0
	page, err := app.Meals.Search(context.Background(), owner, "", meal.Matcher("nothing"), func(_ context.Context, n int) error {
		paid += n
		calls++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if page.Read != 1000 || page.Oldest != "2024-01-01" || len(page.Meals) != 0 {
		t.Errorf("page read %d items back to %q, found %d; want all 1000 back to 2024-01-01, none found", page.Read, page.Oldest, len(page.Meals))
	}
	if calls < 10 || float64(paid) < page.Units {
		t.Errorf("paid %d units in %d calls for 10 Queries costing %.1f, want every Query paid, in full", paid, calls, page.Units)
	}
	// About 650 B an item: 1000 items are some 80 units read eventually
	// consistent, so four pages pass the burst of 200 and have to wait.
	if page.Units < 70 || page.Units > 90 {
		t.Errorf("a page of 1000 items of ~650 B cost %.1f units, want about 80", page.Units)
	}
	before := app.Clock.Now()
	for range 4 {
		if resp := c.Get("/meals/search?q=nothing"); resp.StatusCode != http.StatusOK {
			t.Fatalf("search = %d", resp.StatusCode)
		}
	}
	waited := app.Clock.Now().Sub(before)
	if min := time.Duration((4*page.Units - meal.SearchReadUnitsBurst) / meal.SearchReadUnitsPerSecond * float64(time.Second) * 0.9); waited < min {
		t.Errorf("four searches of %.0f units each waited %v, want at least %v", page.Units, waited, min)
	}
}
