package dynamo

import (
	"bytes"
	"math/big"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// SameItem reports whether a and b hold the same attributes with the same
// values, as DynamoDB compares them: numbers by value ("1.50" is "1.5",
// "4" is "4.0", and 19-digit numbers exactly, never through float64),
// string, number and binary sets in any order, lists in order, maps
// recursively; a value of one type never equals one of another (the
// number 5 is not the string "5", a string set not a list of strings). A
// nil or empty item is the same only as another; an item that does not
// decode (a member type this SDK does not know) is the same as no item.
//
// Both items are decoded as generic values (attributevalue, numbers kept
// as their text) and compared with go-cmp, with numbers compared by value
// and sets sorted first.
func SameItem(a, b map[string]types.AttributeValue) bool {
	x, okx := generic(a)
	y, oky := generic(b)
	return okx && oky && cmp.Equal(x, y, itemEquality)
}

// generic decodes item as string, attributevalue.Number, []byte, bool,
// nil (NULL), []string, []attributevalue.Number, [][]byte, []any and
// map[string]any values: one Go type per DynamoDB type.
func generic(item map[string]types.AttributeValue) (map[string]any, bool) {
	m := map[string]any{}
	err := attributevalue.UnmarshalMapWithOptions(item, &m, func(o *attributevalue.DecoderOptions) { o.UseNumber = true })
	return m, err == nil
}

// itemEquality are the go-cmp options of SameItem. Sorting applies to
// the set types only: a list decodes as []any, which no option here
// matches.
var itemEquality = cmp.Options{
	cmp.Comparer(func(x, y attributevalue.Number) bool { return sameNumber(string(x), string(y)) }),
	cmpopts.SortSlices(func(x, y string) bool { return x < y }),
	cmpopts.SortSlices(func(x, y []byte) bool { return bytes.Compare(x, y) < 0 }),
	cmpopts.SortSlices(numberLess),
}

func sameNumber(a, b string) bool {
	x, okx := new(big.Rat).SetString(a)
	y, oky := new(big.Rat).SetString(b)
	return okx && oky && x.Cmp(y) == 0
}

// numberLess orders numbers by value, any text that is not a number after
// every number and by its bytes, so it is a strict weak order on any set.
func numberLess(a, b attributevalue.Number) bool {
	x, okx := new(big.Rat).SetString(string(a))
	y, oky := new(big.Rat).SetString(string(b))
	switch {
	case okx && oky:
		return x.Cmp(y) < 0
	case okx != oky:
		return okx
	}
	return a < b
}
