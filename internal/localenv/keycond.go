package localenv

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// keyCondition is a Query's KeyConditionExpression resolved against its
// table's key schema: the one partition key value it names and the range
// of sort keys it allows. Every key is a string (S): the embedded store
// keeps no other kind (partitioned.createTable).
type keyCondition struct {
	pk string
	sk keyRange
}

// keyRange is a condition on the sort key: op "" (none: the whole
// partition), "=", "<", "<=", ">", ">=", "between" (a through b) or
// "begins_with" (prefix a).
type keyRange struct {
	op   string
	a, b string
}

// span returns the indices [i, j) of the keys of ks (sorted ascending, as
// the emulator orders them: byte-wise) that r allows.
func (r keyRange) span(ks []string) (i, j int) {
	lower := func(v string) int { return sort.SearchStrings(ks, v) }                                   // first ≥ v
	upper := func(v string) int { return sort.Search(len(ks), func(x int) bool { return ks[x] > v }) } // first > v
	switch r.op {
	case "=":
		return lower(r.a), upper(r.a)
	case "<":
		return 0, lower(r.a)
	case "<=":
		return 0, upper(r.a)
	case ">":
		return upper(r.a), len(ks)
	case ">=":
		return lower(r.a), len(ks)
	case "between":
		return lower(r.a), upper(r.b)
	case "begins_with":
		// Keys with the prefix follow each other from the first key ≥ it.
		i = lower(r.a)
		return i, i + sort.Search(len(ks)-i, func(x int) bool { return !strings.HasPrefix(ks[i+x], r.a) })
	}
	return 0, len(ks)
}

// keyCondError is a KeyConditionExpression DynamoDB would refuse; its
// message is DynamoDB's where one is known.
type keyCondError struct{ msg string }

func (e *keyCondError) Error() string { return e.msg }

func keyCondErrorf(format string, args ...any) error {
	return &keyCondError{fmt.Sprintf(format, args...)}
}

// parseKeyCondition resolves expr (a KeyConditionExpression, with its
// ExpressionAttributeNames and ExpressionAttributeValues) against a table
// keyed by pkName and, if not "", skName. It accepts DynamoDB's grammar
// for key conditions: "pk = :v", optionally AND one of "sk = :v" (or <,
// <=, >, >=), "sk BETWEEN :a AND :b" or "begins_with(sk, :p)", in either
// order, names plain or as #aliases, any of it in parentheses, keywords in
// any case, a value on either side of a comparison. Anything else is a
// *keyCondError: OR, NOT, <>, IN, a second condition on a key, a condition
// on another attribute, no equality on the partition key, an undefined
// alias or value, a value that is not a string, BETWEEN bounds out of
// order.
func parseKeyCondition(expr string, names map[string]string, values map[string]json.RawMessage, pkName, skName string) (keyCondition, error) {
	toks, err := lexKeyCondition(expr)
	if err != nil {
		return keyCondition{}, err
	}
	p := &kcParser{toks: toks}
	conds, err := p.conjunction()
	if err != nil {
		return keyCondition{}, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return keyCondition{}, keyCondErrorf("Invalid KeyConditionExpression: Syntax error; token: %q", t.text)
	}
	var kc keyCondition
	havePK, haveSK := false, false
	for _, c := range conds {
		attr, err := c.attr(names)
		if err != nil {
			return keyCondition{}, err
		}
		isPK := attr == pkName && !havePK && c.op == "="
		isSK := attr == skName && skName != "" && !haveSK
		if !isPK && !isSK {
			return keyCondition{}, keyCondErrorf("Query key condition not supported")
		}
		args, err := c.values(values)
		if err != nil {
			return keyCondition{}, err
		}
		if isPK {
			havePK, kc.pk = true, args[0]
			continue
		}
		haveSK, kc.sk = true, keyRange{op: c.op, a: args[0]}
		if c.op == "between" {
			kc.sk.b = args[1]
			if kc.sk.a > kc.sk.b {
				return keyCondition{}, keyCondErrorf("Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound")
			}
		}
	}
	if !havePK {
		return keyCondition{}, keyCondErrorf("Query condition missed key schema element: %s", pkName)
	}
	return kc, nil
}

