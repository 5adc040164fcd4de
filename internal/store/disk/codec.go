package disk

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shopspring/decimal"

	"ndiro/internal/store"
)

// An item is stored as JSON in DynamoDB's own shape, one object per
// value naming its type ({"S": "…"}, {"N": "12.5"}, {"M": {…}}), so
// numbers stay decimal text and a row reads the same with the sqlite3
// shell as through DynamoDB's console.

// av is one value as stored: exactly one field is set.
type av struct {
	S    *string        `json:"S,omitempty"`
	N    *string        `json:"N,omitempty"`
	B    []byte         `json:"B,omitempty"`
	BOOL *bool          `json:"BOOL,omitempty"`
	NULL *bool          `json:"NULL,omitempty"`
	M    map[string]*av `json:"M,omitempty"`
	L    []*av          `json:"L,omitempty"`
	SS   []string       `json:"SS,omitempty"`
	NS   []string       `json:"NS,omitempty"`
	BS   [][]byte       `json:"BS,omitempty"`
	// empty marks an empty map or list, which omitempty would drop.
	EM bool `json:"EM,omitempty"`
	EL bool `json:"EL,omitempty"`
}

// encode returns item's stored form, its numbers in DynamoDB's canonical
// form (normalize).
func encode(item store.Item) ([]byte, error) {
	m := make(map[string]*av, len(item))
	for k, v := range item {
		a, err := toAV(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		m[k] = a
	}
	return json.Marshal(m)
}

// decode reads an item's stored form.
func decode(b []byte) (store.Item, error) {
	var m map[string]*av
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	item := make(store.Item, len(m))
	for k, a := range m {
		v, err := fromAV(a)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		item[k] = v
	}
	return item, nil
}

func toAV(v types.AttributeValue) (*av, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return &av{S: &v.Value}, nil
	case *types.AttributeValueMemberN:
		n, err := normalize(v.Value)
		if err != nil {
			return nil, err
		}
		return &av{N: &n}, nil
	case *types.AttributeValueMemberB:
		return &av{B: v.Value}, nil
	case *types.AttributeValueMemberBOOL:
		return &av{BOOL: &v.Value}, nil
	case *types.AttributeValueMemberNULL:
		t := true
		return &av{NULL: &t}, nil
	case *types.AttributeValueMemberSS:
		return &av{SS: v.Value}, nil
	case *types.AttributeValueMemberNS:
		ns := make([]string, len(v.Value))
		for i, s := range v.Value {
			n, err := normalize(s)
			if err != nil {
				return nil, err
			}
			ns[i] = n
		}
		return &av{NS: ns}, nil
	case *types.AttributeValueMemberBS:
		return &av{BS: v.Value}, nil
	case *types.AttributeValueMemberM:
		m := make(map[string]*av, len(v.Value))
		for k, e := range v.Value {
			a, err := toAV(e)
			if err != nil {
				return nil, err
			}
			m[k] = a
		}
		return &av{M: m, EM: len(m) == 0}, nil
	case *types.AttributeValueMemberL:
		l := make([]*av, len(v.Value))
		for i, e := range v.Value {
			a, err := toAV(e)
			if err != nil {
				return nil, err
			}
			l[i] = a
		}
		return &av{L: l, EL: len(l) == 0}, nil
	}
	return nil, fmt.Errorf("unsupported value %T", v)
}

func fromAV(a *av) (types.AttributeValue, error) {
	switch {
	case a == nil:
		return nil, fmt.Errorf("empty value")
	case a.S != nil:
		return &types.AttributeValueMemberS{Value: *a.S}, nil
	case a.N != nil:
		return &types.AttributeValueMemberN{Value: *a.N}, nil
	case a.B != nil:
		return &types.AttributeValueMemberB{Value: a.B}, nil
	case a.BOOL != nil:
		return &types.AttributeValueMemberBOOL{Value: *a.BOOL}, nil
	case a.NULL != nil:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case a.SS != nil:
		return &types.AttributeValueMemberSS{Value: a.SS}, nil
	case a.NS != nil:
		return &types.AttributeValueMemberNS{Value: a.NS}, nil
	case a.BS != nil:
		return &types.AttributeValueMemberBS{Value: a.BS}, nil
	case a.M != nil || a.EM:
		m := make(map[string]types.AttributeValue, len(a.M))
		for k, e := range a.M {
			v, err := fromAV(e)
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	case a.L != nil || a.EL:
		l := make([]types.AttributeValue, len(a.L))
		for i, e := range a.L {
			v, err := fromAV(e)
			if err != nil {
				return nil, err
			}
			l[i] = v
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	}
	return nil, fmt.Errorf("value of no type")
}

// normalize returns the number s as DynamoDB keeps it: exact, without
// leading or trailing zeros or an exponent ("1.50" is "1.5", "1E+2"
// "100"). It refuses what is not a number.
func normalize(s string) (string, error) {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return "", fmt.Errorf("%q is not a number", s)
	}
	return d.String(), nil
}
