package localenv

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var kcValues = map[string]json.RawMessage{
	":u": json.RawMessage(`{"S":"ana"}`), ":a": json.RawMessage(`{"S":"2026-09-"}`),
	":b": json.RawMessage(`{"S":"2026-09-30#~"}`), ":n": json.RawMessage(`{"N":"1"}`),
}

var kcNames = map[string]string{"#0": "user_id", "#1": "sk", "#k": "kcal"}

func TestParseKeyCondition(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr string
		want keyCondition
	}{
		{"user_id = :u", keyCondition{pk: "ana"}},
		{"(#0 = :u) AND (begins_with (#1, :a))", keyCondition{pk: "ana", sk: keyRange{op: "begins_with", a: "2026-09-"}}},
		{"((#0 = :u) AND (#1 BETWEEN :a AND :b))", keyCondition{pk: "ana", sk: keyRange{op: "between", a: "2026-09-", b: "2026-09-30#~"}}},
		{"sk between :a and :b and user_id = :u", keyCondition{pk: "ana", sk: keyRange{op: "between", a: "2026-09-", b: "2026-09-30#~"}}},
		{":u = user_id AND :a < sk", keyCondition{pk: "ana", sk: keyRange{op: ">", a: "2026-09-"}}},
		{"user_id=:u AND sk<=:a", keyCondition{pk: "ana", sk: keyRange{op: "<=", a: "2026-09-"}}},
		{"user_id = :u AND sk >= :a", keyCondition{pk: "ana", sk: keyRange{op: ">=", a: "2026-09-"}}},
		{"user_id = :u\n\tAND sk = :a", keyCondition{pk: "ana", sk: keyRange{op: "=", a: "2026-09-"}}},
	} {
		got, err := parseKeyCondition(tc.expr, kcNames, kcValues, "user_id", "sk")
		if err != nil {
			t.Errorf("parseKeyCondition(%q) = %v", tc.expr, err)
			continue
		}
		if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(keyCondition{}, keyRange{})); d != "" {
			t.Errorf("parseKeyCondition(%q) (-want +got):\n%s", tc.expr, d)
		}
	}
	// A table with a partition key only takes no sort key condition.
	if _, err := parseKeyCondition("user_id = :u AND sk = :a", kcNames, kcValues, "user_id", ""); err == nil {
		t.Error("parseKeyCondition with a sort key condition on a table without one = nil error")
	}
}

func TestKeyRangeSpan(t *testing.T) {
	t.Parallel()
	ks := []string{"2026-08-31#1", "2026-09-01#1", "2026-09-01#2", "2026-09-15#1", "2026-09-30#9", "2026-10-01#1"}
	for _, tc := range []struct {
		r    keyRange
		want []string
	}{
		{keyRange{}, ks},
		{keyRange{op: "begins_with", a: "2026-09-"}, ks[1:5]},
		{keyRange{op: "begins_with", a: "2026-09-01#"}, ks[1:3]},
		{keyRange{op: "begins_with", a: "2027"}, nil},
		{keyRange{op: "begins_with", a: ""}, ks},
		{keyRange{op: "between", a: "2026-09-01#", b: "2026-09-15#~"}, ks[1:4]},
		{keyRange{op: "between", a: "2026-09-01#2", b: "2026-09-01#2"}, ks[2:3]},
		{keyRange{op: "=", a: "2026-09-15#1"}, ks[3:4]},
		{keyRange{op: "=", a: "2026-09-15#"}, nil},
		{keyRange{op: "<", a: "2026-09-01#2"}, ks[:2]},
		{keyRange{op: "<=", a: "2026-09-01#2"}, ks[:3]},
		{keyRange{op: ">", a: "2026-09-30#9"}, ks[5:]},
		{keyRange{op: ">=", a: "2026-09-30#9"}, ks[4:]},
	} {
		i, j := tc.r.span(ks)
		if got := ks[i:j]; !slices.Equal(got, tc.want) {
			t.Errorf("%+v.span = %q, want %q", tc.r, got, tc.want)
		}
	}
}

// FuzzParseKeyCondition: no expression panics the parser, and one it
// accepts names one of the string values as the partition key's and a
// range whose span is in order (seeds also in testdata/fuzz).
func FuzzParseKeyCondition(f *testing.F) {
	for _, seed := range []string{
		"user_id = :u", "(#0 = :u) AND (begins_with (#1, :a))", "#0 = :u AND #1 BETWEEN :a AND :b",
		":u = user_id AND :a < sk", "user_id = :u OR sk > :a", "user_id = :u AND (sk > :a", "begins_with(", "((((", "user_id = :n",
	} {
		f.Add(seed)
	}
	ks := []string{"2026-08-31#1", "2026-09-01#1", "2026-09-30#~", "2026-10"}
	f.Fuzz(func(t *testing.T, expr string) {
		kc, err := parseKeyCondition(expr, kcNames, kcValues, "user_id", "sk")
		if err != nil {
			var kce *keyCondError
			if !errors.As(err, &kce) {
				t.Fatalf("parseKeyCondition(%q) = %T %v, want a *keyCondError", expr, err, err)
			}
			return
		}
		if !slices.Contains([]string{"ana", "2026-09-", "2026-09-30#~"}, kc.pk) {
			t.Fatalf("parseKeyCondition(%q).pk = %q, want one of the string values", expr, kc.pk)
		}
		if i, j := kc.sk.span(ks); i < 0 || j < i || j > len(ks) {
			t.Fatalf("parseKeyCondition(%q) span [%d, %d) out of order", expr, i, j)
		}
	})
}
