package meal_test

import (
	"context"
	"encoding/json"
	"image/color"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/web"
)

// TestBadFieldKeepsPhoto: a form refused for a bad number keeps its photo
// as a pending upload, shows it, and the corrected form saves it without a
// new upload.
func TestBadFieldKeepsPhoto(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	owner := localenv.Subject(admin)
	resp := upload(c, "/meals", "phone-portrait-small.jpg", apptest.Photo(t, "phone-portrait-small.jpg"), "carbs_g", "65.25",
		"date", "2026-08-01", "time", "13:00", "default_date", "2026-09-01", "default_time", "12:30")
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("status = %d, want 422", resp.StatusCode)
	}
	doc := resp.Doc()
	if got := resp.Text("#carbs_g-err"); got != "Carbs (g) may have at most one decimal place." {
		t.Errorf("carbs message = %q: it must name the field as its label does", got)
	}
	if label := resp.Text(`label[for=carbs_g]`); label != "Carbs (g)" {
		t.Errorf("carbs label = %q", label)
	}
	tok, _ := doc.Find(`input[name=pending]`).Attr("value")
	src, _ := doc.Find("#photo-kept img").Attr("src")
	if tok == "" || src != "/meals/pending/"+tok+"?size=thumb" || !strings.Contains(resp.Text("#photo-kept"), "Photo kept") {
		t.Fatalf("kept photo: token %q, img %q, text %q", tok, src, resp.Text("#photo-kept"))
	}
	if v, _ := doc.Find(`input[name=default_date]`).Attr("value"); v != "2026-09-01" {
		t.Errorf("default_date = %q, want 2026-09-01 kept", v)
	}
	if got, want := objects(t, app), []string{photo.PendingKey(owner, tok, photo.SizeDisplay), photo.PendingKey(owner, tok, photo.SizeThumb)}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("objects = %v, want only the pending copies %v", got, want)
	}
	if n := len(allMeals(t, app, admin)); n != 0 {
		t.Errorf("%d meals stored for a refused form", n)
	}
	thumb := c.Get(src)
	if thumb.StatusCode != http.StatusOK || thumb.Header.Get("Content-Type") != "image/jpeg" || thumb.Header.Get("Cache-Control") != "private, no-store" {
		t.Errorf("kept thumbnail = %d %q %q", thumb.StatusCode, thumb.Header.Get("Content-Type"), thumb.Header.Get("Cache-Control"))
	}
	// Nobody else can see it.
	inv := c.CreateInvite(url.Values{"role": {"owner"}})
	other := app.Client()
	other.SignInVia("/login?invite="+inv, "other@example.com")
	if r := other.Get(src); r.StatusCode != http.StatusNotFound {
		t.Errorf("another owner's GET of the kept photo = %d, want 404", r.StatusCode)
	}

	// Corrected, with no new file: saved with the kept photo.
	resp = c.PostMultipart("/meals", mealForm("carbs_g", "65.2", "date", "2026-08-01", "time", "13:00", "pending", tok))
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("corrected form = %d; %s", resp.StatusCode, resp.Text("main"))
	}
	ms := allMeals(t, app, admin)
	if len(ms) != 1 || !ms[0].HasPhoto() || ms[0].PhotoW != 756 || ms[0].PhotoTaken != "2024-06-14T12:31:07" {
		t.Fatalf("meals = %+v, want one with the kept 756-wide photo and its capture time", ms)
	}
	keys := ms[0].PhotoKeys()
	sort.Strings(keys)
	if got := objects(t, app); strings.Join(got, ",") != strings.Join(keys, ",") {
		t.Errorf("objects = %v, want the meal's %v and no pending copies", got, keys)
	}
	// The kept copies' bytes are the meal's, counted as any photo's.
	if used := wantUsage(t, app, "saved with the kept photo", 1, true); ms[0].PhotoBytes != used.PhotoBytes {
		t.Errorf("the meal records %d bytes of photo, want its copies' %d", ms[0].PhotoBytes, used.PhotoBytes)
	}
	if r := c.Get(ms[0].ThumbURL()); r.StatusCode != http.StatusOK || r.Body != thumb.Body {
		t.Errorf("meal thumbnail = %d, same bytes as the kept one: %v", r.StatusCode, r.Body == thumb.Body)
	}
	// The token is spent.
	resp = c.PostMultipart("/meals", mealForm("pending", tok))
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(resp.Text("#photo-err"), "expired") {
		t.Errorf("reused token = %d %q, want 422 saying the photo expired", resp.StatusCode, resp.Text("#photo-err"))
	}
}

