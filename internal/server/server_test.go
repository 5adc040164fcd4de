package server_test

import (
	"bytes"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/oauth2-proxy/mockoidc"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/user"
)

// syncBuffer is a log sink safe to read while the app writes to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tour signs in an admin with a meal (photo, notes, numbers) and an open
// invite, then visits every page as its audience would. It returns the
// responses by path and the invite token.
func tour(t *testing.T, app *apptest.App) (map[string]*apptest.Response, string) {
	t.Helper()
	admin := app.Client()
	admin.SignIn("admin@example.com")
	form := url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}, "notes": {"Lentil soup with bread"},
		"kcal": {"512.5"}, "protein_g": {"21"}, "hunger": {"4"}}
	if resp := admin.PostMultipart("/meals", form, apptest.File{Field: "photo", Name: "small.jpg", Body: apptest.Photo(t, "small.jpg")}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("add meal = %d", resp.StatusCode)
	}
	ms, err := app.Meals.All(t.Context(), localenv.Subject("admin@example.com"))
	if err != nil || len(ms) != 1 {
		t.Fatalf("meals = %v, %v", ms, err)
	}
	tok := admin.CreateInvite(url.Values{"role": {"owner"}, "email": {"friend@example.com"}})
	share := admin.CreateShare(url.Values{"label": {"Dr. Rossi"}, "from": {"2026-08-25"}, "to": {"2026-09-07"}, "expiry": {"30"}, "notes": {"1"}, "numbers": {"1"}, "comments": {"1"}})
	anon := app.Client()
	preview := app.Client()
	// An owner whose account is moving to their new sign-in (claimed and
	// its new row written; the move itself is not started).
	ctx := t.Context()
	if err := app.Users.Create(ctx, &user.User{ID: "local-mover", Email: "mover@example.com", Role: user.RoleOwner, Status: user.StatusActive}); err != nil {
		t.Fatal(err)
	}
	if err := app.Users.MarkAwaitingOwner(ctx, "local-mover", app.Clock.Now(), apptest.AdminMark(app.Clock.Now())); err != nil {
		t.Fatal(err)
	}
	old, err := app.Users.ClaimMove(ctx, "local-mover", "new-mover", app.Env.OIDC.Issuer(), app.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Users.CreateMoving(ctx, old, "new-mover", app.Env.OIDC.Issuer(), "photos"); err != nil {
		t.Fatal(err)
	}
	app.Env.NextSignIn(&mockoidc.MockUser{Subject: "new-mover", Email: "mover@example.com", EmailVerified: true})
	mover := app.Client()
	mover.SignIn("mover@example.com")
	got := map[string]*apptest.Response{}
	for _, v := range []struct {
		c    *apptest.Client
		path string
	}{
		{anon, "/"},
		{anon, "/invite/" + tok},
		{anon, "/no-such-page"},
		{anon, "//meals/./new"}, // the ServeMux's redirect to the clean path
		{anon, "/healthz"},
		{anon, "/static/app.css"},
		{anon, "/manifest.webmanifest"},
		{anon, "/meals"},
		{admin, "/meals?month=2026-09"},
		{admin, "/meals?from=2026-08-30&to=2026-09-02"},
		{admin, "/meals/new"},
		{admin, "/meals/2026-09-01/000000-000000/edit"},
		{admin, "/meals/2026-09-01/" + ms[0].ID},
		{admin, "/meals/2026-09-02/" + ms[0].ID},
		{admin, "/meals/2026-09-01/" + ms[0].ID + "/edit"},
		{admin, ms[0].ThumbURL()},
		{admin, "/account"},
		{admin, "/account/delete"},
		{admin, "/account/import"},
		{anon, "/account/deleted?t=unknown"},
		{admin, "/admin/users"},
		{admin, "/admin/invites"},
		{admin, "/admin/shares"},
		{admin, "/admin/monitor"},
		{admin, "/admin/users/" + url.PathEscape(localenv.Subject("admin@example.com")) + "/move"},
		{mover, "/meals"},
		{admin, "/shares"},
		{anon, "/s/" + share},
		{anon, "/s/" + share + "/week?start=2026-08-31"},
		{anon, "/s/" + share + "/print"},
		{anon, "/s/" + share + "/meals/2026-09-01/" + ms[0].ID},
		{anon, "/shared"},
		{admin, "/shares/" + share + "/comments"},
		{anon, "/s/" + share + "/photo/2026-09-01/" + ms[0].ID + "?v=" + ms[0].PhotoV.Tag() + "&size=thumb"},
	} {
		got[v.path] = v.c.Get(v.path)
	}
	// A chat app unfurling the link gets the page without photos.
	req, _ := http.NewRequest(http.MethodGet, app.URL+"/s/"+share+"?unfurl", nil)
	req.Header.Set("User-Agent", "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)")
	got["/s/{token} (preview)"] = preview.Do(req)
	return got, tok
}

