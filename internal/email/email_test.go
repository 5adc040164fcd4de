package email

import (
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"friend@example.com", true},
		{"first.last+diet@mail.example.org", true},
		{"a@b.co", true},
		{"", false},
		{"Friend@example.com", false}, // not normalised
		{"friend", false},
		{"friend@", false},
		{"@example.com", false},
		{"friend@localhost", false},
		{"friend@example.com.", false},
		{"friend@.example.com", false},
		{"friend@example..com", false},
		{"x@[127.0.0.1]", false},
		{"x@127.0.0.1", false},
		{"x@[ipv6:::1]", false},
		{`"a b"@example.com`, false},
		{"Friend <friend@example.com>", false},
		{"friend@example.com (me)", false},
		{"a,b@example.com", false},
		{"friend @example.com", false},
		{strings.Repeat("a", 65) + "@example.com", false},
		{"x@" + strings.Repeat("a", 250) + ".com", false},
	} {
		if got := Valid(tc.in); got != tc.want {
			t.Errorf("Valid(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	long := strings.Repeat("a", 64) + "@example.com"
	if !Valid(long) || Valid("a"+long) {
		t.Errorf("Valid at the 64-character local-part limit: %v, one over: %v; want true, false", Valid(long), Valid("a"+long))
	}
}

func TestNormalize(t *testing.T) {
	if got := Normalize("  Friend@Example.COM \n"); got != "friend@example.com" {
		t.Errorf("Normalize = %q, want friend@example.com", got)
	}
}

func FuzzValid(f *testing.F) {
	for _, s := range []string{"friend@example.com", "x@[127.0.0.1]", `"a"@b.c`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !Valid(s) {
			return
		}
		local, domain, ok := strings.Cut(s, "@")
		if !ok || local == "" || domain == "" || strings.Contains(domain, "@") || Normalize(s) != s {
			t.Fatalf("Valid(%q) = true for an address that is not plain and normalised", s)
		}
	})
}
