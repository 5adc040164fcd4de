package meal_test

import (
	"image/color"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"ndiro/internal/apptest"
	"ndiro/internal/meal"
)

// The quarter-size portrait fixture was taken 2024-06-14 12:31:07
// (testdata/photos/README.md).
const (
	portrait      = "phone-portrait-small.jpg"
	portraitTaken = "2024-06-14 12:31:07"
)

// timedPhoto is a 64×48 JPEG carrying the quarter-size portrait's EXIF
// segment (its capture time portraitTaken, orientation 6, GPS): these
// tests are about the capture time, so they spare the 0.75-megapixel
// decode and resize of the fixture itself, each a second of CPU under the
// race detector.
func timedPhoto(t testing.TB) []byte {
	t.Helper()
	return apptest.WithEXIF(t, apptest.JPEG(t, 64, 48, color.RGBA{200, 120, 80, 255}), apptest.Photo(t, portrait))
}

// defaults are a new meal form's fields left as the form showed them at
// 2026-09-01 12:30, markers included.
func defaults(kv ...string) []string {
	return append([]string{"date", "2026-09-01", "time", "12:30", "default_date", "2026-09-01", "default_time", "12:30"}, kv...)
}

// TestFiledByPhoto: without the page script, a new meal whose date and
// time were left as the form showed them (its default_date and
// default_time markers present and unchanged) is filed at its photo's
// capture time, and the month it lands on says so, with one button back
// to the form's time; never a page that asks after Save.
func TestFiledByPhoto(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	resp := upload(c, "/meals", "phone-portrait.jpg", timedPhoto(t), defaults()...)
	ms := allMeals(t, app, admin)
	if len(ms) != 1 {
		t.Fatalf("%d meals, want 1", len(ms))
	}
	m := ms[0]
	if got := m.Date + " " + m.Time; got != portraitTaken || m.Kind != meal.Lunch {
		t.Fatalf("meal filed at %s (%s), want the photo's %s (lunch)", got, m.Kind, portraitTaken)
	}
	if want := "/meals?month=2024-06#meal-" + m.ID; resp.StatusCode != http.StatusSeeOther || resp.Location() != want {
		t.Fatalf("save = %d → %q, want 303 → %q", resp.StatusCode, resp.Location(), want)
	}
	page := c.Get(resp.Location())
	doc := page.Doc()
	note := doc.Find("#filed")
	if got := strings.Join(strings.Fields(note.Find("p").Text()), " "); got != "Meal saved. Filed on Fri 14 Jun 2024, 12:31 from the photo." {
		t.Errorf("the saved month says %q", got)
	}
	if doc.Find("#meal-"+m.ID).Length() != 1 {
		t.Error("the saved month does not show the meal")
	}
	form := url.Values{}
	note.Find("form input").Each(func(_ int, s *goquery.Selection) {
		n, _ := s.Attr("name")
		v, _ := s.Attr("value")
		form.Set(n, v)
	})
	action, _ := note.Find("form").Attr("action")
	if button := strings.TrimSpace(note.Find("button").Text()); button != "Move to now: Tue 1 Sep 2026, 12:30" {
		t.Errorf("the button says %q", button)
	}
	// Shown once: the next visit has no note.
	if n := c.Get(resp.Location()).Doc().Find("#filed").Length(); n != 0 {
		t.Errorf("the note shows again on the next visit")
	}
	moved := c.PostForm(action, form)
	if moved.StatusCode != http.StatusSeeOther {
		t.Fatalf("move to now = %d", moved.StatusCode)
	}
	ms = allMeals(t, app, admin)
	if len(ms) != 1 || ms[0].Date != "2026-09-01" || ms[0].Time != "12:30:00" || ms[0].PhotoV != m.PhotoV {
		t.Fatalf("after move to now: %+v, want the meal at 2026-09-01 12:30:00 with its photo", ms)
	}
	if got := c.Get(moved.Location()).Text(".flash"); got != "Meal moved to Tuesday 1 September 2026, 12:30." {
		t.Errorf("flash after move to now = %q", got)
	}
}

