package dynamo

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// MaxItemBytes is DynamoDB's limit on one item, 400 KB as ItemSize counts:
// a write of a larger item is refused (ValidationException).
const MaxItemBytes = 400 * 1024

// ItemSize returns the size of item in bytes as DynamoDB counts it against
// MaxItemBytes (its developer guide, "Item sizes and formats"): each
// attribute's name in UTF-8 bytes plus its value; a string or binary its
// bytes (strings in UTF-8, which is what the limit counts and some
// emulators do not: dynalite counts UTF-16 units); a number 1 byte plus 1
// per two significant digits, rounded up; a boolean or null 1; a list or
// map 3 bytes plus 1 per element plus its elements (a map's element names
// included); a set the sum of its members.
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		return 3 + len(v.Value) + ItemSize(v.Value)
	}
	return 0
}

// numberSize is the size of the number s (its text, as DynamoDB takes
// it): 1 byte plus 1 per two significant digits, rounded up.
func numberSize(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.Replace(s, ".", "", 1)
	s = strings.Trim(s, "0")
	return 1 + (len(s)+1)/2
}
