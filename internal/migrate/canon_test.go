package migrate

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestCanonical: items DynamoDB holds as equal encode the same (numbers
// by value, sets in any order, map keys in any order); items that differ
// in a value, a type or an attribute do not; skipped attributes are left
// out.
func TestCanonical(t *testing.T) {
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	base := map[string]types.AttributeValue{
		"kcal": n("512.50"), "notes": s("soup \"hot\""), "tags": &types.AttributeValueMemberSS{Value: []string{"b", "a"}},
		"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"y": n("1e2"), "x": &types.AttributeValueMemberBOOL{Value: true}}},
	}
	same := map[string]types.AttributeValue{
		"notes": s("soup \"hot\""), "kcal": n("512.5"), "tags": &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"m":        &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"x": &types.AttributeValueMemberBOOL{Value: true}, "y": n("100")}},
		"sessions": s("left out"),
	}
	if a, b := string(canonical(base)), string(canonical(same, "sessions")); a != b {
		t.Errorf("canonical of equal items differ:\n%s\n%s", a, b)
	}
	for name, change := range map[string]func(map[string]types.AttributeValue){
		"number":    func(m map[string]types.AttributeValue) { m["kcal"] = n("512.51") },
		"type":      func(m map[string]types.AttributeValue) { m["kcal"] = s("512.5") },
		"attribute": func(m map[string]types.AttributeValue) { m["extra"] = s("") },
		"nested": func(m map[string]types.AttributeValue) {
			m["m"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"y": n("100")}}
		},
	} {
		other := map[string]types.AttributeValue{}
		for k, v := range base {
			other[k] = v
		}
		change(other)
		if string(canonical(base)) == string(canonical(other)) {
			t.Errorf("%s changed: canonical is the same %s", name, canonical(other))
		}
	}
	if got, want := string(canonical(map[string]types.AttributeValue{"a": n("1.50")})), `{"a":{"N":"1.5"}}`; got != want {
		t.Errorf("canonical = %s, want %s", got, want)
	}
}
