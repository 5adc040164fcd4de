//go:build e2e

package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ndiro/internal/apptest"
)

// TestOneMachine runs the release binary in server mode (one machine
// without AWS: the embedded storage under NDIRO_DATA_DIR) behind the TLS
// proxy, signed in through oidc-provider as in AWS mode: an admin adds a
// meal with a photo and opens a share, the process stops and starts
// again on the same data dir, and the admin, signing in again, finds the
// meal and its photo, and the share still shows them. No socket of the process answers as an
// OpenID provider: the stand-in sign-in of local mode is not served.
func TestOneMachine(t *testing.T) {
	s := loadSettings(t)
	dataDir := filepath.Join(t.TempDir(), "ndiro")
	cert, pool := selfSigned(t)
	h := &harness{t: t, s: s, base: "https://" + s.ProxyAddr, issuer: s.Issuer}
	h.rec = &recorder{base: &http.Transport{TLSClientConfig: tlsConfig(pool)}}
	env := []string{
		"NDIRO_MODE=server",
		"NDIRO_ADDR=127.0.0.1:0",
		"NDIRO_DATA_DIR=" + dataDir,
		"NDIRO_BASE_URL=" + h.base,
		"ADMIN_EMAILS=" + admin.email,
		"NDIRO_OIDC_ISSUER=" + s.Issuer,
		"NDIRO_OIDC_CLIENT_ID=" + s.ClientID,
		"NDIRO_OIDC_CLIENT_SECRET=" + s.ClientSecret,
		"NDIRO_OIDC_NAME=" + providerName,
		"NDIRO_TRUSTED_PROXY_HEADER=X-Forwarded-For",
	}

	// A plain-http base URL is refused at start, naming the setting.
	p := start(t, s.Bin, append(env[:len(env):len(env)], "NDIRO_BASE_URL=http://"+s.ProxyAddr))
	if !p.exited(30*time.Second) || p.exitCode() != 1 {
		t.Fatal("server mode started with an http NDIRO_BASE_URL")
	}
	if e := p.stderr.String(); !strings.Contains(e, "NDIRO_BASE_URL must use https") {
		t.Errorf("start-up error for an http base URL does not say NDIRO_BASE_URL must use https:\n%s", e)
	}

	p = start(t, s.Bin, env)
	px := startProxy(t, s.ProxyAddr, cert)
	px.forward(p.listenAddr(t))
	checkNoStandIn(t, p)

	home := h.client().Get("/")
	h.checkHSTS(home, "GET /")
	if got := home.Text(`a[href="/login"]`); got != "Sign in with "+providerName {
		t.Errorf("home page sign-in button = %q, want %q (NDIRO_OIDC_NAME)", got, "Sign in with "+providerName)
	}
	ac := h.client()
	resp := h.signIn(ac, "/login", admin)
	if resp.StatusCode != http.StatusSeeOther || resp.Location() != "/meals" {
		t.Fatalf("admin sign-in = %d %q, want 303 /meals; body: %s", resp.StatusCode, resp.Location(), resp.Body)
	}
	h.checkSessionCookie(resp, "admin callback")

	const date, month = "2026-09-14", "2026-09"
	resp = ac.PostMultipart("/meals",
		url.Values{"date": {date}, "time": {"12:30"}, "kind": {"lunch"}, "notes": {"Lentil soup"}, "kcal": {"512.5"}},
		apptest.File{Field: "photo", Name: "lunch.jpg", Body: testJPEG(t, 800, 600)})
	prefix := "/meals?month=" + month + "#meal-"
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Location(), prefix) {
		t.Fatalf("add meal = %d %q, want 303 to %s…; body: %s", resp.StatusCode, resp.Location(), prefix, resp.Body)
	}
	mealID := strings.TrimPrefix(resp.Location(), prefix)
	before := seeMeal(h, ac, month, date, mealID)

	shareTok := ac.CreateShare(url.Values{"label": {"Dr. Rossi"}, "from": {date}, "to": {date}, "expiry": {"7"}, "notes": {"1"}, "numbers": {"1"}})
	h.secrets = append(h.secrets, shareTok)
	recipient := h.client()
	sharedBefore := seeShare(h, recipient, shareTok, date, mealID)

	p.terminate(t)
	if !p.exited(10*time.Second) || p.exitCode() != 0 {
		t.Fatalf("no clean exit after SIGTERM (code %d); stderr: %s", p.exitCode(), p.stderr)
	}
	if e := p.stderr.String(); e != "" {
		t.Errorf("stderr is not empty:\n%s", e)
	}
	h.checkLogs(p.stdout.String(), map[string]int{"listening": 1, "shutting down": 1},
		"/login", "/auth/callback", "/meals", "/shares", "/s/{token}")
	if _, err := os.Stat(filepath.Join(dataDir, "s3.bolt")); err != nil {
		t.Errorf("the photos are not kept under NDIRO_DATA_DIR: %v", err)
	}

	// Started again on the same data dir: the admin signs in again and
	// finds the meal and its photo; the share link still shows them.
	p = start(t, s.Bin, env)
	px.forward(p.listenAddr(t))
	checkNoStandIn(t, p)
	again := h.client()
	if r := h.signIn(again, "/login", admin); r.StatusCode != http.StatusSeeOther || r.Location() != "/meals" {
		t.Fatalf("sign-in after the restart = %d %q, want 303 /meals", r.StatusCode, r.Location())
	}
	if after := seeMeal(h, again, month, date, mealID); after != before {
		t.Errorf("after the restart the photo is %d bytes, want the %d served before it", len(after), len(before))
	}
	if after := seeShare(h, recipient, shareTok, date, mealID); after != sharedBefore {
		t.Errorf("after the restart the shared photo is %d bytes, want the %d served before it", len(after), len(sharedBefore))
	}
	p.terminate(t)
	if !p.exited(10*time.Second) || p.exitCode() != 0 {
		t.Errorf("second run: no clean exit after SIGTERM; stderr: %s", p.stderr)
	}
	h.checkLogs(p.stdout.String(), map[string]int{"listening": 1, "user signed up": 0, "shutting down": 1},
		"/login", "/auth/callback", "/meals", "/s/{token}")
}

