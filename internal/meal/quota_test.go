package meal_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"ndiro/internal/apptest"
	"ndiro/internal/dynamo"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// usage returns the owner's usage as the users table holds it (read past
// the store's cache) and as the guard reads it (through the cache), and
// what storage holds: the meals rows counted and the bytes of every
// object under the owner's prefix.
func usage(t *testing.T, app *apptest.App, email string) (table, cached, truth user.Usage) {
	t.Helper()
	ctx := context.Background()
	id := localenv.Subject(email)
	row, found, err := dynamo.GetItem[user.User](ctx, app.Env.DynamoDB, app.Tables.Users.Name, "user_id", id)
	if err != nil || !found {
		t.Fatalf("users row of %s: found %v, %v", id, found, err)
	}
	u, err := app.Users.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	meals, err := app.Meals.CountByOwner(ctx, func(context.Context, int) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	truth.Meals = meals[id]
	err = app.Objects.List(ctx, photo.UserPrefix(id), func(context.Context, int) error { return nil }, func(o photo.ObjectInfo) error {
		truth.PhotoBytes += o.Size
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return row.Usage, u.Usage, truth
}

// wantUsage fails the test unless the owner's users row, in the table
// and as the guard reads it, holds what storage holds: meals meals, and
// photo bytes if photos is set, none otherwise.
func wantUsage(t *testing.T, app *apptest.App, step string, meals int64, photos bool) user.Usage {
	t.Helper()
	table, cached, truth := usage(t, app, admin)
	if truth.Meals != meals || (truth.PhotoBytes > 0) != photos {
		t.Fatalf("%s: storage holds %+v, want %d meals and photos %v", step, truth, meals, photos)
	}
	if table != truth || cached != truth {
		t.Errorf("%s: the users row counts %+v (the guard reads %+v), want what storage holds, %+v", step, table, cached, truth)
	}
	return truth
}

// version returns the stored version of the owner's meal id.
func versionOf(t *testing.T, app *apptest.App, id string) string {
	t.Helper()
	for _, m := range allMeals(t, app, admin) {
		if m.ID == id {
			return strconv.FormatInt(m.Version, 10)
		}
	}
	t.Fatalf("no meal %s", id)
	return ""
}

// TestUsageFollowsWrites: every write that changes what an account
// stores changes the count on its users row, in the table and in the
// cache the guard reads, to what storage holds: a new meal with a photo
// and one without, a photo replaced, a move with a new photo, a move
// keeping it, a photo removed, deletions.
func TestUsageFollowsWrites(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	wantUsage(t, app, "before any meal", 0, false)

	if r := upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg")); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("new meal with a photo = %d; %s", r.StatusCode, r.Text("main"))
	}
	first := wantUsage(t, app, "a meal with a photo", 1, true)
	m := allMeals(t, app, admin)[0]
	if m.PhotoBytes != first.PhotoBytes {
		t.Errorf("the meal records %d bytes of photo, want its copies' %d", m.PhotoBytes, first.PhotoBytes)
	}
	if r := c.PostForm("/meals", mealForm("time", "19:00", "notes", "no photo")); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("new meal = %d", r.StatusCode)
	}
	if got := wantUsage(t, app, "a meal without a photo", 2, true); got.PhotoBytes != first.PhotoBytes {
		t.Errorf("a meal without a photo changed the bytes from %d to %d", first.PhotoBytes, got.PhotoBytes)
	}

	edit := "/meals/" + m.Date + "/" + m.ID
	r := c.PostMultipart(edit, mealForm("version", versionOf(t, app, m.ID)), apptest.File{Field: "photo", Name: "o.jpg", Body: otherPhoto(t)})
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("replace the photo = %d; %s", r.StatusCode, r.Text("main"))
	}
	if got := wantUsage(t, app, "a photo replaced", 2, true); got.PhotoBytes == first.PhotoBytes {
		t.Errorf("a photo replaced by a smaller one left the bytes at %d", got.PhotoBytes)
	}

	// Moved by the edit form, with a new photo: a new key, new bytes.
	r = c.PostMultipart(edit, mealForm("date", "2026-08-30", "version", versionOf(t, app, m.ID)), apptest.File{Field: "photo", Name: "s.jpg", Body: apptest.Photo(t, "small.jpg")})
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("move with a new photo = %d; %s", r.StatusCode, r.Text("main"))
	}
	wantUsage(t, app, "moved with a new photo", 2, true)
	var moved meal.Meal
	for _, x := range allMeals(t, app, admin) {
		if x.Date == "2026-08-30" {
			moved = x
		}
	}
	// Moved as it is ("move to now"): the same bytes under new keys.
	r = c.PostForm(moved.DetailURL()+"/move", url.Values{"date": {"2026-08-29"}, "time": {"08:00"}, "version": {strconv.FormatInt(moved.Version, 10)}})
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("move = %d; %s", r.StatusCode, r.Text("main"))
	}
	wantUsage(t, app, "moved as it is", 2, true)

	moved = allMeals(t, app, admin)[0]
	r = c.PostMultipart("/meals/"+moved.Date+"/"+moved.ID, mealForm("date", moved.Date, "time", moved.HHMM(), "remove_photo", "1", "version", strconv.FormatInt(moved.Version, 10)))
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("remove the photo = %d; %s", r.StatusCode, r.Text("main"))
	}
	wantUsage(t, app, "its photo removed", 2, false)

	for i, x := range allMeals(t, app, admin) {
		if r := c.PostForm(x.DetailURL()+"/delete", url.Values{}); r.StatusCode != http.StatusSeeOther {
			t.Fatalf("delete = %d", r.StatusCode)
		}
		wantUsage(t, app, "a meal deleted", int64(1-i), false)
	}

	// A meal with a photo deleted takes its bytes along.
	if r := upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg")); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("new meal with a photo = %d", r.StatusCode)
	}
	wantUsage(t, app, "a meal with a photo again", 1, true)
	if r := c.PostForm(allMeals(t, app, admin)[0].DetailURL()+"/delete", url.Values{}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete = %d", r.StatusCode)
	}
	wantUsage(t, app, "the meal with a photo deleted", 0, false)
}

