package meal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
)

const admin = "admin@example.com"

func signedIn(t testing.TB) (*apptest.App, *apptest.Client) {
	t.Helper()
	app := apptest.New(t)
	c := app.Client()
	c.SignIn(admin)
	return app, c
}

func mealForm(kv ...string) url.Values {
	v := url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}, "notes": {"a meal"}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

func allMeals(t testing.TB, app *apptest.App, email string) []meal.Meal {
	t.Helper()
	ms, err := app.Meals.All(context.Background(), localenv.Subject(email))
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func TestAddMealAndMonthView(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)

	resp := c.PostForm("/meals", mealForm("notes", "Lentil soup\r\nand bread", "kcal", "512,5", "protein_g", "20", "carbs_g", "0", "hunger", "4"))
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST /meals = %d, want 303; body %s", resp.StatusCode, resp.Body)
	}
	ms := allMeals(t, app, admin)
	if len(ms) != 1 {
		t.Fatalf("%d meals stored, want 1", len(ms))
	}
	m := ms[0]
	if !strings.HasPrefix(m.ID, "123000-") || m.SK != "2026-09-01#"+m.ID || m.Time != "12:30:00" {
		t.Errorf("stored key: id %q sk %q time %q", m.ID, m.SK, m.Time)
	}
	if want := "/meals?month=2026-09#meal-" + m.ID; resp.Location() != want {
		t.Errorf("redirect = %q, want %q", resp.Location(), want)
	}
	if m.FatG != nil || m.Fullness != nil {
		t.Errorf("blank fields stored: fat %v fullness %v", m.FatG, m.Fullness)
	}

	page := c.Get("/meals?month=2026-09")
	if page.StatusCode != http.StatusOK {
		t.Fatalf("month page = %d", page.StatusCode)
	}
	doc := page.Doc()
	li := doc.Find("#meal-" + m.ID)
	for sel, want := range map[string]string{
		".kcal": "513 kcal", ".notes": "Lentil soup\nand bread", "time": "12:30", ".kind": "lunch",
	} {
		if got := strings.TrimSpace(li.Find(sel).Text()); got != want {
			t.Errorf("meal card %s = %q, want %q", sel, got, want)
		}
	}
	if href, _ := li.Find("a").Attr("href"); href != "/meals/2026-09-01/"+m.ID {
		t.Errorf("meal card links to %q, want its detail page", href)
	}
	for sel, want := range map[string]string{
		".total": "513 kcal", ".protein": "P 20 g", ".carbs": "C 0 g",
	} {
		if got := strings.TrimSpace(doc.Find("#day-2026-09-01 .day-totals " + sel).Text()); got != want {
			t.Errorf("day total %s = %q, want %q", sel, got, want)
		}
	}
	if doc.Find("#day-2026-09-01 .day-totals .fat").Length() != 0 {
		t.Error("blank fat totalled")
	}
	// Every number of the meal, on its detail page.
	detail := c.Get("/meals/2026-09-01/" + m.ID).Doc()
	for sel, want := range map[string]string{
		".kcal": "513 kcal", ".protein": "20 g", ".carbs": "0 g", ".hunger": "4 of 5",
		".notes": "Lentil soup\nand bread", "h1": "Lunch", ".when": "Tuesday 1 September 2026, 12:30",
	} {
		if got := strings.TrimSpace(detail.Find("main " + sel).Text()); got != want {
			t.Errorf("detail page %s = %q, want %q", sel, got, want)
		}
	}
	if detail.Find("main .fat").Length() != 0 {
		t.Error("blank fat shown on the detail page")
	}
	if href, _ := doc.Find(`a[rel=prev]`).Attr("href"); href != "/meals?month=2026-08" {
		t.Errorf("prev link = %q", href)
	}
	if href, _ := doc.Find(`a[rel=next]`).Attr("href"); href != "/meals?month=2026-10" {
		t.Errorf("next link = %q", href)
	}
	// The neighbouring month is empty and says so.
	if c.Get("/meals?month=2026-10").Doc().Find("#empty").Length() != 1 {
		t.Error("empty month shows no empty state")
	}
}

