package invite_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/invite"
)

func TestInviteFlow(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	admin := app.Client()
	admin.SignIn("admin@example.com")
	tok := admin.CreateInvite(url.Values{"email": {""}, "expiry_days": {"3"}, "role": {"owner"}})

	// The open invite's link has a copy button (shown by the page script)
	// that copies exactly that link.
	open := admin.Get("/admin/invites").Doc().Find("#invite-" + tok[:8])
	copyBtn := open.Find("button[data-copy]")
	target, _ := copyBtn.Attr("data-copy")
	link, _ := open.Find("input#" + target).Attr("value")
	if copyBtn.Length() != 1 || link != app.URL+"/invite/"+tok {
		t.Errorf("copy button copies #%s = %q, want the invite's link", target, link)
	}

	friend := app.Client()
	landing := friend.Get("/invite/" + tok)
	if landing.StatusCode != http.StatusOK {
		t.Fatalf("landing = %d, want 200", landing.StatusCode)
	}
	if got := landing.Header.Get("Referrer-Policy"); got != "no-referrer" {
		t.Errorf("landing Referrer-Policy = %q, want no-referrer", got)
	}
	href, _ := landing.Doc().Find("a.button").Attr("href")
	if href != "/login?invite="+tok {
		t.Fatalf("sign-in link = %q, want /login?invite=…", href)
	}
	resp := friend.SignInVia(href, "friend@example.com")
	if resp.StatusCode != http.StatusSeeOther || resp.Location() != "/meals" {
		t.Fatalf("sign-up = %d %q, want 303 /meals; body %s", resp.StatusCode, resp.Location(), resp.Body)
	}
	diary := friend.Get("/meals")
	if diary.StatusCode != http.StatusOK || diary.Doc().Find("#empty").Length() != 1 {
		t.Fatalf("friend's diary = %d, want 200 with the empty state", diary.StatusCode)
	}
	if diary.Doc().Find(`a[href="/admin/users"]`).Length() != 0 {
		t.Error("an owner sees the admin link")
	}
	// Signing in again later needs no invite, and the invite link now
	// leads the person who used it to their diary.
	again := app.Client()
	again.SignIn("friend@example.com")
	if resp := again.Get("/invite/" + tok); resp.StatusCode != http.StatusSeeOther || resp.Location() != "/meals" {
		t.Errorf("own used invite = %d %q, want 303 /meals", resp.StatusCode, resp.Location())
	}

	// An existing account signing in through someone else's invite leaves it
	// unused, and says so.
	spare := admin.CreateInvite(url.Values{"role": {"admin"}})
	resp = again.SignInVia("/login?invite="+spare, "friend@example.com")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("existing account via invite = %d", resp.StatusCode)
	}
	if flash := again.Get("/meals").Text(".flash"); !strings.Contains(flash, "already have an account") {
		t.Errorf("flash = %q, want it to say the account exists", flash)
	}
	if resp := app.Client().Get("/invite/" + spare); resp.StatusCode != http.StatusOK {
		t.Errorf("unused invite landing = %d, want 200 (still open)", resp.StatusCode)
	}
	// The list shows it claimed, with no link to copy.
	row := admin.Get("/admin/invites").Doc().Find("#invite-" + tok[:8])
	if st, _ := row.Attr("data-state"); st != "claimed" {
		t.Errorf("invite state on list = %q, want claimed", st)
	}
	if row.Find("input.copy").Length() != 0 {
		t.Error("a claimed invite still shows its link")
	}
}

// TestInviteLandingForOneEmail renders the landing of an invite restricted
// to an email: it names the email and the provider to sign in with.
func TestInviteLandingForOneEmail(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	admin := app.Client()
	admin.SignIn("admin@example.com")
	tok := admin.CreateInvite(url.Values{"email": {"friend@example.com"}, "role": {"owner"}})
	landing := app.Client().Get("/invite/" + tok)
	if landing.StatusCode != http.StatusOK {
		t.Fatalf("landing = %d, want 200; body %s", landing.StatusCode, landing.Body)
	}
	if got, want := landing.Text("main strong"), "friend@example.com"; got != want {
		t.Errorf("landing names %q, want %q", got, want)
	}
	if got, want := landing.Text("a.button"), "Sign in with Google"; got != want {
		t.Errorf("landing button = %q, want %q", got, want)
	}
}

