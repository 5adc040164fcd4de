package meal

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shopspring/decimal"
)

// Number is a non-negative meal quantity (kcal or grams) with at most one
// decimal place, held exactly as a decimal. It has two edges (CLAUDE.md):
// in, form text parses straight into it (ParseNumber), never via float64;
// out, it is a DynamoDB N, its String on pages, and a bare JSON number.
// Optional fields are *Number: nil is blank, stored as an absent attribute,
// never 0 and never NULL.
type Number struct{ d decimal.Decimal }

// Limits of ParseNumber (DESIGN.md, meal attributes).
var (
	MaxKcal  = decimal.NewFromInt(20000)
	MaxGrams = decimal.NewFromInt(5000)
)

// Errors of ParseNumber, worded for the form.
var (
	ErrNotNumber   = errors.New("must be a number like 12 or 12.5")
	ErrNegative    = errors.New("must not be negative")
	ErrTooPrecise  = errors.New("may have at most one decimal place")
	ErrNumberLarge = errors.New("is larger than any meal could be")
)

// ParseNumber parses form text into a Number no larger than max. Blank text
// returns nil, nil. A decimal comma is accepted ("12,5" is 12.5). Refused:
// anything but digits with one optional separator (so NaN, Infinity, 1e400,
// +5, hex and spaces inside), negatives, more than one decimal place that
// is not a trailing zero, and values above max.
func ParseNumber(s string, max decimal.Decimal) (*Number, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if strings.HasPrefix(s, "-") && len(s) > 1 && plainDecimal(s[1:]) {
		return nil, ErrNegative
	}
	if !plainDecimal(s) {
		return nil, ErrNotNumber
	}
	if len(s) > 16 {
		return nil, ErrNumberLarge // digits only, but far too many
	}
	d, err := decimal.NewFromString(strings.Replace(s, ",", ".", 1))
	if err != nil {
		return nil, ErrNotNumber
	}
	if !d.Equal(d.Truncate(1)) {
		return nil, ErrTooPrecise
	}
	if d.GreaterThan(max) {
		return nil, ErrNumberLarge
	}
	return &Number{d.Truncate(1)}, nil
}

// plainDecimal reports whether s is digits with at most one '.' or ',' and
// at least one digit: "12", "12.5", "12,5", ".5", "12.".
func plainDecimal(s string) bool {
	seenSep, seenDigit := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			seenDigit = true
		case (c == '.' || c == ',') && !seenSep:
			seenSep = true
		default:
			return false
		}
	}
	return seenDigit
}

// NumberOf returns the Number for d, for tests and sums. It does not check
// the form's limits.
func NumberOf(d decimal.Decimal) Number { return Number{d} }

// Decimal returns the exact value.
func (n Number) Decimal() decimal.Decimal { return n.d }

// String returns the value as typed back to a person: "12.5", "0", "300".
func (n Number) String() string { return n.d.String() }

// Whole returns the value rounded to a whole number, half away from zero,
// as pages show kcal: "491" for 491.4, "492" for 491.5, "0" for 0.3. The
// number itself keeps its decimal as typed (the edit form, the exports and
// JSON show that); a sum is rounded once, after adding the exact values,
// so a day's total and the month's average agree with each other.
func (n Number) Whole() string {
	// From the decimal's own text: a month page shows 120 of these, and
	// Round works through big integers (BenchmarkMonthPage).
	s := n.d.String()
	dot := strings.IndexByte(s, '.')
	switch {
	case dot < 0:
		return s
	case s[0] == '-':
		return n.d.Round(0).String()
	case s[dot+1] < '5':
		return s[:dot]
	}
	// Up by one: carry through the nines ("999.5" is "1000").
	b := []byte(s[:dot])
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < '9' {
			b[i]++
			return string(b)
		}
		b[i] = '0'
	}
	return "1" + string(b)
}

// MarshalJSON writes a bare JSON number (12.5), never a quoted string.
func (n Number) MarshalJSON() ([]byte, error) { return []byte(n.d.String()), nil }

// UnmarshalJSON reads a JSON number.
func (n *Number) UnmarshalJSON(b []byte) error {
	d, err := decimal.NewFromString(string(b))
	if err != nil {
		return fmt.Errorf("meal: number %s: %w", b, err)
	}
	n.d = d
	return nil
}

// MarshalDynamoDBAttributeValue stores the number as a DynamoDB N. Without
// it, attributevalue would write decimal.Decimal as an empty map.
func (n Number) MarshalDynamoDBAttributeValue() (types.AttributeValue, error) {
	return &types.AttributeValueMemberN{Value: n.d.String()}, nil
}

// UnmarshalDynamoDBAttributeValue reads a DynamoDB N exactly; any other
// attribute type is an error, never a silent 0.
func (n *Number) UnmarshalDynamoDBAttributeValue(av types.AttributeValue) error {
	v, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		return fmt.Errorf("meal: number stored as %T, want N", av)
	}
	d, err := decimal.NewFromString(v.Value)
	if err != nil {
		return fmt.Errorf("meal: number %q: %w", v.Value, err)
	}
	n.d = d
	return nil
}
