package meal

import (
	"strings"
	"testing"
)

func TestParseDate(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"2026-09-01", true},
		{"2028-02-29", true},
		{"2026-02-28", true},
		{"2026-02-29", false},
		{"2026-02-30", false},
		{"2026-13-01", false},
		{"2026-00-10", false},
		{"2026-09-31", false},
		{"2026-9-01", false},
		{"26-09-01", false},
		{"../x", false},
		{"2026-09-01#", false},
		{"0001-01-01", false},
		{"1969-12-31", false},
		{"1970-01-01", true},
		{"2999-12-31", true},
		{"3000-01-01", false},
		{"9999-12-31", false},
		{"+026-09-01", false},
		{"", false},
	} {
		_, err := ParseDate(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseDate(%q) error = %v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}

func TestParseTimeOfDay(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"00:00", "00:00:00"},
		{"23:59:59", "23:59:59"},
		{"12:30", "12:30:00"},
		{"25:00", ""},
		{"24:00", ""},
		{"12:60", ""},
		{"12:30:60", ""},
		{"7:30", ""},
		{"12.30", ""},
		{"", ""},
	} {
		got, err := ParseTimeOfDay(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("ParseTimeOfDay(%q) = %v, want error", tc.in, got)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("ParseTimeOfDay(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestParseID(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"123456-abcdef", true},
		{"000000-000000", true},
		{"235959-ffffff", true},
		{"245959-ffffff", false},
		{"126000-ffffff", false},
		{"123456-ABCDEF", false},
		{"123456-abcdeg", false},
		{"123456abcdef", false},
		{"123456-abcdef0", false},
		{"../../etc", false},
	} {
		_, err := ParseID(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseID(%q) error = %v, want ok=%v", tc.in, err, tc.ok)
		}
	}
	id := NewID(TimeOfDay{23, 5, 9})
	if !strings.HasPrefix(id, "230509-") {
		t.Errorf("NewID(23:05:09) = %q, want prefix 230509-", id)
	}
	if _, err := ParseID(id); err != nil {
		t.Errorf("ParseID(NewID()) = %v", err)
	}
}

func TestDayRange(t *testing.T) {
	d := func(s string) Date {
		v, err := ParseDate(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	lo, hi, err := DayRange(d("2026-08-28"), d("2026-09-03"))
	if err != nil || lo != "2026-08-28#" || hi != "2026-09-03#~" {
		t.Errorf("DayRange = %q %q %v, want 2026-08-28# 2026-09-03#~", lo, hi, err)
	}
	if _, _, err := DayRange(d("2026-09-03"), d("2026-08-28")); err != ErrBadRange {
		t.Errorf("DayRange(reversed) = %v, want ErrBadRange", err)
	}
	if _, _, err := DayRange(d("2026-01-01"), d("2026-04-03")); err != nil { // 93 days
		t.Errorf("DayRange(93 days) = %v, want nil", err)
	}
	if _, _, err := DayRange(d("2026-01-01"), d("2026-04-04")); err != ErrLongRange { // 94 days
		t.Errorf("DayRange(94 days) = %v, want ErrLongRange", err)
	}
	// Every key of every meal on the edge days sorts inside the bounds.
	for _, id := range []string{"000000-000000", "235959-ffffff"} {
		for _, day := range []string{"2026-08-28", "2026-09-03"} {
			if k := SortKey(d(day), id); k < lo || k > hi {
				t.Errorf("key %s outside [%s, %s]", k, lo, hi)
			}
		}
		for _, day := range []string{"2026-08-27", "2026-09-04"} {
			if k := SortKey(d(day), id); k >= lo && k <= hi {
				t.Errorf("key %s inside [%s, %s]", k, lo, hi)
			}
		}
	}
}

func TestMonth(t *testing.T) {
	for _, tc := range []struct{ in, last, prev, next string }{
		{"2026-01", "2026-01-31", "2025-12", "2026-02"},
		{"2026-04", "2026-04-30", "2026-03", "2026-05"},
		{"2026-02", "2026-02-28", "2026-01", "2026-03"},
		{"2028-02", "2028-02-29", "2028-01", "2028-03"},
		{"2026-12", "2026-12-31", "2026-11", "2027-01"},
	} {
		m, err := ParseMonth(tc.in)
		if err != nil {
			t.Fatalf("ParseMonth(%q) = %v", tc.in, err)
		}
		if m.Last().String() != tc.last || m.Prev().String() != tc.prev || m.Next().String() != tc.next || m.Prefix() != tc.in+"-" {
			t.Errorf("month %s: last %s prev %s next %s prefix %s", tc.in, m.Last(), m.Prev(), m.Next(), m.Prefix())
		}
	}
	for _, bad := range []string{"2026-9", "2026-13", "2026-00", "202609", "2026-09-01", "x"} {
		if _, err := ParseMonth(bad); err == nil {
			t.Errorf("ParseMonth(%q) = nil error, want error", bad)
		}
	}
}

func FuzzSortKey(f *testing.F) {
	f.Add("2026-09-01#123456-abcdef")
	f.Add("2028-02-29#000000-000000")
	f.Add("2026-02-30#123456-abcdef")
	f.Add("#")
	f.Fuzz(func(t *testing.T, sk string) {
		d, id, err := ParseSortKey(sk)
		if err != nil {
			return
		}
		// Whatever parses is canonical: building it again gives the input.
		if got := SortKey(d, id); got != sk {
			t.Fatalf("SortKey(ParseSortKey(%q)) = %q", sk, got)
		}
		if len(sk) != len("2026-09-01#123456-abcdef") {
			t.Fatalf("accepted key %q of length %d", sk, len(sk))
		}
	})
}

func FuzzParseDate(f *testing.F) {
	f.Add("2026-09-01")
	f.Add("2026-02-30")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDate(s)
		if err == nil && d.String() != s {
			t.Fatalf("ParseDate(%q).String() = %q", s, d.String())
		}
	})
}

// TestDerivedID: the same seed gives the same valid ID at the time, a
// different seed another.
func TestDerivedID(t *testing.T) {
	tod := TimeOfDay{12, 30, 5}
	a, b := DerivedID(tod, "imp#1"), DerivedID(tod, "imp#1")
	if a != b || !strings.HasPrefix(a, "123005-") {
		t.Errorf("DerivedID(12:30:05, imp#1) = %q then %q, want one ID starting 123005-", a, b)
	}
	if got, err := ParseID(a); err != nil || got != tod {
		t.Errorf("ParseID(DerivedID) = %v, %v; want 12:30:05", got, err)
	}
	if c := DerivedID(tod, "imp#2"); c == a {
		t.Errorf("DerivedID of two seeds = %q both", c)
	}
}