func TestDaysNewestFirst(t *testing.T) {
	t.Parallel()
	_, c := signedIn(t)
	for _, f := range []url.Values{
		mealForm("date", "2026-09-02", "time", "08:00", "kind", "breakfast", "kcal", "0.4"),
		mealForm("date", "2026-09-01", "time", "19:00", "kind", "dinner"),
		mealForm("date", "2026-09-02", "time", "07:00", "kind", "drink", "kcal", "0.4"),
	} {
		if resp := c.PostForm("/meals", f); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("POST = %d", resp.StatusCode)
		}
	}
	doc := c.Get("/meals?month=2026-09").Doc()
	var days, times []string
	doc.Find("section.day").Each(func(_ int, s *goquery.Selection) {
		id, _ := s.Attr("id")
		days = append(days, id)
	})
	doc.Find("li.meal time").Each(func(_ int, s *goquery.Selection) { times = append(times, s.Text()) })
	if d := cmp.Diff([]string{"day-2026-09-02", "day-2026-09-01"}, days); d != "" {
		t.Errorf("day order (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"07:00", "08:00", "19:00"}, times); d != "" {
		t.Errorf("meal order (-want +got):\n%s", d)
	}
	// 0.4 + 0.4 summed exactly, then rounded once: 1, though each meal
	// shows 0.
	if got := strings.TrimSpace(doc.Find("#day-2026-09-02 .total").Text()); got != "1 kcal" {
		t.Errorf("day total = %q, want 1 kcal", got)
	}
}

func TestAddMealBadInput(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	for _, tc := range []struct {
		name, field, value string
	}{
		{"impossible date", "date", "2026-02-30"},
		{"month 13", "date", "2026-13-01"},
		{"path in date", "date", "../x"},
		{"hour 25", "time", "25:00"},
		{"minute 60", "time", "12:60"},
		{"unknown kind", "kind", "brunch"},
		{"notes too long", "notes", strings.Repeat("é", meal.MaxNotes+1)},
		{"notes not UTF-8", "notes", "caf\xe9"},
		{"negative kcal", "kcal", "-5"},
		{"two decimals", "protein_g", "12.55"},
		{"NaN", "carbs_g", "NaN"},
		{"huge exponent", "fat_g", "1e400"},
		{"not a number", "kcal", "lots"},
		{"kcal over 20000", "kcal", "20000.5"},
		{"grams over 5000", "carbs_g", "5001"},
		{"hunger 0", "hunger", "0"},
		{"fullness 6", "fullness", "6"},
		{"hunger decimal", "hunger", "2.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := mealForm(tc.field, tc.value, "notes", "kept notes")
			if tc.field == "notes" {
				form.Set("notes", tc.value)
			}
			resp := c.PostForm("/meals", form)
			if resp.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("status = %d, want 422", resp.StatusCode)
			}
			doc := resp.Doc()
			if n := doc.Find(".field-err").Length(); n != 1 {
				t.Errorf("%d field messages, want 1", n)
			}
			if tc.field != "kind" {
				if inv, _ := doc.Find("#" + tc.field).Attr("aria-invalid"); inv != "true" {
					t.Errorf("field %s not marked invalid", tc.field)
				}
			}
			// The rest of the form is kept.
			if tc.field != "notes" && strings.TrimSpace(doc.Find("#notes").Text()) != "kept notes" {
				t.Errorf("notes not kept: %q", doc.Find("#notes").Text())
			}
			if tc.field != "date" {
				if v, _ := doc.Find("#date").Attr("value"); v != "2026-09-01" {
					t.Errorf("date not kept: %q", v)
				}
			}
		})
	}
	if n := len(allMeals(t, app, admin)); n != 0 {
		t.Errorf("%d meals written by bad forms, want 0", n)
	}
}

