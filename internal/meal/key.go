package meal

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The sort key of a meal is "YYYY-MM-DD#HHMMSS-xxxxxx": the date, then the
// meal ID, which is the client's time of day plus 6 random hex characters.
// Lexicographic order is therefore chronological order, a month is a
// begins_with, and days D1..D2 are BETWEEN "D1#" and "D2#~" because '~'
// sorts after every digit (DESIGN.md, data model).

// Errors of the key parsers.
var (
	ErrBadDate   = errors.New("date must be a real calendar date written YYYY-MM-DD")
	ErrBadTime   = errors.New("time must be HH:MM or HH:MM:SS on a 24-hour clock")
	ErrBadMonth  = errors.New("month must be written YYYY-MM")
	ErrBadMealID = errors.New("meal id must be HHMMSS-xxxxxx")
	ErrBadKey    = errors.New("sort key must be YYYY-MM-DD#HHMMSS-xxxxxx")
	ErrBadRange  = errors.New("the window must start on or before its end")
	ErrLongRange = errors.New("the window may span at most 93 days")
)

// MaxWindowDays is the longest day window, inclusive: about three months.
const MaxWindowDays = 93

// MinYear and MaxYear bound the dates ndiro accepts: no meal photo predates
// 1970, and keeping years far from 9999 keeps every month's neighbours
// valid, four-digit keys.
const MinYear, MaxYear = 1970, 2999

// Date is a calendar date with no time zone, written "2026-09-01".
type Date struct{ t time.Time } // midnight UTC

// ParseDate parses "YYYY-MM-DD" strictly: a year from MinYear to MaxYear, a real
// day of a real month (2026-02-30 and 2026-13-01 are errors). It returns
// ErrBadDate otherwise.
func ParseDate(s string) (Date, error) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' || !digits(s[:4]) || !digits(s[5:7]) || !digits(s[8:]) {
		return Date{}, ErrBadDate
	}
	y := atoi2(s[:2])*100 + atoi2(s[2:4])
	m, d := atoi2(s[5:7]), atoi2(s[8:])
	if y < MinYear || y > MaxYear || m < 1 || m > 12 || d < 1 {
		return Date{}, ErrBadDate
	}
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	if t.Day() != d { // time.Date rolled 31 April over into May
		return Date{}, ErrBadDate
	}
	return Date{t}, nil
}

// DateOf returns the calendar date of t in t's location.
func DateOf(t time.Time) Date {
	y, m, d := t.Date()
	return Date{time.Date(y, m, d, 0, 0, 0, 0, time.UTC)}
}

// String returns "YYYY-MM-DD".
func (d Date) String() string { return d.t.Format(time.DateOnly) }

// AddDays returns d moved by n days (n may be negative).
func (d Date) AddDays(n int) Date { return Date{d.t.AddDate(0, 0, n)} }

// Before reports whether d is earlier than e.
func (d Date) Before(e Date) bool { return d.t.Before(e.t) }

// DaysUntil returns the number of days from d to e (negative if e is
// earlier).
func (d Date) DaysUntil(e Date) int { return int((e.t.Unix() - d.t.Unix()) / 86400) }

// Time returns midnight UTC of d, for formatting.
func (d Date) Time() time.Time { return d.t }

// Month returns the month d falls in.
func (d Date) Month() Month {
	return Month{time.Date(d.t.Year(), d.t.Month(), 1, 0, 0, 0, 0, time.UTC)}
}

// Month is a calendar month, written "2026-09".
type Month struct{ t time.Time } // first day, midnight UTC

// ParseMonth parses "YYYY-MM" strictly, or returns ErrBadMonth.
func ParseMonth(s string) (Month, error) {
	if len(s) != 7 || s[4] != '-' || !digits(s[:4]) || !digits(s[5:]) {
		return Month{}, ErrBadMonth
	}
	t, err := time.Parse("2006-01", s)
	if err != nil || t.Year() < MinYear || t.Year() > MaxYear {
		return Month{}, ErrBadMonth
	}
	return Month{t}, nil
}

// String returns "YYYY-MM".
func (m Month) String() string { return m.t.Format("2006-01") }

// First and Last return the month's first and last days.
func (m Month) First() Date { return Date(m) }

// Last returns the month's last day (28 to 31 days after First, less one).
func (m Month) Last() Date { return Date{m.t.AddDate(0, 1, -1)} }

// InRange reports whether m lies within MinYear..MaxYear.
func (m Month) InRange() bool { return m.t.Year() >= MinYear && m.t.Year() <= MaxYear }

// Prev and Next return the neighbouring months.
func (m Month) Prev() Month { return Month{m.t.AddDate(0, -1, 0)} }

// Next returns the following month.
func (m Month) Next() Month { return Month{m.t.AddDate(0, 1, 0)} }

// Time returns midnight UTC of the month's first day, for formatting.
func (m Month) Time() time.Time { return m.t }

// Prefix returns the begins_with argument for the month: "2026-09-".
func (m Month) Prefix() string { return m.String() + "-" }

// TimeOfDay is a client-supplied time of day, stored "HH:MM:SS".
type TimeOfDay struct{ h, m, s int }