// TestPendingExpires: a kept photo older than a day is refused by the app
// and swept from the bucket, and never counted as an orphan.
func TestPendingExpires(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	resp := upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg"), "kcal", "lots")
	tok, _ := resp.Doc().Find(`input[name=pending]`).Attr("value")
	if resp.StatusCode != http.StatusUnprocessableEntity || tok == "" {
		t.Fatalf("refused upload = %d, token %q", resp.StatusCode, tok)
	}
	// The orphan check does not count it.
	app.Clock.Advance(2 * time.Hour)
	c.PostForm("/admin/monitor/check", nil)
	if err := app.Monitor.WaitOrphans(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"photos-without-user", "photos-without-meal"} {
		if got := c.Get("/admin/monitor").Text("#kind-" + k + " .found"); got != "0" {
			t.Errorf("orphans %s = %q, want 0: pending uploads are not orphans", k, got)
		}
	}
	st := photo.NewStore(app.Env.S3, "test-photos")
	if n, err := st.SweepPending(context.Background(), app.Clock.Now()); err != nil || n != 0 {
		t.Errorf("sweep of a fresh upload = %d, %v; want 0 deleted", n, err)
	}
	app.Clock.Advance(photo.PendingTTL)
	resp = c.PostMultipart("/meals", mealForm("kcal", "500", "pending", tok))
	if resp.StatusCode != http.StatusUnprocessableEntity || resp.Text("#photo-err") != "The photo kept from before has expired; choose it again." {
		t.Errorf("expired token = %d %q", resp.StatusCode, resp.Text("#photo-err"))
	}
	if n, err := st.SweepPending(context.Background(), app.Clock.Now()); err != nil || n != 2 {
		t.Errorf("sweep after a day = %d, %v; want both copies deleted", n, err)
	}
	if got := objects(t, app); len(got) != 0 {
		t.Errorf("objects after the sweep: %v", got)
	}
}

// TestSlips: an untouched form is not saved empty, a date more than a day
// ahead needs a confirmation, and the capture time the page script sends
// is kept when checked.
func TestSlips(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	app.Clock.Set(time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC))
	resp := c.PostForm("/meals", url.Values{"date": {"2026-09-01"}, "time": {"09:00"}, "kind": {"breakfast"}})
	if resp.StatusCode != http.StatusUnprocessableEntity || resp.Text("#form-err") != meal.MsgEmpty {
		t.Errorf("empty meal = %d %q, want 422 %q", resp.StatusCode, resp.Text("#form-err"), meal.MsgEmpty)
	}
	for _, tc := range []struct {
		date    string
		confirm bool
		want    int
	}{
		{"2026-09-02", false, http.StatusSeeOther}, // tomorrow: fine
		{"2026-09-03", false, http.StatusUnprocessableEntity},
		{"2026-12-24", true, http.StatusSeeOther},
	} {
		form := mealForm("date", tc.date, "notes", "planned")
		if tc.confirm {
			form.Set("confirm_future", "1")
		}
		resp := c.PostForm("/meals", form)
		if resp.StatusCode != tc.want {
			t.Errorf("date %s confirmed=%v = %d, want %d", tc.date, tc.confirm, resp.StatusCode, tc.want)
		}
		if tc.want == http.StatusUnprocessableEntity {
			if resp.Text("#date-err") != meal.MsgFuture || resp.Doc().Find(`input[name=confirm_future]`).Length() != 1 {
				t.Errorf("future date: message %q, confirm box %d", resp.Text("#date-err"), resp.Doc().Find(`input[name=confirm_future]`).Length())
			}
		}
	}
	if n := len(allMeals(t, app, admin)); n != 2 {
		t.Errorf("%d meals saved, want 2", n)
	}
	// The page script's capture time: kept for a photo without EXIF,
	// ignored when implausible.
	for _, tc := range []struct{ taken, want string }{
		{"2026-08-30T19:05:00", "2026-08-30T19:05:00"},
		{"1970-01-01T00:00:00", ""},
		{"2031-01-01T00:00:00", ""},
		{"yesterday", ""},
	} {
		resp := upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg"), "date", "2026-07-01", "taken", tc.taken, "notes", tc.taken)
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("upload with taken %q = %d", tc.taken, resp.StatusCode)
		}
		for _, m := range allMeals(t, app, admin) {
			if m.Notes == tc.taken && m.PhotoTaken != tc.want {
				t.Errorf("taken %q stored as %q, want %q", tc.taken, m.PhotoTaken, tc.want)
			}
		}
	}
}