func TestInviteLandingStates(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	admin := app.Client()
	admin.SignIn("admin@example.com")

	claimed := admin.CreateInvite(url.Values{"role": {"owner"}})
	app.Client().SignInVia("/login?invite="+claimed, "first@example.com")
	revoked := admin.CreateInvite(url.Values{"role": {"owner"}})
	if resp := admin.PostForm("/admin/invites/"+revoked+"/revoke", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke = %d, want 303", resp.StatusCode)
	}
	expiring := admin.CreateInvite(url.Values{"role": {"owner"}, "expiry_days": {"1"}})
	app.Clock.Advance(24*time.Hour + time.Second)

	for _, tc := range []struct {
		name, path string
		status     int
		heading    string
	}{
		{"unknown", "/invite/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 404, "Invite not found"},
		{"malformed", "/invite/nope", 404, "Invite not found"},
		{"claimed", "/invite/" + claimed, 410, "Invite already used"},
		{"revoked", "/invite/" + revoked, 410, "Invite revoked"},
		{"expired", "/invite/" + expiring, 410, "Invite expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := app.Client().Get(tc.path)
			if resp.StatusCode != tc.status || resp.Text("h1") != tc.heading {
				t.Errorf("GET %s = %d %q, want %d %q", tc.name, resp.StatusCode, resp.Text("h1"), tc.status, tc.heading)
			}
		})
	}
	// The used invite's page offers sign-in to the person who used it.
	if href := app.Client().Get("/invite/"+claimed).Doc().Find("main a.button").AttrOr("href", ""); href != "/login?invite="+claimed {
		t.Errorf("used invite's sign-in link = %q, want /login?invite=…", href)
	}
	// Starting a sign-up through a dead invite is refused at once, before
	// any trip to Google, and creates no user.
	for tok, heading := range map[string]string{expiring: "Invite expired", revoked: "Invite revoked"} {
		resp := app.Client().Get("/login?invite=" + tok)
		if resp.StatusCode != http.StatusGone || resp.Text("h1") != heading {
			t.Errorf("GET /login with a dead invite = %d %q, want 410 %q", resp.StatusCode, resp.Text("h1"), heading)
		}
	}
	// A used one is refused after sign-in to anyone but its claimer (who
	// may be finishing a sign-up that failed half-way).
	if resp := app.Client().SignInVia("/login?invite="+claimed, "second@example.com"); resp.StatusCode != http.StatusGone || resp.Text("h1") != "Invite already used" {
		t.Errorf("someone else signing in through a used invite = %d %q, want 410 Invite already used", resp.StatusCode, resp.Text("h1"))
	}
	// An invite that expires between sign-in start and Google's answer is
	// refused by the claim itself.
	late := admin.CreateInvite(url.Values{"role": {"owner"}, "expiry_days": {"1"}})
	app.Clock.Advance(24*time.Hour - 5*time.Minute)
	c := app.Client()
	auth := c.StartSignIn("/login?invite=" + late)
	app.Clock.Advance(5*time.Minute + time.Second)
	resp := c.Get(c.Authorize(auth, "late@example.com"))
	if resp.StatusCode != http.StatusGone || resp.Text("h1") != "Invite expired" {
		t.Errorf("claim of an invite expired mid-sign-in = %d %q, want 410 Invite expired", resp.StatusCode, resp.Text("h1"))
	}
	users, _ := app.Users.List(context.Background())
	if len(users) != 2 {
		t.Errorf("%d users, want 2 (admin, first)", len(users))
	}
}

func TestInviteForOneEmail(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	admin := app.Client()
	admin.SignIn("admin@example.com")
	tok := admin.CreateInvite(url.Values{"email": {"Bob@Example.com"}, "role": {"owner"}})

	resp := app.Client().SignInVia("/login?invite="+tok, "eve@example.com")
	if resp.StatusCode != http.StatusForbidden || resp.Text("h1") != "Invite is for someone else" {
		t.Fatalf("wrong email = %d %q, want 403", resp.StatusCode, resp.Text("h1"))
	}
	if href, _ := resp.Doc().Find(".error-next a").Attr("href"); href != "/invite/"+tok {
		t.Errorf("the refusal leads to %q, want back to the invite", href)
	}
	resp = app.Client().SignInVia("/login?invite="+tok, "bob@example.com")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("invited email = %d, want 303; body %s", resp.StatusCode, resp.Body)
	}
}

func TestCreateInviteBadInput(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	admin := app.Client()
	admin.SignIn("admin@example.com")

	for _, tc := range []struct {
		name  string
		form  url.Values
		field string
	}{
		{"bad email", url.Values{"email": {"not-an-email"}, "expiry_days": {"7"}, "role": {"owner"}}, "email"},
		{"email with name", url.Values{"email": {"Bob <bob@example.com>"}, "expiry_days": {"7"}, "role": {"owner"}}, "email"},
		{"email without a dotted domain", url.Values{"email": {"a@b"}, "expiry_days": {"7"}, "role": {"owner"}}, "email"},
		{"email local part over 64", url.Values{"email": {strings.Repeat("a", 65) + "@example.com"}, "expiry_days": {"7"}, "role": {"owner"}}, "email"},
		{"email at an IP literal", url.Values{"email": {"x@[127.0.0.1]"}, "expiry_days": {"7"}, "role": {"owner"}}, "email"},
		{"email at an IPv6 literal", url.Values{"email": {"x@[IPv6:::1]"}, "expiry_days": {"7"}, "role": {"owner"}}, "email"},
		{"email at a bare IP address", url.Values{"email": {"x@127.0.0.1"}, "expiry_days": {"7"}, "role": {"owner"}}, "email"},
		{"zero days", url.Values{"expiry_days": {"0"}, "role": {"owner"}}, "expiry_days"},
		{"too many days", url.Values{"expiry_days": {"91"}, "role": {"owner"}}, "expiry_days"},
		{"days not a number", url.Values{"expiry_days": {"7.5"}, "role": {"owner"}}, "expiry_days"},
		{"unknown role", url.Values{"expiry_days": {"7"}, "role": {"root"}}, "role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := admin.PostForm("/admin/invites", tc.form)
			if resp.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("status = %d, want 422", resp.StatusCode)
			}
			doc := resp.Doc()
			if inv, _ := doc.Find("#" + tc.field).Attr("aria-invalid"); inv != "true" {
				t.Errorf("field %s not marked invalid", tc.field)
			}
			if doc.Find(".field-err").Length() != 1 {
				t.Errorf("%d field messages, want 1", doc.Find(".field-err").Length())
			}
			if v, _ := doc.Find("#expiry_days").Attr("value"); v != tc.form.Get("expiry_days") {
				t.Errorf("expiry_days not kept: %q, want %q", v, tc.form.Get("expiry_days"))
			}
		})
	}
	all, err := app.Invites.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 0 {
		t.Errorf("%d invites written by bad forms, want 0", len(all))
	}
}