// ParseTimeOfDay parses "HH:MM" or "HH:MM:SS" (what <input type=time>
// sends) on a 24-hour clock; 25:00 and 12:60 are ErrBadTime.
func ParseTimeOfDay(s string) (TimeOfDay, error) {
	if len(s) == 5 {
		s += ":00"
	}
	if len(s) != 8 || s[2] != ':' || s[5] != ':' || !digits(s[:2]) || !digits(s[3:5]) || !digits(s[6:]) {
		return TimeOfDay{}, ErrBadTime
	}
	t := TimeOfDay{atoi2(s[:2]), atoi2(s[3:5]), atoi2(s[6:])}
	if t.h > 23 || t.m > 59 || t.s > 59 {
		return TimeOfDay{}, ErrBadTime
	}
	return t, nil
}

// TimeOfDayOf returns the wall-clock time of t in t's location.
func TimeOfDayOf(t time.Time) TimeOfDay {
	return TimeOfDay{t.Hour(), t.Minute(), t.Second()}
}

// String returns "HH:MM:SS".
func (t TimeOfDay) String() string { return fmt.Sprintf("%02d:%02d:%02d", t.h, t.m, t.s) }

// HHMM returns "HH:MM", as the time input shows it.
func (t TimeOfDay) HHMM() string { return fmt.Sprintf("%02d:%02d", t.h, t.m) }

// Hour returns the hour, 0 to 23.
func (t TimeOfDay) Hour() int { return t.h }

func (t TimeOfDay) compact() string { return fmt.Sprintf("%02d%02d%02d", t.h, t.m, t.s) }

// NewID returns a fresh meal ID for a meal at t: "HHMMSS-" and 6 random
// lower-case hex characters.
func NewID(t TimeOfDay) string {
	b := make([]byte, 3)
	rand.Read(b) // never fails (crypto/rand)
	return t.compact() + "-" + hex.EncodeToString(b)
}

// DerivedID returns the meal ID for a meal at t whose 6 hex characters
// are the first of SHA-256(seed) rather than random: "HHMMSS-" and 6
// lower-case hex characters, the same for the same seed every time (an
// import claims meal i of its archive under the ID derived from its own
// ID and i, so a resumed import finds its claim again).
func DerivedID(t TimeOfDay, seed string) string {
	sum := sha256.Sum256([]byte(seed))
	return t.compact() + "-" + hex.EncodeToString(sum[:3])
}

// ParseID checks that id is "HHMMSS-xxxxxx" with a valid time of day and
// lower-case hex, and returns that time of day, or ErrBadMealID.
func ParseID(id string) (TimeOfDay, error) {
	if len(id) != 13 || id[6] != '-' || !digits(id[:6]) || !lowerHex(id[7:]) {
		return TimeOfDay{}, ErrBadMealID
	}
	t := TimeOfDay{atoi2(id[:2]), atoi2(id[2:4]), atoi2(id[4:6])}
	if t.h > 23 || t.m > 59 || t.s > 59 {
		return TimeOfDay{}, ErrBadMealID
	}
	return t, nil
}

// SortKey returns the meals sort key "YYYY-MM-DD#HHMMSS-xxxxxx".
func SortKey(d Date, id string) string { return d.String() + "#" + id }

// ParseSortKey splits a sort key into its date and meal ID, checking both,
// or returns ErrBadKey.
func ParseSortKey(sk string) (Date, string, error) {
	date, id, ok := strings.Cut(sk, "#")
	if !ok {
		return Date{}, "", ErrBadKey
	}
	d, err := ParseDate(date)
	if err != nil {
		return Date{}, "", ErrBadKey
	}
	if _, err := ParseID(id); err != nil {
		return Date{}, "", ErrBadKey
	}
	return d, id, nil
}

// DayRange returns the sort-key bounds for every meal from day from through
// day to, inclusive: "2026-08-28#" and "2026-09-03#~". It returns
// ErrBadRange if to is before from and ErrLongRange if the window is longer
// than MaxWindowDays.
func DayRange(from, to Date) (lo, hi string, err error) {
	if to.Before(from) {
		return "", "", ErrBadRange
	}
	if from.DaysUntil(to)+1 > MaxWindowDays {
		return "", "", ErrLongRange
	}
	lo, hi = DayBounds(from, to)
	return lo, hi, nil
}

// DayBounds returns the sort-key bounds of every meal from day from
// through day to, inclusive, as DayRange does but for a range of any
// length (a share's, up to a year, read by Adjacent with Limit 1).
func DayBounds(from, to Date) (lo, hi string) {
	return from.String() + "#", to.String() + "#~"
}

// KeyBelow and KeyAbove bound the sort keys below and above sk, for a
// key condition that must exclude sk itself (BETWEEN is inclusive): every
// sort key has the same length (SortKey: "YYYY-MM-DD#HHMMSS-xxxxxx"), so
// a key k is below sk exactly when k ≤ KeyBelow(sk), sk with its last
// character lowered by one and "~" after it, and above sk exactly when
// k ≥ KeyAbove(sk), sk followed by "~". sk must be a sort key
// (ParseSortKey).
func KeyBelow(sk string) string {
	return sk[:len(sk)-1] + string(sk[len(sk)-1]-1) + "~"
}

// KeyAbove is the lowest key above every key that begins with sk: sk
// followed by "~" (see KeyBelow).
func KeyAbove(sk string) string { return sk + "~" }

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) > 0
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func atoi2(s string) int { return int(s[0]-'0')*10 + int(s[1]-'0') }
