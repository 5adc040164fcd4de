package meal_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"testing"

	"ndiro/internal/apptest"
	"ndiro/internal/meal"
	"ndiro/internal/web"
)

// The contract of the add form's idempotency key, as a browser and the
// offline outbox see it over HTTP (DESIGN.md, capture offline): these
// tests post forms and read answers only, so they hold for any way the
// server keeps its keys.

// scriptedUpload is the add form as the page script sends it (header
// web.ScriptedHeader = scripted: "1" for the form, "2" for the outbox),
// multipart, with photo as its file if not nil.
func scriptedUpload(t *testing.T, app *apptest.App, scripted string, photo []byte, kv ...string) *http.Request {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, vs := range mealForm(kv...) {
		for _, v := range vs {
			mw.WriteField(k, v)
		}
	}
	if photo != nil {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="photo"; filename="photo.jpg"`)
		h.Set("Content-Type", "image/jpeg")
		part, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		part.Write(photo)
	}
	mw.Close()
	req, err := http.NewRequest(http.MethodPost, app.URL+"/meals", &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set(web.ScriptedHeader, scripted)
	return req
}

// refusedAsReused fails the test unless resp is the refusal of a key
// used before for other content: 422, the header the outbox reads, the
// form again with the message, a new key and the link to firstLoc (none
// if ""). It returns the form's new key.
func refusedAsReused(t *testing.T, resp *apptest.Response, firstLoc string) string {
	t.Helper()
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("status = %d, want 422; %s", resp.StatusCode, resp.Text("main"))
	}
	if got := resp.Header.Get(meal.IdemHeader); got != meal.IdemReused {
		t.Errorf("%s = %q, want %q", meal.IdemHeader, got, meal.IdemReused)
	}
	if got := resp.Text("#form-err"); got != meal.MsgKeyReused {
		t.Errorf("form message = %q, want %q", got, meal.MsgKeyReused)
	}
	link, _ := resp.Doc().Find("#reused a").Attr("href")
	if link != firstLoc {
		t.Errorf("link to the first meal = %q, want %q", link, firstLoc)
	}
	key, _ := resp.Doc().Find(`input[name="idem"]`).Attr("value")
	if key == idemKey || meal.ValidIdemKey(key) != nil {
		t.Errorf("form's key = %q, want a new valid key", key)
	}
	return key
}

// TestKeyReusedForOtherContent: a second create under a key with other
// content (notes, numbers, date, another photo, no photo, a photo where
// there was none) is refused, 422 with the form again, the first meal
// left as it was and no second one made. Saving the refused form again,
// with the key it carries now and its kept photo, adds the meal.
func TestKeyReusedForOtherContent(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	small := apptest.Photo(t, "small.jpg")
	first := upload(c, "/meals", "small.jpg", small, "idem", idemKey, "notes", "porridge", "kcal", "350")
	if first.StatusCode != http.StatusSeeOther {
		t.Fatalf("first = %d; %s", first.StatusCode, first.Text("main"))
	}
	before := allMeals(t, app, admin)
	for _, tc := range []struct {
		name  string
		photo []byte
		kv    []string
	}{
		{"other notes", small, []string{"notes", "porridge and tea", "kcal", "350"}},
		{"other number", small, []string{"notes", "porridge", "kcal", "351"}},
		{"other time", small, []string{"notes", "porridge", "kcal", "350", "time", "12:31"}},
		{"other photo", otherPhoto(t), []string{"notes", "porridge", "kcal", "350"}},
		{"no photo", nil, []string{"notes", "porridge", "kcal", "350"}},
	} {
		var resp *apptest.Response
		kv := append([]string{"idem", idemKey}, tc.kv...)
		if tc.photo == nil {
			resp = c.PostMultipart("/meals", mealForm(kv...))
		} else {
			resp = upload(c, "/meals", "photo.jpg", tc.photo, kv...)
		}
		t.Run(tc.name, func(t *testing.T) { refusedAsReused(t, resp, first.Location()) })
	}
	if ms := allMeals(t, app, admin); len(ms) != 1 || ms[0].Notes != "porridge" || ms[0].Version != before[0].Version || ms[0].PhotoV != before[0].PhotoV {
		t.Fatalf("meals = %+v, want the first alone, unchanged", ms)
	}

	// The refused form, saved again as it came back: another meal, with
	// the photo kept.
	refused := upload(c, "/meals", "other.jpg", otherPhoto(t), "idem", idemKey, "notes", "toast")
	key := refusedAsReused(t, refused, first.Location())
	tok, _ := refused.Doc().Find(`input[name="pending"]`).Attr("value")
	if tok == "" {
		t.Fatal("refused form keeps no photo")
	}
	again := c.PostMultipart("/meals", mealForm("idem", key, "notes", "toast", "pending", tok))
	if again.StatusCode != http.StatusSeeOther || again.Location() == first.Location() {
		t.Fatalf("saved again = %d to %q, want a new meal; %s", again.StatusCode, again.Location(), again.Text("main"))
	}
	ms := allMeals(t, app, admin)
	if len(ms) != 2 {
		t.Fatalf("%d meals, want the first and the one saved again", len(ms))
	}
	for _, m := range ms {
		if m.Notes == "toast" && (!m.HasPhoto() || m.PhotoW != 320) {
			t.Errorf("meal saved again = %+v, want the kept 320-wide photo", m)
		}
	}
}

// TestKeyReusedWhileFirstAtWork: other content under a key whose first
// request is still at work is refused at once (422, no link yet), not
// answered "being saved, try later" (409).
func TestKeyReusedWhileFirstAtWork(t *testing.T) {
	t.Parallel()
	app, c, f := faulty(t)
	held, release := f.Hold("PutObject", "test-photos")
	defer release()
	firstDone := make(chan *apptest.Response, 1)
	go func() {
		firstDone <- upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg"), "idem", idemKey, "notes", "first")
	}()
	<-held
	second := c.PostMultipart("/meals", mealForm("idem", idemKey, "notes", "second"))
	refusedAsReused(t, second, "")
	release()
	if first := <-firstDone; first.StatusCode != http.StatusSeeOther {
		t.Fatalf("first = %d; %s", first.StatusCode, first.Text("main"))
	}
	if ms := allMeals(t, app, admin); len(ms) != 1 || ms[0].Notes != "first" {
		t.Errorf("meals = %+v, want the first alone", ms)
	}
}

// TestKeptPhotoIsTheSamePhoto: the photo a repeat brings as the upload
// kept by a corrected form is the same photo as the file first sent, so
// the repeat is the same request and answers with the first meal.
func TestKeptPhotoIsTheSamePhoto(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	small := apptest.Photo(t, "small.jpg")
	first := upload(c, "/meals", "small.jpg", small, "idem", idemKey)
	if first.StatusCode != http.StatusSeeOther {
		t.Fatalf("first = %d; %s", first.StatusCode, first.Text("main"))
	}
	// A form with a bad field keeps the photo (and claims nothing).
	bad := upload(c, "/meals", "small.jpg", small, "idem", idemKey, "kcal", "lots")
	tok, _ := bad.Doc().Find(`input[name="pending"]`).Attr("value")
	if bad.StatusCode != http.StatusUnprocessableEntity || tok == "" {
		t.Fatalf("bad field = %d, kept %q; want 422 with the photo kept", bad.StatusCode, tok)
	}
	again := c.PostMultipart("/meals", mealForm("idem", idemKey, "pending", tok))
	if again.StatusCode != http.StatusSeeOther || again.Location() != first.Location() {
		t.Errorf("repeat with the kept photo = %d to %q, want the first meal %q; %s", again.StatusCode, again.Location(), first.Location(), again.Text("main"))
	}
	if n := len(allMeals(t, app, admin)); n != 1 {
		t.Errorf("%d meals, want 1", n)
	}
}

// TestRepeatAfterDelete: the same request sent again after its meal was
// deleted (or moved) lands on that month saying so, and the meal is not
// made again: not by the form, not by the page script, not by the
// outbox.
func TestRepeatAfterDelete(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"deleted", "moved"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			app, c := signedIn(t)
			small := apptest.Photo(t, "small.jpg")
			first := upload(c, "/meals", "small.jpg", small, "idem", idemKey, "notes", "soup")
			if first.StatusCode != http.StatusSeeOther {
				t.Fatalf("first = %d; %s", first.StatusCode, first.Text("main"))
			}
			m := allMeals(t, app, admin)[0]
			path := "/meals/" + m.Date + "/" + m.ID
			var resp *apptest.Response
			if how == "deleted" {
				resp = c.PostForm(path+"/delete", url.Values{})
			} else {
				resp = c.PostForm(path+"/move", url.Values{"version": {fmt.Sprint(m.Version)}, "date": {"2026-08-30"}, "time": {"12:30"}})
			}
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("%s = %d; %s", how, resp.StatusCode, resp.Text("main"))
			}
			left := len(allMeals(t, app, admin))

			again := upload(c, "/meals", "small.jpg", small, "idem", idemKey, "notes", "soup")
			if again.StatusCode != http.StatusSeeOther || again.Location() != "/meals?month=2026-09" {
				t.Fatalf("repeat = %d to %q, want 303 to /meals?month=2026-09; %s", again.StatusCode, again.Location(), again.Text("main"))
			}
			if flash := c.Get(again.Location()).Text(".flash"); flash != meal.MsgSavedThenGone {
				t.Errorf("flash = %q, want %q", flash, meal.MsgSavedThenGone)
			}
			for _, scripted := range []string{"1", "2"} {
				resp := c.Do(scriptedUpload(t, app, scripted, small, "idem", idemKey, "notes", "soup"))
				var out struct{ Location string }
				if err := json.Unmarshal([]byte(resp.Body), &out); err != nil || resp.StatusCode != http.StatusOK || out.Location != "/meals?month=2026-09" {
					t.Errorf("scripted %s repeat = %d %q, want 200 {location: /meals?month=2026-09}", scripted, resp.StatusCode, resp.Body)
				}
			}
			if ms := allMeals(t, app, admin); len(ms) != left {
				t.Errorf("%d meals after the repeats, want %d: made again", len(ms), left)
			}
			// Other content under that key is still refused.
			refusedAsReused(t, c.PostMultipart("/meals", mealForm("idem", idemKey, "notes", "stew")), "")
			if got := objects(t, app); how == "deleted" && len(pendingFree(got)) != 0 {
				t.Errorf("photo objects %v after the deleted meal's repeats, want none", got)
			}
		})
	}
}

// pendingFree is keys without the pending uploads kept by refused forms.
func pendingFree(keys []string) []string {
	var out []string
	for _, k := range keys {
		if !strings.HasPrefix(k, "pending/") {
			out = append(out, k)
		}
	}
	return out
}
