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
	// Pending is the token of a photo kept from an earlier submission of
	// this form (photo.KeepPending), "" if none.
	Pending string
	// Taken is the chosen photo's capture time as the page script read it
	// from the original's EXIF ("2006-01-02T15:04:05"), for a photo the
	// browser downscaled, which drops EXIF; "" if unknown.
	Taken string
	// FixedDate marks a form opened for one day (the day's "+" link,
	// /meals/new?date=): its date is the owner's choice, so a photo only
	// sets the time, and only if it was taken that day (fileByPhoto).
	FixedDate bool
	// ConfirmFuture: the owner confirmed a date more than a day ahead.
	ConfirmFuture bool
	Errors        map[string]string
}

// FormFrom reads a submitted form.
func FormFrom(v url.Values) Form {
	return Form{
		Date: strings.TrimSpace(v.Get("date")), Time: strings.TrimSpace(v.Get("time")),
		Kind: v.Get("kind"), Notes: v.Get("notes"),
		Kcal: v.Get("kcal"), ProteinG: v.Get("protein_g"), CarbsG: v.Get("carbs_g"), FatG: v.Get("fat_g"),
		Hunger: v.Get("hunger"), Fullness: v.Get("fullness"),
		DefaultDate: v.Get("default_date"), DefaultTime: v.Get("default_time"),
		Pending: v.Get("pending"), Taken: v.Get("taken"), ConfirmFuture: v.Get("confirm_future") == "1",
		FixedDate: v.Get("fixed_date") == "1",
	}
}

// numberField is one optional number of the form: its input name, its
// label (the form shows it, and every message about the field uses the
// same words), and its limit; scale fields are whole numbers 1 to 5.
type numberField struct {
	name, label string
	max         decimal.Decimal
	scale       bool
	// legend and hint head a scale's radio buttons: "Hunger before",
	// "1 not hungry · 5 very hungry".
	legend, hint string
}

// numberFields are the form's optional numbers, in form order (DESIGN.md,
// meal attributes).
var numberFields = []numberField{
	{"kcal", "Energy (kcal)", MaxKcal, false, "", ""},
	{"protein_g", "Protein (g)", MaxGrams, false, "", ""},
	{"carbs_g", "Carbs (g)", MaxGrams, false, "", ""},
	{"fat_g", "Fat (g)", MaxGrams, false, "", ""},
	{"hunger", "Hunger before (1–5)", decimal.NewFromInt(5), true, "Hunger before", "1 not hungry · 5 very hungry"},
	{"fullness", "Fullness after (1–5)", decimal.NewFromInt(5), true, "Fullness after", "1 not full · 5 very full"},
}

// text returns the form's text of field name.
func (f *Form) text(name string) string {
	switch name {
	case "kcal":
		return f.Kcal
	case "protein_g":
		return f.ProteinG
	case "carbs_g":
		return f.CarbsG
	case "fat_g":
		return f.FatG
	case "hunger":
		return f.Hunger
	case "fullness":
		return f.Fullness
	}
	return ""
}

// NumberInput is one number input as the form template shows it, with
// the messages the page script shows when it checks the field before
// sending (the same words the server uses; the server stays the
// authority). A scale (hunger, fullness) is a row of radio buttons named
// after it, "None" (blank) and 1 to 5, which need no script.
type NumberInput struct {
	Name, Label, Value, Err string
	// Scale marks a whole number from 1 to 5; Max is the largest value.
	Scale bool
	Max   string
	// Legend, Hint and Choices are a scale's radio buttons: the group's
	// name, what 1 and 5 mean, and the six choices, the one matching
	// Value checked (none when Value is no choice, as after a refusal).
	Legend, Hint string
	Choices      []ScaleChoice
	// Messages the page script shows: not a number, negative, too many
	// decimals, too large (for a scale: any of them is MsgNumber).
	MsgNumber, MsgNegative, MsgPrecise, MsgLarge string
}

// Numbers returns the number inputs of f, with values and errors.
func (f *Form) Numbers() []NumberInput {
	out := make([]NumberInput, len(numberFields))
	for i, nf := range numberFields {
		in := NumberInput{Name: nf.name, Label: nf.label, Value: f.text(nf.name), Err: f.Errors[nf.name], Scale: nf.scale, Max: nf.max.String()}
		if nf.scale {
			in.MsgNumber = scaleMessage(nf.label)
			in.Legend, in.Hint = nf.legend, nf.hint
			in.Choices = scaleChoices(strings.TrimSpace(in.Value))
		} else {
			in.MsgNumber = numberMessage(nf, ErrNotNumber)
			in.MsgNegative = numberMessage(nf, ErrNegative)
			in.MsgPrecise = numberMessage(nf, ErrTooPrecise)
			in.MsgLarge = numberMessage(nf, ErrNumberLarge)
		}
		out[i] = in
	}
	return out
}

// ScaleChoice is one radio button of a scale: its value ("" for none,
// "1" to "5"), its label and whether it is chosen.
type ScaleChoice struct {
	Value, Label string
	Checked      bool
}

