package dynamo

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestSameItem(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	base := map[string]types.AttributeValue{"sk": s("2026-09-01#123000-abcdef"), "kcal": n("512.50"), "hunger": n("4"),
		"tags": &types.AttributeValueMemberSS{Value: []string{"a", "b"}}}
	for _, tc := range []struct {
		name string
		b    map[string]types.AttributeValue
		want bool
	}{
		{"itself", base, true},
		{"numbers by value, sets in any order", map[string]types.AttributeValue{"sk": s("2026-09-01#123000-abcdef"), "kcal": n("512.5"), "hunger": n("4.0"),
			"tags": &types.AttributeValueMemberSS{Value: []string{"b", "a"}}}, true},
		{"another number", map[string]types.AttributeValue{"sk": s("2026-09-01#123000-abcdef"), "kcal": n("512.6"), "hunger": n("4"),
			"tags": &types.AttributeValueMemberSS{Value: []string{"a", "b"}}}, false},
		{"a number as a string", map[string]types.AttributeValue{"sk": s("2026-09-01#123000-abcdef"), "kcal": s("512.50"), "hunger": n("4"),
			"tags": &types.AttributeValueMemberSS{Value: []string{"a", "b"}}}, false},
		{"an attribute fewer", map[string]types.AttributeValue{"sk": s("2026-09-01#123000-abcdef"), "kcal": n("512.50"), "hunger": n("4")}, false},
		{"another attribute", map[string]types.AttributeValue{"sk": s("2026-09-01#123000-abcdef"), "kcal": n("512.50"), "fullness": n("4"),
			"tags": &types.AttributeValueMemberSS{Value: []string{"a", "b"}}}, false},
		{"nil", nil, false},
	} {
		if got := SameItem(base, tc.b); got != tc.want {
			t.Errorf("%s: SameItem = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !SameItem(nil, map[string]types.AttributeValue{}) {
		t.Error("nil and empty differ")
	}
}
