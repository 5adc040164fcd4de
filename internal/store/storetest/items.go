// Package storetest holds the storage seam's conformance cases: what
// every engine of package store must do, run by each engine's tests
// against that engine (SQLite in package disk; minidyn in-process and
// dynalite in CI for package cloud).
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"ndiro/internal/store"
)

// Tables are the conformance tables, shaped like ndiro's: one with a
// partition key only, one with a sort key too (and a TTL attribute).
type Tables struct {
	Hash  store.Table // pk "id"
	Range store.Table // pk "user_id", sk "sk", TTL "expires_at"
}

// NewTables returns Tables whose names start with prefix.
func NewTables(prefix string) Tables {
	return Tables{
		Hash:  store.Table{Name: prefix + "hash", PK: "id"},
		Range: store.Table{Name: prefix + "range", PK: "user_id", SK: "sk", TTL: "expires_at"},
	}
}

// RunItems runs every item case against the engine open returns; each
// case gets tables of its own, named from prefix (open creates them where
// an engine needs tables created). gaps names the cases a test double
// cannot pass, with why; they are skipped, saying so.
func RunItems(t *testing.T, prefix string, gaps map[string]string, open func(t *testing.T, tables Tables) store.Items) {
	cases := []struct {
		name string
		run  func(t *testing.T, db store.Items, tb Tables)
	}{
		{"RoundTrip", roundTrip},
		{"ExactNumbers", exactNumbers},
		{"PutConditions", putConditions},
		{"UpdateClauses", updateClauses},
		{"UpdateConditions", updateConditions},
		{"Delete", deleteItems},
		{"QueryRanges", queryRanges},
		{"QueryPages", queryPages},
		{"QueryFilterProject", queryFilterProject},
		{"ScanPages", scanPages},
		{"BatchDelete", batchDelete},
		{"SizeLimit", sizeLimit},
		{"Conditions", conditions},
	}
	// Every case's tables are made first, one after another: an emulator
	// may not take a new table while it serves others.
	dbs := make([]store.Items, len(cases))
	for i := range cases {
		dbs[i] = open(t, NewTables(fmt.Sprintf("%sc%d-", prefix, i)))
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if why, ok := gaps[c.name]; ok {
				t.Skipf("a gap of this server: %s", why)
			}
			t.Parallel()
			c.run(t, dbs[i], NewTables(fmt.Sprintf("%sc%d-", prefix, i)))
		})
	}
}

var ctx = context.Background()

// must returns v, failing the test given to what it returns if err is
// not nil: must(db.Query(…))(t).
func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func put(t *testing.T, db store.Items, tb store.Table, item store.Item) {
	t.Helper()
	if _, err := db.Put(ctx, tb, item, store.Cond{}); err != nil {
		t.Fatalf("Put(%v) = %v", item, err)
	}
}

func get(t *testing.T, db store.Items, tb store.Table, k store.Key) store.Item {
	t.Helper()
	item, found, err := db.Get(ctx, tb, k, store.Read{Consistent: true})
	if err != nil {
		t.Fatalf("Get(%v) = %v", k, err)
	}
	if !found {
		return nil
	}
	return item
}

func meal(user, sk string, kv ...any) store.Item {
	item := store.Item{"user_id": store.S(user), "sk": store.S(sk)}
	for i := 0; i+1 < len(kv); i += 2 {
		item[kv[i].(string)] = kv[i+1].(types.AttributeValue)
	}
	return item
}

func diff(want, got any) string { return cmp.Diff(want, got, cmpAV) }

// cmpAV compares attribute values by what they hold.
var cmpAV = cmp.Comparer(func(a, b types.AttributeValue) bool {
	return fmt.Sprintf("%#v", flat(a)) == fmt.Sprintf("%#v", flat(b))
})