// TestNotesRefused: notes with characters free text may not hold, or
// longer than the limit, are refused with a message naming the problem;
// the form shows them cleaned and cut to the limit, so a 10 MB note does
// not come back as a 10 MB page; nothing is written, on add or edit.
func TestNotesRefused(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	if resp := c.PostForm("/meals", mealForm("notes", "first")); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("add meal = %d", resp.StatusCode)
	}
	m := allMeals(t, app, admin)[0]
	editPath := "/meals/" + m.Date + "/" + m.ID
	long := strings.Repeat("é", meal.MaxNotes)
	for _, tc := range []struct {
		name, notes, msg, shown string
	}{
		{"10 MB of notes", strings.Repeat("a", 10<<20),
			"Notes may be at most 2000 characters; these are 10485760. Below are the first 2000; shorten them and save again.", strings.Repeat("a", meal.MaxNotes)},
		{"one character over", long + "x",
			"Notes may be at most 2000 characters; these are 2001. Below are the first 2000; shorten them and save again.", long},
		{"right-to-left override", "soup \u202Etxt.exe",
			"Notes may not contain the text-direction character U+202E (right-to-left override): only letters, line breaks, tabs and other visible text. Every such character was taken out of the field; check the notes and save again.", "soup txt.exe"},
		{"left-to-right isolate", "a\u2066b\u2069c",
			"Notes may not contain the text-direction character U+2066 (left-to-right isolate): only letters, line breaks, tabs and other visible text. Every such character was taken out of the field; check the notes and save again.", "abc"},
		{"bell", "ding\a dong",
			"Notes may not contain the control character U+0007: only letters, line breaks, tabs and other visible text. Every such character was taken out of the field; check the notes and save again.", "ding dong"},
		{"escape sequence", "\x1b[31mred",
			"Notes may not contain the control character U+001B: only letters, line breaks, tabs and other visible text. Every such character was taken out of the field; check the notes and save again.", "[31mred"},
		{"NUL", "a\x00b",
			"Notes may not contain the control character U+0000: only letters, line breaks, tabs and other visible text. Every such character was taken out of the field; check the notes and save again.", "ab"},
		{"not UTF-8", "caf\xe9 au lait",
			"Notes contained bytes that are not text; they were taken out of the field. Check the notes and save again.", "caf au lait"},
	} {
		for _, path := range []string{"/meals", editPath} {
			t.Run(tc.name+" "+path, func(t *testing.T) {
				form := mealForm("notes", tc.notes)
				form.Set("version", fmt.Sprint(m.Version))
				resp := c.PostForm(path, form)
				if resp.StatusCode != http.StatusUnprocessableEntity {
					t.Fatalf("status = %d, want 422", resp.StatusCode)
				}
				doc := resp.Doc()
				if got := strings.TrimSpace(doc.Find("#notes-err").Text()); got != tc.msg {
					t.Errorf("message = %q, want %q", got, tc.msg)
				}
				if got := doc.Find("#notes").Text(); got != tc.shown {
					t.Errorf("notes shown = %.60q (%d bytes), want %.60q (%d bytes)", got, len(got), tc.shown, len(tc.shown))
				}
				if len(resp.Body) > 64<<10 {
					t.Errorf("page = %d bytes, want under 64 KB", len(resp.Body))
				}
			})
		}
	}
	if ms := allMeals(t, app, admin); len(ms) != 1 || ms[0].Notes != "first" || ms[0].Version != m.Version {
		t.Errorf("meals after refused notes = %+v, want only the first, unchanged", ms)
	}
	// Newlines and tabs are notes; the cleaned notes save.
	if resp := c.PostForm("/meals", mealForm("notes", "soup\r\n\tbread")); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("notes with a line break and a tab = %d, want 303", resp.StatusCode)
	}
}

