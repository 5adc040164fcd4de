package text

import "testing"

func TestRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		in        string
		multiline bool
		want      rune
		bad       bool
		without   string
		named     string
	}{
		{"plain notes", "Lentil soup\n\twith bread", true, 0, false, "Lentil soup\n\twith bread", ""},
		{"right-to-left override", "abc\u202Edef", true, 0x202E, true, "abcdef", "the text-direction character U+202E (right-to-left override)"},
		{"left-to-right embedding", "\u202Ax", true, 0x202A, true, "x", "the text-direction character U+202A (left-to-right embedding)"},
		{"pop directional isolate", "x\u2069", true, 0x2069, true, "x", "the text-direction character U+2069 (pop directional isolate)"},
		{"left-to-right isolate", "a\u2066b", false, 0x2066, true, "ab", "the text-direction character U+2066 (left-to-right isolate)"},
		{"bell", "ding\a", true, 0x07, true, "ding", "the control character U+0007"},
		{"NUL", "a\x00b", true, 0, true, "ab", "the control character U+0000"},
		{"lone carriage return", "a\rb", true, '\r', true, "ab", "a line break"},
		{"C1 control", "a\u0085b", true, 0x85, true, "ab", "the control character U+0085"},
		{"zero-width space in notes", "a\u200Bb", true, 0, false, "a\u200Bb", ""},
		{"zero-width space in a name", "a\u200Bb", false, 0x200B, true, "ab", "the invisible formatting character U+200B"},
		{"newline in a label", "Dr.\nRossi", false, '\n', true, "Dr.Rossi", "a line break"},
		{"tab in a label", "Dr.\tRossi", false, '\t', true, "Dr.Rossi", "a tab"},
		{"right-to-left text", "שלום مرحبا", false, 0, false, "שלום مرحبا", ""},
		{"just outside the ranges", "\u2029\u202F\u2065\u206A", true, 0, false, "\u2029\u202F\u2065\u206A", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, bad := Refused(tc.in, tc.multiline)
			if r != tc.want || bad != tc.bad {
				t.Errorf("Refused(%q, %v) = %U, %v, want %U, %v", tc.in, tc.multiline, r, bad, tc.want, tc.bad)
			}
			if got := Without(tc.in, tc.multiline, 100); got != tc.without {
				t.Errorf("Without(%q, %v, 100) = %q, want %q", tc.in, tc.multiline, got, tc.without)
			}
			if tc.bad {
				if got := Name(r); got != tc.named {
					t.Errorf("Name(%U) = %q, want %q", r, got, tc.named)
				}
			}
		})
	}
}

func TestWithoutCuts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in    string
		limit int
		want  string
	}{
		{"ééééé", 3, "ééé"},
		{"a\u202Eb\u202Ec\u202Ed", 3, "abc"},
		{"caf\xe9 \ufffd ok", 100, "caf \ufffd ok"},
		{"abc", 0, ""},
	} {
		if got := Without(tc.in, true, tc.limit); got != tc.want {
			t.Errorf("Without(%q, true, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
		}
	}
}