// flat turns a value into plain Go values, sets sorted, for comparison.
func flat(v types.AttributeValue) any {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return "S:" + v.Value
	case *types.AttributeValueMemberN:
		return "N:" + v.Value
	case *types.AttributeValueMemberBOOL:
		return v.Value
	case *types.AttributeValueMemberNULL:
		return nil
	case *types.AttributeValueMemberB:
		return v.Value
	case *types.AttributeValueMemberSS:
		s := slices.Clone(v.Value)
		slices.Sort(s)
		return "SS:" + strings.Join(s, ",")
	case *types.AttributeValueMemberM:
		m := map[string]any{}
		for k, e := range v.Value {
			m[k] = flat(e)
		}
		return m
	case *types.AttributeValueMemberL:
		l := []any{}
		for _, e := range v.Value {
			l = append(l, flat(e))
		}
		return l
	}
	return fmt.Sprintf("%T", v)
}

func m(kv ...any) types.AttributeValue {
	out := map[string]types.AttributeValue{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1].(types.AttributeValue)
	}
	return &types.AttributeValueMemberM{Value: out}
}

func roundTrip(t *testing.T, db store.Items, tb Tables) {
	item := meal("u1", "2026-09-01#120000-aaaaaa",
		"notes", store.S("Soup · with ünïcode 🍲"), "kcal", store.N("512.5"), "flag", store.Bool(true),
		"tags", store.StringSet("a", "b"), "comments", m("c1", m("text", store.S("hi"), "at", store.N("3"))),
		"empty", m(), "list", &types.AttributeValueMemberL{Value: []types.AttributeValue{store.S("x"), store.N("2")}},
		"nothing", &types.AttributeValueMemberNULL{Value: true})
	put(t, db, tb.Range, item)
	if d := diff(item, get(t, db, tb.Range, store.Key{PK: "u1", SK: "2026-09-01#120000-aaaaaa"})); d != "" {
		t.Errorf("Get after Put (-want +got):\n%s", d)
	}
	user := store.Item{"id": store.S("sub|1"), "email": store.S("a@example.com")}
	put(t, db, tb.Hash, user)
	if d := diff(user, get(t, db, tb.Hash, store.Key{PK: "sub|1"})); d != "" {
		t.Errorf("Get in a table without sort key (-want +got):\n%s", d)
	}
	if got := get(t, db, tb.Hash, store.Key{PK: "nobody"}); got != nil {
		t.Errorf("Get of a missing item = %v, want not found", got)
	}
	// Projection of a nested path keeps the map around it.
	got, _, err := db.Get(ctx, tb.Range, store.Key{PK: "u1", SK: "2026-09-01#120000-aaaaaa"}, store.Read{Project: []store.Path{store.P("kcal"), store.P("comments", "c1", "text")}})
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(store.Item{"kcal": store.N("512.5"), "comments": m("c1", m("text", store.S("hi")))}, got); d != "" {
		t.Errorf("projected Get (-want +got):\n%s", d)
	}
}

// exactNumbers: numbers are decimal text, never float64: a 19-digit
// version and 0.1 come back as they went, through put, update and
// projection, and arithmetic is exact.
func exactNumbers(t *testing.T, db store.Items, tb Tables) {
	k := store.Key{PK: "u1", SK: "s"}
	put(t, db, tb.Range, meal("u1", "s", "photo_v", store.N("1733590000123456789"), "carbs", store.N("0.1")))
	up := must(db.Update(ctx, tb.Range, k, store.Update{}.
		Set(store.P("photo_v"), store.Plus(store.Attr(store.P("photo_v")), store.Value(store.N("1")))).
		Set(store.P("carbs"), store.Plus(store.Attr(store.P("carbs")), store.Value(store.N("0.2")))), store.Cond{}))(t)
	if d := diff(store.N("1733590000123456790"), up["photo_v"]); d != "" {
		t.Errorf("19-digit + 1 (-want +got):\n%s", d)
	}
	if d := diff(store.N("0.3"), up["carbs"]); d != "" {
		t.Errorf("0.1 + 0.2 = %v, want exactly 0.3", up["carbs"])
	}
	got, _, err := db.Get(ctx, tb.Range, k, store.Read{Consistent: true, Project: []store.Path{store.P("photo_v")}})
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(store.N("1733590000123456790"), got["photo_v"]); d != "" {
		t.Errorf("projected 19-digit number (-want +got):\n%s", d)
	}
}

