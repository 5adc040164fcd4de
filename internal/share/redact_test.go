package share

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/shopspring/decimal"

	"ndiro/internal/meal"
)

// TestRedactAllowList fills every field of a meal and checks what redact
// keeps, with notes and numbers shown and without: the allow-list and
// nothing else. The owner's ID, the row's bookkeeping and the photo's
// capture time never pass, whatever the share shows.
func TestRedactAllowList(t *testing.T) {
	t.Parallel()
	num := func(s string) *meal.Number { n := meal.NumberOf(decimal.RequireFromString(s)); return &n }
	hunger, fullness := 2, 4
	at := time.Date(2026, 9, 2, 12, 30, 0, 0, time.UTC)
	full := meal.Meal{
		UserID: "sub-owner", SK: "2026-09-02#123000-abcdef", ID: "123000-abcdef", Date: "2026-09-02", Time: "12:30:00",
		Kind: meal.Lunch, Notes: "soup", Kcal: num("512.5"), ProteinG: num("31.5"), CarbsG: num("77.5"), FatG: num("12.5"),
		Hunger: &hunger, Fullness: &fullness,
		Photo:     meal.Photo{PhotoV: 1_790_000_000_000_000_000, PhotoW: 1536, PhotoH: 2048, ThumbW: 480, ThumbH: 640, PhotoTaken: "2024-06-14T12:31:07"},
		CreatedAt: at, UpdatedAt: at, Version: 3,
	}
	always := meal.Meal{
		ID: full.ID, Date: full.Date, Time: full.Time, Kind: full.Kind,
		Photo: meal.Photo{PhotoV: full.PhotoV, PhotoW: full.PhotoW, PhotoH: full.PhotoH, ThumbW: full.ThumbW, ThumbH: full.ThumbH},
	}
	shown := always
	shown.Notes, shown.Kcal, shown.ProteinG, shown.CarbsG, shown.FatG = full.Notes, full.Kcal, full.ProteinG, full.CarbsG, full.FatG
	shown.Hunger, shown.Fullness = full.Hunger, full.Fullness
	for _, tc := range []struct {
		name string
		sh   Share
		want meal.Meal
	}{
		{"notes and numbers hidden", Share{}, always},
		{"notes and numbers shown", Share{Notes: true, Numbers: true}, shown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := redact(full, &tc.sh)
			if d := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b meal.Number) bool { return a.Decimal().Equal(b.Decimal()) })); d != "" {
				t.Errorf("redact (-want +got):\n%s", d)
			}
			if got.PhotoTaken != "" {
				t.Errorf("redact kept the capture time %q", got.PhotoTaken)
			}
		})
	}
}