// TestInviteRevokeHandler: an admin revokes an open invite (303, its link
// stops), is told when it was used already (409) or does not exist (404).
func TestInviteRevokeHandler(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	admin := app.Client()
	admin.SignIn("admin@example.com")
	open := admin.CreateInvite(url.Values{"role": {"owner"}})
	used := admin.CreateInvite(url.Values{"role": {"owner"}})
	app.Client().SignInVia("/login?invite="+used, "used@example.com")
	for _, tc := range []struct {
		name, tok string
		status    int
		heading   string
	}{
		{"open", open, http.StatusSeeOther, ""},
		{"again", open, http.StatusSeeOther, ""},
		{"used", used, http.StatusConflict, "Invite already used"},
		{"unknown", strings.Repeat("A", 43), http.StatusNotFound, "Page not found"},
	} {
		resp := admin.PostForm("/admin/invites/"+tc.tok+"/revoke", nil)
		if resp.StatusCode != tc.status {
			t.Errorf("revoke %s = %d, want %d", tc.name, resp.StatusCode, tc.status)
		}
		if tc.heading != "" && resp.Text("h1") != tc.heading {
			t.Errorf("revoke %s: heading %q, want %q", tc.name, resp.Text("h1"), tc.heading)
		}
	}
	if resp := app.Client().Get("/invite/" + open); resp.StatusCode != http.StatusGone || resp.Text("h1") != "Invite revoked" {
		t.Errorf("revoked invite's link = %d %q, want 410 Invite revoked", resp.StatusCode, resp.Text("h1"))
	}
	if resp := app.Client().Get("/invite/" + used); resp.StatusCode != http.StatusGone || resp.Text("h1") != "Invite already used" {
		t.Errorf("used invite's link after a refused revoke = %d %q, want it still used", resp.StatusCode, resp.Text("h1"))
	}
}

// TestLandingMissesPerAddress: unknown tokens at the landing page spend
// the allowance of the address they come from only. Behind a trusted
// proxy, a spent address gets 429 even for a real invite, another address
// is untouched, and an IPv6 client counts as its /64: another host of
// that network is refused too, the next network is not.
func TestLandingMissesPerAddress(t *testing.T) {
	t.Parallel()
	app := apptest.New(t, apptest.Options{Env: map[string]string{"NDIRO_TRUSTED_PROXY_HEADER": "X-Forwarded-For"}})
	admin := app.Client()
	admin.SignIn("admin@example.com")
	tok := admin.CreateInvite(url.Values{"role": {"owner"}})
	c := app.Client()
	get := func(path, from string) *apptest.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, app.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Forwarded-For", from)
		return c.Do(req)
	}
	for _, spent := range []string{"203.0.113.9", "2001:db8:7:1::10"} {
		for i := range invite.MissBurst {
			if resp := get(fmt.Sprintf("/invite/%043d", i), spent); resp.StatusCode != http.StatusNotFound {
				t.Fatalf("miss %d from %s = %d, want 404", i+1, spent, resp.StatusCode)
			}
		}
	}
	for _, tc := range []struct {
		from string
		want int
	}{
		{"203.0.113.9", http.StatusTooManyRequests},
		{"::ffff:203.0.113.9", http.StatusTooManyRequests},
		{"203.0.113.10", http.StatusOK},
		{"2001:db8:7:1:ffff::2", http.StatusTooManyRequests},
		{"2001:db8:7:2::10", http.StatusOK},
	} {
		resp := get("/invite/"+tok, tc.from)
		if resp.StatusCode != tc.want {
			t.Errorf("real invite from %s = %d, want %d", tc.from, resp.StatusCode, tc.want)
		}
		if tc.want == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "6" {
			t.Errorf("429 from %s: Retry-After %q, want 6", tc.from, resp.Header.Get("Retry-After"))
		}
	}
	// Another address's misses are its own: a whole allowance of 404s.
	for i := range invite.MissBurst {
		if resp := get(fmt.Sprintf("/invite/%043d", i), "198.51.100.4"); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("miss %d from another address = %d, want 404", i+1, resp.StatusCode)
		}
	}
}
