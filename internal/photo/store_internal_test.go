package photo

import (
	"slices"
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
