package account_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"ndiro/internal/account"
	"ndiro/internal/apptest"
)

// User-Agents of the two browsers the tests sign in with.
const (
	firefoxWindows = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0"
	safariIPhone   = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1"
)

// uaTransport sends every request with one User-Agent.
type uaTransport struct {
	base http.RoundTripper
	ua   string
}

func (u uaTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("User-Agent", u.ua)
	return u.base.RoundTrip(r)
}

// browser is a client of app (a cookie jar of its own) that says it is ua.
func browser(app *apptest.App, ua string) *apptest.Client {
	c := app.Client()
	c.HTTP.Transport = uaTransport{base: c.HTTP.Transport, ua: ua}
	return c
}

// signedOut fails unless c's cookie no longer opens the diary.
func signedOut(t *testing.T, c *apptest.Client, who string) {
	t.Helper()
	if r := c.Get("/meals"); r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Location(), "/login") {
		t.Errorf("%s: GET /meals = %d %q, want 303 to sign-in", who, r.StatusCode, r.Location())
	}
}

// TestDevices: the account page lists each signed-in browser by browser
// and platform, this one marked and first, with no address; "sign out"
// on another ends that browser's session (its cookie opens nothing), an
// ID of no session is a 404, and "sign out everywhere" ends every one.
func TestDevices(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	pc, phone := browser(app, firefoxWindows), browser(app, safariIPhone)
	pc.SignIn(admin)
	phone.SignIn(admin)
	third := browser(app, "curl/8.5.0")
	third.SignIn(admin)

	page := pc.Get("/account")
	items := page.Doc().Find("#devices li")
	if items.Length() != 3 {
		t.Fatalf("account page lists %d devices, want 3:\n%s", items.Length(), page.Text("#devices"))
	}
	first := strings.Join(strings.Fields(items.First().Text()), " ")
	if !strings.HasPrefix(first, "Firefox on Windows (this device)") || !strings.Contains(first, "Last used now") {
		t.Errorf("first device = %q, want Firefox on Windows, this device, used now", first)
	}
	text := strings.Join(strings.Fields(page.Text("#devices")), " ")
	for _, want := range []string{"Safari on iPhone", "Unknown browser", "Last used in the last 5 minutes"} {
		if !strings.Contains(text, want) {
			t.Errorf("devices section %q does not say %q", text, want)
		}
	}
	if strings.Contains(page.Body, "127.0.0.1") || strings.Contains(page.Body, "curl") {
		t.Error("the account page shows an address or a raw User-Agent")
	}
	phoneItem := items.FilterFunction(func(_ int, s *goquery.Selection) bool { return strings.Contains(s.Text(), "Safari on iPhone") })
	phoneID, _ := phoneItem.Attr("data-device")
	if phoneItem.Length() != 1 || len(phoneID) != 64 {
		t.Fatalf("%d devices named Safari on iPhone, ID %q; want one with a 64-character ID", phoneItem.Length(), phoneID)
	}

	// Sign out the phone from the PC.
	if r := pc.PostForm("/account/devices/"+phoneID+"/sign-out", nil); r.StatusCode != http.StatusSeeOther || r.Location() != "/account#devices" {
		t.Fatalf("sign out the phone = %d %q, want 303 /account#devices; body: %s", r.StatusCode, r.Location(), r.Body)
	}
	signedOut(t, phone, "phone after its sign out")
	if r := pc.Get("/meals"); r.StatusCode != http.StatusOK {
		t.Fatalf("PC after signing the phone out = %d, want 200", r.StatusCode)
	}
	if n := pc.Get("/account").Doc().Find("#devices li").Length(); n != 2 {
		t.Errorf("after signing the phone out the page lists %d devices, want 2", n)
	}
	for _, id := range []string{phoneID, "nothing-like-an-id", strings.Repeat("0", 64)} {
		if r := pc.PostForm("/account/devices/"+url.PathEscape(id)+"/sign-out", nil); r.StatusCode != http.StatusNotFound {
			t.Errorf("sign out of %q = %d, want 404", id, r.StatusCode)
		}
	}
	// A cross-origin sign out is refused like every POST.
	req, _ := http.NewRequest(http.MethodPost, app.URL+"/account/devices/sign-out", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if r := pc.Do(req); r.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin sign out everywhere = %d, want 403", r.StatusCode)
	}
	if r := third.Get("/meals"); r.StatusCode != http.StatusOK {
		t.Fatalf("third browser after a refused sign out everywhere = %d, want 200", r.StatusCode)
	}

	// Sign out everywhere, from the PC: both left are refused.
	if r := pc.PostForm("/account/devices/sign-out", nil); r.StatusCode != http.StatusSeeOther || r.Location() != "/" {
		t.Fatalf("sign out everywhere = %d %q, want 303 /", r.StatusCode, r.Location())
	}
	signedOut(t, pc, "PC after signing out everywhere")
	signedOut(t, third, "third browser after signing out everywhere")
}

// TestSessionSurvivesRestart: a session signed in before the app stops
// opens the diary after it starts again on the same data dir (the same
// cookie, no new sign-in); signing out everywhere then ends it and the
// other browser's, which a restart does not bring back.
func TestSessionSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	app := apptest.New(t, apptest.Options{DataDir: dir})
	pc, phone := browser(app, firefoxWindows), browser(app, safariIPhone)
	pc.SignIn(admin)
	phone.SignIn(admin)
	app.Stop()

	app = apptest.New(t, apptest.Options{DataDir: dir})
	again := func(c *apptest.Client, ua string) *apptest.Client {
		n := browser(app, ua)
		n.HTTP.Jar = c.HTTP.Jar // cookies are per host, not per port
		return n
	}
	pc, phone = again(pc, firefoxWindows), again(phone, safariIPhone)
	for name, c := range map[string]*apptest.Client{"PC": pc, "phone": phone} {
		if r := c.Get("/meals"); r.StatusCode != http.StatusOK {
			t.Fatalf("%s after the restart: GET /meals = %d %q, want 200 with the same cookie", name, r.StatusCode, r.Location())
		}
	}
	if r := phone.PostForm("/account/devices/sign-out", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign out everywhere = %d", r.StatusCode)
	}
	signedOut(t, pc, "PC after sign out everywhere")
	app.Stop()
	app = apptest.New(t, apptest.Options{DataDir: dir})
	pc = again(pc, firefoxWindows)
	signedOut(t, pc, "PC after sign out everywhere and a restart")
}

// TestLastSeen: the rounding of a device's last use.
func TestLastSeen(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 9, 14, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		ago  time.Duration
		want string
	}{
		{-time.Minute, "in the last 5 minutes"},
		{0, "in the last 5 minutes"},
		{5*time.Minute - time.Second, "in the last 5 minutes"},
		{5 * time.Minute, "about 5 minutes ago"},
		{17 * time.Minute, "about 15 minutes ago"},
		{59 * time.Minute, "about 55 minutes ago"},
		{time.Hour, "about an hour ago"},
		{2 * time.Hour, "about 2 hours ago"},
		{23*time.Hour + 59*time.Minute, "about 23 hours ago"},
		{24 * time.Hour, "yesterday"},
		{48 * time.Hour, "2 days ago"},
		{30 * 24 * time.Hour, "30 days ago"},
		{31 * 24 * time.Hour, "over a month ago"},
	} {
		if got := account.LastSeen(now, now.Add(-tc.ago)); got != tc.want {
			t.Errorf("LastSeen(%s ago) = %q, want %q", tc.ago, got, tc.want)
		}
	}
}