// TestScriptedUploadAnswer: the page script's submissions are answered
// with the page to open, the flash set for it.
func TestScriptedUploadAnswer(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	req, _ := http.NewRequest(http.MethodPost, app.URL+"/meals", strings.NewReader(mealForm("notes", "scripted").Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(web.ScriptedHeader, "1")
	resp := c.Do(req)
	var out struct{ Location string }
	if err := json.Unmarshal([]byte(resp.Body), &out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scripted save = %d %q: %v", resp.StatusCode, resp.Body, err)
	}
	m := allMeals(t, app, admin)[0]
	if out.Location != "/meals?month=2026-09#meal-"+m.ID {
		t.Errorf("location = %q", out.Location)
	}
	if flash := c.Get(out.Location).Text(".flash"); flash != "Meal saved." {
		t.Errorf("flash on the page the script opens = %q, want Meal saved.", flash)
	}
	// Signed out meanwhile: 401 and where to sign in, not a redirect the
	// script would follow to another origin and lose.
	req, _ = http.NewRequest(http.MethodPost, app.URL+"/meals", strings.NewReader(mealForm("notes", "late").Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(web.ScriptedHeader, "1")
	resp = app.Client().Do(req)
	var signin struct{ Signin string }
	if err := json.Unmarshal([]byte(resp.Body), &signin); err != nil || resp.StatusCode != http.StatusUnauthorized || signin.Signin != "/login" {
		t.Errorf("scripted save without a session = %d %q, want 401 {\"signin\": \"/login\"}", resp.StatusCode, resp.Body)
	}
	// One of a batch sets no flash: its page is not opened.
	req, _ = http.NewRequest(http.MethodPost, app.URL+"/meals", strings.NewReader(mealForm("notes", "batch").Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(web.ScriptedHeader, "2")
	resp = c.Do(req)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("batch save = %d, want 200", resp.StatusCode)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == "ndiro_flash" {
			t.Errorf("batch save set a flash %q, want none", ck.Value)
		}
	}
}

// faulty is signedIn with an app whose DynamoDB and S3 calls f can fail.
func faulty(t *testing.T) (*apptest.App, *apptest.Client, *apptest.Faults) {
	t.Helper()
	f := &apptest.Faults{}
	app := apptest.New(t, apptest.Options{Faults: f})
	c := app.Client()
	c.SignIn(admin)
	return app, c, f
}

// mealWithPhoto saves a meal with small.jpg and returns it as stored and
// its edit URL.
// otherPhoto is a 320×240 JPEG made in the test: the photo a replace or
// a second upload sends, told from small.jpg (640 × 480) by its size.
// Tests of what is stored of a photo's pixels use the fixtures; here a
// phone photo's decode and resize would only cost seconds of CPU under
// the race detector.
func otherPhoto(t testing.TB) []byte {
	t.Helper()
	return apptest.JPEG(t, 320, 240, color.RGBA{60, 120, 200, 255})
}

func mealWithPhoto(t *testing.T, app *apptest.App, c *apptest.Client) (meal.Meal, string) {
	t.Helper()
	if resp := upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg")); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("new meal = %d; %s", resp.StatusCode, resp.Text("main"))
	}
	m := allMeals(t, app, admin)[0]
	return m, "/meals/" + m.Date + "/" + m.ID
}

// keepsPhoto fails the test unless the meal is still stored with the
// photo of before, both of whose copies are in the bucket and served.
func keepsPhoto(t *testing.T, app *apptest.App, c *apptest.Client, before meal.Meal) {
	t.Helper()
	ms := allMeals(t, app, admin)
	if len(ms) != 1 || ms[0].ID != before.ID || ms[0].PhotoV != before.PhotoV {
		t.Fatalf("meals = %+v, want the one of before with photo_v %d", ms, before.PhotoV)
	}
	have := map[string]bool{}
	for _, k := range objects(t, app) {
		have[k] = true
	}
	for _, k := range before.PhotoKeys() {
		if !have[k] {
			t.Errorf("object %s deleted: the row still names it", k)
		}
	}
	if r := c.Get(before.ThumbURL()); r.StatusCode != http.StatusOK {
		t.Errorf("thumbnail = %d, want 200", r.StatusCode)
	}
}

// TestReplaceFailureKeepsPhoto: an edit replacing a meal's photo whose
// thumbnail cannot be stored fails, and the meal keeps a photo: the
// copies its row names are not deleted.
func TestReplaceFailureKeepsPhoto(t *testing.T) {
	t.Parallel()
	app, c, f := faulty(t)
	m, editURL := mealWithPhoto(t, app, c)
	f.Fail("PutObject", "test-photos", 1) // the display copy goes through
	resp := upload(c, editURL, "other.jpg", otherPhoto(t),
		"notes", "new photo", "version", strconv.FormatInt(m.Version, 10))
	f.Clear()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("edit with a failing put = %d, want 500", resp.StatusCode)
	}
	keepsPhoto(t, app, c, m)
}

// TestKeptPhotoSpentMeanwhile: a kept photo used up between the form's
// check and its copy into place (the same form sent twice) is the form's
// "expired" message, 422, and the meal keeps the photo it had.
func TestKeptPhotoSpentMeanwhile(t *testing.T) {
	t.Parallel()
	app, c, f := faulty(t)
	m, editURL := mealWithPhoto(t, app, c)
	version := strconv.FormatInt(m.Version, 10)
	resp := upload(c, editURL, "other.jpg", otherPhoto(t), "kcal", "lots", "version", version)
	tok, _ := resp.Doc().Find(`input[name=pending]`).Attr("value")
	if resp.StatusCode != http.StatusUnprocessableEntity || tok == "" {
		t.Fatalf("refused edit = %d, token %q", resp.StatusCode, tok)
	}
	for _, tc := range []struct{ name, path, version string }{
		{"edit", editURL, version},
		{"new meal", "/meals", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "new meal" {
				// A fresh token: the edit's copy was not adopted.
				resp := upload(c, "/meals", "other.jpg", otherPhoto(t), "kcal", "lots")
				tok, _ = resp.Doc().Find(`input[name=pending]`).Attr("value")
			}
			held, release := f.Hold("CopyObject", "test-photos")
			done := make(chan *apptest.Response, 1)
			go func() {
				done <- c.PostMultipart(tc.path, mealForm("pending", tok, "version", tc.version, "notes", "typed again"))
			}()
			<-held
			if err := photo.NewStore(app.Env.S3, "test-photos").DropPending(context.Background(), localenv.Subject(admin), tok); err != nil {
				t.Fatal(err)
			}
			release()
			resp := <-done
			if resp.StatusCode != http.StatusUnprocessableEntity || resp.Text("#photo-err") != "The photo kept from before has expired; choose it again." {
				t.Errorf("spent kept photo = %d %q, want 422 and the expired message", resp.StatusCode, resp.Text("#photo-err"))
			}
			if v, _ := resp.Doc().Find(`input[name=pending]`).Attr("value"); v != "" {
				t.Errorf("form still carries the spent token %q", v)
			}
			if got := resp.Text("#notes"); got != "typed again" {
				t.Errorf("notes = %q, want the typed text kept", got)
			}
			keepsPhoto(t, app, c, m)
		})
	}
}

// TestMoveMeetsOldRowGone: a move whose old row is gone by the time it
// is deleted, because another window deleted or moved the meal while this
// one copied it, undoes its copy: the meal is not brought back, nor found
// twice. The owner is told it moved or was deleted.
func TestMoveMeetsOldRowGone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		other func(t *testing.T, app *apptest.App, c *apptest.Client, m meal.Meal, editURL string)
		left  string // the time of the meal left, "" for none
	}{
		{"deleted", func(t *testing.T, _ *apptest.App, c *apptest.Client, _ meal.Meal, editURL string) {
			if resp := c.PostForm(editURL+"/delete", nil); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("the other window's delete = %d", resp.StatusCode)
			}
		}, ""},
		{"moved", func(t *testing.T, _ *apptest.App, c *apptest.Client, m meal.Meal, editURL string) {
			if resp := c.PostForm(editURL, mealForm("time", "20:00", "notes", "the other window", "version", strconv.FormatInt(m.Version, 10))); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("the other window's move = %d", resp.StatusCode)
			}
		}, "20:00:00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			app, c, f := faulty(t)
			m, editURL := mealWithPhoto(t, app, c)
			// This window's copy waits while the other window acts.
			held, release := f.Hold("PutItem", app.Tables.Meals.Name)
			done := make(chan *apptest.Response, 1)
			go func() {
				done <- c.PostForm(editURL, mealForm("time", "19:45", "notes", "moved", "version", strconv.FormatInt(m.Version, 10)))
			}()
			<-held
			tc.other(t, app, c, m, editURL)
			release()
			resp := <-done
			if resp.StatusCode != http.StatusNotFound || resp.Text("h1") != "Meal moved or deleted" {
				t.Errorf("move whose old row went = %d %q, want 404 Meal moved or deleted", resp.StatusCode, resp.Text("h1"))
			}
			ms := allMeals(t, app, admin)
			var times, keys []string
			for _, x := range ms {
				times = append(times, x.Time)
				keys = append(keys, x.PhotoKeys()...)
			}
			if want := tc.left; strings.Join(times, ",") != want {
				t.Fatalf("meals at %v, want %q", times, want)
			}
			sort.Strings(keys)
			if got := objects(t, app); strings.Join(got, ",") != strings.Join(keys, ",") {
				t.Errorf("objects = %v, want only the remaining meal's %v", got, keys)
			}
		})
	}
}

