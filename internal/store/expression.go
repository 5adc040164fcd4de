package store

import (
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Expr renders conditions, updates, key conditions and projections in
// DynamoDB's expression syntax, for the engine that sends them to
// DynamoDB (package cloud). Every name becomes a #n placeholder and every
// value a :v one, so no name is ever a reserved word. The zero Expr is
// ready; one Expr serves one request.
type Expr struct {
	names  map[string]string // placeholder → name
	byName map[string]string // name → placeholder
	values map[string]types.AttributeValue
}

// Names returns the placeholders' names (ExpressionAttributeNames), nil
// if none.
func (e *Expr) Names() map[string]string { return e.names }

// Values returns the placeholders' values (ExpressionAttributeValues),
// nil if none.
func (e *Expr) Values() map[string]types.AttributeValue { return e.values }

func (e *Expr) name(n string) string {
	if ph, ok := e.byName[n]; ok {
		return ph
	}
	if e.names == nil {
		e.names, e.byName = map[string]string{}, map[string]string{}
	}
	ph := "#n" + strconv.Itoa(len(e.names))
	e.names[ph], e.byName[n] = n, ph
	return ph
}

func (e *Expr) path(p Path) string {
	parts := make([]string, len(p))
	for i, n := range p {
		parts[i] = e.name(n)
	}
	return strings.Join(parts, ".")
}

func (e *Expr) value(v types.AttributeValue) string {
	if e.values == nil {
		e.values = map[string]types.AttributeValue{}
	}
	ph := ":v" + strconv.Itoa(len(e.values))
	e.values[ph] = v
	return ph
}

// Cond renders c ("" for the zero Cond).
func (e *Expr) Cond(c Cond) string {
	switch c.op {
	case condNone:
		return ""
	case condAnd, condOr:
		op := " AND "
		if c.op == condOr {
			op = " OR "
		}
		parts := make([]string, len(c.kids))
		for i, k := range c.kids {
			parts[i] = "(" + e.Cond(k) + ")"
		}
		return strings.Join(parts, op)
	case condNot:
		return "NOT (" + e.Cond(c.kids[0]) + ")"
	case condExists:
		return "attribute_exists(" + e.path(c.path) + ")"
	case condNotExists:
		return "attribute_not_exists(" + e.path(c.path) + ")"
	case condBeginsWith:
		return "begins_with(" + e.path(c.path) + ", " + e.value(c.v) + ")"
	case condType:
		return "attribute_type(" + e.path(c.path) + ", " + e.value(c.v) + ")"
	}
	op := map[condOp]string{condEq: " = ", condNe: " <> ", condLt: " < ", condLe: " <= ", condGt: " > ", condGe: " >= "}[c.op]
	return e.path(c.path) + op + e.value(c.v)
}

// Update renders u.
func (e *Expr) Update(u Update) string {
	var clauses []string
	if len(u.sets) > 0 {
		parts := make([]string, len(u.sets))
		for i, s := range u.sets {
			parts[i] = e.path(s.path) + " = " + e.operand(s.to)
		}
		clauses = append(clauses, "SET "+strings.Join(parts, ", "))
	}
	if len(u.removes) > 0 {
		parts := make([]string, len(u.removes))
		for i, p := range u.removes {
			parts[i] = e.path(p)
		}
		clauses = append(clauses, "REMOVE "+strings.Join(parts, ", "))
	}
	for _, c := range []struct {
		verb string
		as   []assign
	}{{"ADD ", u.adds}, {"DELETE ", u.deletes}} {
		if len(c.as) == 0 {
			continue
		}
		parts := make([]string, len(c.as))
		for i, a := range c.as {
			parts[i] = e.path(a.path) + " " + e.value(a.to.v)
		}
		clauses = append(clauses, c.verb+strings.Join(parts, ", "))
	}
	return strings.Join(clauses, " ")
}

func (e *Expr) operand(o Operand) string {
	switch o.op {
	case operandValue:
		return e.value(o.v)
	case operandAttr:
		return e.path(o.path)
	case operandIfNotExists:
		return "if_not_exists(" + e.path(o.path) + ", " + e.value(o.v) + ")"
	case operandPlus:
		return e.operand(*o.a) + " + " + e.operand(*o.b)
	}
	return e.operand(*o.a) + " - " + e.operand(*o.b)
}

// KeyCond renders a Query's key condition on table t.
func (e *Expr) KeyCond(t Table, pk string, r Range) string {
	k := e.name(t.PK) + " = " + e.value(S(pk))
	if r.op == rangeAll {
		return k
	}
	sk := e.name(t.SK)
	switch r.op {
	case rangeBetween:
		return k + " AND " + sk + " BETWEEN " + e.value(S(r.a)) + " AND " + e.value(S(r.b))
	case rangePrefix:
		return k + " AND begins_with(" + sk + ", " + e.value(S(r.a)) + ")"
	case rangeAbove:
		return k + " AND " + sk + " > " + e.value(S(r.a))
	}
	return k + " AND " + sk + " < " + e.value(S(r.b))
}

// Projection renders paths ("" for none: every attribute).
func (e *Expr) Projection(paths []Path) string {
	parts := make([]string, len(paths))
	for i, p := range paths {
		parts[i] = e.path(p)
	}
	return strings.Join(parts, ", ")
}
