// Package text checks the free text people type (meal notes, share
// labels, display names) for characters that have no place in it:
// control characters, and the Unicode bidirectional controls that make
// text display in another order than it was typed (the "Trojan Source"
// trick: a label that reads one way and is another). It knows no concept.
package text

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Refused returns the first character of s that free text may not hold,
// and true; or 0 and false if s holds none.
//
// Multi-line text (multiline true: meal notes) refuses the control
// characters (Unicode category Cc) other than newline U+000A and tab
// U+0009 — a carriage return too, so normalise "\r\n" first — and the
// bidirectional embedding, override and isolate characters U+202A–U+202E
// and U+2066–U+2069. One-line text (labels, names) refuses every control
// character and every format character (category Cf: the bidirectional
// controls, zero-width characters, soft hyphens and the like).
func Refused(s string, multiline bool) (rune, bool) {
	for _, r := range s {
		if refused(r, multiline) {
			return r, true
		}
	}
	return 0, false
}

func refused(r rune, multiline bool) bool {
	switch {
	case r == '\n' || r == '\t':
		return !multiline
	case unicode.IsControl(r):
		return true
	case Bidi(r):
		return true
	}
	return !multiline && unicode.In(r, unicode.Cf)
}

// Without returns what a form shows again of refused text: s without the
// characters Refused reports and without the bytes that are not valid
// UTF-8, cut to its first limit characters (runes) of what remains. It
// stops reading s once it has kept limit characters.
func Without(s string, multiline bool, limit int) string {
	var b strings.Builder
	for kept := 0; kept < limit && s != ""; {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		if r == utf8.RuneError && size == 1 || refused(r, multiline) {
			continue
		}
		b.WriteRune(r)
		kept++
	}
	return b.String()
}

// Bidi reports whether r is a bidirectional embedding, override or
// isolate character: U+202A–U+202E or U+2066–U+2069.
func Bidi(r rune) bool {
	return r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069
}

// bidiName is the Unicode name of the bidirectional control r, lower
// case, for messages.
func bidiName(r rune) string {
	switch r {
	case 0x202A:
		return "left-to-right embedding"
	case 0x202B:
		return "right-to-left embedding"
	case 0x202C:
		return "pop directional formatting"
	case 0x202D:
		return "left-to-right override"
	case 0x202E:
		return "right-to-left override"
	case 0x2066:
		return "left-to-right isolate"
	case 0x2067:
		return "right-to-left isolate"
	case 0x2068:
		return "first strong isolate"
	}
	return "pop directional isolate"
}

// Name names r for a message saying what to take out, e.g. "a line
// break", "the control character U+0007", "the text-direction character
// U+202E (right-to-left override)", "the invisible formatting character
// U+200B".
func Name(r rune) string {
	switch {
	case r == '\n' || r == '\r':
		return "a line break"
	case r == '\t':
		return "a tab"
	case Bidi(r):
		return fmt.Sprintf("the text-direction character %U (%s)", r, bidiName(r))
	case unicode.IsControl(r):
		return fmt.Sprintf("the control character %U", r)
	}
	return fmt.Sprintf("the invisible formatting character %U", r)
}