func TestEditMeal(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	c.PostForm("/meals", mealForm("notes", "soup", "kcal", "300", "fat_g", "12.5"))
	m := allMeals(t, app, admin)[0]
	editURL := "/meals/2026-09-01/" + m.ID + "/edit"

	page := c.Get(editURL)
	if page.StatusCode != http.StatusOK {
		t.Fatalf("edit page = %d", page.StatusCode)
	}
	doc := page.Doc()
	for id, want := range map[string]string{"#date": "2026-09-01", "#time": "12:30", "#fat_g": "12.5"} {
		v, _ := doc.Find(id).Attr("value")
		_, disabled := doc.Find(id).Attr("disabled")
		if v != want || disabled {
			t.Errorf("%s = %q (disabled %v), want %q, editable", id, v, disabled, want)
		}
	}
	if doc.Find(".move-box").Length() != 0 {
		t.Error("the edit page still has a separate move form")
	}
	version, _ := doc.Find(`input[name=version]`).Attr("value")

	// Notes edited, fat blanked, same date and time: saved in place.
	resp := c.PostForm("/meals/2026-09-01/"+m.ID, mealForm("notes", "soup, then fruit", "kcal", "300", "fat_g", "", "version", version))
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("update = %d; body %s", resp.StatusCode, resp.Body)
	}
	ms := allMeals(t, app, admin)
	if len(ms) != 1 || ms[0].SK != m.SK || ms[0].Notes != "soup, then fruit" || ms[0].FatG != nil || ms[0].Kcal.String() != "300" {
		t.Fatalf("after edit: %+v", ms)
	}
	if !ms[0].CreatedAt.Equal(m.CreatedAt) {
		t.Errorf("created_at changed from %v to %v", m.CreatedAt, ms[0].CreatedAt)
	}

	// The form opened before that edit is now stale: 409, the form again
	// with this window's text, and the other version shown beside it.
	resp = c.PostForm("/meals/2026-09-01/"+m.ID, mealForm("notes", "old tab", "version", version))
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("edit from a stale form = %d, want 409", resp.StatusCode)
	}
	if got := resp.Text("#notes"); got != "old tab" {
		t.Errorf("conflict form notes = %q, want this window's text", got)
	}
	if got := resp.Text("#conflict .notes"); got != "soup, then fruit" {
		t.Errorf("conflict shows the other version's notes as %q", got)
	}
	newVersion, _ := resp.Doc().Find(`input[name=version]`).Attr("value")
	if newVersion != strconv.FormatInt(ms[0].Version, 10) {
		t.Errorf("conflict form carries version %q, want the latest %d, to save over it", newVersion, ms[0].Version)
	}
	// A crafted form without a version is refused the same way.
	if resp := c.PostForm("/meals/2026-09-01/"+m.ID, mealForm("notes", "no version", "version", "")); resp.StatusCode != http.StatusConflict {
		t.Errorf("edit without a version = %d, want 409", resp.StatusCode)
	}

	// Bad input on edit: 422, nothing written.
	resp = c.PostForm("/meals/2026-09-01/"+m.ID, mealForm("kcal", "-1", "version", newVersion))
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("bad edit = %d, want 422", resp.StatusCode)
	}
	if got := allMeals(t, app, admin)[0]; got.Kcal.String() != "300" {
		t.Errorf("bad edit wrote kcal %s", got.Kcal)
	}

	// A meal whose time has seconds (moved to a photo's capture time)
	// keeps its key through an edit of its minutes-only form.
	secs := mealItem(localenv.Subject(admin), "2026-09-02", "123107-abcdef")
	batchPut(t, app, []map[string]types.AttributeValue{secs})
	resp = c.PostForm("/meals/2026-09-02/123107-abcdef", mealForm("date", "2026-09-02", "time", "12:31", "notes", "seconds kept", "version", "1"))
	if resp.StatusCode != http.StatusSeeOther || !strings.HasSuffix(resp.Location(), "#meal-123107-abcdef") {
		t.Errorf("edit of a meal at 12:31:07 = %d → %q, want it saved in place", resp.StatusCode, resp.Location())
	}
	c.PostForm("/meals/2026-09-02/123107-abcdef/delete", nil)

	// A new date and time move the meal, with the other edits.
	resp = c.PostForm("/meals/2026-09-01/"+m.ID, mealForm("date", "2026-10-05", "time", "09:00", "notes", "moved soup", "kcal", "310", "version", newVersion))
	ms = allMeals(t, app, admin)
	if resp.StatusCode != http.StatusSeeOther || len(ms) != 1 || ms[0].Date != "2026-10-05" || ms[0].Time != "09:00:00" || ms[0].Notes != "moved soup" || ms[0].Kcal.String() != "310" {
		t.Fatalf("move by edit = %d, meals %+v", resp.StatusCode, ms)
	}
	if want := "/meals?month=2026-10#meal-" + ms[0].ID; resp.Location() != want {
		t.Errorf("after the move: %q, want %q", resp.Location(), want)
	}
	if flash := c.Get(resp.Location()).Text(".flash"); flash != "Meal saved, moved to Monday 5 October 2026, 09:00." {
		t.Errorf("flash after the move by edit = %q", flash)
	}
	// The old address says the meal moved or was deleted, linking to its day.
	for _, stale := range []string{editURL, "/meals/2026-09-01/" + m.ID} {
		var r *apptest.Response
		if strings.HasSuffix(stale, "/edit") {
			r = c.Get(stale)
		} else {
			r = c.PostForm(stale, mealForm("notes", "too late", "version", newVersion))
		}
		href, _ := r.Doc().Find("#gone a.button").Attr("href")
		if r.StatusCode != http.StatusNotFound || r.Text("h1") != "Meal moved or deleted" || href != "/meals?month=2026-09#day-2026-09-01" {
			t.Errorf("%s after the move = %d %q → %q, want 404 Meal moved or deleted linking to the day", stale, r.StatusCode, r.Text("h1"), href)
		}
		// An edit that arrives for the moved meal is shown, not lost.
		if typed := r.Text("#typed .notes"); !strings.HasSuffix(stale, "/edit") && typed != "too late" {
			t.Errorf("the edit sent to the old address is shown as %q, want the notes typed", typed)
		}
	}
	if n := len(allMeals(t, app, admin)); n != 1 {
		t.Errorf("%d meals after editing the old address, want 1", n)
	}
}

