package localenv_test

import (
	"context"
	"net/http"
	"testing"

	"ndiro/internal/apptest"
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