// TestRowFailureAfterReplace: an edit whose photo has replaced the old
// one in place, and whose row write then fails, writes the row once more,
// so the row names the version its objects carry. If that fails too, the
// edit fails, and the row's photo URLs lead to the photo the objects hold.
func TestRowFailureAfterReplace(t *testing.T) {
	t.Parallel()
	t.Run("once", func(t *testing.T) {
		t.Parallel()
		app, c, f := faulty(t)
		m, editURL := mealWithPhoto(t, app, c)
		f.FailOnce("PutItem", app.Tables.Meals.Name, 0)
		resp := upload(c, editURL, "other.jpg", otherPhoto(t),
			"notes", "new photo", "version", strconv.FormatInt(m.Version, 10))
		if resp.StatusCode != http.StatusSeeOther {
			t.Errorf("edit whose first row write fails = %d, want 303", resp.StatusCode)
		}
		ms := allMeals(t, app, admin)
		if len(ms) != 1 || ms[0].PhotoV <= m.PhotoV || ms[0].PhotoW == m.PhotoW || ms[0].Notes != "new photo" {
			t.Fatalf("meals = %+v, want the edit saved with the new photo (was photo_v %d, %d wide)", ms, m.PhotoV, m.PhotoW)
		}
		for _, u := range []string{ms[0].PhotoURL(photo.SizeDisplay), ms[0].ThumbURL()} {
			if r := c.Get(u); r.StatusCode != http.StatusOK {
				t.Errorf("GET %s = %d, want 200: the row names the objects' version", u, r.StatusCode)
			}
		}
	})
	t.Run("answer lost", func(t *testing.T) {
		// The first write went through; its retry meets the row it wrote
		// as a conflict, and the edit is saved, not a "changed meanwhile".
		t.Parallel()
		app, c, f := faulty(t)
		m, editURL := mealWithPhoto(t, app, c)
		f.LoseAnswerOnce("PutItem", app.Tables.Meals.Name)
		resp := upload(c, editURL, "other.jpg", otherPhoto(t),
			"notes", "new photo", "version", strconv.FormatInt(m.Version, 10))
		if resp.StatusCode != http.StatusSeeOther {
			t.Errorf("edit whose first answer was lost = %d %q, want 303", resp.StatusCode, resp.Text("h1"))
		}
		ms := allMeals(t, app, admin)
		if len(ms) != 1 || ms[0].PhotoV <= m.PhotoV || ms[0].Notes != "new photo" || ms[0].Version != m.Version+1 {
			t.Fatalf("meals = %+v, want the edit saved once with the new photo", ms)
		}
	})
	t.Run("always", func(t *testing.T) {
		t.Parallel()
		app, c, f := faulty(t)
		m, editURL := mealWithPhoto(t, app, c)
		f.Fail("PutItem", app.Tables.Meals.Name, 0)
		resp := upload(c, editURL, "other.jpg", otherPhoto(t),
			"notes", "new photo", "version", strconv.FormatInt(m.Version, 10))
		f.Clear()
		if resp.StatusCode != http.StatusInternalServerError {
			t.Errorf("edit whose row writes fail = %d, want 500", resp.StatusCode)
		}
		for _, u := range []string{m.PhotoURL(photo.SizeDisplay), m.ThumbURL()} {
			r := c.Get(u)
			if r.StatusCode == http.StatusFound {
				r = c.Get(r.Location())
			}
			if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "image/jpeg" {
				t.Errorf("GET %s = %d %q, want the photo (after a redirect)", u, r.StatusCode, r.Header.Get("Content-Type"))
			}
		}
	})
}

