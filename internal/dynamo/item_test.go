package dynamo

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestSameItem(t *testing.T) {
	t.Parallel()
	type av = types.AttributeValue
	s := func(v string) av { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) av { return &types.AttributeValueMemberN{Value: v} }
	b := func(v string) av { return &types.AttributeValueMemberB{Value: []byte(v)} }
	ss := func(v ...string) av { return &types.AttributeValueMemberSS{Value: v} }
	ns := func(v ...string) av { return &types.AttributeValueMemberNS{Value: v} }
	bs := func(v ...string) av {
		out := make([][]byte, len(v))
		for i := range v {
			out[i] = []byte(v[i])
		}
		return &types.AttributeValueMemberBS{Value: out}
	}
	l := func(v ...av) av { return &types.AttributeValueMemberL{Value: v} }
	m := func(kv ...any) av {
		out := map[string]av{}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1].(av)
		}
		return &types.AttributeValueMemberM{Value: out}
	}
	boolean := func(v bool) av { return &types.AttributeValueMemberBOOL{Value: v} }
	null := &types.AttributeValueMemberNULL{Value: true}
	one := func(v av) map[string]av { return map[string]av{"a": v} }

	base := map[string]av{"sk": s("2026-09-01#123000-abcdef"), "kcal": n("512.50"), "hunger": n("4"),
		"tags": ss("a", "b")}
	for _, tc := range []struct {
		name string
		a, b map[string]av
		want bool
	}{
		{"itself", base, base, true},
		{"numbers by value, sets in any order", base, map[string]av{"sk": s("2026-09-01#123000-abcdef"), "kcal": n("512.5"), "hunger": n("4.0"),
			"tags": ss("b", "a")}, true},
		{"another number", base, map[string]av{"sk": s("2026-09-01#123000-abcdef"), "kcal": n("512.6"), "hunger": n("4"),
			"tags": ss("a", "b")}, false},
		{"a number as a string", base, map[string]av{"sk": s("2026-09-01#123000-abcdef"), "kcal": s("512.50"), "hunger": n("4"),
			"tags": ss("a", "b")}, false},
		{"an attribute fewer", base, map[string]av{"sk": s("2026-09-01#123000-abcdef"), "kcal": n("512.50"), "hunger": n("4")}, false},
		{"another attribute", base, map[string]av{"sk": s("2026-09-01#123000-abcdef"), "kcal": n("512.50"), "fullness": n("4"),
			"tags": ss("a", "b")}, false},
		{"nil", base, nil, false},
		{"nil and empty", nil, map[string]av{}, true},

		// A photo_v is a 19-digit number: float64 would call these equal.
		{"19 digits, one apart", one(n("1788000000123456789")), one(n("1788000000123456788")), false},
		{"19 digits, same value", one(n("1788000000123456789")), one(n("1788000000123456789.0")), true},
		{"exponent", one(n("1.5E2")), one(n("150")), true},
		{"negative zero", one(n("-0")), one(n("0")), true},
		{"number set by value in any order", one(ns("1.50", "10", "2")), one(ns("2.0", "1.5", "10")), true},
		{"number set, another member", one(ns("1.5", "10")), one(ns("1.5", "11")), false},
		{"number set, a member fewer", one(ns("1.5", "10")), one(ns("1.5")), false},
		{"string set, another member", one(ss("a", "b")), one(ss("a", "c")), false},
		{"string set is not a list of strings", one(ss("a", "b")), one(l(s("a"), s("b"))), false},
		{"string set is not a number set", one(ss("1", "2")), one(ns("1", "2")), false},
		{"binary", one(b("\x00\x01")), one(b("\x00\x01")), true},
		{"another binary", one(b("\x00\x01")), one(b("\x00\x02")), false},
		{"binary is not a string", one(b("x")), one(s("x")), false},
		{"binary set in any order", one(bs("x", "y")), one(bs("y", "x")), true},
		{"binary set, another member", one(bs("x", "y")), one(bs("x", "z")), false},
		{"bool", one(boolean(true)), one(boolean(true)), true},
		{"another bool", one(boolean(true)), one(boolean(false)), false},
		{"null", one(null), one(null), true},
		{"null is not false", one(null), one(boolean(false)), false},
		{"null is not a missing attribute", map[string]av{"a": null, "b": s("x")}, map[string]av{"b": s("x")}, false},
		{"list in order, numbers by value", one(l(n("1.0"), s("x"))), one(l(n("1"), s("x"))), true},
		{"list in another order", one(l(s("x"), s("y"))), one(l(s("y"), s("x"))), false},
		{"list a member longer", one(l(s("x"))), one(l(s("x"), s("x"))), false},
		{"map, nested numbers by value", one(m("k", n("2.50"), "l", l(ns("1", "2")))), one(m("l", l(ns("2", "1.0")), "k", n("2.5"))), true},
		{"map, nested difference", one(m("k", n("2.5"))), one(m("k", n("2.6"))), false},
		{"map, a key more", one(m("k", n("2.5"))), one(m("k", n("2.5"), "j", s(""))), false},
		{"map is not a list", one(m()), one(l()), false},
		{"unknown member type", one(&types.UnknownUnionMember{Tag: "X"}), one(&types.UnknownUnionMember{Tag: "X"}), false},
	} {
		if got := SameItem(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: SameItem = %v, want %v", tc.name, got, tc.want)
		}
		if got := SameItem(tc.b, tc.a); got != tc.want {
			t.Errorf("%s: SameItem swapped = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestNumberLess: the order number sets are sorted in before they are
// compared is a strict weak order even over text that is not a number.
func TestNumberLess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"2", "10", true},
		{"10", "2", false},
		{"1.50", "1.5", false},
		{"1.5", "1.50", false},
		{"-1", "0", true},
		{"9", "x", true},
		{"x", "9", false},
		{"x", "y", true},
		{"y", "x", false},
	} {
		if got := numberLess(attributevalue.Number(tc.a), attributevalue.Number(tc.b)); got != tc.want {
			t.Errorf("numberLess(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	// Text that is not a number equals nothing, not even itself.
	bad := map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "x"}}
	if SameItem(bad, bad) {
		t.Error(`SameItem of the number "x" with itself = true, want false`)
	}
}
