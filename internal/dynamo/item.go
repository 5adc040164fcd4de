package dynamo

import (
	"bytes"
	"math/big"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// SameItem reports whether a and b hold the same attributes with the same
// values, as DynamoDB compares them: numbers by value ("1.50" is "1.5"),
// sets in any order. A nil or empty item is the same only as another.
func SameItem(a, b map[string]types.AttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok || !sameValue(av, bv) {
			return false
		}
	}
	return true
}

func sameValue(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		return ok && sameNumber(a.Value, b.Value)
	case *types.AttributeValueMemberB:
		b, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(a.Value, b.Value)
	case *types.AttributeValueMemberBOOL:
		b, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberNULL:
		b, ok := b.(*types.AttributeValueMemberNULL)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberM:
		b, ok := b.(*types.AttributeValueMemberM)
		return ok && SameItem(a.Value, b.Value)
	case *types.AttributeValueMemberL:
		b, ok := b.(*types.AttributeValueMemberL)
		if !ok || len(a.Value) != len(b.Value) {
			return false
		}
		for i := range a.Value {
			if !sameValue(a.Value[i], b.Value[i]) {
				return false
			}
		}
		return true
	case *types.AttributeValueMemberSS:
		b, ok := b.(*types.AttributeValueMemberSS)
		return ok && sameSet(a.Value, b.Value, func(x, y string) bool { return x == y })
	case *types.AttributeValueMemberNS:
		b, ok := b.(*types.AttributeValueMemberNS)
		return ok && sameSet(a.Value, b.Value, sameNumber)
	case *types.AttributeValueMemberBS:
		b, ok := b.(*types.AttributeValueMemberBS)
		return ok && sameSet(a.Value, b.Value, bytes.Equal)
	}
	return false
}

func sameNumber(a, b string) bool {
	x, okx := new(big.Rat).SetString(a)
	y, oky := new(big.Rat).SetString(b)
	return okx && oky && x.Cmp(y) == 0
}

// sameSet compares two sets (no duplicates within either) in any order.
func sameSet[T any](a, b []T, eq func(x, y T) bool) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.ContainsFunc(b, func(y T) bool { return eq(x, y) }) {
			return false
		}
	}
	return true
}