func putConditions(t *testing.T, db store.Items, tb Tables) {
	first := store.Item{"id": store.S("tok"), "state": store.S("new")}
	if _, err := db.Put(ctx, tb.Hash, first, store.NotExists(store.P("id"))); err != nil {
		t.Fatalf("first conditional Put = %v", err)
	}
	old, err := db.Put(ctx, tb.Hash, store.Item{"id": store.S("tok"), "state": store.S("second")}, store.NotExists(store.P("id")))
	var cf *store.ConditionFailedError
	if !errors.As(err, &cf) || !errors.Is(err, store.ErrConditionFailed) {
		t.Fatalf("second Put with attribute_not_exists = %v, %v; want a ConditionFailedError", old, err)
	}
	if d := diff(first, cf.Current); d != "" {
		t.Errorf("the refusal's current item (-want +got):\n%s", d)
	}
	old, err = db.Put(ctx, tb.Hash, store.Item{"id": store.S("tok"), "state": store.S("used")}, store.Eq(store.P("state"), store.S("new")))
	if err != nil {
		t.Fatalf("Put on state = new: %v", err)
	}
	if d := diff(first, old); d != "" {
		t.Errorf("Put returned as the old item (-want +got):\n%s", d)
	}
	_, err = db.Put(ctx, tb.Hash, store.Item{"id": store.S("other"), "state": store.S("x")}, store.Exists(store.P("id")))
	if !errors.As(err, &cf) || cf.Current != nil {
		t.Errorf("Put on attribute_exists of a missing item = %v; want ConditionFailedError with no current item", err)
	}
	if got := get(t, db, tb.Hash, store.Key{PK: "other"}); got != nil {
		t.Errorf("a refused Put wrote %v", got)
	}
}

func updateClauses(t *testing.T, db store.Items, tb Tables) {
	k := store.Key{PK: "sub"}
	// An update creates a missing item from its key.
	up := must(db.Update(ctx, tb.Hash, k, store.Update{}.
		Set(store.P("sessions"), store.Value(m())).
		Set(store.P("rev"), store.IfNotExists(store.P("rev"), store.N("0"))).
		Add(store.P("meals"), store.N("3")).
		Add(store.P("roles"), store.StringSet("owner")), store.Cond{}))(t)
	want := store.Item{"id": store.S("sub"), "sessions": m(), "rev": store.N("0"), "meals": store.N("3"), "roles": store.StringSet("owner")}
	if d := diff(want, up); d != "" {
		t.Fatalf("first Update (-want +got):\n%s", d)
	}
	up = must(db.Update(ctx, tb.Hash, k, store.Update{}.
		Set(store.P("sessions", "h1"), store.Value(m("exp", store.N("100")))).
		Set(store.P("rev"), store.Plus(store.IfNotExists(store.P("rev"), store.N("0")), store.Value(store.N("1")))).
		Add(store.P("meals"), store.N("-5")).
		Add(store.P("roles"), store.StringSet("admin", "owner")), store.Cond{}))(t)
	want = store.Item{"id": store.S("sub"), "sessions": m("h1", m("exp", store.N("100"))), "rev": store.N("1"), "meals": store.N("-2"), "roles": store.StringSet("owner", "admin")}
	if d := diff(want, up); d != "" {
		t.Errorf("second Update (-want +got):\n%s", d)
	}
	up = must(db.Update(ctx, tb.Hash, k, store.Update{}.
		Remove(store.P("sessions", "h1")).Remove(store.P("missing")).
		Set(store.P("rev"), store.Minus(store.Attr(store.P("rev")), store.Value(store.N("1")))).
		Delete(store.P("roles"), store.StringSet("owner")), store.Cond{}))(t)
	want = store.Item{"id": store.S("sub"), "sessions": m(), "rev": store.N("0"), "meals": store.N("-2"), "roles": store.StringSet("admin")}
	if d := diff(want, up); d != "" {
		t.Errorf("third Update (-want +got):\n%s", d)
	}
	up = must(db.Update(ctx, tb.Hash, k, store.Update{}.Delete(store.P("roles"), store.StringSet("admin")), store.Cond{}))(t)
	if _, ok := up["roles"]; ok {
		t.Errorf("a string set emptied by DELETE is still there: %v", up["roles"])
	}
	if d := diff(up, get(t, db, tb.Hash, k)); d != "" {
		t.Errorf("Update's returned item differs from the stored one (-returned +stored):\n%s", d)
	}
}

