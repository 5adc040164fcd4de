package store

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Path names an attribute, or one inside nested maps: P("sessions", id)
// is the entry id of the map attribute sessions. A name may hold any
// character; engines escape it.
type Path []string

// P returns the path of names.
func P(names ...string) Path { return Path(names) }

// Value constructors for the types ndiro stores.

// S is a string value.
func S(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

// N is a number value from its exact decimal text (e.g. "12.5").
func N(s string) types.AttributeValue { return &types.AttributeValueMemberN{Value: s} }

// Int is the number n.
func Int(n int64) types.AttributeValue { return N(strconv.FormatInt(n, 10)) }

// Bool is a BOOL value.
func Bool(b bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: b} }

// StringSet is a string set (SS); it must hold at least one string.
func StringSet(s ...string) types.AttributeValue { return &types.AttributeValueMemberSS{Value: s} }

// Type is an attribute type as attribute_type names it: "S", "N", "B",
// "BOOL", "NULL", "M", "L", "SS", "NS", "BS".
type Type string

// condOp is what a Cond tests.
type condOp int

const (
	condNone condOp = iota
	condExists
	condNotExists
	condEq
	condNe
	condLt
	condLe
	condGt
	condGe
	condBeginsWith
	condType
	condAnd
	condOr
	condNot
)

// Cond is a condition on one item, as a conditional write or a filter
// tests it: built from the constructors below; the zero Cond always
// holds. Comparisons compare values of the same type (S by bytes, N
// numerically, B by bytes) and are false across types or when the
// attribute is missing, as DynamoDB's are.
type Cond struct {
	op   condOp
	path Path
	v    types.AttributeValue
	kids []Cond
}

// IsZero reports whether c is the zero Cond (no condition).
func (c Cond) IsZero() bool { return c.op == condNone }

// Exists holds when the attribute at p is there.
func Exists(p Path) Cond { return Cond{op: condExists, path: p} }

// NotExists holds when the attribute at p is not there (or the item is
// not there at all).
func NotExists(p Path) Cond { return Cond{op: condNotExists, path: p} }

// Eq holds when the attribute at p equals v.
func Eq(p Path, v types.AttributeValue) Cond { return Cond{op: condEq, path: p, v: v} }

// Ne holds when the attribute at p is missing or differs from v.
func Ne(p Path, v types.AttributeValue) Cond { return Cond{op: condNe, path: p, v: v} }

// Lt holds when the attribute at p is less than v.
func Lt(p Path, v types.AttributeValue) Cond { return Cond{op: condLt, path: p, v: v} }

// Le holds when the attribute at p is at most v.
func Le(p Path, v types.AttributeValue) Cond { return Cond{op: condLe, path: p, v: v} }

// Gt holds when the attribute at p is greater than v.
func Gt(p Path, v types.AttributeValue) Cond { return Cond{op: condGt, path: p, v: v} }

// Ge holds when the attribute at p is at least v.
func Ge(p Path, v types.AttributeValue) Cond { return Cond{op: condGe, path: p, v: v} }

// BeginsWith holds when the string attribute at p starts with prefix.
func BeginsWith(p Path, prefix string) Cond {
	return Cond{op: condBeginsWith, path: p, v: S(prefix)}
}

// HasType holds when the attribute at p is there with type t.
func HasType(p Path, t Type) Cond { return Cond{op: condType, path: p, v: S(string(t))} }

// And holds when every one of cs holds; zero Conds among them are left
// out.
func And(cs ...Cond) Cond { return join(condAnd, cs) }

// Or holds when any one of cs holds; zero Conds among them are left out.
func Or(cs ...Cond) Cond { return join(condOr, cs) }

// Not holds when c does not.
func Not(c Cond) Cond { return Cond{op: condNot, kids: []Cond{c}} }

func join(op condOp, cs []Cond) Cond {
	var kids []Cond
	for _, c := range cs {
		if !c.IsZero() {
			kids = append(kids, c)
		}
	}
	switch len(kids) {
	case 0:
		return Cond{}
	case 1:
		return kids[0]
	}
	return Cond{op: op, kids: kids}
}

// operandOp is what an Operand computes.
type operandOp int

const (
	operandValue operandOp = iota
	operandAttr
	operandIfNotExists
	operandPlus
	operandMinus
)

// Operand is the right side of an update's SET: a value, another
// attribute, if_not_exists, or the sum or difference of two numbers.
type Operand struct {
	op   operandOp
	path Path
	v    types.AttributeValue
	a, b *Operand
}

// Value is the operand v.
func Value(v types.AttributeValue) Operand { return Operand{op: operandValue, v: v} }

// Attr is the current value of the attribute at p.
func Attr(p Path) Operand { return Operand{op: operandAttr, path: p} }

// IfNotExists is the attribute at p if it is there, else v.
func IfNotExists(p Path, v types.AttributeValue) Operand {
	return Operand{op: operandIfNotExists, path: p, v: v}
}

// Plus is the number a + b.
func Plus(a, b Operand) Operand { return Operand{op: operandPlus, a: &a, b: &b} }

// Minus is the number a - b.
func Minus(a, b Operand) Operand { return Operand{op: operandMinus, a: &a, b: &b} }

// Update is the change an update makes to one item: SET, REMOVE, ADD and
// DELETE clauses, applied together. Build it by chaining from the zero
// Update: Update{}.Set(P("n"), Value(Int(1))).Remove(P("old")).
type Update struct {
	sets    []assign
	removes []Path
	adds    []assign
	deletes []assign
}

type assign struct {
	path Path
	to   Operand
}

// IsZero reports whether u changes nothing.
func (u Update) IsZero() bool {
	return len(u.sets)+len(u.removes)+len(u.adds)+len(u.deletes) == 0
}

// Set sets the attribute at p to o. A path inside a map needs the map to
// be there.
func (u Update) Set(p Path, o Operand) Update {
	u.sets = append(u.sets[:len(u.sets):len(u.sets)], assign{p, o})
	return u
}

// Remove removes the attribute at p; a missing one is no error.
func (u Update) Remove(p Path) Update {
	u.removes = append(u.removes[:len(u.removes):len(u.removes)], p)
	return u
}

// Add adds the number v to the number at p (a missing one counts as 0;
// v may be negative), or the members of the set v to the set at p.
func (u Update) Add(p Path, v types.AttributeValue) Update {
	u.adds = append(u.adds[:len(u.adds):len(u.adds)], assign{p, Value(v)})
	return u
}

// Delete removes the members of the set v from the set at p; a set left
// empty is removed.
func (u Update) Delete(p Path, v types.AttributeValue) Update {
	u.deletes = append(u.deletes[:len(u.deletes):len(u.deletes)], assign{p, Value(v)})
	return u
}