// outboxMessage is what static/outbox.js's messageOf finds on a refusal
// page that has no form messages: the text of the first paragraph in
// main.
var outboxMessage = regexp.MustCompile(`<main[^>]*>[\s\S]*?<p[^>]*>([^<]+)<`)

// TestQuotaRefusesNewMeal: an account at its meals' bound gets the 403
// page saying so and what to do for a new meal, from the form or the
// outbox (whose message is the page's), and nothing is written: no row,
// no object, no claim of its key, no call to the tables at all (the
// check reads the row the guard has). Edits and deletions go on, and a
// deletion makes room again.
func TestQuotaRefusesNewMeal(t *testing.T) {
	t.Parallel()
	app := apptest.New(t, apptest.Options{Env: map[string]string{"NDIRO_QUOTA_MEALS": "2"}})
	c := app.Client()
	c.SignIn(admin)
	for _, tm := range []string{"08:00", "12:30"} {
		if r := c.PostForm("/meals", mealForm("time", tm)); r.StatusCode != http.StatusSeeOther {
			t.Fatalf("meal at %s = %d", tm, r.StatusCode)
		}
	}
	wantUsage(t, app, "two meals", 2, false)
	before := objects(t, app)

	app.Calls.Reset()
	r := upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg"), "time", "19:00", "idem", idemKey)
	if r.StatusCode != http.StatusForbidden || r.Text("h1") != "Your diary is full" {
		t.Fatalf("a third meal = %d %q, want 403 \"Your diary is full\"", r.StatusCode, r.Text("h1"))
	}
	msg := r.Text("main p")
	for _, want := range []string{"Your diary is full: it holds 2 meals", "NDIRO_QUOTA_MEALS", "so nothing was saved", "Delete meals"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not say %q", msg, want)
		}
	}
	if calls := app.Calls.Counts(); len(calls) != 0 {
		t.Errorf("the refusal made DynamoDB calls %v, want none", calls)
	}

	// The outbox's request: the same page, whose message it shows.
	req, _ := http.NewRequest(http.MethodPost, app.URL+"/meals", strings.NewReader(mealForm("time", "20:00", "idem", idemKey).Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(web.ScriptedHeader, "2")
	r = c.Do(req)
	got := outboxMessage.FindStringSubmatch(r.Body)
	if r.StatusCode != http.StatusForbidden || got == nil || !strings.Contains(got[1], "Your diary is full: it holds 2 meals") {
		t.Errorf("the outbox's send = %d, message %q; want 403 and the quota's message", r.StatusCode, got)
	}
	if n := len(allMeals(t, app, admin)); n != 2 {
		t.Errorf("%d meals after the refusals, want 2", n)
	}
	if cl := claims(t, app, admin); len(cl) != 0 {
		t.Errorf("claims %v after the refusals, want none", cl)
	}
	if after := objects(t, app); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("objects after the refusals = %v, want %v", after, before)
	}

	// Edits go on; a deletion makes room for one more.
	m := allMeals(t, app, admin)[0]
	if r := c.PostForm("/meals/"+m.Date+"/"+m.ID, mealForm("time", m.HHMM(), "notes", "edited", "version", versionOf(t, app, m.ID))); r.StatusCode != http.StatusSeeOther {
		t.Errorf("edit at the bound = %d, want 303", r.StatusCode)
	}
	if r := c.PostForm(m.DetailURL()+"/delete", url.Values{}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete = %d", r.StatusCode)
	}
	if r := c.PostForm("/meals", mealForm("time", "21:00")); r.StatusCode != http.StatusSeeOther {
		t.Errorf("a new meal after a deletion = %d, want 303", r.StatusCode)
	}
	wantUsage(t, app, "after a deletion and a new meal", 2, false)
}