func updateConditions(t *testing.T, db store.Items, tb Tables) {
	k := store.Key{PK: "sub"}
	put(t, db, tb.Hash, store.Item{"id": store.S("sub"), "sessions": m("h1", m("exp", store.N("100"))), "status": store.S("active")})
	// A condition on a nested map entry.
	if _, err := db.Update(ctx, tb.Hash, k, store.Update{}.Set(store.P("sessions", "h1", "exp"), store.Value(store.N("200"))),
		store.And(store.Exists(store.P("sessions", "h1")), store.Eq(store.P("status"), store.S("active")))); err != nil {
		t.Fatalf("Update on an existing session = %v", err)
	}
	_, err := db.Update(ctx, tb.Hash, k, store.Update{}.Set(store.P("sessions", "h2", "exp"), store.Value(store.N("1"))), store.Exists(store.P("sessions", "h2")))
	var cf *store.ConditionFailedError
	if !errors.As(err, &cf) {
		t.Fatalf("Update on a missing session = %v, want ConditionFailedError", err)
	}
	if d := diff(m("h1", m("exp", store.N("200"))), cf.Current["sessions"]); d != "" {
		t.Errorf("the refusal's current sessions (-want +got):\n%s", d)
	}
	_, err = db.Update(ctx, tb.Hash, store.Key{PK: "nobody"}, store.Update{}.Set(store.P("status"), store.Value(store.S("x"))), store.Exists(store.P("id")))
	if !errors.As(err, &cf) || cf.Current != nil {
		t.Errorf("Update of a missing item on attribute_exists = %v, want ConditionFailedError without an item", err)
	}
	if got := get(t, db, tb.Hash, store.Key{PK: "nobody"}); got != nil {
		t.Errorf("a refused Update created %v", got)
	}
}

func deleteItems(t *testing.T, db store.Items, tb Tables) {
	item := meal("u1", "a", "v", store.N("2"))
	put(t, db, tb.Range, item)
	_, err := db.Delete(ctx, tb.Range, store.Key{PK: "u1", SK: "a"}, store.Eq(store.P("v"), store.N("1")))
	if !errors.Is(err, store.ErrConditionFailed) {
		t.Fatalf("Delete on a wrong version = %v, want ErrConditionFailed", err)
	}
	old := must(db.Delete(ctx, tb.Range, store.Key{PK: "u1", SK: "a"}, store.Eq(store.P("v"), store.N("2"))))(t)
	if d := diff(item, old); d != "" {
		t.Errorf("Delete returned (-want +got):\n%s", d)
	}
	if got := get(t, db, tb.Range, store.Key{PK: "u1", SK: "a"}); got != nil {
		t.Errorf("deleted item still there: %v", got)
	}
	if old, err := db.Delete(ctx, tb.Range, store.Key{PK: "u1", SK: "a"}, store.Cond{}); err != nil || old != nil {
		t.Errorf("Delete of a missing item = %v, %v; want nothing, no error", old, err)
	}
}