// seeMeal checks that c's month page lists the meal with its notes and
// that its photo is served, and returns the photo's bytes.
func seeMeal(h *harness, c *apptest.Client, month, date, mealID string) string {
	t := h.t
	t.Helper()
	page := c.Get("/meals?month=" + month)
	if page.StatusCode != http.StatusOK {
		t.Fatalf("month page = %d %q, want 200", page.StatusCode, page.Location())
	}
	h.checkHSTS(page, "month page")
	li := page.Doc().Find("#meal-" + mealID)
	if got := strings.TrimSpace(li.Find(".notes").Text()); got != "Lentil soup" {
		t.Fatalf("month page notes of meal %s = %q, want Lentil soup", mealID, got)
	}
	displayURL, _ := c.Get("/meals/" + date + "/" + mealID).Doc().Find("img.photo").Attr("src")
	ph := c.Get(displayURL)
	if ph.StatusCode != http.StatusOK || ph.Header.Get("Content-Type") != "image/jpeg" || len(ph.Body) == 0 {
		t.Fatalf("GET photo %q = %d %q with %d bytes, want 200 image/jpeg", displayURL, ph.StatusCode, ph.Header.Get("Content-Type"), len(ph.Body))
	}
	return ph.Body
}

// seeShare checks that the share page shows the meal and its photo to a
// browser without an account, and returns the photo's bytes.
func seeShare(h *harness, c *apptest.Client, tok, date, mealID string) string {
	t := h.t
	t.Helper()
	sp := c.Get("/s/" + tok)
	if sp.StatusCode != http.StatusOK || !strings.Contains(sp.Text("main"), "Lentil soup") {
		t.Fatalf("share page = %d, want 200 with the meal's notes", sp.StatusCode)
	}
	h.checkHSTS(sp, "share page")
	thumb, _ := sp.Doc().Find("main img").First().Attr("src")
	if !strings.HasPrefix(thumb, "/s/"+tok+"/photo/"+date+"/"+mealID) {
		t.Fatalf("share page photo %q, want one under /s/{token}/photo/%s/%s", thumb, date, mealID)
	}
	ph := c.Get(thumb)
	if ph.StatusCode != http.StatusOK || len(ph.Body) == 0 {
		t.Fatalf("shared photo = %d with %d bytes, want 200", ph.StatusCode, len(ph.Body))
	}
	return ph.Body
}

// checkNoStandIn asks every TCP port the process listens on for an
// OpenID discovery document: in server mode none may answer with one
// (the stand-in sign-in of local mode is not served). It fails if it
// finds no port at all.
func checkNoStandIn(t *testing.T, p *process) {
	t.Helper()
	ports, err := apptest.Listening(p.cmd.Process.Pid)
	if err != nil {
		t.Fatalf("listening sockets of ndiro: %v", err)
	}
	if len(ports) == 0 {
		t.Fatal("found no listening socket of ndiro")
	}
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, addr := range ports {
		for _, path := range []string{"/.well-known/openid-configuration", "/oidc/.well-known/openid-configuration"} {
			resp, err := c.Get("http://" + addr + path)
			if err != nil {
				continue
			}
			var doc struct {
				AuthorizationEndpoint string `json:"authorization_endpoint"`
			}
			json.NewDecoder(resp.Body).Decode(&doc)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && doc.AuthorizationEndpoint != "" {
				t.Errorf("ndiro in server mode serves an OpenID provider at %s%s (authorization at %s)", addr, path, doc.AuthorizationEndpoint)
			}
		}
	}
}