// replaceMetNewer starts an edit replacing m's photo, lets another window
// save the meal while the new copies are written, and returns once the
// edit, its row write refused, has read the latest version and is held at
// writing the photo on it. The edit's answer arrives on the channel once
// release is called.
func replaceMetNewer(t *testing.T, app *apptest.App, c *apptest.Client, f *apptest.Faults, m meal.Meal, editURL string) (<-chan *apptest.Response, func()) {
	t.Helper()
	putting, putRelease := f.Hold("PutObject", "test-photos")
	done := make(chan *apptest.Response, 1)
	go func() {
		done <- upload(c, editURL, "other.jpg", otherPhoto(t),
			"notes", "this window", "version", strconv.FormatInt(m.Version, 10))
	}()
	<-putting
	if resp := c.PostForm(editURL, mealForm("notes", "other window", "version", strconv.FormatInt(m.Version, 10))); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("other window's edit = %d", resp.StatusCode)
	}
	// The edit's first PutItem is its own row write, refused; the second
	// writes the photo on the latest version.
	writing, writeRelease := f.Hold("PutItem", app.Tables.Meals.Name)
	putRelease()
	<-writing
	held, release := f.Hold("PutItem", app.Tables.Meals.Name)
	writeRelease()
	<-held
	return done, release
}