func TestOtherUsersMealIsNotFound(t *testing.T) {
	t.Parallel()
	app, owner := signedIn(t)
	owner.PostForm("/meals", mealForm("notes", "private"))
	m := allMeals(t, app, admin)[0]
	tok := owner.CreateInvite(url.Values{"role": {"owner"}})
	other := app.Client()
	other.SignInVia("/login?invite="+tok, "other@example.com")

	base := "/meals/2026-09-01/" + m.ID
	for _, tc := range []struct {
		method, path string
	}{
		{"GET", base + "/edit"},
		{"POST", base},
		{"POST", base + "/delete"},
		{"GET", "/meals/2026-09-01/123000-zzzzzz/edit"},
		{"GET", "/meals/2026-02-30/" + m.ID + "/edit"},
		{"POST", "/meals/2026-09-01/nonsense"},
		{"POST", "/meals/2026-09-01/nonsense/delete"},
		{"GET", "/meals/2026-09-01/000000-000000/edit"},
	} {
		var resp *apptest.Response
		if tc.method == "GET" {
			resp = other.Get(tc.path)
		} else {
			resp = other.PostForm(tc.path, mealForm("notes", "hijack"))
		}
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("other user %s %s = %d, want 404", tc.method, tc.path, resp.StatusCode)
		}
	}
	if ms := allMeals(t, app, admin); len(ms) != 1 || ms[0].Notes != "private" {
		t.Errorf("owner's meal changed: %+v", ms)
	}
	if ms := allMeals(t, app, "other@example.com"); len(ms) != 0 {
		t.Errorf("other user gained meals: %+v", ms)
	}
}

// TestTimeZoneWithoutJS: the form's defaults, and so the meal, use the
// owner's local date, not the server's or UTC's.
func TestTimeZoneWithoutJS(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		zone    string
		nowUTC  time.Time
		wantDay string
	}{
		// 23:30 on 1 Sep in Los Angeles (UTC−7) is 06:30 on 2 Sep in UTC.
		{"America/Los_Angeles", time.Date(2026, 9, 2, 6, 30, 0, 0, time.UTC), "2026-09-01"},
		// 23:30 on 1 Sep in Auckland (UTC+12) is 11:30 on 1 Sep in UTC...
		{"Pacific/Auckland", time.Date(2026, 9, 1, 11, 30, 0, 0, time.UTC), "2026-09-01"},
		// ...and 00:30 on 1 Oct in Auckland (UTC+13, summer) is still 30 Sep in UTC.
		{"Pacific/Auckland", time.Date(2026, 9, 30, 11, 30, 0, 0, time.UTC), "2026-10-01"},
	} {
		t.Run(tc.zone+" "+tc.wantDay, func(t *testing.T) {
			app, c := signedIn(t)
			if err := app.Users.SetTimeZone(context.Background(), localenv.Subject(admin), tc.zone); err != nil {
				t.Fatal(err)
			}
			app.Clock.Set(tc.nowUTC)
			doc := c.Get("/meals/new").Doc()
			date, _ := doc.Find("#date").Attr("value")
			tod, _ := doc.Find("#time").Attr("value")
			if date != tc.wantDay {
				t.Fatalf("default date = %q, want %q", date, tc.wantDay)
			}
			// Submit the defaults as a browser without JS would.
			kind, _ := doc.Find(`input[name=kind][checked]`).Attr("value")
			resp := c.PostForm("/meals", url.Values{"date": {date}, "time": {tod}, "kind": {kind}, "notes": {"late snack"}})
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("POST = %d; body %s", resp.StatusCode, resp.Body)
			}
			ms := allMeals(t, app, admin)
			wantTime := tc.nowUTC.In(mustZone(t, tc.zone)).Format("15:04") + ":00"
			if len(ms) != 1 || ms[0].Date != tc.wantDay || ms[0].Time != wantTime {
				t.Errorf("meal stored %+v, want %s %s", ms, tc.wantDay, wantTime)
			}
			// The diary opens on the owner's current month.
			if c.Get("/meals").Doc().Find("#day-"+tc.wantDay).Length() != 1 {
				t.Errorf("default month page does not show %s", tc.wantDay)
			}
		})
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestDeviceZoneBecomesDefault(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	c.PostForm("/meals", mealForm("tz", "Europe/Berlin"))
	u, _ := app.Users.Get(context.Background(), localenv.Subject(admin))
	if u.TimeZone != "Europe/Berlin" {
		t.Errorf("time zone = %q, want Europe/Berlin from the device", u.TimeZone)
	}
	c.PostForm("/meals", mealForm("tz", "Asia/Tokyo"))
	u, _ = app.Users.Get(context.Background(), localenv.Subject(admin))
	if u.TimeZone != "Europe/Berlin" {
		t.Errorf("time zone = %q, want it kept once set", u.TimeZone)
	}
}