// TestEveryPageRenders visits the app and checks that every page template
// rendered at least once, with realistic data, as a whole HTML page.
func TestEveryPageRenders(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	responses, _ := tour(t, app)
	seen := map[string]bool{}
	for path, resp := range responses {
		page, ok := resp.Doc().Find("body").Attr("data-page")
		if !ok {
			continue // not a page: a photo, a redirect, a static file
		}
		seen[page] = true
		if resp.Doc().Find("h1").Length() == 0 {
			t.Errorf("%s (%s) has no heading", path, page)
		}
	}
	var rendered []string
	for p := range seen {
		rendered = append(rendered, p)
	}
	sort.Strings(rendered)
	if d := cmp.Diff(app.Pages.Names(), rendered); d != "" {
		t.Errorf("page templates rendered by the tour (-all +rendered):\n%s", d)
	}
}

// TestSecurityHeaders checks the literal headers a browser relies on, on
// every kind of response: pages, errors, redirects, photos, static files.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	responses, _ := tour(t, app)
	want := map[string]string{
		"X-Content-Type-Options":  "nosniff",
		"X-Frame-Options":         "DENY",
		"Referrer-Policy":         "same-origin",
		"Content-Security-Policy": "default-src 'self'; img-src 'self' blob: data:; worker-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
	}
	for path, resp := range responses {
		for name, v := range want {
			got := resp.Header.Get(name)
			if name == "Referrer-Policy" && (strings.HasPrefix(path, "/invite/") || strings.HasPrefix(path, "/s/") || strings.HasPrefix(path, "/account/deleted")) {
				v = "no-referrer" // the token is in the URL
			}
			if got != v {
				t.Errorf("%s (%d): %s = %q, want %q", path, resp.StatusCode, name, got, v)
			}
		}
	}
}

// TestUncleanPathsRedirect: a path with an empty, "." or ".." segment is
// sent (307, so a POST stays a POST) to its clean form, the query kept,
// before any route or guard runs: the ServeMux in front of every route
// cleans paths.
func TestUncleanPathsRedirect(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	for path, want := range map[string]string{
		"//meals":                               "/meals",
		"/meals/./new":                          "/meals/new",
		"/s/abc/../../meals?month=2026-09":      "/meals?month=2026-09",
		"/photo/2026-09-01/../2026-09-01/x?v=1": "/photo/2026-09-01/x?v=1",
	} {
		if r := c.Get(path); r.StatusCode != http.StatusTemporaryRedirect || r.Location() != want {
			t.Errorf("GET %s = %d → %q, want 307 → %q", path, r.StatusCode, r.Location(), want)
		}
	}
}

// TestLogsHoldNoTokens follows an invite link through sign-up and checks
// that no log line holds the invite token, the OIDC state or code, the
// session cookie or the email.
func TestLogsHoldNoTokens(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	app := apptest.New(t, apptest.Options{Log: &log})
	_, tok := tour(t, app)
	friend := app.Client()
	authURL := friend.StartSignIn("/login?invite=" + tok)
	callback := friend.Authorize(authURL, "friend@example.com")
	if resp := friend.Get(callback); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-up through the invite = %d", resp.StatusCode)
	}
	cb, _ := url.Parse(callback)
	secrets := map[string]string{
		"invite token": tok,
		"state":        cb.Query().Get("state"),
		"code":         cb.Query().Get("code"),
		"email":        "friend@example.com",
		"admin email":  "admin@example.com",
	}
	u, _ := url.Parse(app.URL)
	for _, c := range friend.HTTP.Jar.Cookies(u) {
		secrets["cookie "+c.Name] = c.Value
	}
	logged := log.String()
	if !strings.Contains(logged, `"route":"/invite/{token}"`) {
		t.Fatalf("the access log has no line for the invite route:\n%s", logged)
	}
	for name, s := range secrets {
		if s == "" {
			t.Errorf("%s is empty: the test checks nothing", name)
			continue
		}
		if strings.Contains(logged, s) {
			t.Errorf("the log holds the %s", name)
		}
	}
}