// monthItems puts meals of two owners over two months and a claim item
// ("~idem#…", above every meal key), and returns owner u1's sort keys in
// order.
func monthItems(t *testing.T, db store.Items, tb Tables) []string {
	var sks []string
	for _, d := range []string{"2026-08-31", "2026-09-01", "2026-09-15", "2026-09-30", "2026-10-01"} {
		for _, tm := range []string{"073000-aaaaaa", "123000-bbbbbb"} {
			sk := d + "#" + tm
			put(t, db, tb.Range, meal("u1", sk, "kcal", store.N(fmt.Sprint(len(sks)*100))))
			put(t, db, tb.Range, meal("u2", sk))
			sks = append(sks, sk)
		}
	}
	put(t, db, tb.Range, meal("u1", "~idem#key"))
	return sks
}

func keysOf(items []store.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it["sk"].(*types.AttributeValueMemberS).Value)
	}
	return out
}

func queryRanges(t *testing.T, db store.Items, tb Tables) {
	sks := monthItems(t, db, tb)
	for _, c := range []struct {
		name    string
		r       store.Range
		reverse bool
		want    []string
	}{
		{"month by prefix", store.Prefix("2026-09-"), false, sks[2:8]},
		{"days by between with #~", store.Between("2026-09-01#", "2026-09-15#~"), false, sks[2:6]},
		{"after a key", store.Above("2026-09-30#123000-bbbbbb"), false, append(slices.Clone(sks[8:]), "~idem#key")},
		{"below the claims", store.Below("~"), false, sks},
		{"month newest first", store.Prefix("2026-09-"), true, reversed(sks[2:8])},
		{"whole partition", store.Range{}, false, append(slices.Clone(sks), "~idem#key")},
	} {
		p := must(db.Query(ctx, store.Query{Table: tb.Range, PK: "u1", SK: c.r, Reverse: c.reverse, Consistent: true}))(t)
		if d := cmp.Diff(c.want, keysOf(p.Items)); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
		if p.Next != nil {
			t.Errorf("%s: Next = %v on the only page", c.name, p.Next)
		}
		if p.Scanned != len(c.want) || (len(c.want) > 0 && p.Units <= 0) {
			t.Errorf("%s: Scanned %d, Units %v; want %d and some units", c.name, p.Scanned, p.Units, len(c.want))
		}
	}
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// queryPages: Limit and After page through a range exactly once, in
// either direction.
func queryPages(t *testing.T, db store.Items, tb Tables) {
	sks := monthItems(t, db, tb)
	for _, reverse := range []bool{false, true} {
		var got []string
		var after *store.Key
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("paging does not end")
			}
			p := must(db.Query(ctx, store.Query{Table: tb.Range, PK: "u1", SK: store.Below("~"), Reverse: reverse, Limit: 3, After: after}))(t)
			if len(p.Items) > 3 {
				t.Fatalf("a page of Limit 3 held %d items", len(p.Items))
			}
			got = append(got, keysOf(p.Items)...)
			if p.Next == nil {
				break
			}
			after = p.Next
		}
		want := sks
		if reverse {
			want = reversed(sks)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("paged (reverse %v) (-want +got):\n%s", reverse, d)
		}
	}
}

