package meal

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"ndiro/internal/text"
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
// user, key or timestamps). Notes are refused as checkNotes says; the
// form then shows them cleaned and cut to MaxNotes, so a refused page
// never echoes more than that. With keyFixed (editing), date and time are not
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
	if msg, shown := checkNotes(notes); msg != "" {
		f.Errors["notes"], f.Notes = msg, shown
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

// checkNotes checks notes (newlines already "\n") against DESIGN.md's
// meal attributes: at most MaxNotes characters of UTF-8 text, and none of
// the characters text.Refused refuses in multi-line text (control
// characters other than newline and tab; the bidirectional override and
// isolate characters U+202A–U+202E and U+2066–U+2069). These are refused,
// not removed silently: the message names the first one, and shown is the
// notes without any of them (and without bytes that are not UTF-8), cut
// to MaxNotes characters, for the form to show. Good notes give "", "".
func checkNotes(notes string) (msg, shown string) {
	shown = text.Without(strings.ToValidUTF8(notes, ""), true)
	if n := utf8.RuneCountInString(shown); n > MaxNotes {
		shown = string([]rune(shown)[:MaxNotes])
	}
	n := utf8.RuneCountInString(notes)
	r, bad := text.Refused(notes, true)
	switch {
	case !utf8.ValidString(notes):
		msg = "Notes contained bytes that are not text; they were taken out below. Check the notes and save again."
	case bad:
		msg = fmt.Sprintf("Notes may not contain %s: only letters, line breaks, tabs and other visible text. Every such character was taken out below; check the notes and save again.", text.Name(r))
	case n > MaxNotes:
		msg = fmt.Sprintf("Notes may be at most %d characters; these are %d. Below are the first %d; shorten them and save again.", MaxNotes, n, MaxNotes)
	default:
		return "", ""
	}
	return msg, shown
}