func TestWindowView(t *testing.T) {
	t.Parallel()
	_, c := signedIn(t)
	for _, d := range []string{"2026-08-27", "2026-08-28", "2026-09-03", "2026-09-04"} {
		c.PostForm("/meals", mealForm("date", d))
	}
	page := c.Get("/meals?from=2026-08-28&to=2026-09-03")
	if page.StatusCode != http.StatusOK {
		t.Fatalf("window = %d", page.StatusCode)
	}
	var days []string
	page.Doc().Find("section.day").Each(func(_ int, s *goquery.Selection) {
		id, _ := s.Attr("id")
		days = append(days, id)
	})
	if d := cmp.Diff([]string{"day-2026-09-03", "day-2026-08-28"}, days); d != "" {
		t.Errorf("window days (-want +got):\n%s", d)
	}
	if href, _ := page.Doc().Find(`a[rel=next]`).Attr("href"); href != "/meals?from=2026-09-04&to=2026-09-10" {
		t.Errorf("next window = %q", href)
	}

	refused := c.Get("/meals?from=2026-09-03&to=2026-08-28")
	if v, _ := refused.Doc().Find(`input[name=from]`).Attr("value"); refused.StatusCode != http.StatusBadRequest || v != "2026-09-03" {
		t.Errorf("refused window = %d with from=%q, want 400 with the form kept", refused.StatusCode, v)
	}
	for _, tc := range []struct{ query, want string }{
		{"from=2026-09-03&to=2026-08-28", "on or before"},
		{"from=1970-01-01&to=2999-12-31", "spans 376200"},
		{"from=2026-01-01&to=2026-04-04", "at most 93 days"},
		{"from=2026-02-30&to=2026-03-01", "start (from)"},
		{"from=2026-02-01&to=2026-13-01", "end (to)"},
		{"from=2026-02-01", "end (to)"},
		{"month=2026-9", "Month must look like 2026-09"},
	} {
		resp := c.Get("/meals?" + tc.query)
		msg := resp.Text("#window-err")
		if msg == "" {
			msg = resp.Text("main p")
		}
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(msg, tc.want) {
			t.Errorf("GET /meals?%s = %d %q, want 400 saying %q", tc.query, resp.StatusCode, msg, tc.want)
		}
	}
	if resp := c.Get("/meals?from=2026-01-01&to=2026-04-03"); resp.StatusCode != http.StatusOK {
		t.Errorf("93-day window = %d, want 200", resp.StatusCode)
	}
}

