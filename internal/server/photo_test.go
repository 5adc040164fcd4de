package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
)

// TestOwnerPhotoLogging: the owner's photo route logs refused requests
// (with route and status, never the path) and leaves successful ones out
// of the access log.
func TestOwnerPhotoLogging(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	app := apptest.New(t, apptest.Options{Log: &log})
	c := app.Client()
	c.SignIn("admin@example.com")
	form := url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}}
	if r := c.PostMultipart("/meals", form, apptest.File{Field: "photo", Name: "s.jpg", Body: apptest.Photo(t, "small.jpg")}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("add meal = %d", r.StatusCode)
	}
	ms, err := app.Meals.All(t.Context(), localenv.Subject("admin@example.com"))
	if err != nil || len(ms) != 1 {
		t.Fatalf("meals = %v, %v", ms, err)
	}
	if r := c.Get(ms[0].ThumbURL()); r.StatusCode != http.StatusOK {
		t.Fatalf("photo = %d", r.StatusCode)
	}
	if strings.Contains(log.String(), `"route":"/photo/{date}/{meal_id}"`) {
		t.Errorf("a successful photo request was logged:\n%s", log.String())
	}
	missing := "/photo/2026-09-01/235959-abcdef?v=000000000000"
	if r := c.Get(missing); r.StatusCode != http.StatusNotFound {
		t.Fatalf("missing photo = %d, want 404", r.StatusCode)
	}
	logged := log.String()
	if !strings.Contains(logged, `"route":"/photo/{date}/{meal_id}","status":404`) {
		t.Errorf("the refused photo request was not logged with route and status:\n%s", logged)
	}
	if strings.Contains(logged, "235959-abcdef") {
		t.Error("the log holds the photo's path")
	}
}