// scaleChoices are a scale's six radio buttons with v's checked.
func scaleChoices(v string) []ScaleChoice {
	out := []ScaleChoice{{"", "None", v == ""}}
	for _, c := range []string{"1", "2", "3", "4", "5"} {
		out = append(out, ScaleChoice{c, c, v == c})
	}
	return out
}

// numberMessage words a ParseNumber refusal of field nf.
func numberMessage(nf numberField, err error) string {
	if errors.Is(err, ErrNumberLarge) {
		return fmt.Sprintf("%s %s: at most %s.", nf.label, err, nf.max)
	}
	return fmt.Sprintf("%s %s.", nf.label, err)
}

func scaleMessage(label string) string {
	return label + " must be a whole number from 1 to 5, or left blank."
}

// Form-level messages of Validate and the handlers, also shown by the page
// script.
const (
	MsgEmpty  = "Add a photo, notes or a number: an empty meal is not saved."
	MsgFuture = "This date is more than a day ahead. Check it, or tick “The date is right” to save it anyway."
)

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
// user, key or timestamps). today is the owner's current date: a date more
// than a day after it needs ConfirmFuture. Notes are refused as checkNotes
// says; the form then shows them cleaned and cut to MaxNotes, so a refused
// page never echoes more than that. ok is false if any field is bad;
// f.Errors then has one message per bad field. Whether the meal is empty
// (no photo, notes or number) is the caller's to check (Empty), as only it
// knows about the photo.
func (f *Form) Validate(today Date) (m Meal, ok bool) {
	f.Errors = map[string]string{}
	if d, err := ParseDate(f.Date); err != nil {
		f.Errors["date"] = fmt.Sprintf("Date must be a real day from %d to %d, written like 2026-09-01.", MinYear, MaxYear)
	} else if today.AddDays(1).Before(d) && !f.ConfirmFuture {
		f.Errors["date"] = MsgFuture
	}
	if t, err := ParseTimeOfDay(f.Time); err != nil {
		f.Errors["time"] = "Time must be a time of day like 12:30 (24-hour clock)."
	} else {
		m.Time = t.String()
	}
	m.Date = f.Date
	m.Kind = Kind(f.Kind)
	if !validKind(m.Kind) {
		f.Errors["kind"] = "Choose breakfast, lunch, dinner, snack or drink."
	}

	notes := strings.ReplaceAll(f.Notes, "\r\n", "\n")
	if msg, shown := checkNotes(notes); msg != "" {
		f.Errors["notes"], f.Notes = msg, shown
	}
	m.Notes = strings.TrimSpace(notes)

	for _, nf := range numberFields {
		text := strings.TrimSpace(f.text(nf.name))
		if nf.scale {
			if text == "" {
				continue
			}
			if len(text) != 1 || text[0] < '1' || text[0] > '5' {
				f.Errors[nf.name] = scaleMessage(nf.label)
				continue
			}
			v := int(text[0] - '0')
			if nf.name == "hunger" {
				m.Hunger = &v
			} else {
				m.Fullness = &v
			}
			continue
		}
		n, err := ParseNumber(text, nf.max)
		if err != nil {
			f.Errors[nf.name] = numberMessage(nf, err)
			continue
		}
		switch nf.name {
		case "kcal":
			m.Kcal = n
		case "protein_g":
			m.ProteinG = n
		case "carbs_g":
			m.CarbsG = n
		case "fat_g":
			m.FatG = n
		}
	}
	return m, len(f.Errors) == 0
}

// Empty reports whether m has nothing worth saving: no notes and no
// number (the caller checks the photo).
func (m *Meal) Empty() bool {
	return m.Notes == "" && m.Kcal == nil && m.ProteinG == nil && m.CarbsG == nil && m.FatG == nil && m.Hunger == nil && m.Fullness == nil
}

// TakenAt returns the capture time the page script sent (Form.Taken), or
// the zero time if it is missing or not a plausible camera time: from
// 1990 to a day after now.
func (f *Form) TakenAt(now time.Time) time.Time {
	t, err := time.Parse("2006-01-02T15:04:05", f.Taken)
	if err != nil || t.Year() < 1990 || t.After(now.Add(48*time.Hour)) {
		return time.Time{}
	}
	return t
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
	n := utf8.RuneCountInString(notes)
	r, bad := text.Refused(notes, true)
	switch {
	case !utf8.ValidString(notes):
		msg = "Notes contained bytes that are not text; they were taken out of the field. Check the notes and save again."
	case bad:
		msg = fmt.Sprintf("Notes may not contain %s: only letters, line breaks, tabs and other visible text. Every such character was taken out of the field; check the notes and save again.", text.Name(r))
	case n > MaxNotes:
		msg = fmt.Sprintf("Notes may be at most %d characters; these are %d. Below are the first %d; shorten them and save again.", MaxNotes, n, MaxNotes)
	default:
		return "", ""
	}
	return msg, text.Without(notes, true, MaxNotes)
}
