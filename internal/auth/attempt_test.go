package auth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"ndiro/internal/apptest"
	"ndiro/internal/auth"
	"ndiro/internal/invite"
	"ndiro/internal/localenv"
	"ndiro/internal/user"
)

// TestLoginStoresNothing sends 100,000 GET /login, each from an address
// of its own (so no rate limit stops them), straight to the app's
// handler: every one is a redirect to the provider with an attempt
// cookie, the users table, where sessions are kept, stays empty, and the
// heap grows by at most 10 MB. It does not run in parallel: the heap is
// measured.
func TestLoginStoresNothing(t *testing.T) {
	app := apptest.New(t)
	const n = 100_000
	login := func(i int) int {
		req, _ := http.NewRequest(http.MethodGet, "/login?next=%2Fshares", nil)
		req.RemoteAddr = fmt.Sprintf("10.%d.%d.%d:40000", i>>16&0xff, i>>8&0xff, i&0xff)
		rec := httptest.NewRecorder()
		app.Handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusFound || !strings.HasPrefix(rec.Header().Get("Set-Cookie"), "ndiro_signin_") {
			return rec.Code
		}
		return 0
	}
	if code := login(n); code != 0 {
		t.Fatalf("GET /login = %d, want 302 with an attempt cookie", code)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	// Fewer collections while the requests run (the race detector makes
	// each dear); what is measured is the heap after a full one.
	defer debug.SetGCPercent(debug.SetGCPercent(800))
	var wg sync.WaitGroup
	var mu sync.Mutex
	bad := map[int]int{}
	const workers = 4
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if code := login(i); code != 0 {
					mu.Lock()
					bad[code]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if len(bad) > 0 {
		t.Errorf("GET /login answers other than 302 with an attempt cookie: %v (status: count)", bad)
	}
	out, err := app.Env.DynamoDB.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(app.Tables.Users.Name)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 0 {
		t.Errorf("users table holds %d items after %d GET /login, want 0 (no session, no session key)", len(out.Items), n)
	}
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if grown > 10<<20 {
		t.Errorf("heap grew by %.1f MB over %d GET /login, want at most 10 MB", float64(grown)/(1<<20), n)
	}
	t.Logf("heap %+.2f MB after %d GET /login", float64(grown)/(1<<20), n)
}

// attemptCookie matches the Set-Cookie of a sign-in attempt in local
// mode (Secure everywhere else; see e2e).
var attemptCookie = regexp.MustCompile(`^ndiro_signin_[0-9a-f]{16}=[A-Za-z0-9_-]{200,1000}; Path=/; Max-Age=600; HttpOnly; SameSite=Lax$`)

// TestAttemptCookie: GET /login sets one attempt cookie with the flags
// the design asks for and no session cookie; the callback deletes it.
func TestAttemptCookie(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	resp := c.Get("/login")
	sets := resp.Header.Values("Set-Cookie")
	if len(sets) != 1 || !attemptCookie.MatchString(sets[0]) {
		t.Fatalf("GET /login Set-Cookie = %q, want one attempt cookie matching %s", sets, attemptCookie)
	}
	name := sets[0][:strings.Index(sets[0], "=")]
	auth, _ := url.Parse(resp.Location())
	cb := c.Get(c.Authorize(auth, "admin@example.com"))
	if cb.StatusCode != http.StatusSeeOther {
		t.Fatalf("callback = %d, want 303", cb.StatusCode)
	}
	want := name + "=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax"
	found := false
	for _, v := range cb.Header.Values("Set-Cookie") {
		found = found || v == want
	}
	if !found {
		t.Errorf("callback Set-Cookie = %q, want %q among them", cb.Header.Values("Set-Cookie"), want)
	}
}

// TestAttemptLifetime: a callback more than AttemptLifetime after its
// GET /login is refused with a page that says so and starts again (same
// return path); one within it signs in.
func TestAttemptLifetime(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	for _, tc := range []struct {
		name    string
		after   time.Duration
		status  int
		heading string
	}{
		{"9 minutes", 9 * time.Minute, http.StatusSeeOther, ""},
		{"11 minutes", 11 * time.Minute, http.StatusBadRequest, "Sign-in took too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := app.Client()
			cb := c.Authorize(c.StartSignIn("/login?next=%2Fshares"), "admin@example.com")
			app.Clock.Advance(tc.after)
			resp := c.Get(cb)
			if resp.StatusCode != tc.status || resp.Text("h1") != tc.heading {
				t.Fatalf("callback after %s = %d %q, want %d %q", tc.name, resp.StatusCode, resp.Text("h1"), tc.status, tc.heading)
			}
			if tc.status == http.StatusSeeOther {
				return
			}
			if got, want := resp.Text("main p"), "A sign-in must be finished within 10 minutes of starting it, and this one was not. Start again to sign in."; got != want {
				t.Errorf("message = %q, want %q", got, want)
			}
			if href := resp.Doc().Find("main a.button").AttrOr("href", ""); href != "/login?next=%2Fshares" {
				t.Errorf("start-again link = %q, want /login?next=%%2Fshares", href)
			}
			if c.Get("/shares").StatusCode != http.StatusSeeOther {
				t.Error("an expired sign-in signed the client in")
			}
		})
	}
}

// TestTwoTabs: two sign-ins started in one browser, finished in the
// other order, both land where each was going.
func TestTwoTabs(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	first := c.Authorize(c.StartSignIn("/login?next=%2Fshares"), "admin@example.com")
	second := c.Authorize(c.StartSignIn("/login?next=%2Faccount"), "admin@example.com")
	for _, tc := range []struct{ name, callback, want string }{
		{"second tab", second, "/account"},
		{"first tab", first, "/shares"},
	} {
		if resp := c.Get(tc.callback); resp.StatusCode != http.StatusSeeOther || resp.Location() != tc.want {
			t.Errorf("%s's callback = %d %q, want 303 %q; body %.300s", tc.name, resp.StatusCode, resp.Location(), tc.want, resp.Body)
		}
	}
}

// TestAttemptCap: a browser keeps at most MaxAttempts sign-ins under way;
// starting one more drops the oldest, whose callback is then refused.
func TestAttemptCap(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	var cbs []string
	for i := range auth.MaxAttempts + 1 {
		cbs = append(cbs, c.Authorize(c.StartSignIn(fmt.Sprintf("/login?next=%%2Fmeals%%3Fn%%3D%d", i)), "admin@example.com"))
		app.Clock.Advance(time.Second)
	}
	u, _ := url.Parse(app.URL)
	held := 0
	for _, ck := range c.HTTP.Jar.Cookies(u) {
		if strings.HasPrefix(ck.Name, "ndiro_signin_") {
			held++
		}
	}
	if held != auth.MaxAttempts {
		t.Errorf("browser holds %d attempt cookies, want %d", held, auth.MaxAttempts)
	}
	for i, cb := range cbs {
		resp := c.Get(cb)
		want, heading := http.StatusSeeOther, ""
		if i == 0 {
			want, heading = http.StatusBadRequest, "Sign-in expired"
		}
		if resp.StatusCode != want || resp.Text("h1") != heading {
			t.Errorf("callback of attempt %d = %d %q, want %d %q", i, resp.StatusCode, resp.Text("h1"), want, heading)
		}
	}
}

// TestAttemptCookieTampered: an attempt cookie that is not this process's
// own, or is moved to another attempt's name, signs nobody in.
func TestAttemptCookieTampered(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	u, _ := url.Parse(app.URL)
	for _, tc := range []struct {
		name   string
		tamper func(c *apptest.Client, mine, other *http.Cookie)
	}{
		{"value changed", func(c *apptest.Client, mine, _ *http.Cookie) {
			b := []byte(mine.Value)
			b[len(b)/2] ^= 1
			c.HTTP.Jar.SetCookies(u, []*http.Cookie{{Name: mine.Name, Value: string(b), Path: "/"}})
		}},
		{"another attempt's value", func(c *apptest.Client, mine, other *http.Cookie) {
			c.HTTP.Jar.SetCookies(u, []*http.Cookie{{Name: mine.Name, Value: other.Value, Path: "/"}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := app.Client()
			cb := c.Authorize(c.StartSignIn("/login"), "admin@example.com")
			mine := attemptCookies(c, u)[0]
			other := app.Client()
			other.StartSignIn("/login")
			tc.tamper(c, mine, attemptCookies(other, u)[0])
			if resp := c.Get(cb); resp.StatusCode != http.StatusBadRequest || resp.Text("h1") != "Sign-in expired" {
				t.Errorf("callback = %d %q, want 400 Sign-in expired", resp.StatusCode, resp.Text("h1"))
			}
		})
	}
}

func attemptCookies(c *apptest.Client, u *url.URL) []*http.Cookie {
	var out []*http.Cookie
	for _, ck := range c.HTTP.Jar.Cookies(u) {
		if strings.HasPrefix(ck.Name, "ndiro_signin_") {
			out = append(out, ck)
		}
	}
	return out
}

// TestClaimerSignsInAgain: the users-row write fails once after the
// invite was claimed; the claimer's next sign-in, through the invite link
// or plain /login, creates the row and signs them in.
func TestClaimerSignsInAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, start string }{
		{"through the invite link", "invite"},
		{"through plain sign-in", "/login"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			faults := &apptest.Faults{}
			app := apptest.New(t, apptest.Options{Faults: faults})
			admin := app.Client()
			admin.SignIn("admin@example.com")
			tok := admin.CreateInvite(url.Values{"role": {"owner"}, "expiry_days": {"1"}})
			friend := app.Client()
			faults.Fail("PutItem", app.Tables.Users.Name, 0)
			if resp := friend.SignInVia("/login?invite="+tok, "friend@example.com"); resp.StatusCode != http.StatusInternalServerError {
				t.Fatalf("sign-up with the users write failing = %d, want 500", resp.StatusCode)
			}
			faults.Clear()
			inv, err := app.Invites.Get(context.Background(), tok)
			if err != nil || inv.ClaimedBy != localenv.Subject("friend@example.com") {
				t.Fatalf("invite after the failed sign-up = %+v, %v; want claimed by the friend", inv, err)
			}
			if _, err := app.Users.Get(context.Background(), localenv.Subject("friend@example.com")); !errors.Is(err, user.ErrNotFound) {
				t.Fatalf("users row after the failed sign-up: %v, want ErrNotFound", err)
			}
			// Past the invite's expiry: the claim is done, so it still counts.
			app.Clock.Advance(25 * time.Hour)
			start := tc.start
			if start == "invite" {
				landing := friend.Get("/invite/" + tok)
				start = landing.Doc().Find("main a.button").AttrOr("href", "")
				if landing.StatusCode != http.StatusGone || start != "/login?invite="+tok {
					t.Fatalf("invite landing for its claimer = %d with link %q, want 410 with /login?invite=…", landing.StatusCode, start)
				}
			}
			resp := friend.SignInVia(start, "friend@example.com")
			if resp.StatusCode != http.StatusSeeOther || resp.Location() != "/meals" {
				t.Fatalf("claimer's retry via %s = %d %q, want 303 /meals; body %.300s", start, resp.StatusCode, resp.Location(), resp.Body)
			}
			u, err := app.Users.Get(context.Background(), localenv.Subject("friend@example.com"))
			if err != nil || u.Role != user.RoleOwner || u.InviteToken != tok {
				t.Errorf("users row = %+v, %v; want an owner from the invite", u, err)
			}
			if friend.Get("/meals").StatusCode != http.StatusOK {
				t.Error("the claimer is not signed in")
			}
			// Someone else still cannot use it.
			if resp := app.Client().SignInVia("/login?invite="+tok, "other@example.com"); resp.StatusCode != http.StatusGone {
				t.Errorf("another person through the used invite = %d, want 410", resp.StatusCode)
			}
		})
	}
}

