package photo

import "testing"

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
