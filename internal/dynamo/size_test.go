package dynamo_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/dynamo"
)

// TestItemSize: sizes as DynamoDB's developer guide counts them, worked
// out by hand: names and strings in UTF-8 bytes (a 4-byte character is
// 4), numbers by significant digits, maps and lists with their 3 bytes
// and 1 per element.
func TestItemSize(t *testing.T) {
	t.Parallel()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	for _, tc := range []struct {
		name string
		item map[string]types.AttributeValue
		want int
	}{
		{"ASCII string", map[string]types.AttributeValue{"notes": s("soup")}, 5 + 4},
		{"4-byte characters", map[string]types.AttributeValue{"notes": s(strings.Repeat("😀", 3))}, 5 + 12},
		{"2-byte name", map[string]types.AttributeValue{"é": s("")}, 2},
		{"numbers", map[string]types.AttributeValue{"a": n("0"), "b": n("12345"), "c": n("-0.0500"), "d": n("1790000000123456789")}, 4 + 1 + (1 + 3) + (1 + 1) + (1 + 10)},
		{"bool, null, binary", map[string]types.AttributeValue{"x": &types.AttributeValueMemberBOOL{Value: true}, "y": &types.AttributeValueMemberNULL{Value: true}, "z": &types.AttributeValueMemberB{Value: []byte{1, 2, 3}}}, 3 + 1 + 1 + 3},
		{"string set", map[string]types.AttributeValue{"w": &types.AttributeValueMemberSS{Value: []string{"2026-09-01", "2026-09-08"}}}, 1 + 20},
		{"map", map[string]types.AttributeValue{"comments": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"id1": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"text": s("hé")}},
		}}}, 8 + 3 + 1 + (3 + (3 + 1 + (4 + 3)))},
		{"list", map[string]types.AttributeValue{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("ab"), n("7")}}}, 1 + 3 + (1 + 2) + (1 + 2)},
	} {
		if got := dynamo.ItemSize(tc.item); got != tc.want {
			t.Errorf("%s: ItemSize = %d, want %d", tc.name, got, tc.want)
		}
	}
}