// TestReplacedPhotoMetNewer: an edit whose new photo has replaced the old
// copies when it finds the meal changed records the photo on the latest
// version and shows the form again (409) with the typing kept, even if
// the meal changes once more meanwhile; a meal deleted meanwhile gets the
// page saying so with the typing, and the new copies are deleted.
func TestReplacedPhotoMetNewer(t *testing.T) {
	t.Parallel()
	t.Run("changed again", func(t *testing.T) {
		t.Parallel()
		app, c, f := faulty(t)
		m, editURL := mealWithPhoto(t, app, c)
		done, release := replaceMetNewer(t, app, c, f, m, editURL)
		if resp := c.PostForm(editURL, mealForm("notes", "third window", "version", strconv.FormatInt(m.Version+1, 10))); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("third window's edit = %d", resp.StatusCode)
		}
		release()
		resp := <-done
		if resp.StatusCode != http.StatusConflict || resp.Text("#notes") != "this window" || !strings.Contains(resp.Text("main"), "Your new photo was saved.") {
			t.Errorf("edit = %d, notes %q; want 409 with this window's notes and the photo saved", resp.StatusCode, resp.Text("#notes"))
		}
		ms := allMeals(t, app, admin)
		if len(ms) != 1 || ms[0].Notes != "third window" || ms[0].PhotoV <= m.PhotoV {
			t.Fatalf("meals = %+v, want the third window's notes with the new photo", ms)
		}
		if r := c.Get(ms[0].ThumbURL()); r.StatusCode != http.StatusOK {
			t.Errorf("thumbnail = %d, want 200", r.StatusCode)
		}
	})
	t.Run("deleted", func(t *testing.T) {
		t.Parallel()
		app, c, f := faulty(t)
		m, editURL := mealWithPhoto(t, app, c)
		done, release := replaceMetNewer(t, app, c, f, m, editURL)
		d, _ := meal.ParseDate(m.Date)
		if _, err := app.Meals.Delete(context.Background(), m.UserID, d, m.ID); err != nil {
			t.Fatal(err)
		}
		release()
		resp := <-done
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(resp.Text("main"), "this window") {
			t.Errorf("edit of a meal deleted meanwhile = %d; want 404 showing this window's notes; %s", resp.StatusCode, resp.Text("main"))
		}
		if got := objects(t, app); len(got) != 0 {
			t.Errorf("objects = %v, want none: no row names them", got)
		}
	})
}

