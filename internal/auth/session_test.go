package auth

import (
	"net/http"
	"strings"
	"testing"
)

func TestCookieValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		headers []string
		want    string
	}{
		{[]string{"ndiro_session=abc"}, "abc"},
		{[]string{"a=1; ndiro_session=abc; b=2"}, "abc"},
		{[]string{"a=1", "ndiro_session=\"abc\""}, "abc"},
		{[]string{"ndiro_sessionx=abc; xndiro_session=def"}, ""},
		{nil, ""},
	} {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.Header["Cookie"] = tc.headers
		if got := cookieValue(r, "ndiro_session"); got != tc.want {
			t.Errorf("cookieValue(%q) = %q, want %q", tc.headers, got, tc.want)
		}
	}
}

// FuzzCookieValue: wherever the standard parser ((*http.Request).Cookie)
// finds the one cookie of that name with a value shaped like a session
// token (base64url, as scs makes them), cookieValue finds the same value.
// Other values name no session in the store, whatever either parser
// makes of them.
func FuzzCookieValue(f *testing.F) {
	for _, s := range []string{"ndiro_session=abc", "a=1; ndiro_session=abc; b=2", `ndiro_session="abc"`, " ndiro_session = abc ", "ndiro_session=a=b", "x=1;ndiro_session=;y", "a=1;\tndiro_session=Zk-_9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		const name = "ndiro_session"
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.Header["Cookie"] = []string{header}
		c, err := r.Cookie(name)
		if err != nil || c.Value == "" || strings.Count(header, name) != 1 || strings.Trim(c.Value, tokenChars) != "" {
			return
		}
		if got := cookieValue(r, name); got != c.Value {
			t.Errorf("cookieValue(%q) = %q, http.Request.Cookie says %q", header, got, c.Value)
		}
	})
}

// tokenChars are the characters of a session token (base64url).
const tokenChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
