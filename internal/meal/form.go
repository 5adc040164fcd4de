package meal

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// Form is the add/edit meal form as typed, with one message per bad field.
// Field names are the form's input names.
type Form struct {
	// DefaultDate and DefaultTime are the date and time the form was first
	// shown with (the device's clock when the page script ran), carried
	// through corrections, to tell whether the owner changed them.
	DefaultDate, DefaultTime     string
	Date, Time, Kind, Notes      string
	Kcal, ProteinG, CarbsG, FatG string
	Hunger, Fullness             string
	Errors                       map[string]string
}

// FormFrom reads a submitted form.
func FormFrom(v url.Values) Form {
	return Form{
		Date: strings.TrimSpace(v.Get("date")), Time: strings.TrimSpace(v.Get("time")),
		Kind: v.Get("kind"), Notes: v.Get("notes"),
		Kcal: v.Get("kcal"), ProteinG: v.Get("protein_g"), CarbsG: v.Get("carbs_g"), FatG: v.Get("fat_g"),
		Hunger: v.Get("hunger"), Fullness: v.Get("fullness"),
		DefaultDate: v.Get("default_date"), DefaultTime: v.Get("default_time"),
	}
}

// DateTimeDefault reports whether date and time were left as first shown.
func (f *Form) DateTimeDefault() bool {
	return f.DefaultDate != "" && f.Date == f.DefaultDate && f.Time == f.DefaultTime
}

// FormOf returns the form showing m, for editing.
func FormOf(m *Meal) Form {
	f := Form{Date: m.Date, Time: m.HHMM(), Kind: string(m.Kind), Notes: m.Notes}
	str := func(n *Number) string {
		if n == nil {
			return ""
		}
		return n.String()
	}
	f.Kcal, f.ProteinG, f.CarbsG, f.FatG = str(m.Kcal), str(m.ProteinG), str(m.CarbsG), str(m.FatG)
	if m.Hunger != nil {
		f.Hunger = fmt.Sprint(*m.Hunger)
	}
	if m.Fullness != nil {
		f.Fullness = fmt.Sprint(*m.Fullness)
	}
	return f
}

// Validate checks every field and returns the meal it describes (without
// user, key or timestamps). With keyFixed (editing), date and time are not
// read: they are part of the key and cannot change. ok is false if any field
// is bad; f.Errors then has one message per bad field.
func (f *Form) Validate(keyFixed bool) (m Meal, ok bool) {
	f.Errors = map[string]string{}
	if !keyFixed {
		if _, err := ParseDate(f.Date); err != nil {
			f.Errors["date"] = "Date must be a real day, written like 2026-09-01."
		}
		if t, err := ParseTimeOfDay(f.Time); err != nil {
			f.Errors["time"] = "Time must be a time of day like 12:30 (24-hour clock)."
		} else {
			m.Time = t.String()
		}
		m.Date = f.Date
	}
	m.Kind = Kind(f.Kind)
	if !validKind(m.Kind) {
		f.Errors["kind"] = "Choose breakfast, lunch, dinner, snack or drink."
	}

	notes := strings.ReplaceAll(f.Notes, "\r\n", "\n")
	switch {
	case !utf8.ValidString(notes):
		f.Errors["notes"] = "Notes contain bytes that are not text; please retype them."
	case strings.ContainsRune(notes, 0):
		f.Errors["notes"] = "Notes contain a NUL character; please retype them."
	case utf8.RuneCountInString(notes) > MaxNotes:
		f.Errors["notes"] = fmt.Sprintf("Notes may be at most %d characters; these are %d.", MaxNotes, utf8.RuneCountInString(notes))
	}
	m.Notes = strings.TrimSpace(notes)

	num := func(field, label, text string, max decimal.Decimal) *Number {
		n, err := ParseNumber(text, max)
		switch {
		case errors.Is(err, ErrNumberLarge):
			f.Errors[field] = fmt.Sprintf("%s %s: at most %s.", label, err, max)
		case err != nil:
			f.Errors[field] = fmt.Sprintf("%s %s.", label, err)
		}
		return n
	}
	m.Kcal = num("kcal", "Energy (kcal)", f.Kcal, MaxKcal)
	m.ProteinG = num("protein_g", "Protein (g)", f.ProteinG, MaxGrams)
	m.CarbsG = num("carbs_g", "Carbohydrates (g)", f.CarbsG, MaxGrams)
	m.FatG = num("fat_g", "Fat (g)", f.FatG, MaxGrams)

	scale := func(field, label, text string) *int {
		text = strings.TrimSpace(text)
		if text == "" {
			return nil
		}
		if len(text) != 1 || text[0] < '1' || text[0] > '5' {
			f.Errors[field] = label + " must be a whole number from 1 to 5, or left blank."
			return nil
		}
		v := int(text[0] - '0')
		return &v
	}
	m.Hunger = scale("hunger", "Hunger", f.Hunger)
	m.Fullness = scale("fullness", "Fullness", f.Fullness)
	return m, len(f.Errors) == 0
}

// Defaults returns the form for a new meal eaten now: today's date and the
// time of day in now's location, and the kind that time suggests.
func Defaults(now time.Time) Form {
	t := TimeOfDayOf(now)
	d := DateOf(now).String()
	return Form{Date: d, Time: t.HHMM(), Kind: string(KindAt(t)), DefaultDate: d, DefaultTime: t.HHMM()}
}