func queryFilterProject(t *testing.T, db store.Items, tb Tables) {
	monthItems(t, db, tb)
	// Limit counts items before the filter, as DynamoDB's does.
	p := must(db.Query(ctx, store.Query{Table: tb.Range, PK: "u1", SK: store.Prefix("2026-09-"), Limit: 4,
		Filter: store.Lt(store.P("kcal"), store.N("450")), Project: []store.Path{store.P("sk")}}))(t)
	if d := cmp.Diff([]string{"2026-09-01#073000-aaaaaa", "2026-09-01#123000-bbbbbb", "2026-09-15#073000-aaaaaa"}, keysOf(p.Items)); d != "" {
		t.Errorf("filtered page (-want +got):\n%s", d)
	}
	if p.Scanned != 4 || p.Next == nil {
		t.Errorf("filtered page: Scanned %d, Next %v; want 4 evaluated and a next page", p.Scanned, p.Next)
	}
	for _, it := range p.Items {
		if len(it) != 1 {
			t.Errorf("projected to sk, got %v", it)
		}
	}
	put(t, db, tb.Range, meal("u1", "2026-09-15#073000-aaaaaa", "notes", store.S("Soup and bread")))
	p = must(db.Query(ctx, store.Query{Table: tb.Range, PK: "u1", Filter: store.BeginsWith(store.P("notes"), "Soup")}))(t)
	if d := cmp.Diff([]string{"2026-09-15#073000-aaaaaa"}, keysOf(p.Items)); d != "" {
		t.Errorf("begins_with filter (-want +got):\n%s", d)
	}
	// A Scan may filter on key attributes too.
	sp := must(db.Scan(ctx, store.Scan{Table: tb.Range, Filter: store.And(store.BeginsWith(store.P("sk"), "~idem#"), store.Eq(store.P("user_id"), store.S("u1")))}))(t)
	if d := cmp.Diff([]string{"~idem#key"}, keysOf(sp.Items)); d != "" {
		t.Errorf("begins_with filter on a sort key in a Scan (-want +got):\n%s", d)
	}
}

func scanPages(t *testing.T, db store.Items, tb Tables) {
	want := map[string]bool{}
	for i := range 23 {
		id := fmt.Sprintf("user-%02d", i)
		put(t, db, tb.Hash, store.Item{"id": store.S(id), "n": store.Int(int64(i))})
		want[id] = true
	}
	seen := map[string]int{}
	matched := 0
	var after *store.Key
	for pages := 0; ; pages++ {
		if pages > 30 {
			t.Fatal("scan paging does not end")
		}
		p := must(db.Scan(ctx, store.Scan{Table: tb.Hash, Limit: 5, After: after, Consistent: true, Filter: store.Ge(store.P("n"), store.N("20"))}))(t)
		if p.Scanned > 5 {
			t.Fatalf("a scan page of Limit 5 evaluated %d", p.Scanned)
		}
		matched += len(p.Items)
		if p.Next == nil {
			break
		}
		seen[p.Next.PK]++
		after = p.Next
	}
	if matched != 3 {
		t.Errorf("scan filter n >= 20 matched %d, want 3", matched)
	}
	for k, n := range seen {
		if n > 1 {
			t.Errorf("cursor %s came back %d times", k, n)
		}
	}
	var all []string
	after = nil
	for {
		p := must(db.Scan(ctx, store.Scan{Table: tb.Hash, Limit: 7, After: after}))(t)
		for _, it := range p.Items {
			all = append(all, it["id"].(*types.AttributeValueMemberS).Value)
		}
		if p.Next == nil {
			break
		}
		after = p.Next
	}
	slices.Sort(all)
	distinct := len(slices.Compact(slices.Clone(all)))
	if len(all) != len(want) || distinct != len(want) {
		t.Errorf("a paged scan read %d items (%d distinct), want each of %d once", len(all), distinct, len(want))
	}
}

func batchDelete(t *testing.T, db store.Items, tb Tables) {
	sks := monthItems(t, db, tb)
	var keys []store.Key
	for _, sk := range sks[:7] {
		keys = append(keys, store.Key{PK: "u1", SK: sk})
	}
	keys = append(keys, store.Key{PK: "u1", SK: "never-there"})
	if err := db.BatchDelete(ctx, tb.Range, keys); err != nil {
		t.Fatal(err)
	}
	p := must(db.Query(ctx, store.Query{Table: tb.Range, PK: "u1", Consistent: true}))(t)
	if d := cmp.Diff(append(slices.Clone(sks[7:]), "~idem#key"), keysOf(p.Items)); d != "" {
		t.Errorf("after BatchDelete (-want +got):\n%s", d)
	}
	p = must(db.Query(ctx, store.Query{Table: tb.Range, PK: "u2", Consistent: true}))(t)
	if len(p.Items) != len(sks) {
		t.Errorf("BatchDelete of u1's items left u2 with %d of %d", len(p.Items), len(sks))
	}
}

