package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Item is one item of a table: attribute name to value, with DynamoDB's
// types (S, N as exact decimal text, B, BOOL, NULL, M, L, SS, NS, BS),
// whichever engine holds it.
type Item = map[string]types.AttributeValue

// Table is a table's name and key schema. Every key attribute is a string;
// SK is "" for a table with a partition key only. TTL names the attribute
// (epoch seconds, N) past which an item may be removed by the engine; ""
// means none.
type Table struct {
	Name string
	PK   string
	SK   string
	TTL  string
}

// Key is an item's primary key: its partition key and, for a table with
// one, its sort key.
type Key struct {
	PK string
	SK string
}

// KeyOf returns item's key in table t, and false if a key attribute is
// missing, not a string, or empty (DynamoDB refuses empty key strings).
func (t Table) KeyOf(item Item) (Key, bool) {
	pk, ok := item[t.PK].(*types.AttributeValueMemberS)
	if !ok || pk.Value == "" {
		return Key{}, false
	}
	k := Key{PK: pk.Value}
	if t.SK == "" {
		return k, true
	}
	sk, ok := item[t.SK].(*types.AttributeValueMemberS)
	if !ok || sk.Value == "" {
		return Key{}, false
	}
	k.SK = sk.Value
	return k, true
}

// Attrs returns k as the key attributes of table t.
func (t Table) Attrs(k Key) Item {
	item := Item{t.PK: &types.AttributeValueMemberS{Value: k.PK}}
	if t.SK != "" {
		item[t.SK] = &types.AttributeValueMemberS{Value: k.SK}
	}
	return item
}

// MaxItemBytes is the largest item a table holds, sized as DynamoDB sizes
// it (Size): 400 KB.
const MaxItemBytes = 400 * 1024

// ErrTooLarge is a write refused before any engine sees it because the
// item it would leave is larger than MaxItemBytes.
var ErrTooLarge = errors.New("store: item larger than 400 KB")

// CheckSize returns an error wrapping ErrTooLarge if item is larger than
// MaxItemBytes. Every engine calls it on the item a write would leave,
// before writing it (DynamoDB refuses the same items itself).
func CheckSize(item Item) error {
	if n := Size(item); n > MaxItemBytes {
		return fmt.Errorf("%w: %d bytes", ErrTooLarge, n)
	}
	return nil
}

// Size returns item's size in bytes as DynamoDB counts it for its 400 KB
// limit (developer guide, "Item sizes and formats"): each attribute's
// name in UTF-8 plus its value; strings and binaries by their bytes; a
// number one byte per two significant digits plus one; BOOL and NULL one;
// a map or list three, plus one per element and the elements' sizes (a
// map's element names included); sets the sum of their members.
func Size(item Item) int {
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
	case *types.AttributeValueMemberM:
		n := 3
		for name, e := range v.Value {
			n += 1 + len(name) + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	}
	return 0
}

// numberSize is a number's size: its significant digits (leading and
// trailing zeros trimmed) halved, rounded up, plus one.
func numberSize(s string) int {
	mant, _, _ := strings.Cut(strings.ToLower(strings.TrimLeft(s, "+-")), "e")
	digits := strings.Trim(strings.Replace(mant, ".", "", 1), "0")
	return (len(digits)+1)/2 + 1
}
