package localenv_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

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

// TestStandInAnswersThisMachineOnly: local mode's stand-in sign-in listens
// on loopback, cannot be reached on the machine's other addresses, and
// refuses (403) any request that is not from loopback, whichever of its
// endpoints it asks for.
func TestStandInAnswersThisMachineOnly(t *testing.T) {
	t.Parallel()
	env, _ := apptest.Local(t)
	issuer, err := url.Parse(env.OIDC.Issuer())
	if err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(issuer.Hostname()); ip == nil || !ip.IsLoopback() {
		t.Fatalf("stand-in issuer %s, want a loopback address", env.OIDC.Issuer())
	}
	paths := []string{
		"/oidc/.well-known/openid-configuration",
		"/oidc/authorize?client_id=" + env.OIDC.ClientID + "&response_type=code&scope=openid&redirect_uri=http://127.0.0.1/cb&state=s&email=eve@example.com",
		"/oidc/authorize", "/oidc/token", "/oidc/userinfo", "/oidc/.well-known/jwks.json",
	}
	for _, from := range []string{"192.0.2.7:5555", "[2001:db8::1]:443", "10.1.2.3:80", "not-an-address"} {
		for _, p := range paths {
			req := httptest.NewRequest(http.MethodGet, p, nil)
			req.RemoteAddr = from
			rec := httptest.NewRecorder()
			env.OIDC.Server.Handler.ServeHTTP(rec, req)
			if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "answers this machine only") {
				t.Errorf("stand-in %s from %s = %d %q, want 403 saying it answers this machine only", p, from, rec.Code, rec.Body.String())
			}
		}
	}
	req := httptest.NewRequest(http.MethodGet, paths[0], nil)
	req.RemoteAddr = "127.0.0.1:5555"
	rec := httptest.NewRecorder()
	env.OIDC.Server.Handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("stand-in discovery from loopback = %d, want 200", rec.Code)
	}

	// On any of the machine's other addresses nothing listens on its port.
	addrs, _ := net.InterfaceAddrs()
	tried := 0
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
			continue
		}
		tried++
		c, err := net.DialTimeout("tcp", net.JoinHostPort(ipn.IP.String(), issuer.Port()), 2*time.Second)
		if err == nil {
			c.Close()
			t.Errorf("the stand-in's port %s answers on %s, want it on loopback only", issuer.Port(), ipn.IP)
		}
	}
	if tried == 0 {
		t.Log("this machine has no address but loopback: the dial check did not run")
	}
}

// TestNoSignInServesNoStandIn: with NoSignIn (server mode) there is no
// stand-in, and neither backend's listener answers as one.
func TestNoSignInServesNoStandIn(t *testing.T) {
	t.Parallel()
	env, err := localenv.Start(context.Background(), localenv.Options{Tables: dynamo.NewTables("nosignin-"), Bucket: "photos", NoSignIn: true})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if env.OIDC != nil {
		t.Fatalf("Start with NoSignIn started the stand-in at %s", env.OIDC.Issuer())
	}
	for _, base := range []string{env.DynamoEndpoint, env.S3Endpoint} {
		for _, p := range []string{"/oidc/.well-known/openid-configuration", "/oidc/authorize?email=eve@example.com", "/.well-known/openid-configuration"} {
			resp, err := http.Get(base + p)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(b), "authorization_endpoint") {
				t.Errorf("%s%s answers as a sign-in provider: %s", base, p, b)
			}
		}
	}
}
