package store

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestSize: items are sized as DynamoDB's developer guide sizes them
// ("Item sizes and formats"): UTF-8 bytes of names and strings, a
// number's significant digits halved and one more, one byte for BOOL and
// NULL, three for a map or list and one per element.
func TestSize(t *testing.T) {
	for _, c := range []struct {
		name string
		item Item
		want int
	}{
		{"ascii string", Item{"id": S("abc")}, 2 + 3},
		{"utf-8 string", Item{"é": S("€")}, 2 + 3},
		{"4-byte characters", Item{"notes": S("😀😀😀")}, 5 + 12},
		{"number -0.0500", Item{"c": N("-0.0500")}, 1 + 1 + 1},
		{"binary", Item{"z": &types.AttributeValueMemberB{Value: []byte{1, 2, 3}}}, 1 + 3},
		{"number 12345", Item{"n": N("12345")}, 1 + 3 + 1},
		{"number 0.00012 (zeros trimmed)", Item{"n": N("0.00012")}, 1 + 1 + 1},
		{"number 1200", Item{"n": N("1200")}, 1 + 1 + 1},
		{"number -5", Item{"n": N("-5")}, 1 + 1 + 1},
		{"19-digit number", Item{"v": N("1733590000123456789")}, 1 + 10 + 1},
		{"bool and null", Item{"b": Bool(true), "z": &types.AttributeValueMemberNULL{Value: true}}, 1 + 1 + 1 + 1},
		{"empty map", Item{"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}}, 1 + 3},
		{"map of one", Item{"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": S("vv")}}}, 1 + 3 + 1 + 1 + 2},
		{"list of two", Item{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{S("a"), N("7")}}}, 1 + 3 + 1 + 1 + 1 + 2},
		{"string set", Item{"ss": StringSet("ab", "c")}, 2 + 3},
	} {
		if got := Size(c.item); got != c.want {
			t.Errorf("Size(%s) = %d, want %d", c.name, got, c.want)
		}
	}
}