// TestSignInRateLimit: GET /login is limited per client address: a burst
// of SignInBurst, then 429 with Retry-After and a page saying when, until
// the allowance refills. A forwarding header counts only when configured.
func TestSignInRateLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		env   map[string]string
		other string // X-Forwarded-For of another client, "" for none
		want  int    // what that other client gets after the burst
	}{
		{"no proxy: headers ignored", nil, "203.0.113.9", http.StatusTooManyRequests},
		{"trusted proxy header", map[string]string{"NDIRO_TRUSTED_PROXY_HEADER": "X-Forwarded-For"}, "203.0.113.9", http.StatusFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			app := apptest.New(t, apptest.Options{Env: tc.env})
			c := app.Client()
			get := func(xff string) *apptest.Response {
				req, _ := http.NewRequest(http.MethodGet, app.URL+"/login", nil)
				if xff != "" {
					req.Header.Set("X-Forwarded-For", xff)
				}
				return c.Do(req)
			}
			for i := range auth.SignInBurst {
				if resp := get("198.51.100.1"); resp.StatusCode != http.StatusFound {
					t.Fatalf("GET /login #%d = %d, want 302", i+1, resp.StatusCode)
				}
			}
			resp := get("198.51.100.1")
			if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "3" {
				t.Fatalf("GET /login #%d = %d, Retry-After %q; want 429, 3", auth.SignInBurst+1, resp.StatusCode, resp.Header.Get("Retry-After"))
			}
			if got, want := resp.Text("main p"), "There were too many sign-ins from your address. Try again in 3 seconds."; got != want {
				t.Errorf("429 message = %q, want %q", got, want)
			}
			if cookies := resp.Header.Values("Set-Cookie"); len(cookies) != 0 {
				t.Errorf("429 sets cookies %q, want none", cookies)
			}
			if resp := get(tc.other); resp.StatusCode != tc.want {
				t.Errorf("GET /login from X-Forwarded-For %s = %d, want %d", tc.other, resp.StatusCode, tc.want)
			}
			app.Clock.Advance(auth.SignInEvery)
			if resp := get("198.51.100.1"); resp.StatusCode != http.StatusFound {
				t.Errorf("GET /login after Retry-After = %d, want 302", resp.StatusCode)
			}
		})
	}
}

