package meal_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"ndiro/internal/apptest"
	"ndiro/internal/meal"
)

func TestParseNumber(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  decimal.Decimal
		want string // "" with err nil means blank
		err  error
	}{
		{"12.5", meal.MaxKcal, "12.5", nil},
		{"12,5", meal.MaxKcal, "12.5", nil},
		{" 300 ", meal.MaxKcal, "300", nil},
		{"0", meal.MaxKcal, "0", nil},
		{"0.0", meal.MaxKcal, "0", nil},
		{"12.50", meal.MaxKcal, "12.5", nil},
		{".5", meal.MaxGrams, "0.5", nil},
		{"20000", meal.MaxKcal, "20000", nil},
		{"5000", meal.MaxGrams, "5000", nil},
		{"", meal.MaxKcal, "", nil},
		{"   ", meal.MaxKcal, "", nil},
		{"-1", meal.MaxKcal, "", meal.ErrNegative},
		{"-0.5", meal.MaxKcal, "", meal.ErrNegative},
		{"12.55", meal.MaxKcal, "", meal.ErrTooPrecise},
		{"0.05", meal.MaxKcal, "", meal.ErrTooPrecise},
		{"NaN", meal.MaxKcal, "", meal.ErrNotNumber},
		{"Infinity", meal.MaxKcal, "", meal.ErrNotNumber},
		{"1e400", meal.MaxKcal, "", meal.ErrNotNumber},
		{"1e3", meal.MaxKcal, "", meal.ErrNotNumber},
		{"+5", meal.MaxKcal, "", meal.ErrNotNumber},
		{"0x10", meal.MaxKcal, "", meal.ErrNotNumber},
		{"12.5.1", meal.MaxKcal, "", meal.ErrNotNumber},
		{"1 000", meal.MaxKcal, "", meal.ErrNotNumber},
		{"abc", meal.MaxKcal, "", meal.ErrNotNumber},
		{".", meal.MaxKcal, "", meal.ErrNotNumber},
		{"-", meal.MaxKcal, "", meal.ErrNotNumber},
		{"12,5,0", meal.MaxKcal, "", meal.ErrNotNumber},
		{"99999999999999999999", meal.MaxKcal, "", meal.ErrNumberLarge},
		{"20000.1", meal.MaxKcal, "", meal.ErrNumberLarge},
		{"5001", meal.MaxGrams, "", meal.ErrNumberLarge},
	} {
		n, err := meal.ParseNumber(tc.in, tc.max)
		if !errors.Is(err, tc.err) {
			t.Errorf("ParseNumber(%q) error = %v, want %v", tc.in, err, tc.err)
			continue
		}
		got := ""
		if n != nil {
			got = n.String()
		}
		if got != tc.want {
			t.Errorf("ParseNumber(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestWhole: kcal as pages show it, rounded to a whole number half away
// from zero, from the exact decimal.
func TestWhole(t *testing.T) {
	for in, want := range map[string]string{
		"491.4": "491", "491.5": "492", "491.6": "492", "0.3": "0", "0.5": "1",
		"0": "0", "2563.4": "2563", "19999.9": "20000", "300": "300", "999.5": "1000", "9.5": "10", "99.4": "99", "0.4": "0",
	} {
		n, err := meal.ParseNumber(in, meal.MaxKcal)
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Whole(); got != want {
			t.Errorf("ParseNumber(%q).Whole() = %q, want %q", in, got, want)
		}
		if got := n.String(); got != strings.TrimSuffix(in, ".0") {
			t.Errorf("ParseNumber(%q).String() = %q, want it as typed", in, got)
		}
		if got, round := n.Whole(), n.Decimal().Round(0).String(); got != round {
			t.Errorf("ParseNumber(%q).Whole() = %q, but Round(0) gives %q", in, got, round)
		}
	}
	// Sums and values past one decimal place round the same way.
	for _, s := range []string{"0.45", "0.55", "12.05", "1234.4999", "1234.5000", "7", "-2.5", "-2.4"} {
		n := meal.NumberOf(decimal.RequireFromString(s))
		if got, want := n.Whole(), n.Decimal().Round(0).String(); got != want {
			t.Errorf("Whole(%s) = %q, want %q", s, got, want)
		}
	}
}

func FuzzParseNumber(f *testing.F) {
	for _, s := range []string{"12.5", "12,5", "-1", "1e400", "NaN", ".5", "0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := meal.ParseNumber(s, meal.MaxKcal)
		if err != nil || n == nil {
			return
		}
		d := n.Decimal()
		if d.IsNegative() || d.GreaterThan(meal.MaxKcal) || !d.Equal(d.Truncate(1)) {
			t.Fatalf("ParseNumber(%q) = %s, outside the rules", s, d)
		}
		// What is accepted prints back to something that parses to itself.
		again, err := meal.ParseNumber(n.String(), meal.MaxKcal)
		if err != nil || !again.Decimal().Equal(d) {
			t.Fatalf("ParseNumber(%q) = %s, which does not parse back: %v", s, n, err)
		}
	})
}

// TestNumberRoundTrip sends numbers through the real SDK and the emulator
// and through JSON, and checks they come back exact.
func TestNumberRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, tables := apptest.Local(t)
	store := meal.NewStore(env.DynamoDB, tables.Meals.Name)

	num := func(s string) *meal.Number {
		n, err := meal.ParseNumber(s, meal.MaxKcal)
		if err != nil {
			t.Fatalf("ParseNumber(%q): %v", s, err)
		}
		return n
	}
	// 0.1 + 0.2 computed in decimal stays exactly 0.3.
	sum := meal.NumberOf(num("0.1").Decimal().Add(num("0.2").Decimal()))
	three := 3
	for _, tc := range []struct {
		name     string
		m        meal.Meal
		wantJSON map[string]any
	}{
		{"all set", meal.Meal{Kcal: num("12.5"), ProteinG: num("0"), CarbsG: &sum, FatG: num("5000"), Hunger: &three},
			map[string]any{"kcal": "12.5", "protein_g": "0", "carbs_g": "0.3", "fat_g": "5000", "hunger": "3"}},
		{"blank numbers are absent", meal.Meal{Kcal: num("19999.9")},
			map[string]any{"kcal": "19999.9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.m
			m.UserID, m.Date, m.Time, m.Kind = "u-"+tc.name, "2026-09-01", "12:00:00", meal.Lunch
			m.CreatedAt, m.UpdatedAt = time.Unix(0, 0).UTC(), time.Unix(0, 0).UTC()
			if err := store.Create(ctx, &m); err != nil {
				t.Fatal(err)
			}
			d, _ := meal.ParseDate("2026-09-01")
			got, err := store.Get(ctx, m.UserID, d, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(b, &raw); err != nil {
				t.Fatal(err)
			}
			for _, field := range []string{"kcal", "protein_g", "carbs_g", "fat_g", "hunger", "fullness"} {
				want, ok := tc.wantJSON[field]
				v, present := raw[field]
				if !ok {
					if present {
						t.Errorf("JSON %s = %s, want absent", field, v)
					}
					continue
				}
				// The JSON text must be the bare number: 12.5, never "12.5".
				if string(v) != want {
					t.Errorf("JSON %s = %s, want the number %s", field, v, want)
				}
			}
		})
	}
}
