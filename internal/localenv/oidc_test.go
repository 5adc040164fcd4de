package localenv_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"ndiro/internal/apptest"
	"ndiro/internal/dynamo"
	"ndiro/internal/localenv"
)

// TestRefusedSignInLeavesNobodyQueued: after authorization requests the
// local stand-in refuses, the next sign-ins land as the people who signed
// in, not as whoever the refused requests asked for.
func TestRefusedSignInLeavesNobodyQueued(t *testing.T) {
	t.Parallel()
	app := apptest.New(t, apptest.Options{Env: map[string]string{"ADMIN_EMAILS": "ana@example.com,ben@example.com"}})
	for _, tc := range []struct{ name, param, value string }{
		{"wrong client_id", "client_id", "someone-else"},
		{"unsupported response type", "response_type", "token"},
		{"no scope", "scope", ""},
	} {
		c := app.Client()
		auth := c.StartSignIn("/login")
		q := auth.Query()
		q.Set(tc.param, tc.value)
		q.Set("email", "eve@example.com")
		auth.RawQuery = q.Encode()
		if resp := c.Get(auth.String()); resp.StatusCode < 400 {
			t.Fatalf("authorize with %s = %d %q, want it refused", tc.name, resp.StatusCode, resp.Location())
		}
	}
	for _, email := range []string{"ana@example.com", "ben@example.com"} {
		c := app.Client()
		if resp := c.SignInVia("/login", email); resp.StatusCode != http.StatusSeeOther || resp.Location() != "/meals" {
			t.Errorf("sign in as %s = %d %q, want 303 /meals", email, resp.StatusCode, resp.Location())
			continue
		}
		if got := c.Get("/account").Text("main p strong"); got != email {
			t.Errorf("signed in as %s, the account page says %q", email, got)
		}
	}
	for _, email := range []string{"ana@example.com", "ben@example.com"} {
		if _, err := app.Users.Get(context.Background(), localenv.Subject(email)); err != nil {
			t.Errorf("users row of %s: %v", email, err)
		}
	}
	if _, err := app.Users.Get(context.Background(), localenv.Subject("eve@example.com")); err == nil {
		t.Error("the refused request's person got an account")
	}
}

// TestStandInAnswersThisMachineOnly: local mode's stand-in sign-in is
// served by the app under SignInPath, its issuer the app's own origin,
// and refuses (403) any request that is not from loopback, or that a
// proxy passed on, whichever of its endpoints it asks for; it takes no
// POST there.
func TestStandInAnswersThisMachineOnly(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	if got, want := app.Env.OIDC.Issuer(), app.URL+localenv.SignInPath; got != want {
		t.Fatalf("stand-in issuer %s, want the app's origin + %s: %s", got, localenv.SignInPath, want)
	}
	paths := []string{
		"/oidc/.well-known/openid-configuration",
		"/oidc/authorize?client_id=" + app.Env.OIDC.ClientID + "&response_type=code&scope=openid&redirect_uri=http://127.0.0.1/cb&state=s&email=eve@example.com",
		"/oidc/authorize", "/oidc/token", "/oidc/userinfo", "/oidc/.well-known/jwks.json",
	}
	type from struct {
		addr, header, value string
	}
	var refused []from
	for _, addr := range []string{"192.0.2.7:5555", "[2001:db8::1]:443", "10.1.2.3:80", "not-an-address"} {
		refused = append(refused, from{addr: addr})
	}
	for _, h := range []string{"X-Forwarded-For", "Forwarded", "X-Real-IP"} {
		refused = append(refused, from{"127.0.0.1:5555", h, "192.0.2.7"})
	}
	for _, f := range refused {
		for _, p := range paths {
			req := httptest.NewRequest(http.MethodGet, p, nil)
			req.RemoteAddr = f.addr
			if f.header != "" {
				req.Header.Set(f.header, f.value)
			}
			rec := httptest.NewRecorder()
			app.Handler.ServeHTTP(rec, req)
			if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "answers this machine only") {
				t.Errorf("stand-in %s from %s (%s %s) = %d %q, want 403 saying it answers this machine only", p, f.addr, f.header, f.value, rec.Code, rec.Body.String())
			}
		}
	}
	// The token exchange is the app's, in the process: no browser posts
	// to the stand-in through the app.
	post := app.Client().PostForm(app.URL+"/oidc/token", url.Values{"grant_type": {"authorization_code"}, "code": {"x"}})
	if post.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /oidc/token through the app = %d, want 405", post.StatusCode)
	}
	resp := app.Client().Get(app.URL + paths[0])
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Body, `"authorization_endpoint":"`+app.URL+`/oidc/authorize"`) {
		t.Errorf("stand-in discovery from loopback at %s = %d %s, want 200 naming the app's own /oidc/authorize", app.URL, resp.StatusCode, resp.Body)
	}
}

// TestSignInPageStyleAllowed: the sign-in page's inline style sheet is
// the one its Content-Security-Policy allows by digest, so a browser
// applies it (and nothing else) under the app's origin.
func TestSignInPageStyleAllowed(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	resp := c.Get(c.StartSignIn("/login").String())
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sign-in page = %d, want 200", resp.StatusCode)
	}
	style := resp.Doc().Find("style").Text()
	sum := sha256.Sum256([]byte(style))
	want := "style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, want) || !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("sign-in page CSP %q, want default-src 'none' and %s", csp, want)
	}
}

// TestNoSignInServesNoStandIn: without SignInOrigin (server mode) there
// is no stand-in, and neither backend answers as one.
func TestNoSignInServesNoStandIn(t *testing.T) {
	t.Parallel()
	env, err := localenv.Start(context.Background(), localenv.Options{Tables: dynamo.NewTables("nosignin-"), Bucket: "photos"})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if env.OIDC != nil || env.SignIn != nil || env.SignInClient() != nil {
		t.Fatalf("Start without SignInOrigin started the stand-in at %s", env.OIDC.Issuer())
	}
	for _, ep := range []localenv.Endpoint{env.DynamoEndpoint, env.S3Endpoint} {
		c := &http.Client{Transport: &http.Transport{DialContext: ep.Dial}}
		for _, p := range []string{"/oidc/.well-known/openid-configuration", "/oidc/authorize?email=eve@example.com", "/.well-known/openid-configuration"} {
			resp, err := c.Get(ep.URL + p)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(b), "authorization_endpoint") {
				t.Errorf("%s%s answers as a sign-in provider: %s", ep.URL, p, b)
			}
		}
	}
}

// TestStartWithBadOrigin: the stand-in's issuer is the app's origin +
// SignInPath; given something else as the origin, Start refuses, saying
// what it needs.
func TestStartWithBadOrigin(t *testing.T) {
	t.Parallel()
	for _, origin := range []string{"127.0.0.1:8080", "http://127.0.0.1:8080/ndiro", "ftp://127.0.0.1", "http://"} {
		env, err := localenv.Start(context.Background(), localenv.Options{Tables: dynamo.NewTables("origin-"), Bucket: "photos", SignInOrigin: origin})
		if err == nil {
			env.Close()
			t.Errorf("Start with origin %q = nil error, want a refusal", origin)
			continue
		}
		if !strings.Contains(err.Error(), "the app's origin") {
			t.Errorf("Start with origin %q = %v, want it to ask for the app's origin", origin, err)
		}
	}
}
