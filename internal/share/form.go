package share

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"ndiro/internal/meal"
	"ndiro/internal/text"
)

// Form is the owner's create-share form, as typed. Notes and Numbers are
// checkbox values: "1" (ticked) or "" (not sent).
type Form struct {
	Label   string
	From    string
	To      string
	Expiry  string // "never" or a number of days from ExpiryChoices
	Notes   string
	Numbers string
	// Comments is the "Let them comment" checkbox.
	Comments string
	// Errors holds one message per field name ("label", "from", "to",
	// "expiry", "notes", "numbers", "comments").
	Errors map[string]string
}

// DefaultForm is the create form as first shown at now, a time in the
// owner's zone: the last DefaultDays days ending today there, expiring in
// 30 days, notes and numbers shown, comments off.
func DefaultForm(now time.Time) Form {
	today := meal.DateOf(now)
	return Form{
		From:    today.AddDays(-(DefaultDays - 1)).String(),
		To:      today.String(),
		Expiry:  "30",
		Notes:   "1",
		Numbers: "1",
	}
}

// Parse checks the form and returns the share it describes for ownerID,
// created at now. A label must be one line of at most MaxLabel
// characters without the characters text.Refused refuses in one-line
// text (control and format characters, the bidirectional overrides
// among them); a refused label is shown again cleaned and cut to
// MaxLabel. Messages are per field in f.Errors; ok is false if
// there is any, and then nothing may be written.
func (f *Form) Parse(ownerID string, now time.Time) (sh Share, ok bool) {
	f.Errors = map[string]string{}
	label := strings.TrimSpace(f.Label)
	bad, refused := text.Refused(label, false)
	switch {
	case label == "":
		f.Errors["label"] = "Give the link a label, such as who it is for."
	case !utf8.ValidString(label):
		f.Errors["label"] = "The label contained bytes that are not text; they were taken out of the field. Check the label and save again."
	case utf8.RuneCountInString(label) > MaxLabel:
		f.Errors["label"] = fmt.Sprintf("A label may have at most %d characters.", MaxLabel)
	case refused:
		f.Errors["label"] = fmt.Sprintf("A label may not hold %s (nor line breaks, control or invisible formatting characters); the field holds the label without them.", text.Name(bad))
	}
	if f.Errors["label"] != "" {
		// Shown again cleaned and cut to the limit, never echoed whole.
		f.Label = text.Without(f.Label, false, MaxLabel)
	}
	from, errFrom := meal.ParseDate(strings.TrimSpace(f.From))
	if errFrom != nil {
		f.Errors["from"] = fmt.Sprintf("The first day must be a real day written like 2026-09-01, between %d and %d.", meal.MinYear, meal.MaxYear)
	}
	to, errTo := meal.ParseDate(strings.TrimSpace(f.To))
	if errTo != nil {
		f.Errors["to"] = fmt.Sprintf("The last day must be a real day written like 2026-09-14, between %d and %d.", meal.MinYear, meal.MaxYear)
	}
	if errFrom == nil && errTo == nil {
		switch n := from.DaysUntil(to) + 1; {
		case to.Before(from):
			f.Errors["to"] = "The last day must be on or after the first day."
		case n > MaxDays:
			f.Errors["to"] = fmt.Sprintf("A link may show at most %d days; this range has %d. Make it shorter, or make two links.", MaxDays, n)
		}
	}
	days, expiryOK := expiryDays(f.Expiry)
	if !expiryOK {
		f.Errors["expiry"] = "Choose when the link stops working: never, or after 7, 30 or 90 days."
	}
	notes, notesOK := checkbox(f.Notes)
	if !notesOK {
		f.Errors["notes"] = "Tick the box to show notes, or leave it empty."
	}
	numbers, numbersOK := checkbox(f.Numbers)
	if !numbersOK {
		f.Errors["numbers"] = "Tick the box to show numbers, or leave it empty."
	}
	comments, commentsOK := checkbox(f.Comments)
	if !commentsOK {
		f.Errors["comments"] = "Tick the box to let them comment, or leave it empty."
	}
	if len(f.Errors) > 0 {
		return Share{}, false
	}
	sh = Share{
		OwnerID:   ownerID,
		Label:     label,
		From:      from.String(),
		To:        to.String(),
		Notes:     notes,
		Numbers:   numbers,
		Comments:  comments,
		CreatedAt: now.UTC(),
	}
	if days > 0 {
		sh.ExpiresAt = now.Add(time.Duration(days) * 24 * time.Hour).Unix()
	}
	return sh, true
}

// expiryDays reads an expiry choice: "never" (or "0") is 0 days.
func expiryDays(s string) (int, bool) {
	s = strings.TrimSpace(s)
	if s == "never" {
		return 0, true
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, false
	}
	for _, c := range ExpiryChoices {
		if n == c {
			return n, true
		}
	}
	return 0, false
}

// checkbox reads a checkbox: absent is off, "1" (our value) or "on" (a
// browser's default) is on; anything else is not a checkbox.
func checkbox(s string) (on, ok bool) {
	switch s {
	case "":
		return false, true
	case "1", "on":
		return true, true
	}
	return false, false
}
