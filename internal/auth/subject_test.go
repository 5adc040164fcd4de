package auth_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/oauth2-proxy/mockoidc"

	"ndiro/internal/apptest"
)

// TestSignInRefusesUnusableSubject: a provider subject that could not
// key a users row (the reserved prefix of the session keys and the lease,
// bytes that are not printable ASCII, over 255 bytes) is a 403 page
// saying so, and signs nobody in; 255 printable bytes sign in.
func TestSignInRefusesUnusableSubject(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	for _, tc := range []struct {
		name, sub string
		ok        bool
	}{
		{"the lease's key", "#lease", false},
		{"a session key", "#session#" + strings.Repeat("0", 64), false},
		{"a control byte", "abc\x01def", false},
		{"not ASCII", "café", false},
		{"256 bytes", strings.Repeat("s", 256), false},
		{"255 bytes", strings.Repeat("s", 255), true},
	} {
		app.Env.NextSignIn(&mockoidc.MockUser{Subject: tc.sub, Email: "admin@example.com", EmailVerified: true})
		c := app.Client()
		resp := c.SignInVia("/login", "ignored@example.com")
		if tc.ok {
			if resp.StatusCode != http.StatusSeeOther || c.Get("/meals").StatusCode != http.StatusOK {
				t.Errorf("%s: sign-in = %d %q, want 303 and the diary", tc.name, resp.StatusCode, resp.Text("h1"))
			}
			continue
		}
		if resp.StatusCode != http.StatusForbidden || resp.Text("h1") != "Account not usable here" || !strings.Contains(resp.Text("main"), "255 printable ASCII characters") {
			t.Errorf("%s: sign-in = %d %q, want 403 Account not usable here naming the rule", tc.name, resp.StatusCode, resp.Text("h1"))
		}
		if r := c.Get("/meals"); r.StatusCode != http.StatusSeeOther {
			t.Errorf("%s: GET /meals after the refused sign-in = %d, want 303 to sign-in", tc.name, r.StatusCode)
		}
	}
	if list, err := app.Users.List(t.Context()); err != nil || len(list) != 1 {
		t.Errorf("users after the sign-ins = %d, %v; want the one of 255 bytes only", len(list), err)
	}
}
