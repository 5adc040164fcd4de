package migrate

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shopspring/decimal"
)

// canonical writes item as canonical JSON: DynamoDB's typed form
// ({"S":…}, {"N":…}, {"M":{…}}, …) with map keys in byte order, numbers
// written by value ("1.50" and "1.5" alike, as DynamoDB stores them),
// sets sorted, binary as standard base64, and the attributes in skip
// left out. Equal items give equal bytes on every DynamoDB-compatible
// server, so their SHA-256 can be compared across the two sides.
func canonical(item map[string]types.AttributeValue, skip ...string) []byte {
	var b bytes.Buffer
	writeMap(&b, item, skip)
	return b.Bytes()
}

func writeMap(b *bytes.Buffer, m map[string]types.AttributeValue, skip []string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		if !slices.Contains(skip, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, k)
		b.WriteByte(':')
		writeValue(b, m[k])
	}
	b.WriteByte('}')
}

func writeValue(b *bytes.Buffer, v types.AttributeValue) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		typed(b, "S")
		writeString(b, v.Value)
	case *types.AttributeValueMemberN:
		typed(b, "N")
		writeString(b, number(v.Value))
	case *types.AttributeValueMemberB:
		typed(b, "B")
		writeString(b, base64.StdEncoding.EncodeToString(v.Value))
	case *types.AttributeValueMemberBOOL:
		typed(b, "BOOL")
		b.WriteString(strconv.FormatBool(v.Value))
	case *types.AttributeValueMemberNULL:
		typed(b, "NULL")
		b.WriteString("true")
	case *types.AttributeValueMemberM:
		typed(b, "M")
		writeMap(b, v.Value, nil)
	case *types.AttributeValueMemberL:
		typed(b, "L")
		b.WriteByte('[')
		for i, e := range v.Value {
			if i > 0 {
				b.WriteByte(',')
			}
			writeValue(b, e)
		}
		b.WriteByte(']')
	case *types.AttributeValueMemberSS:
		typed(b, "SS")
		writeStrings(b, v.Value, func(s string) string { return s })
	case *types.AttributeValueMemberNS:
		typed(b, "NS")
		writeStrings(b, v.Value, number)
	case *types.AttributeValueMemberBS:
		typed(b, "BS")
		enc := make([]string, len(v.Value))
		for i, e := range v.Value {
			enc[i] = base64.StdEncoding.EncodeToString(e)
		}
		writeStrings(b, enc, func(s string) string { return s })
	default:
		typed(b, "?")
		b.WriteString("null")
	}
	b.WriteByte('}')
}

// typed opens {"T": for a value of DynamoDB type t; writeValue closes it.
func typed(b *bytes.Buffer, t string) {
	b.WriteByte('{')
	writeString(b, t)
	b.WriteByte(':')
}

// writeStrings writes a set's members, each through norm, sorted.
func writeStrings(b *bytes.Buffer, set []string, norm func(string) string) {
	out := make([]string, len(set))
	for i, s := range set {
		out[i] = norm(s)
	}
	slices.Sort(out)
	b.WriteByte('[')
	for i, s := range out {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, s)
	}
	b.WriteByte(']')
}

func writeString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // a string always encodes
	b.Write(enc)
}

// number is a DynamoDB number's text by value: "1.50" is "1.5", "1e2"
// is "100". Text that is no number (no server sends it) stays as it is.
func number(n string) string {
	d, err := decimal.NewFromString(n)
	if err != nil {
		return n
	}
	return d.String()
}
