package auth_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"

	"ndiro/internal/apptest"
	"ndiro/internal/user"
)

// userinfoOnly is a provider's account whose email reaches the app only
// through the userinfo endpoint, not the ID token, as with providers that
// follow OIDC Core 5.4 to the letter. infoSub is the subject the userinfo
// answer claims.
type userinfoOnly struct {
	sub, infoSub, email string
	verified            bool
}

func (u userinfoOnly) ID() string { return u.sub }

func (u userinfoOnly) Userinfo([]string) ([]byte, error) {
	return json.Marshal(map[string]any{"sub": u.infoSub, "email": u.email, "email_verified": u.verified})
}

func (u userinfoOnly) Claims(_ []string, base *mockoidc.IDTokenClaims) (jwt.Claims, error) {
	return base, nil
}

func TestEmailFromUserinfo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		user    userinfoOnly
		status  int
		heading string
	}{
		{"verified", userinfoOnly{sub: "strict-1", infoSub: "strict-1", email: "Admin@Example.com", verified: true}, http.StatusSeeOther, ""},
		{"not verified", userinfoOnly{sub: "strict-2", infoSub: "strict-2", email: "admin@example.com"}, http.StatusForbidden, "Email not verified"},
		{"another subject", userinfoOnly{sub: "strict-3", infoSub: "someone-else", email: "admin@example.com", verified: true}, http.StatusBadRequest, "Sign-in refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			app := apptest.New(t)
			// The next sign-in is this account, whatever email the
			// sign-in page is given.
			app.Env.NextSignIn(tc.user)
			resp := app.Client().SignInVia("/login", "ignored@example.com")
			if resp.StatusCode != tc.status || resp.Text("h1") != tc.heading {
				t.Fatalf("sign-in = %d %q, want %d %q; body %s", resp.StatusCode, resp.Text("h1"), tc.status, tc.heading, resp.Body)
			}
			u, err := app.Users.Get(context.Background(), tc.user.sub)
			if tc.status != http.StatusSeeOther {
				if err == nil {
					t.Errorf("users row %+v created by a refused sign-in", u)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if u.Email != "admin@example.com" || u.Role != user.RoleAdmin {
				t.Errorf("users row = %+v, want admin@example.com as admin", u)
			}
		})
	}
}
