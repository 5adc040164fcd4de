package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"
)

// provider starts an OpenID Connect provider of the test's own, apart
// from ndiro, as Google or Keycloak would be.
func provider(t *testing.T) *mockoidc.MockOIDC {
	t.Helper()
	m, err := mockoidc.Run()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown() })
	return m
}

func serverEnv(dir string, m *mockoidc.MockOIDC) map[string]string {
	return map[string]string{
		"NDIRO_MODE": "server", "NDIRO_ADDR": "127.0.0.1:0", "NDIRO_DATA_DIR": dir,
		"NDIRO_BASE_URL": "https://diary.example.org", "ADMIN_EMAILS": "admin@example.org",
		"NDIRO_OIDC_ISSUER": m.Issuer(), "NDIRO_OIDC_CLIENT_ID": m.ClientID, "NDIRO_OIDC_CLIENT_SECRET": m.ClientSecret,
		"NDIRO_OIDC_NAME": "Example SSO", "NDIRO_TRUSTED_PROXY_HEADER": "X-Forwarded-For",
	}
}

// startServer runs ndiro in-process in the mode env sets (server or
// aws, both logging JSON); it returns the address it listens on, read
// from its "listening" log line, and a stop function. Every line it logs
// must be JSON.
func startServer(t *testing.T, env map[string]string) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, nil, func(k string) string { return env[k] }, pw)
		pw.Close()
	}()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var line struct{ Msg, Addr, Mode string }
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Errorf("server mode wrote a line that is not JSON: %q", sc.Text())
				continue
			}
			if line.Msg == "listening" {
				if line.Mode != env["NDIRO_MODE"] {
					t.Errorf("listening line says mode %q, want %s", line.Mode, env["NDIRO_MODE"])
				}
				found <- "http://" + line.Addr
			}
		}
	}()
	var base string
	select {
	case base = <-found:
	case err := <-done:
		t.Fatalf("%s mode stopped at start: %v", env["NDIRO_MODE"], err)
	case <-time.After(60 * time.Second):
		t.Fatalf("%s mode did not log its address within a minute", env["NDIRO_MODE"])
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run returned %v after shutdown, want nil", err)
			}
		})
	}
	t.Cleanup(stop)
	return base, stop
}

// browser talks to ndiro over plain http as the TLS proxy in front would
// pass a phone's requests, keeping cookies by hand: a cookie jar keeps
// Secure cookies for https only, and these all must be Secure.
type browser struct {
	t       *testing.T
	base    string
	cookies map[string]string
}

func (b *browser) do(method, target string, form url.Values) *http.Response {
	b.t.Helper()
	u := target
	if strings.HasPrefix(target, "/") {
		u = b.base + target
	}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if strings.HasPrefix(u, b.base) {
		req.Host = "diary.example.org"
		for k, v := range b.cookies {
			req.AddCookie(&http.Cookie{Name: k, Value: v})
		}
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if strings.HasPrefix(u, b.base) {
		for _, ck := range resp.Cookies() {
			if !ck.Secure {
				b.t.Errorf("%s %s set cookie %s without Secure", method, target, ck.Name)
			}
			if ck.MaxAge < 0 {
				delete(b.cookies, ck.Name)
			} else {
				b.cookies[ck.Name] = ck.Value
			}
		}
	}
	return resp
}

// signIn signs in through the provider as email and returns the
// provider's authorization URL ndiro sent the browser to.
func (b *browser) signIn(m *mockoidc.MockOIDC, email string) *url.URL {
	b.t.Helper()
	resp := b.do("GET", "/login", nil)
	if resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusFound {
		b.t.Fatalf("GET /login = %d, want a redirect to the provider", resp.StatusCode)
	}
	auth, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		b.t.Fatal(err)
	}
	m.QueueUser(&mockoidc.MockUser{Subject: "sub-" + email, Email: email, EmailVerified: true})
	resp = b.do("GET", auth.String(), nil)
	cb, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(cb.String(), "https://diary.example.org/auth/callback?") {
		b.t.Fatalf("the provider sent the browser to %q, want ndiro's callback on NDIRO_BASE_URL", resp.Header.Get("Location"))
	}
	if resp := b.do("GET", "/auth/callback?"+cb.RawQuery, nil); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/meals" {
		b.t.Fatalf("callback = %d %q, want 303 /meals", resp.StatusCode, resp.Header.Get("Location"))
	}
	return auth
}

// TestServerMode: ndiro in server mode signs in through the configured
// provider (never a stand-in), sets Secure cookies, sends HSTS, logs JSON,
// keeps its data under NDIRO_DATA_DIR across a restart, and refuses to
// start without its provider.
func TestServerMode(t *testing.T) {
	t.Parallel()
	m := provider(t)
	env := serverEnv(t.TempDir(), m)
	base, stop := startServer(t, env)
	b := &browser{t: t, base: base, cookies: map[string]string{}}

	if resp := b.do("GET", "/healthz", nil); resp.Header.Get("Strict-Transport-Security") == "" {
		t.Error("server mode sends no Strict-Transport-Security")
	}
	auth := b.signIn(m, "admin@example.org")
	if got, want := auth.Scheme+"://"+auth.Host+auth.Path, m.Issuer()+"/authorize"; got != want {
		t.Errorf("sign-in went to %s, want the configured provider's %s", got, want)
	}
	if got := auth.Query().Get("redirect_uri"); got != "https://diary.example.org/auth/callback" {
		t.Errorf("redirect_uri = %q, want NDIRO_BASE_URL + /auth/callback", got)
	}
	if resp := b.do("GET", "/meals", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /meals after signing in = %d %q, want 200", resp.StatusCode, resp.Header.Get("Location"))
	}
	form := url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}, "notes": {"lentil soup"}}
	if resp := b.do("POST", "/meals", form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("add a meal = %d, want 303", resp.StatusCode)
	}
	stop()

	// Restarted: the provider's account signs in again and finds the meal.
	base, _ = startServer(t, env)
	b = &browser{t: t, base: base, cookies: map[string]string{}}
	b.signIn(m, "admin@example.org")
	req, _ := http.NewRequest("GET", base+"/meals?month=2026-09", nil)
	req.Host = "diary.example.org"
	for k, v := range b.cookies {
		req.AddCookie(&http.Cookie{Name: k, Value: v})
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "lentil soup") {
		t.Errorf("September after the restart = %d, without the meal added before it", resp.StatusCode)
	}
}

// TestServerModeNeedsItsProvider: with the provider unreachable server
// mode does not start (and falls back to no stand-in), saying which
// setting to check.
func TestServerModeNeedsItsProvider(t *testing.T) {
	t.Parallel()
	env := serverEnv(t.TempDir(), provider(t))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	env["NDIRO_OIDC_ISSUER"] = "http://" + ln.Addr().String() + "/oidc"
	ln.Close() // nothing answers there
	err = run(context.Background(), nil, func(k string) string { return env[k] }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "NDIRO_OIDC_ISSUER") {
		t.Errorf("server mode with its provider unreachable = %v, want an error naming NDIRO_OIDC_ISSUER", err)
	}
}