// TestPagesCostOneQuery counts SDK calls: a month or window page is one
// Query, whatever else is in the table (the guard's users row comes from
// the users store's cache, read at sign-in), and the Query reads only the
// meals it shows (ScannedCount), not the rest of the owner's partition.
func TestPagesCostOneQuery(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	owner := localenv.Subject(admin)

	// 90 meals in September 2026 for the owner.
	var items []map[string]types.AttributeValue
	for i := 0; i < 90; i++ {
		items = append(items, mealItem(owner, fmt.Sprintf("2026-09-%02d", i%30+1), fmt.Sprintf("%02d%02d00-%06x", 6+i/30*6, i%60, i)))
	}
	// 3000 meals of the owner's other months, among them the days either
	// side of September, and of other owners in September.
	for i := 0; i < 3000; i++ {
		uid := owner
		day := fmt.Sprintf("20%02d-%02d-%02d", 20+i%10, 1+i%12, 1+i%28)
		switch {
		case i%2 == 0:
			uid = fmt.Sprintf("other-%d", i%50)
			day = fmt.Sprintf("2026-09-%02d", 1+i%30)
		case i%7 == 1:
			day = "2026-08-31"
		case i%7 == 3:
			day = "2026-10-01"
		case day[:7] == "2026-09":
			day = "2025-09-01"
		}
		items = append(items, mealItem(uid, day, fmt.Sprintf("120000-%06x", i)))
	}
	batchPut(t, app, items)

	for _, path := range []string{"/meals?month=2026-09", "/meals?from=2026-09-01&to=2026-09-30"} {
		app.Calls.Reset()
		resp := c.Get(path)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s = %d", path, resp.StatusCode)
		}
		if n := resp.Doc().Find("li.meal").Length(); n != 90 {
			t.Errorf("%s shows %d meals, want 90", path, n)
		}
		if d := cmp.Diff(map[string]int{"Query": 1}, app.Calls.Counts()); d != "" {
			t.Errorf("%s SDK calls (-want +got):\n%s", path, d)
		}
		if got := app.Calls.Scanned()["Query"]; got != 90 {
			t.Errorf("%s Query read %d items, want the 90 it shows", path, got)
		}
	}
}

func mealItem(uid, day, id string) map[string]types.AttributeValue {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	return map[string]types.AttributeValue{
		"user_id": s(uid), "sk": s(day + "#" + id), "meal_id": s(id), "date": s(day),
		"time": s(id[:2] + ":" + id[2:4] + ":" + id[4:6]), "kind": s("snack"),
		"kcal":    &types.AttributeValueMemberN{Value: "100.5"},
		"version": &types.AttributeValueMemberN{Value: "1"},
	}
}

func batchPut(t testing.TB, app *apptest.App, items []map[string]types.AttributeValue) {
	t.Helper()
	ctx := context.Background()
	for len(items) > 0 {
		n := min(25, len(items))
		var reqs []types.WriteRequest
		for _, it := range items[:n] {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
		}
		req := map[string][]types.WriteRequest{app.Tables.Meals.Name: reqs}
		for len(req) > 0 {
			out, err := app.Env.DynamoDB.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: req})
			if err != nil {
				t.Fatal(err)
			}
			req = out.UnprocessedItems
		}
		items = items[n:]
	}
}