// TestQuotaRefusesPhotos: at the bytes' bound a new meal is refused, and
// an edit bringing a photo gets its form back with the photo's message
// and everything typed (nothing written); an edit without one is saved,
// and removing a photo makes room.
func TestQuotaRefusesPhotos(t *testing.T) {
	t.Parallel()
	app := apptest.New(t, apptest.Options{Env: map[string]string{"NDIRO_QUOTA_BYTES": "4096", "NDIRO_IMPORT_MAX_BYTES": "1024"}})
	c := app.Client()
	c.SignIn(admin)
	if r := upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg")); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("a meal with a photo = %d", r.StatusCode)
	}
	full := wantUsage(t, app, "one photo", 1, true)
	if full.PhotoBytes < 4096 {
		t.Fatalf("the photo takes %d bytes, want past the 4096 of the test's quota", full.PhotoBytes)
	}
	m := allMeals(t, app, admin)[0]
	before := objects(t, app)

	if r := c.PostForm("/meals", mealForm("time", "19:00")); r.StatusCode != http.StatusForbidden || !strings.Contains(r.Text("main p"), "its photos take") {
		t.Errorf("a new meal at the bytes' bound = %d %q, want 403 saying the photos' bound", r.StatusCode, r.Text("main p"))
	}
	edit := "/meals/" + m.Date + "/" + m.ID
	r := c.PostMultipart(edit, mealForm("notes", "typed", "version", versionOf(t, app, m.ID)), apptest.File{Field: "photo", Name: "o.jpg", Body: otherPhoto(t)})
	if r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(r.Text("#photo-err"), "Your diary is full: its photos take") || r.Text("#notes") != "typed" {
		t.Errorf("an edit with a photo at the bound = %d, photo message %q, notes %q; want 422, the quota's message, the notes typed", r.StatusCode, r.Text("#photo-err"), r.Text("#notes"))
	}
	if after := objects(t, app); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("objects after the refused edit = %v, want %v (no pending copy either)", after, before)
	}
	if got := allMeals(t, app, admin)[0]; got.PhotoV != m.PhotoV || got.Notes != m.Notes {
		t.Errorf("the refused edit changed the meal: %+v", got)
	}

	if r := c.PostMultipart(edit, mealForm("notes", "text only", "version", versionOf(t, app, m.ID))); r.StatusCode != http.StatusSeeOther {
		t.Errorf("an edit without a photo at the bound = %d, want 303", r.StatusCode)
	}
	if r := c.PostMultipart(edit, mealForm("remove_photo", "1", "version", versionOf(t, app, m.ID))); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("remove the photo = %d", r.StatusCode)
	}
	wantUsage(t, app, "its photo removed", 1, false)
	if r := upload(c, "/meals", "o.jpg", otherPhoto(t), "time", "19:00"); r.StatusCode != http.StatusSeeOther {
		t.Errorf("a meal with a photo after making room = %d, want 303", r.StatusCode)
	}
}

// TestQuotaCheckReadsNothing: a new meal under the bounds costs the one
// write of its row and the one update of the users row, no read of
// either table (the guard's row is cached, and the count's update keeps
// it cached as written), and the next page reads no users row either.
func TestQuotaCheckReadsNothing(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	c.Get("/meals")
	app.Calls.Reset()
	if r := c.PostForm("/meals", mealForm()); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("new meal = %d", r.StatusCode)
	}
	if got := app.Calls.Counts(); len(got) != 2 || got["PutItem"] != 1 || got["UpdateItem"] != 1 {
		t.Errorf("a new meal made DynamoDB calls %v, want one PutItem (the meal) and one UpdateItem (its count)", got)
	}
	app.Calls.Reset()
	if r := c.Get("/meals?month=2026-09"); r.StatusCode != http.StatusOK {
		t.Fatalf("month = %d", r.StatusCode)
	}
	if got := app.Calls.Counts(); got["GetItem"] != 0 {
		t.Errorf("the page after a new meal made %d GetItems, want 0: the counted row stays cached", got["GetItem"])
	}
}
