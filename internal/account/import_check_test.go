package account

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"ndiro/internal/archive"
	"ndiro/internal/config"
	"ndiro/internal/meal"
	"ndiro/internal/share"
)

// TestLargestMealImports: a meal at every limit of the diary (notes of
// meal.MaxNotes characters, meal.MaxComments comments of
// meal.MaxCommentText characters with labels of share.MaxLabel, every
// character one the JSON writer escapes into 6 bytes), as archive.Write
// writes it, is within archive's MaxMealBytes: Open and checkMeals take
// it.
func TestLargestMealImports(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 9, 2, 10, 0, 0, 123456789, time.UTC)
	kcal, grams := meal.MaxKcal.Sub(decimal.RequireFromString("0.1")), meal.MaxGrams.Sub(decimal.RequireFromString("0.1"))
	am := archive.Meal{ID: "123000-abcdef", Date: "2026-09-01", Time: "12:30:00", Kind: "breakfast",
		Notes: strings.Repeat("<", meal.MaxNotes), Kcal: &kcal, ProteinG: &grams, CarbsG: &grams, FatG: &grams, Hunger: 5, Fullness: 5,
		PhotoTaken: "2026-09-01T12:29:59", CreatedAt: at, UpdatedAt: at}
	for i := range meal.MaxComments {
		am.Comments = append(am.Comments, archive.Comment{ID: meal.NewCommentID(at), ShareID: fmt.Sprintf("%016x", i),
			From: strings.Repeat("&", share.MaxLabel), Text: strings.Repeat(">", meal.MaxCommentText), At: at})
	}
	var buf bytes.Buffer
	src := archive.Source{Header: archive.Header{ExportedAt: at, Email: "a@example.com", TimeZone: "Europe/Rome"}, Meals: []archive.Meal{am}}
	if err := archive.Write(context.Background(), &buf, src); err != nil {
		t.Fatal(err)
	}
	a, err := archive.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()), archive.Limits{})
	if err != nil {
		t.Fatalf("Open(the largest meal) = %v; MaxMealBytes is %d", err, archive.DefaultLimits.MaxMealBytes)
	}
	if p := checkMeals(a.Meals()); p != "" {
		t.Fatalf("checkMeals(the largest meal) = %q", p)
	}
	for _, f := range a.Manifest().Files {
		if f.Name == archive.MealsFile {
			t.Logf("meals.json of the largest meal: %d bytes; MaxMealBytes %d", f.Size, archive.DefaultLimits.MaxMealBytes)
		}
	}
}

// TestQuotaExportImports: the export of a diary at the default meal
// quota (a photo a meal, and a few files) has fewer entries than the
// import reads, so an owner at the quota can move their diary whole.
func TestQuotaExportImports(t *testing.T) {
	if entries := config.DefaultQuotaMeals + 16; entries > archive.DefaultLimits.MaxEntries {
		t.Errorf("an export at NDIRO_QUOTA_MEALS's default (%d meals) may hold %d entries; the import reads at most %d",
			config.DefaultQuotaMeals, entries, archive.DefaultLimits.MaxEntries)
	}
}