func TestExportJSON(t *testing.T) {
	t.Parallel()
	_, c := signedIn(t)
	c.PostForm("/meals", mealForm("kcal", "12.5", "protein_g", "0", "fullness", "3", "notes", "a \"quoted\" note"))
	c.PostForm("/meals", mealForm("date", "2026-09-02"))
	resp := c.Get("/account/export.json")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("export = %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var out struct {
		Meals []map[string]json.RawMessage `json:"meals"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Meals) != 2 {
		t.Fatalf("%d meals exported, want 2", len(out.Meals))
	}
	first := out.Meals[0]
	for field, want := range map[string]string{"kcal": "12.5", "protein_g": "0", "fullness": "3", "date": `"2026-09-01"`, "time": `"12:30:00"`} {
		if got := string(first[field]); got != want {
			t.Errorf("export %s = %s, want %s", field, got, want)
		}
	}
	for _, field := range []string{"carbs_g", "fat_g", "hunger", "user_id", "sk", "version"} {
		if v, ok := first[field]; ok {
			t.Errorf("export has %s = %s, want it absent", field, v)
		}
	}
	if _, ok := out.Meals[1]["kcal"]; ok {
		t.Error("blank kcal exported")
	}
	if _, ok := first["photo"]; ok {
		t.Error("a meal without a photo exported a photo")
	}
}

func TestAccountTimeZone(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	for _, bad := range []string{"Mars/Olympus", "Local", "../../etc/passwd", ""} {
		resp := c.PostForm("/account/timezone", url.Values{"tz": {bad}})
		if resp.StatusCode != http.StatusUnprocessableEntity || resp.Doc().Find("#tz-err").Length() != 1 {
			t.Errorf("tz %q = %d, want 422 with a message", bad, resp.StatusCode)
		}
	}
	if resp := c.PostForm("/account/timezone", url.Values{"tz": {"America/Los_Angeles"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("good tz = %d", resp.StatusCode)
	}
	u, _ := app.Users.Get(context.Background(), localenv.Subject(admin))
	if u.TimeZone != "America/Los_Angeles" {
		t.Errorf("tz = %q", u.TimeZone)
	}
}

// TestSavedFlash: a new meal's flash is "Meal saved."; the last of a batch
// of several photos (the page script sends batch=N) counts them; a batch
// count that is no count of a batch is ignored.
func TestSavedFlash(t *testing.T) {
	t.Parallel()
	_, c := signedIn(t)
	for batch, want := range map[string]string{"": "Meal saved.", "3": "3 meals saved.", "100": "100 meals saved.", "1": "Meal saved.", "101": "Meal saved.", "-2": "Meal saved.", "three": "Meal saved."} {
		resp := c.PostForm("/meals", mealForm("batch", batch))
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("batch %q: save = %d", batch, resp.StatusCode)
		}
		if got := c.Get(resp.Location()).Text(".flash"); got != want {
			t.Errorf("batch %q: flash %q, want %q", batch, got, want)
		}
	}
}

// TestScalesAsRadios: hunger and fullness are radio buttons named hunger
// and fullness, None (blank) and 1 to 5, which a form without JavaScript
// sends as 1 to 5; the form shown again keeps the choice, or none after a
// refused value, and the edit form shows the saved one.
func TestScalesAsRadios(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	doc := c.Get("/meals/new").Doc()
	for _, name := range []string{"hunger", "fullness"} {
		var values []string
		doc.Find("#" + name + " input[type=radio][name=" + name + "]").Each(func(_ int, s *goquery.Selection) {
			v, _ := s.Attr("value")
			values = append(values, v)
		})
		if d := cmp.Diff([]string{"", "1", "2", "3", "4", "5"}, values); d != "" {
			t.Errorf("%s radios (-want +got):\n%s", name, d)
		}
		if v, _ := doc.Find("#" + name + " input[checked]").Attr("value"); v != "" {
			t.Errorf("%s starts at %q, want None", name, v)
		}
		if role, _ := doc.Find("fieldset#" + name).Attr("role"); role != "radiogroup" || doc.Find("fieldset#"+name+" legend").Length() != 1 {
			t.Errorf("%s is not a radio group with a legend", name)
		}
	}
	// Kept through a correction; a value that is no choice checks none.
	resp := c.PostForm("/meals", mealForm("hunger", "4", "fullness", "9"))
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("fullness 9 = %d, want 422", resp.StatusCode)
	}
	d := resp.Doc()
	if v, _ := d.Find("#hunger input[checked]").Attr("value"); v != "4" || d.Find("#fullness input[checked]").Length() != 0 {
		t.Errorf("the corrected form checks hunger %q and %d fullness choices, want 4 and none", v, d.Find("#fullness input[checked]").Length())
	}
	if got := d.Find("#fullness-err").Text(); got != "Fullness after (1–5) must be a whole number from 1 to 5, or left blank." {
		t.Errorf("fullness message = %q", got)
	}
	if resp := c.PostForm("/meals", mealForm("hunger", "4", "fullness", "2")); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("hunger 4, fullness 2 = %d", resp.StatusCode)
	}
	m := allMeals(t, app, admin)[0]
	if m.Hunger == nil || *m.Hunger != 4 || m.Fullness == nil || *m.Fullness != 2 {
		t.Fatalf("stored hunger %v fullness %v, want 4 and 2", m.Hunger, m.Fullness)
	}
	e := c.Get(m.DetailURL() + "/edit").Doc()
	if h, _ := e.Find("#hunger input[checked]").Attr("value"); h != "4" {
		t.Errorf("edit form hunger = %q, want 4", h)
	}
}
