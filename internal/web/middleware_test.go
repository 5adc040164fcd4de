package web

import "testing"

func TestLocalPath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/meals", "/meals"},
		{"/meals?month=2026-09", "/meals?month=2026-09"},
		{"", ""},
		{"meals", ""},
		{"//evil.example", ""},
		{"///evil.example", ""},
		{"/\\evil.example", ""},
		{"https://evil.example/", ""},
		{"/ok\r\nSet-Cookie: x", ""},
		{"javascript:alert(1)", ""},
	} {
		if got := LocalPath(tc.in); got != tc.want {
			t.Errorf("LocalPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzLocalPath(f *testing.F) {
	for _, s := range []string{"/meals", "//x", "/\\x", "https://x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := LocalPath(s)
		if p == "" {
			return
		}
		if p[0] != '/' || len(p) > 1 && (p[1] == '/' || p[1] == '\\') {
			t.Fatalf("LocalPath(%q) = %q, which leaves the site", s, p)
		}
	})
}