// sizeLimit: an item of exactly MaxItemBytes, as DynamoDB sizes it, is
// taken; one byte more is refused with ErrTooLarge and nothing is
// written, by Put and by an Update that grows an item past it.
func sizeLimit(t *testing.T, db store.Items, tb Tables) {
	// ASCII, which every DynamoDB sizes alike (dynalite counts UTF-16
	// units, DynamoDB UTF-8 bytes); store.Size's own tests hold the rest.
	base := store.Item{"id": store.S("big"), "notes": store.S("")}
	base["notes"] = store.S(strings.Repeat("x", store.MaxItemBytes-store.Size(base)))
	if n := store.Size(base); n != store.MaxItemBytes {
		t.Fatalf("test item is %d bytes, want %d", n, store.MaxItemBytes)
	}
	if _, err := db.Put(ctx, tb.Hash, base, store.Cond{}); err != nil {
		t.Fatalf("Put of an item of exactly 400 KB = %v", err)
	}
	over := store.Item{"id": store.S("big2"), "notes": store.S(base["notes"].(*types.AttributeValueMemberS).Value + "x")}
	if _, err := db.Put(ctx, tb.Hash, over, store.Cond{}); !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("Put of 400 KB + 1 byte = %v, want ErrTooLarge", err)
	}
	if got := get(t, db, tb.Hash, store.Key{PK: "big2"}); got != nil {
		t.Error("the refused item was written")
	}
	_, err := db.Update(ctx, tb.Hash, store.Key{PK: "big"}, store.Update{}.Set(store.P("y"), store.Value(store.S(""))), store.Cond{})
	if !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("Update growing a 400 KB item by an attribute = %v, want ErrTooLarge", err)
	}
	if got := get(t, db, tb.Hash, store.Key{PK: "big"}); store.Size(got) != store.MaxItemBytes {
		t.Errorf("the refused Update changed the item to %d bytes", store.Size(got))
	}
}

func conditions(t *testing.T, db store.Items, tb Tables) {
	put(t, db, tb.Hash, store.Item{"id": store.S("x"), "n": store.N("5"), "s": store.S("abc"), "m": m("k", store.S("v"))})
	for _, c := range []struct {
		name string
		cond store.Cond
		want bool
	}{
		{"n = 5", store.Eq(store.P("n"), store.N("5.0")), true},
		{"n < 10", store.Lt(store.P("n"), store.N("10")), true},
		{"n > 5", store.Gt(store.P("n"), store.N("5")), false},
		{"n >= 5 and s begins ab", store.And(store.Ge(store.P("n"), store.N("5")), store.BeginsWith(store.P("s"), "ab")), true},
		{"missing <> 1", store.Ne(store.P("missing"), store.N("1")), true},
		{"missing = 1", store.Eq(store.P("missing"), store.N("1")), false},
		{"n = '5' (type differs)", store.Eq(store.P("n"), store.S("5")), false},
		{"or", store.Or(store.Eq(store.P("s"), store.S("zzz")), store.Exists(store.P("m", "k"))), true},
		{"not", store.Not(store.Exists(store.P("m", "k"))), false},
		{"type M", store.HasType(store.P("m"), "M"), true},
		{"type S of n", store.HasType(store.P("n"), "S"), false},
	} {
		_, err := db.Update(ctx, tb.Hash, store.Key{PK: "x"}, store.Update{}.Set(store.P("seen"), store.Value(store.S(c.name))), c.cond)
		if got := err == nil; got != c.want || (err != nil && !errors.Is(err, store.ErrConditionFailed)) {
			t.Errorf("%s: Update = %v, want it to hold: %v", c.name, err, c.want)
		}
	}
}
