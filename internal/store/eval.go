package store

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shopspring/decimal"
)

// This file evaluates conditions, updates and projections on an item in
// memory, with DynamoDB's semantics, for an engine that has no expression
// language of its own (package disk). DynamoDB's own engine sends them as
// expressions instead (expression.go).

// ErrBadUpdate is an update DynamoDB would refuse as invalid: a SET
// inside a map that is not there, arithmetic on a value that is not a
// number, an ADD or DELETE on a value of another type.
var ErrBadUpdate = errors.New("store: invalid update")

// Matches reports whether c holds for item (nil: no item).
func (c Cond) Matches(item Item) bool {
	switch c.op {
	case condNone:
		return true
	case condAnd:
		for _, k := range c.kids {
			if !k.Matches(item) {
				return false
			}
		}
		return true
	case condOr:
		for _, k := range c.kids {
			if k.Matches(item) {
				return true
			}
		}
		return false
	case condNot:
		return !c.kids[0].Matches(item)
	}
	v, ok := lookup(item, c.path)
	switch c.op {
	case condExists:
		return ok
	case condNotExists:
		return !ok
	case condNe:
		return !ok || !equal(v, c.v)
	}
	if !ok {
		return false
	}
	switch c.op {
	case condEq:
		return equal(v, c.v)
	case condBeginsWith:
		s, ok := v.(*types.AttributeValueMemberS)
		return ok && len(s.Value) >= len(c.v.(*types.AttributeValueMemberS).Value) &&
			s.Value[:len(c.v.(*types.AttributeValueMemberS).Value)] == c.v.(*types.AttributeValueMemberS).Value
	case condType:
		return typeOf(v) == Type(c.v.(*types.AttributeValueMemberS).Value)
	}
	n, ok := compare(v, c.v)
	if !ok {
		return false
	}
	switch c.op {
	case condLt:
		return n < 0
	case condLe:
		return n <= 0
	case condGt:
		return n > 0
	}
	return n >= 0 // condGe
}