// kcCond is one comparison of a key condition: left op right, or BETWEEN
// (left between a and b), or begins_with(left, right). Operands are
// "#alias", ":value" or a plain attribute name.
type kcCond struct {
	op          string
	left, right string
	b           string // BETWEEN's upper bound
}

// attr returns the attribute the condition is on, resolving an alias.
func (c kcCond) attr(names map[string]string) (string, error) {
	if strings.HasPrefix(c.left, ":") {
		return "", keyCondErrorf("Invalid KeyConditionExpression: a condition compares %s, not a key attribute", c.left)
	}
	if strings.HasPrefix(c.left, "#") {
		n, ok := names[c.left]
		if !ok {
			return "", keyCondErrorf("An expression attribute name used in the document path is not defined; attribute name: %s", c.left)
		}
		return n, nil
	}
	return c.left, nil
}

// values returns the string values the condition compares with.
func (c kcCond) values(values map[string]json.RawMessage) ([]string, error) {
	ops := []string{c.right}
	if c.op == "between" {
		ops = append(ops, c.b)
	}
	out := make([]string, len(ops))
	for i, o := range ops {
		if !strings.HasPrefix(o, ":") {
			return nil, keyCondErrorf("Invalid KeyConditionExpression: %s must be compared with a value (:name), not %q", c.left, o)
		}
		raw, ok := values[o]
		if !ok {
			return nil, keyCondErrorf("An expression attribute value used in expression is not defined; attribute value: %s", o)
		}
		v, ok := stringValue(raw)
		if !ok {
			return nil, keyCondErrorf("One or more parameter values were invalid: Condition parameter type does not match schema type")
		}
		out[i] = v
	}
	return out, nil
}

// stringValue returns the string of an attribute value {"S": "..."}; ok
// is false for any other type or shape.
func stringValue(raw json.RawMessage) (string, bool) {
	var av map[string]json.RawMessage
	if err := json.Unmarshal(raw, &av); err != nil || len(av) != 1 {
		return "", false
	}
	s, ok := av["S"]
	if !ok {
		return "", false
	}
	var v string
	if err := json.Unmarshal(s, &v); err != nil {
		return "", false
	}
	return v, true
}

// Tokens of a key condition.
const (
	tokEOF = iota
	tokName
	tokOp
	tokLParen
	tokRParen
	tokComma
)

type kcToken struct {
	kind int
	text string
}

// lexKeyCondition splits expr into names (plain, #alias, :value, and
// keywords), comparison operators, parentheses and commas.
func lexKeyCondition(expr string) ([]kcToken, error) {
	var toks []kcToken
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(':
			toks, i = append(toks, kcToken{tokLParen, "("}), i+1
		case c == ')':
			toks, i = append(toks, kcToken{tokRParen, ")"}), i+1
		case c == ',':
			toks, i = append(toks, kcToken{tokComma, ","}), i+1
		case c == '=':
			toks, i = append(toks, kcToken{tokOp, "="}), i+1
		case c == '<' || c == '>':
			op := string(c)
			if i+1 < len(expr) && (expr[i+1] == '=' || (c == '<' && expr[i+1] == '>')) {
				op += string(expr[i+1])
			}
			toks, i = append(toks, kcToken{tokOp, op}), i+len(op)
		case c == '#' || c == ':' || nameByte(c):
			j := i + 1
			for j < len(expr) && nameByte(expr[j]) {
				j++
			}
			if j == i+1 && !nameByte(c) {
				return nil, keyCondErrorf("Invalid KeyConditionExpression: Syntax error; token: %q", string(c))
			}
			toks, i = append(toks, kcToken{tokName, expr[i:j]}), j
		default:
			return nil, keyCondErrorf("Invalid KeyConditionExpression: Syntax error; token: %q", string(c))
		}
	}
	return append(toks, kcToken{kind: tokEOF}), nil
}

func nameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// kcParser reads tokens: conjunction = atom {AND atom}; atom = "(" conjunction
// ")" | begins_with "(" operand "," operand ")" | operand BETWEEN operand AND
// operand | operand op operand.
type kcParser struct {
	toks []kcToken
	pos  int
}

func (p *kcParser) peek() kcToken { return p.toks[p.pos] }

func (p *kcParser) next() kcToken {
	t := p.toks[p.pos]
	if t.kind != tokEOF {
		p.pos++
	}
	return t
}

