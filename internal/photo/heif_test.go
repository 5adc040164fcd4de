package photo

import "testing"

// TestHEIFGamut: the colr box is read as a JPEG's profile is: an ICC
// profile by its colorants, nclx by its colour primaries.
func TestHEIFGamut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		info heifInfo
		want Gamut
	}{
		{"no colr", heifInfo{}, GamutSRGB},
		{"prof Display P3", heifInfo{ICC: displayP3}, GamutDisplayP3},
		{"nclx P3 (12)", heifInfo{Primaries: 12}, GamutDisplayP3},
		{"nclx BT.709 (1)", heifInfo{Primaries: 1}, GamutSRGB},
		{"nclx BT.2020 (9)", heifInfo{Primaries: 9}, GamutOtherRGB},
	} {
		if got := tc.info.gamut(); got != tc.want {
			t.Errorf("%s: gamut = %v, want %v", tc.name, got, tc.want)
		}
	}
}
