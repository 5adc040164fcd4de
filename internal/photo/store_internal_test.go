package photo

import (
	"slices"
	"strings"
	"testing"
)

func TestUnderPrefix(t *testing.T) {
	for _, tc := range []struct {
		owner, key string
		ok         bool
	}{
		{"u1", "users/u1/meals/2026-09-01/123000-abcdef.jpg", true},
		{"u1", "users/u10/meals/2026-09-01/123000-abcdef.jpg", false},
		{"u1", "users/u1/../u2/meals/x.jpg", false},
		{"u1", "users/u1//x.jpg", false},
		{"u1", "users/u1/", false},
		{"u1", "users/u2/meals/2026-09-01/123000-abcdef.jpg", false},
		{"", "users//meals/x.jpg", false},
		{"u1/../u2", "users/u1/../u2/x.jpg", false},
		{"u1", "other/users/u1/x.jpg", false},
		{"u1", "pending/u1/abc.jpg", true},
		{"u1", "pending/u2/abc.jpg", false},
		{"u1", "pending/u1/", false},
		{"u1", "pending/u1/../../users/u2/x.jpg", false},
		// An ID with '/' is one escaped segment; no other ID's prefix holds it.
		{"a/b", "users/a%2Fb/meals/2026-09-01/123000-abcdef.jpg", true},
		{"a/b", "pending/a%2Fb/abc.jpg", true},
		{"a/b", "users/a/b/meals/2026-09-01/123000-abcdef.jpg", false},
		{"a", "users/a%2Fb/meals/2026-09-01/123000-abcdef.jpg", false},
		{"a%2Fb", "users/a%2Fb/meals/2026-09-01/123000-abcdef.jpg", false},
		{"a%2Fb", "users/a%252Fb/meals/2026-09-01/123000-abcdef.jpg", true},
	} {
		if got := underPrefix(tc.owner, tc.key); got != tc.ok {
			t.Errorf("underPrefix(%q, %q) = %v, want %v", tc.owner, tc.key, got, tc.ok)
		}
	}
}

func TestParseKey(t *testing.T) {
	for _, tc := range []struct {
		key            string
		user, date, id string
		size           Size
		ok             bool
	}{
		{"users/u1/meals/2026-09-01/123000-abcdef.jpg", "u1", "2026-09-01", "123000-abcdef", SizeDisplay, true},
		{"users/u1/meals/2026-09-01/123000-abcdef.thumb.jpg", "u1", "2026-09-01", "123000-abcdef", SizeThumb, true},
		{"users/u1/meals/2026-09-01/.jpg", "", "", "", "", false},
		{"users/u1/other/2026-09-01/x.jpg", "", "", "", "", false},
		{"users//meals/2026-09-01/x.jpg", "", "", "", "", false},
		{"users/u1/meals/2026-09-01/x.png", "", "", "", "", false},
		{"users/u1/meals/2026-09-01/a/x.jpg", "", "", "", "", false},
		{"pending/u1/x.jpg", "", "", "", "", false},
		{"users/a%2Fb/meals/2026-09-01/123000-abcdef.jpg", "a/b", "2026-09-01", "123000-abcdef", SizeDisplay, true},
		{`users/a%5Cb%25/meals/2026-09-01/123000-abcdef.jpg`, `a\b%`, "2026-09-01", "123000-abcdef", SizeDisplay, true},
		{"users/a%2fb/meals/2026-09-01/123000-abcdef.jpg", "", "", "", "", false}, // not made by Key
		{"users/a%zz/meals/2026-09-01/123000-abcdef.jpg", "", "", "", "", false},
	} {
		u, d, id, size, ok := ParseKey(tc.key)
		if u != tc.user || d != tc.date || id != tc.id || size != tc.size || ok != tc.ok {
			t.Errorf("ParseKey(%q) = %q %q %q %q %v, want %q %q %q %q %v", tc.key, u, d, id, size, ok, tc.user, tc.date, tc.id, tc.size, tc.ok)
		}
	}
}

// TestWorkerEnv: the HEIC worker gets the runtime's variables and none of
// the server's settings or secrets.
func TestWorkerEnv(t *testing.T) {
	got := workerEnv([]string{
		"PATH=/usr/bin", "NDIRO_OIDC_CLIENT_SECRET=s3cret", "HOME=/home/n",
		"AWS_SECRET_ACCESS_KEY=k", "GOMEMLIMIT=1GiB", "GODEBUG=madvdontneed=1",
		"GOOGLE_CLIENT_SECRET=g", "PATHX=1", "broken",
	})
	want := []string{"PATH=/usr/bin", "HOME=/home/n", "GODEBUG=madvdontneed=1"}
	if !slices.Equal(got, want) {
		t.Errorf("workerEnv = %q, want %q", got, want)
	}
}

// TestKeyOwnerRoundTrip: for any user ID, the keys and prefixes built from
// it give it back, and lie under its prefix only.
func TestKeyOwnerRoundTrip(t *testing.T) {
	for _, id := range []string{"110169484474386276334", "a/b", "/", "a%2Fb", `a\b`, "%", "auth0|5f7c8ec7c33c6c004bbafe82", "user@example.com", "ä/ö",
		".", "..", "a..b", "../x", "a/../b", "...", "a%2Eb", ".a.", "%2E%2E"} {
		key := Key(id, "2026-09-01", "123000-abcdef", SizeThumb)
		if seg := strings.Split(key, "/")[1]; seg == "." || strings.Contains(key, "..") || strings.Contains(key, "//") {
			t.Errorf("Key(%q) = %q: a dot segment or an empty one", id, key)
		}
		if u, _, _, _, ok := ParseKey(key); !ok || u != id {
			t.Errorf("ParseKey(Key(%q)) = %q, %v; want the ID back", id, u, ok)
		}
		for _, k := range []string{key, PendingKey(id, "tok", SizeDisplay)} {
			if u, ok := OwnerOfKey(k); !ok || u != id {
				t.Errorf("OwnerOfKey(%q) = %q, %v; want %q", k, u, ok, id)
			}
			if !underPrefix(id, k) {
				t.Errorf("underPrefix(%q, %q) = false", id, k)
			}
			if underPrefix(id+"x", k) || underPrefix("a", k) && id != "a" {
				t.Errorf("%q lies under another ID's prefix", k)
			}
		}
	}
}