// TestFiledAsSent: every request that names its own date and time is
// filed as sent, whatever its photo says: markers changed or missing, a
// form for another day, a capture time too far ahead, and edits.
func TestFiledAsSent(t *testing.T) {
	t.Parallel()
	photo := timedPhoto(t)
	for _, tc := range []struct {
		name string
		kv   []string
		now  time.Time // the app's clock; zero leaves it
		want string    // date and time filed
		kind meal.Kind
	}{
		{"date changed", defaults("date", "2026-09-02"), time.Time{}, "2026-09-02 12:30:00", meal.Lunch},
		{"time changed", defaults("time", "19:00", "kind", "dinner"), time.Time{}, "2026-09-01 19:00:00", meal.Dinner},
		{"no markers", []string{"date", "2026-09-01", "time", "12:30"}, time.Time{}, "2026-09-01 12:30:00", meal.Lunch},
		{"markers only half", []string{"date", "2026-09-01", "time", "12:30", "default_date", "2026-09-01"}, time.Time{}, "2026-09-01 12:30:00", meal.Lunch},
		{"a day's form, photo of another day", defaults("fixed_date", "1"), time.Time{}, "2026-09-01 12:30:00", meal.Lunch},
		{"camera clock ahead", []string{"date", "2024-06-10", "time", "12:30", "default_date", "2024-06-10", "default_time", "12:30"},
			time.Date(2024, 6, 10, 12, 30, 0, 0, time.UTC), "2024-06-10 12:30:00", meal.Lunch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			app, c := signedIn(t)
			if !tc.now.IsZero() {
				app.Clock.Set(tc.now)
			}
			resp := upload(c, "/meals", "phone-portrait.jpg", photo, tc.kv...)
			ms := allMeals(t, app, admin)
			if resp.StatusCode != http.StatusSeeOther || len(ms) != 1 {
				t.Fatalf("save = %d, %d meals; %s", resp.StatusCode, len(ms), resp.Text("main"))
			}
			if got := ms[0].Date + " " + ms[0].Time; got != tc.want || ms[0].Kind != tc.kind {
				t.Errorf("filed at %s (%s), want %s (%s) as sent", got, ms[0].Kind, tc.want, tc.kind)
			}
			if ms[0].PhotoTaken != "2024-06-14T12:31:07" {
				t.Errorf("photo_taken = %q, want it stored all the same", ms[0].PhotoTaken)
			}
			if flash := c.Get(resp.Location()).Text(".flash"); flash != "Meal saved." {
				t.Errorf("flash = %q, want Meal saved.", flash)
			}
		})
	}

	// An edit, even one sent with markers, keeps the meal where it is.
	app, c := signedIn(t)
	upload(c, "/meals", "plain.jpg", apptest.JPEG(t, 64, 48, color.RGBA{90, 140, 60, 255}), "notes", "no time in this photo")
	m := allMeals(t, app, admin)[0]
	kv := defaults("version", strconv.FormatInt(m.Version, 10), "notes", "new photo, old time")
	resp := upload(c, m.DetailURL(), "phone-portrait.jpg", photo, kv...)
	ms := allMeals(t, app, admin)
	if resp.StatusCode != http.StatusSeeOther || len(ms) != 1 || ms[0].SK != m.SK || ms[0].PhotoTaken != "2024-06-14T12:31:07" {
		t.Fatalf("edit with a new photo = %d, meals %+v; want it in place with the new photo", resp.StatusCode, ms)
	}
	if want := "/meals?month=2026-09#meal-" + m.ID; resp.Location() != want {
		t.Errorf("after the edit: %q, want %q", resp.Location(), want)
	}
	if flash := c.Get(resp.Location()).Text(".flash"); flash != "Meal saved." {
		t.Errorf("flash after the edit = %q", flash)
	}
	// The edit form offers nothing about the photo's time; the meal's
	// page, the owner's alone, says when it was taken.
	if doc := c.Get(m.DetailURL() + "/edit").Doc(); doc.Find("#taken-offer, #from-photo, input[name=default_date]").Length() != 0 {
		t.Error("the edit form offers to move the meal by its photo")
	}
	if got := c.Get(m.DetailURL()).Text(".when .taken"); got != "· photo taken Fri 14 Jun 2024, 12:31" {
		t.Errorf("the meal page says %q about the photo's time", got)
	}
}

