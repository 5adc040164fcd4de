package invite_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"ndiro/internal/apptest"
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
