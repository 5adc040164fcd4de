package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
)

// TestHeaderMarksTheSection: the header marks the section of every page,
// by route rather than path: a refused add form (answered by POST /meals)
// is still Add, a meal's page and its edit form are the Diary. Sign out
// is on the account page, not in the header.
func TestHeaderMarksTheSection(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	c.SignIn("admin@example.com")
	if resp := c.PostForm("/meals", url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}, "notes": {"soup"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("add meal = %d", resp.StatusCode)
	}
	ms, err := app.Meals.All(t.Context(), localenv.Subject("admin@example.com"))
	if err != nil || len(ms) != 1 {
		t.Fatalf("meals = %v, %v", ms, err)
	}
	mealURL := "/meals/2026-09-01/" + ms[0].ID
	refusedPhoto := c.PostMultipart("/meals", url.Values{"date": {"2026-09-01"}, "time": {"13:00"}, "kind": {"lunch"}},
		apptest.File{Field: "photo", Name: "x.jpg", Body: []byte("not an image")})
	if refusedPhoto.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("refused upload = %d, want 422", refusedPhoto.StatusCode)
	}
	for _, tc := range []struct {
		name    string
		resp    *apptest.Response
		current string // the marked link's text
		value   string // its aria-current
	}{
		{"month", c.Get("/meals?month=2026-09"), "Diary", "page"},
		{"window", c.Get("/meals?from=2026-09-01&to=2026-09-02"), "Diary", "page"},
		{"detail", c.Get(mealURL), "Diary", "true"},
		{"edit form", c.Get(mealURL + "/edit"), "Diary", "true"},
		{"add form", c.Get("/meals/new"), "Add", "page"},
		{"add form for a day", c.Get("/meals/new?date=2026-09-02"), "Add", "page"},
		{"add form after a refused upload", refusedPhoto, "Add", "true"},
		{"shares", c.Get("/shares"), "Shares", "page"},
		{"refused share", c.PostForm("/shares", url.Values{"label": {""}, "from": {"x"}}), "Shares", "true"},
		{"account", c.Get("/account"), "Account", "page"},
		{"refused time zone", c.PostForm("/account/timezone", url.Values{"tz": {"Atlantis"}}), "Account", "true"},
		{"account deletion", c.Get("/account/delete"), "Account", "true"},
		{"admin users", c.Get("/admin/users"), "Admin", "page"},
		{"admin invites", c.Get("/admin/invites"), "Admin", "true"},
	} {
		marked := tc.resp.Doc().Find("header nav a[aria-current]")
		v, _ := marked.Attr("aria-current")
		if marked.Length() != 1 || strings.TrimSpace(marked.Text()) != tc.current || v != tc.value {
			t.Errorf("%s (%d): marked %d links, %q aria-current=%q; want %q %q", tc.name, tc.resp.StatusCode, marked.Length(), marked.Text(), v, tc.current, tc.value)
		}
		if n := tc.resp.Doc().Find(`header form[action="/logout"], header button`).Length(); n != 0 {
			t.Errorf("%s: %d sign-out controls in the header, want none", tc.name, n)
		}
	}
	acc := c.Get("/account").Doc()
	if acc.Find(`main form[action="/logout"][method=post] button`).Length() != 1 {
		t.Error("the account page has no sign-out button")
	}
	// Pages of no section mark nothing.
	if n := c.Get("/no-such-page").Doc().Find("header nav a[aria-current]").Length(); n != 0 {
		t.Errorf("the not-found page marks %d links", n)
	}
}

// TestErrorHeadingsSayWhatHappened: an error page's heading says what
// happened in words, never the bare HTTP status text.
func TestErrorHeadingsSayWhatHappened(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	c.SignIn("admin@example.com")
	anon := app.Client()
	del, _ := http.NewRequest(http.MethodDelete, app.URL+"/meals", nil)
	for _, tc := range []struct {
		name    string
		resp    *apptest.Response
		status  int
		heading string
	}{
		{"no such page", anon.Get("/no-such-page"), 404, "Page not found"},
		{"bad month", c.Get("/meals?month=2026-9"), 400, "Month not recognised"},
		{"no such meal", c.Get("/meals/2026-09-01/123000-abcdef/edit"), 404, "Meal moved or deleted"},
		{"moved meal", c.Get("/meals/2026-09-01/123000-abcdef"), 404, "Meal moved or deleted"},
		{"wrong method", c.Do(del), 405, "That action is not available here"},
		{"bad move", c.PostForm("/meals/2026-09-01/123000-abcdef/move", url.Values{}), 404, "Meal moved or deleted"},
		{"no such user", c.Get("/admin/users/nobody/delete"), 404, "Page not found"},
		{"no such share", anon.Get("/s/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), 404, ""},
	} {
		got := tc.resp.Text("h1")
		if tc.resp.StatusCode != tc.status || got == "" || got == http.StatusText(tc.status) || (tc.heading != "" && got != tc.heading) {
			t.Errorf("%s = %d %q, want %d %q (not the status text)", tc.name, tc.resp.StatusCode, got, tc.status, tc.heading)
		}
	}
}
