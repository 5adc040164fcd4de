package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// sha is the SHA-256 of s in hex.
func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestContentKey: the key changes with every field it covers, and with
// none it leaves out; equal numbers written differently are one key.
func TestContentKey(t *testing.T) {
	t.Parallel()
	base := sampleMeals()[0]
	key := base.ContentKey()
	if len(key) != 64 {
		t.Fatalf("ContentKey = %q, want 64 hex digits", key)
	}
	for name, change := range map[string]func(*Meal){
		"date":      func(m *Meal) { m.Date = "2026-09-02" },
		"time":      func(m *Meal) { m.Time = "12:30:01" },
		"kind":      func(m *Meal) { m.Kind = "dinner" },
		"notes":     func(m *Meal) { m.Notes += " " },
		"kcal":      func(m *Meal) { m.Kcal = dec("512.6") },
		"kcal gone": func(m *Meal) { m.Kcal = nil },
		"protein_g": func(m *Meal) { m.ProteinG = dec("22") },
		"carbs_g":   func(m *Meal) { m.CarbsG = nil },
		"fat_g":     func(m *Meal) { m.FatG = dec("3") },
		"hunger":    func(m *Meal) { m.Hunger = 3 },
		"fullness":  func(m *Meal) { m.Fullness = 0 },
		// Fields run together must not collide: notes "a" + kind "b" is
		// not notes "" + kind "ab".
		"boundary": func(m *Meal) { m.Kind, m.Notes = m.Kind+m.Notes[:1], m.Notes[1:] },
		// Two numbers swapped are another meal.
		"swapped": func(m *Meal) { m.ProteinG, m.FatG = m.FatG, m.ProteinG },
	} {
		m := sampleMeals()[0]
		change(&m)
		if m.ContentKey() == key {
			t.Errorf("changing %s keeps the content key", name)
		}
	}
	for name, change := range map[string]func(*Meal){
		"id":           func(m *Meal) { m.ID = "999999-000000" },
		"created_at":   func(m *Meal) { m.CreatedAt = m.CreatedAt.AddDate(1, 0, 0) },
		"updated_at":   func(m *Meal) { m.UpdatedAt = m.UpdatedAt.AddDate(1, 0, 0) },
		"photo":        func(m *Meal) { m.Photo = nil; m.PhotoTaken = "" },
		"comments":     func(m *Meal) { m.Comments = nil },
		"kcal 512.50":  func(m *Meal) { m.Kcal = dec("512.50") },
		"protein 21.0": func(m *Meal) { m.ProteinG = dec("21.0") },
	} {
		m := sampleMeals()[0]
		change(&m)
		if m.ContentKey() != key {
			t.Errorf("changing %s changes the content key", name)
		}
	}
}
