package server_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
)

// TestServiceWorkerRoute: /sw.js is the service worker at the root, with
// no session and no cookie, revalidated on every update check
// (no-cache), as JavaScript, allowed the whole app as its scope; it loads
// the outbox by the path the static files serve.
func TestServiceWorkerRoute(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	req, _ := http.NewRequest(http.MethodGet, app.URL+"/sw.js", nil)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h := resp.Header
	if resp.StatusCode != http.StatusOK || h.Get("Cache-Control") != "no-cache" || h.Get("Service-Worker-Allowed") != "/" ||
		!strings.HasPrefix(h.Get("Content-Type"), "text/javascript") || h.Get("Set-Cookie") != "" {
		t.Errorf("GET /sw.js = %d, Cache-Control %q, Service-Worker-Allowed %q, Content-Type %q, Set-Cookie %q",
			resp.StatusCode, h.Get("Cache-Control"), h.Get("Service-Worker-Allowed"), h.Get("Content-Type"), h.Get("Set-Cookie"))
	}
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "worker-src 'self'") {
		t.Errorf("CSP %q lacks worker-src 'self'", csp)
	}
	body := app.Client().Get("/sw.js").Body
	if !strings.Contains(body, `importScripts("/static/outbox.js")`) {
		t.Error("sw.js does not load /static/outbox.js")
	}
	if r := app.Client().Get("/static/outbox.js"); r.StatusCode != http.StatusOK || r.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("GET /static/outbox.js = %d %q, want 200 no-cache (the worker's import, without a digest)", r.StatusCode, r.Header.Get("Cache-Control"))
	}
}

var userHashRE = regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`)

// TestUserHash: every page of a signed-in user carries their user hash,
// as the X-Ndiro-User header and as the meta tag the outbox reads, the
// same on every page and after a new sign-in; another user's differs; it
// is neither their ID nor their e-mail. Pages register the worker through
// outbox.js; signed-out pages carry neither.
func TestUserHash(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	a := app.Client()
	a.SignIn("admin@example.com")
	first := a.Get("/meals")
	hash := first.Header.Get("X-Ndiro-User")
	if !userHashRE.MatchString(hash) {
		t.Fatalf("X-Ndiro-User = %q, want 22 characters of base64url", hash)
	}
	id := localenv.Subject("admin@example.com")
	if strings.Contains(hash, id) || strings.Contains(id, hash) || strings.Contains(hash, "admin") {
		t.Errorf("hash %q shows the user's ID %q or e-mail", hash, id)
	}
	if meta, _ := first.Doc().Find(`meta[name="ndiro-user"]`).Attr("content"); meta != hash {
		t.Errorf("meta ndiro-user = %q, want the header's %q", meta, hash)
	}
	if first.Doc().Find(`script[src^="/static/outbox.js?v="]`).Length() != 1 || first.Doc().Find("#outbox-badge").Length() != 1 {
		t.Error("owner page lacks outbox.js or the outbox badge")
	}
	for _, p := range []string{"/meals/new", "/account", "/shares"} {
		if got := a.Get(p).Header.Get("X-Ndiro-User"); got != hash {
			t.Errorf("%s: X-Ndiro-User = %q, want %q", p, got, hash)
		}
	}
	again := app.Client()
	again.SignIn("admin@example.com")
	if got := again.Get("/meals").Header.Get("X-Ndiro-User"); got != hash {
		t.Errorf("after a new sign-in: %q, want the same %q", got, hash)
	}
	inv := a.CreateInvite(url.Values{"role": {"owner"}})
	b := app.Client()
	b.SignInVia("/login?invite="+inv, "other@example.com")
	if other := b.Get("/meals").Header.Get("X-Ndiro-User"); other == hash || !userHashRE.MatchString(other) {
		t.Errorf("another user's hash = %q, want its own (not %q)", other, hash)
	}
	anon := app.Client().Get("/")
	if anon.Header.Get("X-Ndiro-User") != "" || anon.Doc().Find(`meta[name="ndiro-user"]`).Length() != 0 {
		t.Error("a signed-out page carries a user hash")
	}
}

// TestSignOutClearsSiteData: sign-out clears the HTTP cache always, and
// site storage (caches, outbox) only when the page script says the
// outbox is empty; the page after an account deletion clears the cache.
func TestSignOutClearsSiteData(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	for _, tc := range []struct {
		form url.Values
		want string
	}{
		{url.Values{}, `"cache"`},
		{url.Values{"outbox": {""}}, `"cache"`},
		{url.Values{"outbox": {"3"}}, `"cache"`},
		{url.Values{"outbox": {"empty"}}, `"cache", "storage"`},
	} {
		c := app.Client()
		c.SignIn("admin@example.com")
		resp := c.PostForm("/logout", tc.form)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Clear-Site-Data") != tc.want {
			t.Errorf("logout with %v = %d, Clear-Site-Data %q, want 303 and %s", tc.form, resp.StatusCode, resp.Header.Get("Clear-Site-Data"), tc.want)
		}
		if got := c.Get("/meals"); got.StatusCode == http.StatusOK {
			t.Errorf("after logout with %v: /meals = 200, want signed out", tc.form)
		}
	}
	deleted := app.Client().Get("/account/deleted")
	if deleted.Header.Get("Clear-Site-Data") != `"cache"` {
		t.Errorf("/account/deleted Clear-Site-Data = %q, want \"cache\"", deleted.Header.Get("Clear-Site-Data"))
	}
	if deleted.Doc().Find(`script[src^="/static/outbox.js?v="]`).Length() != 1 {
		t.Error("/account/deleted does not load outbox.js, which empties the worker's page caches")
	}
}