// keyword reports whether t is the keyword kw, in any case.
func keyword(t kcToken, kw string) bool { return t.kind == tokName && strings.EqualFold(t.text, kw) }

func (p *kcParser) conjunction() ([]kcCond, error) {
	var conds []kcCond
	for {
		c, err := p.atom()
		if err != nil {
			return nil, err
		}
		conds = append(conds, c...)
		t := p.peek()
		switch {
		case keyword(t, "AND"):
			p.next()
		case keyword(t, "OR"), keyword(t, "NOT"), keyword(t, "IN"):
			return nil, keyCondErrorf("Invalid operator used in KeyConditionExpression: %s", strings.ToUpper(t.text))
		default:
			return conds, nil
		}
	}
}

func (p *kcParser) atom() ([]kcCond, error) {
	t := p.next()
	switch {
	case t.kind == tokLParen:
		conds, err := p.conjunction()
		if err != nil {
			return nil, err
		}
		if err := p.expect(tokRParen, ")"); err != nil {
			return nil, err
		}
		return conds, nil
	case keyword(t, "NOT"), keyword(t, "OR"):
		return nil, keyCondErrorf("Invalid operator used in KeyConditionExpression: %s", strings.ToUpper(t.text))
	case t.kind == tokName && t.text == "begins_with" && p.peek().kind == tokLParen:
		p.next()
		left, err := p.operand()
		if err != nil {
			return nil, err
		}
		if err := p.expect(tokComma, ","); err != nil {
			return nil, err
		}
		right, err := p.operand()
		if err != nil {
			return nil, err
		}
		if err := p.expect(tokRParen, ")"); err != nil {
			return nil, err
		}
		return []kcCond{{op: "begins_with", left: left, right: right}}, nil
	case t.kind == tokName && !reserved(t):
		return p.comparison(t.text)
	}
	return nil, keyCondErrorf("Invalid KeyConditionExpression: Syntax error; token: %q", t.text)
}

// comparison reads the rest of "left op right" or "left BETWEEN a AND b",
// turning "value op name" around so that the attribute is on the left.
func (p *kcParser) comparison(left string) ([]kcCond, error) {
	t := p.next()
	if keyword(t, "BETWEEN") {
		a, err := p.operand()
		if err != nil {
			return nil, err
		}
		if !keyword(p.next(), "AND") {
			return nil, keyCondErrorf("Invalid KeyConditionExpression: BETWEEN needs AND between its bounds")
		}
		b, err := p.operand()
		if err != nil {
			return nil, err
		}
		return []kcCond{{op: "between", left: left, right: a, b: b}}, nil
	}
	if keyword(t, "IN") {
		return nil, keyCondErrorf("Invalid operator used in KeyConditionExpression: IN")
	}
	if t.kind != tokOp {
		return nil, keyCondErrorf("Invalid KeyConditionExpression: Syntax error; token: %q", t.text)
	}
	if t.text == "<>" {
		return nil, keyCondErrorf("Invalid operator used in KeyConditionExpression: <>")
	}
	right, err := p.operand()
	if err != nil {
		return nil, err
	}
	c := kcCond{op: t.text, left: left, right: right}
	if strings.HasPrefix(left, ":") && !strings.HasPrefix(right, ":") {
		flip := map[string]string{"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
		c = kcCond{op: flip[c.op], left: right, right: left}
	}
	return []kcCond{c}, nil
}

// reserved reports whether t is a keyword of the condition grammar, which
// cannot stand for an attribute or value.
func reserved(t kcToken) bool {
	return keyword(t, "AND") || keyword(t, "BETWEEN") || keyword(t, "OR") || keyword(t, "NOT") || keyword(t, "IN")
}

func (p *kcParser) operand() (string, error) {
	t := p.next()
	if t.kind != tokName || reserved(t) {
		return "", keyCondErrorf("Invalid KeyConditionExpression: Syntax error; token: %q", t.text)
	}
	return t.text, nil
}

func (p *kcParser) expect(kind int, text string) error {
	if t := p.next(); t.kind != kind {
		return keyCondErrorf("Invalid KeyConditionExpression: Syntax error; expected %q, got %q", text, t.text)
	}
	return nil
}