// TestMoveOldRowDeleteFailsOnce: a move whose delete of the old row fails
// once asks again, and the meal ends up moved, once, with its photo; it is
// not undone (had the first delete gone through, the meal would be lost).
func TestMoveOldRowDeleteFailsOnce(t *testing.T) {
	t.Parallel()
	app, c, f := faulty(t)
	m, editURL := mealWithPhoto(t, app, c)
	f.FailOnce("DeleteItem", app.Tables.Meals.Name, 0)
	resp := c.PostForm(editURL, mealForm("time", "19:45", "version", strconv.FormatInt(m.Version, 10)))
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("move whose old row delete fails once = %d, want 303", resp.StatusCode)
	}
	ms := allMeals(t, app, admin)
	if len(ms) != 1 || ms[0].Time != "19:45:00" || ms[0].PhotoV != m.PhotoV {
		t.Fatalf("meals = %+v, want only the moved meal with its photo", ms)
	}
	keys := ms[0].PhotoKeys()
	sort.Strings(keys)
	if got := objects(t, app); strings.Join(got, ",") != strings.Join(keys, ",") {
		t.Errorf("objects = %v, want only the moved meal's %v", got, keys)
	}
}

// TestAnswerLost: a write DynamoDB applied whose answer the network lost
// is sent again by the SDK and refused by its own condition; the store
// tells it from another writer's change, so the save succeeds once: no
// second meal, no "changed meanwhile", no photo dropped. A move's delete
// of the old row is sent once, without the SDK's retries, so its "gone"
// is never its own lost attempt.
func TestAnswerLost(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, app *apptest.App, c *apptest.Client, resp *apptest.Response, wantTime, wantNotes string) {
		t.Helper()
		if resp.StatusCode != http.StatusSeeOther {
			t.Errorf("save whose answer was lost = %d %q, want 303", resp.StatusCode, resp.Text("h1"))
		}
		ms := allMeals(t, app, admin)
		if len(ms) != 1 || ms[0].Time != wantTime || ms[0].Notes != wantNotes || !ms[0].HasPhoto() {
			t.Fatalf("meals = %+v, want one at %s with %q and its photo", ms, wantTime, wantNotes)
		}
		if r := c.Get(ms[0].ThumbURL()); r.StatusCode != http.StatusOK {
			t.Errorf("thumbnail = %d, want 200", r.StatusCode)
		}
		keys := ms[0].PhotoKeys()
		sort.Strings(keys)
		if got := objects(t, app); strings.Join(got, ",") != strings.Join(keys, ",") {
			t.Errorf("objects = %v, want the meal's %v", got, keys)
		}
	}
	t.Run("create", func(t *testing.T) {
		t.Parallel()
		app, c, f := faulty(t)
		f.LoseAnswerOnce("PutItem", app.Tables.Meals.Name)
		resp := upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg"), "time", "12:30", "notes", "soup")
		check(t, app, c, resp, "12:30:00", "soup")
	})
	t.Run("edit", func(t *testing.T) {
		t.Parallel()
		app, c, f := faulty(t)
		m, editURL := mealWithPhoto(t, app, c)
		f.LoseAnswerOnce("PutItem", app.Tables.Meals.Name)
		resp := c.PostForm(editURL, mealForm("time", m.HHMM(), "notes", "edited", "version", strconv.FormatInt(m.Version, 10)))
		check(t, app, c, resp, m.Time, "edited")
	})
	t.Run("move", func(t *testing.T) {
		t.Parallel()
		app, c, f := faulty(t)
		m, editURL := mealWithPhoto(t, app, c)
		f.LoseAnswerOnce("DeleteItem", app.Tables.Meals.Name)
		resp := c.PostForm(editURL, mealForm("time", "19:45", "notes", "moved", "version", strconv.FormatInt(m.Version, 10)))
		check(t, app, c, resp, "19:45:00", "moved")
	})
}

