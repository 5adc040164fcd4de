package account

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"ndiro/internal/archive"
	"ndiro/internal/meal"
	"ndiro/internal/share"
	"ndiro/internal/text"
)

// checkMeals holds every meal of an archive that passed archive.Open to
// the rules of this diary's meals (DESIGN.md, meal attributes), before
// anything is imported: the format takes any text for a kind and any
// number, a diary does not. It returns the first meal's problem as a
// sentence a person can act on ("meals.json: meal 3: …"), or "".
func checkMeals(meals []archive.Meal) string {
	for i := range meals {
		if p := mealProblem(&meals[i]); p != "" {
			return fmt.Sprintf("meals.json: meal %d (%s %s): %s", i+1, meals[i].Date, meals[i].Time, p)
		}
	}
	return ""
}

// mealProblem says what of m a meal of this diary cannot hold, or "".
func mealProblem(m *archive.Meal) string {
	if _, err := meal.ParseDate(m.Date); err != nil {
		return fmt.Sprintf("the date must lie in the years %d to %d", meal.MinYear, meal.MaxYear)
	}
	if _, err := meal.ParseTimeOfDay(m.Time); err != nil {
		return "the time is not a time of day"
	}
	if !slices.Contains(meal.Kinds, meal.Kind(m.Kind)) {
		names := make([]string, len(meal.Kinds))
		for i, k := range meal.Kinds {
			names[i] = string(k)
		}
		return fmt.Sprintf("kind %q is not one of %s", m.Kind, strings.Join(names, ", "))
	}
	if p := textProblem("notes", m.Notes, meal.MaxNotes, true); p != "" {
		return p
	}
	for _, n := range []struct {
		name string
		d    *decimal.Decimal
		max  decimal.Decimal
	}{{"kcal", m.Kcal, meal.MaxKcal}, {"protein_g", m.ProteinG, meal.MaxGrams}, {"carbs_g", m.CarbsG, meal.MaxGrams}, {"fat_g", m.FatG, meal.MaxGrams}} {
		if n.d == nil {
			continue
		}
		if _, err := meal.ParseNumber(n.d.String(), n.max); err != nil {
			return fmt.Sprintf("%s %s %s", n.name, n.d.String(), err.Error())
		}
	}
	if len(m.Comments) > meal.MaxComments {
		return fmt.Sprintf("it has %d comments; a meal holds at most %d", len(m.Comments), meal.MaxComments)
	}
	for k, c := range m.Comments {
		if !share.ValidID(c.ShareID) {
			return fmt.Sprintf("comment %d's share_id is not a link's ID as ndiro writes them (16 lowercase hexadecimal digits)", k+1)
		}
		if p := textProblem(fmt.Sprintf("comment %d", k+1), c.Text, meal.MaxCommentText, true); p != "" {
			return p
		}
		if p := textProblem(fmt.Sprintf("comment %d's link label", k+1), c.From, share.MaxLabel, false); p != "" {
			return p
		}
	}
	return ""
}

// textProblem says what is wrong with free text s of field name that
// may hold max characters (and line breaks if multiline), or ""
// (internal/text).
func textProblem(name, s string, max int, multiline bool) string {
	switch {
	case !utf8.ValidString(s):
		return name + " is not valid UTF-8 text"
	case utf8.RuneCountInString(s) > max:
		return fmt.Sprintf("%s has %d characters; at most %d are taken", name, utf8.RuneCountInString(s), max)
	}
	if bad, refused := text.Refused(s, multiline); refused {
		return fmt.Sprintf("%s holds %s, which this diary does not keep", name, text.Name(bad))
	}
	return ""
}