// TestUnknownInviteRateLimit: unknown invite tokens, at the landing page
// and at /login?invite=, spend one allowance per address; once it is
// spent, every invite lookup from there is refused (429 with Retry-After),
// a real invite too, so hits cannot be told from misses.
func TestUnknownInviteRateLimit(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	admin := app.Client()
	admin.SignIn("admin@example.com")
	tok := admin.CreateInvite(url.Values{"role": {"owner"}})
	c := app.Client()
	for i := range invite.MissBurst {
		path := fmt.Sprintf("/invite/%043d", i)
		if i%2 == 1 {
			path = fmt.Sprintf("/login?invite=%043d", i)
		}
		if resp := c.Get(path); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("miss %d (%s) = %d, want 404", i+1, path[:8], resp.StatusCode)
		}
	}
	for _, path := range []string{"/invite/" + strings.Repeat("A", 43), "/invite/" + tok, "/login?invite=" + tok} {
		resp := c.Get(path)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "6" {
			t.Errorf("GET %s after %d misses = %d, Retry-After %q; want 429, 6", path[:8], invite.MissBurst, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if got, want := resp.Text("main p"), "There were too many invite links from your address that do not exist. Try again in 6 seconds."; got != want {
			t.Errorf("429 message = %q, want %q", got, want)
		}
	}
	app.Clock.Advance(invite.MissEvery)
	if resp := c.Get("/invite/" + tok); resp.StatusCode != http.StatusOK {
		t.Errorf("real invite after Retry-After = %d, want 200", resp.StatusCode)
	}
}