// TestFiledByPhotoKinds: the kind follows the photo's time when it was
// left at the one the form's time suggested; a form for one day takes the
// time of a photo taken that day; a photo taken within TakenApart of the
// form's time is filed at it with the plain flash.
func TestFiledByPhotoKinds(t *testing.T) {
	t.Parallel()
	photo := timedPhoto(t)
	for _, tc := range []struct {
		name, flash string
		kv          []string
		kind        meal.Kind
	}{
		{"breakfast left as guessed", "", []string{"date", "2026-09-01", "time", "08:00", "default_date", "2026-09-01", "default_time", "08:00", "kind", "breakfast"}, meal.Lunch},
		{"drink chosen", "", []string{"date", "2026-09-01", "time", "08:00", "default_date", "2026-09-01", "default_time", "08:00", "kind", "drink"}, meal.Drink},
		{"the photo's own day", "Meal saved.", []string{"date", "2024-06-14", "time", "12:00", "default_date", "2024-06-14", "default_time", "12:00", "fixed_date", "1"}, meal.Lunch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			app, c := signedIn(t)
			resp := upload(c, "/meals", "phone-portrait.jpg", photo, tc.kv...)
			ms := allMeals(t, app, admin)
			if resp.StatusCode != http.StatusSeeOther || len(ms) != 1 {
				t.Fatalf("save = %d, %d meals", resp.StatusCode, len(ms))
			}
			if got := ms[0].Date + " " + ms[0].Time; got != portraitTaken || ms[0].Kind != tc.kind {
				t.Errorf("filed at %s (%s), want %s (%s)", got, ms[0].Kind, portraitTaken, tc.kind)
			}
			doc := c.Get(resp.Location()).Doc()
			if tc.flash != "" {
				if got := strings.TrimSpace(doc.Find(".flash").Text()); got != tc.flash || doc.Find("#filed").Length() != 0 {
					t.Errorf("flash = %q (filed note %d), want %q only", got, doc.Find("#filed").Length(), tc.flash)
				}
			} else if doc.Find("#filed").Length() != 1 {
				t.Error("no filed note")
			}
		})
	}
}

// TestFiledByPhotoKept: a form sent back for a correction keeps its photo
// and says that its time will be used; sent again with the markers
// unchanged, the meal is filed at the kept photo's capture time.
func TestFiledByPhotoKept(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	resp := upload(c, "/meals", "phone-portrait.jpg", timedPhoto(t), defaults("kcal", "lots")...)
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("bad kcal = %d, want 422", resp.StatusCode)
	}
	doc := resp.Doc()
	if got := resp.Text("#photo-time"); got != "Saved at the photo's time, Fri 14 Jun 2024, 12:31, unless you change the date or time." {
		t.Errorf("the corrected form says %q", got)
	}
	form := url.Values{}
	doc.Find("form.meal-form input").Each(func(_ int, s *goquery.Selection) {
		n, _ := s.Attr("name")
		v, _ := s.Attr("value")
		typ, _ := s.Attr("type")
		if _, checked := s.Attr("checked"); n != "" && typ != "file" && ((typ != "radio" && typ != "checkbox") || checked) {
			form.Set(n, v)
		}
	})
	form.Set("kcal", "400")
	if form.Get("pending") == "" || form.Get("default_date") != "2026-09-01" {
		t.Fatalf("the corrected form carries %v", form)
	}
	resp = c.PostForm("/meals", form)
	ms := allMeals(t, app, admin)
	if resp.StatusCode != http.StatusSeeOther || len(ms) != 1 || ms[0].Date+" "+ms[0].Time != portraitTaken || !ms[0].HasPhoto() {
		t.Fatalf("corrected save = %d, meals %+v, want one filed at %s with the photo", resp.StatusCode, ms, portraitTaken)
	}
}

// TestFiledCookieChecked: the month's note comes only for a meal of the
// owner's that the month lists; a damaged or foreign cookie shows nothing
// and costs nothing.
func TestFiledCookieChecked(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	m := putMeal(t, app, admin, meal.Meal{Date: "2026-09-01", Time: "12:30", Notes: "mine"})
	other := putMeal(t, app, "other@example.com", meal.Meal{Date: "2026-09-01", Time: "13:00", Notes: "theirs"})
	u, _ := url.Parse(app.URL + "/meals")
	for _, v := range []string{
		"nonsense",
		"2026-09-01/" + m.ID + "/2026-13-01/12:30",
		"2026-09-01/" + m.ID + "/2026-09-01/25:00",
		"2026-09-01/" + other.ID + "/2026-09-01/12:30",
		"2026-09-02/" + m.ID + "/2026-09-01/12:30",
		"2026-09-01/" + m.ID + "/2026-09-01",
	} {
		c.HTTP.Jar.SetCookies(u, []*http.Cookie{{Name: "ndiro_filed", Value: v, Path: "/meals"}})
		resp := c.Get("/meals?month=2026-09")
		if resp.StatusCode != http.StatusOK || resp.Doc().Find("#filed").Length() != 0 {
			t.Errorf("cookie %q: month = %d with %d notes, want 200 and none", v, resp.StatusCode, resp.Doc().Find("#filed").Length())
		}
	}
	c.HTTP.Jar.SetCookies(u, []*http.Cookie{{Name: "ndiro_filed", Value: "2026-09-01/" + m.ID + "/2026-09-05/08:15", Path: "/meals"}})
	if got := c.Get("/meals?month=2026-09").Text("#filed button"); got != "Move to now: Sat 5 Sep 2026, 08:15" {
		t.Errorf("a good cookie gives the button %q", got)
	}
}