// Apply returns a copy of item (nil: none yet, with key the key
// attributes to start from) with u applied. It errors, wrapping
// ErrBadUpdate, where DynamoDB would refuse the update.
func (u Update) Apply(item, key Item) (Item, error) {
	out := clone(item)
	if out == nil {
		out = clone(key)
	}
	for _, s := range u.sets {
		v, err := s.to.eval(item)
		if err != nil {
			return nil, err
		}
		if err := set(out, s.path, v); err != nil {
			return nil, err
		}
	}
	for _, p := range u.removes {
		remove(out, p)
	}
	for _, a := range u.adds {
		cur, ok := lookup(out, a.path)
		v, err := add(cur, ok, a.to.v)
		if err != nil {
			return nil, fmt.Errorf("%w: ADD %s: %v", ErrBadUpdate, a.path, err)
		}
		if err := set(out, a.path, v); err != nil {
			return nil, err
		}
	}
	for _, d := range u.deletes {
		cur, ok := lookup(out, d.path)
		if !ok {
			continue
		}
		v, err := without(cur, d.to.v)
		if err != nil {
			return nil, fmt.Errorf("%w: DELETE %s: %v", ErrBadUpdate, d.path, err)
		}
		if v == nil {
			remove(out, d.path)
		} else if err := set(out, d.path, v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Project returns the attributes of item at paths (nested maps kept as
// maps holding only what was asked); no paths: item itself.
func Project(item Item, paths []Path) Item {
	if len(paths) == 0 || item == nil {
		return item
	}
	out := Item{}
	for _, p := range paths {
		v, ok := lookup(item, p)
		if !ok {
			continue
		}
		m := out
		for _, name := range p[:len(p)-1] {
			inner, ok := m[name].(*types.AttributeValueMemberM)
			if !ok {
				inner = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}
				m[name] = inner
			}
			m = inner.Value
		}
		m[p[len(p)-1]] = v
	}
	return out
}

func (o Operand) eval(item Item) (types.AttributeValue, error) {
	switch o.op {
	case operandValue:
		return o.v, nil
	case operandAttr:
		v, ok := lookup(item, o.path)
		if !ok {
			return nil, fmt.Errorf("%w: %s is not there", ErrBadUpdate, o.path)
		}
		return v, nil
	case operandIfNotExists:
		if v, ok := lookup(item, o.path); ok {
			return v, nil
		}
		return o.v, nil
	}
	a, err := o.a.eval(item)
	if err != nil {
		return nil, err
	}
	b, err := o.b.eval(item)
	if err != nil {
		return nil, err
	}
	x, okA := number(a)
	y, okB := number(b)
	if !okA || !okB {
		return nil, fmt.Errorf("%w: arithmetic on a value that is not a number", ErrBadUpdate)
	}
	if o.op == operandMinus {
		y = y.Neg()
	}
	return N(x.Add(y).String()), nil
}

// lookup returns the value at p in item.
func lookup(item Item, p Path) (types.AttributeValue, bool) {
	if len(p) == 0 {
		return nil, false
	}
	v, ok := item[p[0]]
	for _, name := range p[1:] {
		if !ok {
			return nil, false
		}
		m, isMap := v.(*types.AttributeValueMemberM)
		if !isMap {
			return nil, false
		}
		v, ok = m.Value[name]
	}
	return v, ok
}

// set puts v at p; every map on the way must be there.
func set(item Item, p Path, v types.AttributeValue) error {
	m := item
	for i, name := range p[:len(p)-1] {
		inner, ok := m[name].(*types.AttributeValueMemberM)
		if !ok {
			return fmt.Errorf("%w: %s is not a map", ErrBadUpdate, p[:i+1])
		}
		m = inner.Value
	}
	m[p[len(p)-1]] = v
	return nil
}

func remove(item Item, p Path) {
	m := item
	for _, name := range p[:len(p)-1] {
		inner, ok := m[name].(*types.AttributeValueMemberM)
		if !ok {
			return
		}
		m = inner.Value
	}
	delete(m, p[len(p)-1])
}

// clone copies item deeply enough that Apply's changes (to maps at any
// depth) never reach the original.
func clone(item Item) Item {
	if item == nil {
		return nil
	}
	out := make(Item, len(item))
	for k, v := range item {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v types.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberM:
		return &types.AttributeValueMemberM{Value: clone(v.Value)}
	case *types.AttributeValueMemberL:
		l := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = cloneValue(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: slices.Clone(v.Value)}
	case *types.AttributeValueMemberNS:
		return &types.AttributeValueMemberNS{Value: slices.Clone(v.Value)}
	}
	return v
}

// add is ADD's result: cur + v for numbers, the union for string sets.
func add(cur types.AttributeValue, found bool, v types.AttributeValue) (types.AttributeValue, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberN:
		y, ok := number(v)
		if !ok {
			return nil, errors.New("not a number")
		}
		if !found {
			return N(y.String()), nil
		}
		x, ok := number(cur)
		if !ok {
			return nil, errors.New("the attribute is not a number")
		}
		return N(x.Add(y).String()), nil
	case *types.AttributeValueMemberSS:
		if !found {
			return StringSet(uniq(v.Value)...), nil
		}
		c, ok := cur.(*types.AttributeValueMemberSS)
		if !ok {
			return nil, errors.New("the attribute is not a string set")
		}
		return StringSet(uniq(append(slices.Clone(c.Value), v.Value...))...), nil
	}
	return nil, errors.New("ADD takes a number or a string set")
}

// without is DELETE's result: the set cur less v's members, nil if empty.
func without(cur, v types.AttributeValue) (types.AttributeValue, error) {
	d, ok := v.(*types.AttributeValueMemberSS)
	if !ok {
		return nil, errors.New("DELETE takes a string set")
	}
	c, ok := cur.(*types.AttributeValueMemberSS)
	if !ok {
		return nil, errors.New("the attribute is not a string set")
	}
	var left []string
	for _, s := range c.Value {
		if !slices.Contains(d.Value, s) {
			left = append(left, s)
		}
	}
	if len(left) == 0 {
		return nil, nil
	}
	return StringSet(left...), nil
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func number(v types.AttributeValue) (decimal.Decimal, bool) {
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return decimal.Decimal{}, false
	}
	d, err := decimal.NewFromString(n.Value)
	return d, err == nil
}

// compare orders a and b of one scalar type: -1, 0, 1, and false for
// values of different types or of a type with no order.
func compare(a, b types.AttributeValue) (int, bool) {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		if !ok {
			return 0, false
		}
		return cmpStrings(a.Value, b.Value), true
	case *types.AttributeValueMemberN:
		x, okA := number(a)
		y, okB := number(b)
		if !okA || !okB {
			return 0, false
		}
		return x.Cmp(y), true
	case *types.AttributeValueMemberB:
		b, ok := b.(*types.AttributeValueMemberB)
		if !ok {
			return 0, false
		}
		return bytes.Compare(a.Value, b.Value), true
	}
	return 0, false
}

func cmpStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// equal reports whether a and b are the same value: numbers by value,
// sets regardless of order, maps and lists deeply.
func equal(a, b types.AttributeValue) bool {
	if n, ok := compare(a, b); ok {
		return n == 0
	}
	switch a := a.(type) {
	case *types.AttributeValueMemberBOOL:
		b, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberNULL:
		_, ok := b.(*types.AttributeValueMemberNULL)
		return ok
	case *types.AttributeValueMemberSS:
		b, ok := b.(*types.AttributeValueMemberSS)
		return ok && sameSet(a.Value, b.Value)
	case *types.AttributeValueMemberNS:
		b, ok := b.(*types.AttributeValueMemberNS)
		return ok && sameSet(a.Value, b.Value)
	case *types.AttributeValueMemberM:
		b, ok := b.(*types.AttributeValueMemberM)
		return ok && maps.EqualFunc(a.Value, b.Value, equal)
	case *types.AttributeValueMemberL:
		b, ok := b.(*types.AttributeValueMemberL)
		return ok && slices.EqualFunc(a.Value, b.Value, equal)
	}
	return false
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// typeOf names v's type as attribute_type does.
func typeOf(v types.AttributeValue) Type {
	switch v.(type) {
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N"
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberM:
		return "M"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	}
	return ""
}