// TestMoveMeetsEdit: a move while another window edits the meal undoes
// its copy and says the meal changed (409, the typing kept), not that it
// is gone, on a backend that does not return the refused row too.
func TestMoveMeetsEdit(t *testing.T) {
	t.Parallel()
	app, c, f := faulty(t)
	m, editURL := mealWithPhoto(t, app, c)
	held, release := f.Hold("PutItem", app.Tables.Meals.Name)
	done := make(chan *apptest.Response, 1)
	go func() {
		done <- c.PostForm(editURL, mealForm("time", "19:45", "notes", "moved", "version", strconv.FormatInt(m.Version, 10)))
	}()
	<-held
	if resp := c.PostForm(editURL, mealForm("time", m.HHMM(), "notes", "the other window", "version", strconv.FormatInt(m.Version, 10))); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the other window's edit = %d", resp.StatusCode)
	}
	release()
	resp := <-done
	if resp.StatusCode != http.StatusConflict || resp.Text("#notes") != "moved" {
		t.Errorf("move meeting an edit = %d, notes %q; want 409 with the typing kept", resp.StatusCode, resp.Text("#notes"))
	}
	ms := allMeals(t, app, admin)
	if len(ms) != 1 || ms[0].Time != m.Time || ms[0].Notes != "the other window" {
		t.Fatalf("meals = %+v, want the one edited by the other window, where it was", ms)
	}
}
