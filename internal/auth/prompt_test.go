package auth

import "testing"

func TestWantsSelectAccount(t *testing.T) {
	for _, tc := range []struct {
		issuer    string
		supported []string
		want      bool
	}{
		{"https://accounts.google.com", nil, true},
		{"https://sso.example.org/realms/home", nil, false},
		{"https://sso.example.org/realms/home", []string{"none", "login", "consent"}, false},
		{"https://sso.example.org/realms/home", []string{"none", "login", "consent", "select_account"}, true},
		{"https://accounts.google.com.evil.example", nil, false},
	} {
		if got := wantsSelectAccount(tc.issuer, tc.supported); got != tc.want {
			t.Errorf("wantsSelectAccount(%q, %q) = %v, want %v", tc.issuer, tc.supported, got, tc.want)
		}
	}
}
