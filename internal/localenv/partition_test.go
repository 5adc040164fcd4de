package localenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/truora/minidyn/server"

	"ndiro/internal/dynamo"
)

// innerCall is one request the router sent the emulator, as the emulator
// saw it, with how many items it answered.
type innerCall struct {
	op, table string
	limit     int
	items     int
}

// recorder sits between the router and the emulator and notes every
// Query and Scan the emulator is asked.
type recorder struct {
	emu   http.Handler
	mu    sync.Mutex
	calls []innerCall
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := operation(r)
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	rec := httptest.NewRecorder()
	rc.emu.ServeHTTP(rec, r)
	forward(w, rec)
	if op != "Query" && op != "Scan" {
		return
	}
	var in struct {
		TableName string
		Limit     int
	}
	var out struct{ Items []any }
	json.Unmarshal(body, &in)
	json.Unmarshal(rec.Body.Bytes(), &out)
	rc.mu.Lock()
	rc.calls = append(rc.calls, innerCall{op: op, table: in.TableName, limit: in.Limit, items: len(out.Items)})
	rc.mu.Unlock()
}

func (rc *recorder) take() []innerCall {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	c := rc.calls
	rc.calls = nil
	return c
}

// routed is a router on a fresh emulator, served over loopback, with the
// four tables created, and an SDK client for it.
type routed struct {
	db     *dynamodb.Client
	router *partitioned
	rec    *recorder
}

func newRouted(t testing.TB) *routed {
	t.Helper()
	rec := &recorder{emu: server.NewServer()}
	router := newPartitioned(rec)
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)
	db := NewDynamoClient(Endpoint{URL: srv.URL}, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	if err := dynamo.CreateTables(context.Background(), db, testTables); err != nil {
		t.Fatal(err)
	}
	rec.take()
	return &routed{db: db, router: router, rec: rec}
}

// meal is a meals row: owner, sort key and a number.
func meal(owner, sk string, kcal int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"user_id": s(owner), "sk": s(sk), "kcal": n(fmt.Sprint(kcal)), "notes": s("soup")}
}

// mealSK is the sort key of the i-th meal of a store: three a day from
// 2024-01-01, a day being 28 days a month for simplicity.
func mealSK(i int) string {
	day, month, year := i/3%28+1, i/84%12+1, 2024+i/1008
	return fmt.Sprintf("%04d-%02d-%02d#%02d0000-%06x", year, month, day, 7+i%3*5, i)
}

// fill puts n meals for each owner with BatchWriteItem and returns their
// sort keys (the same for every owner), sorted.
func (rt *routed) fill(t testing.TB, owners []string, n int) []string {
	t.Helper()
	var sks []string
	for i := 0; i < n; i++ {
		sks = append(sks, mealSK(i))
	}
	var reqs []types.WriteRequest
	flush := func() {
		for pending := map[string][]types.WriteRequest{testTables.Meals.Name: reqs}; len(pending) > 0; {
			out, err := rt.db.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: pending})
			if err != nil {
				t.Fatal(err)
			}
			pending = out.UnprocessedItems
		}
		reqs = nil
	}
	for i, sk := range sks {
		for _, o := range owners {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: meal(o, sk, i)}})
			if len(reqs) == 25 {
				flush()
			}
		}
	}
	if len(reqs) > 0 {
		flush()
	}
	slices.Sort(sks)
	rt.rec.take()
	return sks
}

// sks returns the sort keys of items.
func sks(items []map[string]types.AttributeValue) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it["sk"].(*types.AttributeValueMemberS).Value)
	}
	return out
}

// queryAll runs in to its last page and returns every page.
func queryAll(t *testing.T, db *dynamodb.Client, in *dynamodb.QueryInput) []*dynamodb.QueryOutput {
	t.Helper()
	var pages []*dynamodb.QueryOutput
	p := dynamodb.NewQueryPaginator(db, in)
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, out)
		if len(pages) > 10_000 {
			t.Fatal("Query paging does not end")
		}
	}
	return pages
}

func monthQuery(owner, prefix string) *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		TableName:                 aws.String(testTables.Meals.Name),
		KeyConditionExpression:    aws.String("(#0 = :0) AND (begins_with (#1, :1))"),
		ExpressionAttributeNames:  map[string]string{"#0": "user_id", "#1": "sk"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":0": s(owner), ":1": s(prefix)},
	}
}

func withPrefix(keys []string, prefix string) []string {
	var out []string
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

// TestQueryReadsItsSpanOnly: a month's Query among three owners' years of
// meals returns that month, oldest first, and the emulator is asked for
// that owner's partition alone with a Limit of the month's meals: it reads
// nothing else. Count and ScannedCount are the month's meals.
func TestQueryReadsItsSpanOnly(t *testing.T) {
	t.Parallel()
	rt := newRouted(t)
	keys := rt.fill(t, []string{"ana", "ben", "cy"}, 700)
	want := withPrefix(keys, "2024-03-")
	if len(want) != 84 {
		t.Fatalf("fixture: %d meals in March, want 84", len(want))
	}
	out, err := rt.db.Query(context.Background(), monthQuery("ben", "2024-03-"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, sks(out.Items)); d != "" {
		t.Errorf("March of ben (-want +got):\n%s", d)
	}
	for _, it := range out.Items {
		if got := it["user_id"].(*types.AttributeValueMemberS).Value; got != "ben" {
			t.Fatalf("March of ben holds a meal of %s", got)
		}
	}
	if out.Count != 84 || out.ScannedCount != 84 || out.LastEvaluatedKey != nil {
		t.Errorf("Count %d, ScannedCount %d, LastEvaluatedKey %v; want 84, 84, none", out.Count, out.ScannedCount, out.LastEvaluatedKey)
	}
	ben := rt.router.tables[testTables.Meals.Name].parts["ben"].table
	wantCalls := []innerCall{{op: "Query", table: ben, limit: 84, items: 84}}
	if d := cmp.Diff(wantCalls, rt.rec.take(), cmp.AllowUnexported(innerCall{})); d != "" {
		t.Errorf("what the emulator was asked (-want +got):\n%s", d)
	}
}

// TestQueryLimitReachedAtTheEnd: a Query whose Limit is reached on the
// last item its condition allows still returns LastEvaluatedKey (that
// item), as DynamoDB does, which cannot know there is nothing after it
// without reading on; the page after it is empty and has none.
func TestQueryLimitReachedAtTheEnd(t *testing.T) {
	t.Parallel()
	rt := newRouted(t)
	march := withPrefix(rt.fill(t, []string{"ana"}, 700), "2024-03-")
	for _, backward := range []bool{false, true} {
		in := monthQuery("ana", "2024-03-")
		in.Limit = aws.Int32(int32(len(march)))
		in.ScanIndexForward = aws.Bool(!backward)
		out, err := rt.db.Query(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		last := march[len(march)-1]
		if backward {
			last = march[0]
		}
		got, _ := out.LastEvaluatedKey["sk"].(*types.AttributeValueMemberS)
		if int(out.Count) != len(march) || got == nil || got.Value != last {
			t.Fatalf("backward %v, Limit %d: Count %d, LastEvaluatedKey %v; want %d and the sort key %s", backward, len(march), out.Count, out.LastEvaluatedKey, len(march), last)
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
		if out, err = rt.db.Query(context.Background(), in); err != nil {
			t.Fatal(err)
		}
		if out.Count != 0 || out.ScannedCount != 0 || out.LastEvaluatedKey != nil {
			t.Errorf("backward %v, the page after: Count %d, ScannedCount %d, LastEvaluatedKey %v; want 0, 0, none", backward, out.Count, out.ScannedCount, out.LastEvaluatedKey)
		}
	}
}

// TestQueryConditions: every form of key condition returns the meals
// DynamoDB would, in order, forwards and backwards.
func TestQueryConditions(t *testing.T) {
	t.Parallel()
	rt := newRouted(t)
	keys := rt.fill(t, []string{"ana", "ben"}, 120)
	mid, lo, hi := keys[60], keys[20], keys[45]
	between := func(a, b string) (out []string) {
		for _, k := range keys {
			if k >= a && k <= b {
				out = append(out, k)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		cond string
		vals map[string]types.AttributeValue
		want []string
	}{
		{"partition only", "user_id = :u", nil, keys},
		{"equal", "user_id = :u AND sk = :a", map[string]types.AttributeValue{":a": s(mid)}, []string{mid}},
		{"equal, no such key", "user_id = :u AND sk = :a", map[string]types.AttributeValue{":a": s(mid + "x")}, nil},
		{"less", "user_id = :u AND sk < :a", map[string]types.AttributeValue{":a": s(mid)}, keys[:60]},
		{"at most", "user_id = :u AND sk <= :a", map[string]types.AttributeValue{":a": s(mid)}, keys[:61]},
		{"greater", "user_id = :u AND sk > :a", map[string]types.AttributeValue{":a": s(mid)}, keys[61:]},
		{"at least", "user_id = :u AND sk >= :a", map[string]types.AttributeValue{":a": s(mid)}, keys[60:]},
		{"value on the left", ":a > sk AND :u = user_id", map[string]types.AttributeValue{":a": s(mid)}, keys[:60]},
		{"between", "user_id = :u AND sk BETWEEN :a AND :b", map[string]types.AttributeValue{":a": s(lo), ":b": s(hi)}, between(lo, hi)},
		{"window of days", "(user_id = :u) and (sk between :a and :b)", map[string]types.AttributeValue{":a": s("2024-01-05#"), ":b": s("2024-01-09#~")}, between("2024-01-05#", "2024-01-09#~")},
		{"begins_with", "begins_with(sk, :a) AND user_id = :u", map[string]types.AttributeValue{":a": s("2024-02-1")}, withPrefix(keys, "2024-02-1")},
		{"begins_with, nothing", "user_id = :u AND begins_with(sk, :a)", map[string]types.AttributeValue{":a": s("2031-")}, nil},
		{"other owner", "user_id = :v", map[string]types.AttributeValue{":v": s("cy")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals := map[string]types.AttributeValue{":u": s("ben")}
			for k, v := range tc.vals {
				vals[k] = v
			}
			for _, forward := range []bool{true, false} {
				for _, limit := range []int32{0, 13} {
					in := &dynamodb.QueryInput{TableName: aws.String(testTables.Meals.Name), KeyConditionExpression: aws.String(tc.cond),
						ExpressionAttributeValues: vals, ScanIndexForward: aws.Bool(forward)}
					if tc.name == "other owner" {
						delete(in.ExpressionAttributeValues, ":u")
					}
					if limit > 0 {
						in.Limit = aws.Int32(limit)
					}
					var got []string
					for _, pg := range queryAll(t, rt.db, in) {
						got = append(got, sks(pg.Items)...)
						if limit > 0 && int(pg.ScannedCount) > int(limit) {
							t.Errorf("a page read %d items, Limit %d", pg.ScannedCount, limit)
						}
						if pg.LastEvaluatedKey != nil && int(pg.ScannedCount) != int(limit) {
							t.Errorf("a page with LastEvaluatedKey read %d items, want Limit %d", pg.ScannedCount, limit)
						}
					}
					want := slices.Clone(tc.want)
					if !forward {
						slices.Reverse(want)
					}
					if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
						t.Errorf("forward %v, Limit %d (-want +got):\n%s", forward, limit, d)
					}
				}
			}
		})
	}
}

// TestQueryFilterAndCount: a filter keeps some of the span: Count is
// what it kept, ScannedCount the span; Select COUNT sends no items.
func TestQueryFilterAndCount(t *testing.T) {
	t.Parallel()
	rt := newRouted(t)
	rt.fill(t, []string{"ana", "ben"}, 300)
	in := monthQuery("ana", "2024-02-")
	in.FilterExpression = aws.String("kcal >= :k")
	in.ExpressionAttributeValues[":k"] = n("100")
	out, err := rt.db.Query(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	// Meal i has kcal i; February is meals 84..167.
	var want []string
	for i := 100; i < 168; i++ {
		want = append(want, mealSK(i))
	}
	slices.Sort(want)
	if d := cmp.Diff(want, sks(out.Items)); d != "" {
		t.Errorf("filtered February (-want +got):\n%s", d)
	}
	if out.Count != int32(len(want)) || out.ScannedCount != 84 {
		t.Errorf("Count %d, ScannedCount %d; want %d, 84", out.Count, out.ScannedCount, len(want))
	}
	in.Select = types.SelectCount
	out, err = rt.db.Query(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 0 || out.Count != int32(len(want)) || out.ScannedCount != 84 {
		t.Errorf("Select COUNT: %d items, Count %d, ScannedCount %d; want none, %d, 84", len(out.Items), out.Count, out.ScannedCount, len(want))
	}
}

// TestQueryResumesAfterDeletedStartKey: the item a page ended on is
// deleted before the next page is asked for; the next page starts at the
// item after it (the emulator alone answered nothing at all).
func TestQueryResumesAfterDeletedStartKey(t *testing.T) {
	t.Parallel()
	rt := newRouted(t)
	keys := rt.fill(t, []string{"ana"}, 30)
	ctx := context.Background()
	for _, forward := range []bool{true, false} {
		in := &dynamodb.QueryInput{TableName: aws.String(testTables.Meals.Name), KeyConditionExpression: aws.String("user_id = :u"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":u": s("ana")}, Limit: aws.Int32(5), ScanIndexForward: aws.Bool(forward)}
		var got []string
		for {
			out, err := rt.db.Query(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, sks(out.Items)...)
			if out.LastEvaluatedKey == nil {
				break
			}
			if _, err := rt.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(testTables.Meals.Name), Key: out.LastEvaluatedKey}); err != nil {
				t.Fatal(err)
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
		want := slices.Clone(keys)
		if !forward {
			slices.Reverse(want)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("forward %v: meals read across pages (-want +got):\n%s", forward, d)
		}
		keys = remaining(t, rt)
		if len(keys) == 0 {
			break
		}
	}
}

// remaining returns ana's sort keys, as a Query reads them.
func remaining(t *testing.T, rt *routed) []string {
	t.Helper()
	var out []string
	for _, pg := range queryAll(t, rt.db, &dynamodb.QueryInput{TableName: aws.String(testTables.Meals.Name), KeyConditionExpression: aws.String("user_id = :u"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":u": s("ana")}}) {
		out = append(out, sks(pg.Items)...)
	}
	return out
}

// scanAll runs in to its last page and returns every page.
func scanAll(t *testing.T, db *dynamodb.Client, in *dynamodb.ScanInput) []*dynamodb.ScanOutput {
	t.Helper()
	var pages []*dynamodb.ScanOutput
	p := dynamodb.NewScanPaginator(db, in)
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, out)
		if len(pages) > 2_000 {
			t.Fatal("Scan paging does not end")
		}
	}
	return pages
}

// TestScanPagesAcrossPartitions: a Scan with a Limit reads every item
// exactly once, owner after owner, at most Limit items a page and exactly
// Limit on each page but the last; Count and ScannedCount add up.
func TestScanPagesAcrossPartitions(t *testing.T) {
	t.Parallel()
	rt := newRouted(t)
	owners := []string{"ana", "ben", "cy", "dee"}
	keys := rt.fill(t, owners, 40)
	var want []string
	for _, o := range owners {
		for _, k := range keys {
			want = append(want, o+" "+k)
		}
	}
	for _, limit := range []int32{0, 1, 7, 40, 41, 159, 160, 1000} {
		in := &dynamodb.ScanInput{TableName: aws.String(testTables.Meals.Name)}
		if limit > 0 {
			in.Limit = aws.Int32(limit)
		}
		var got []string
		scanned, counted := 0, 0
		pages := scanAll(t, rt.db, in)
		for i, pg := range pages {
			for _, it := range pg.Items {
				got = append(got, it["user_id"].(*types.AttributeValueMemberS).Value+" "+it["sk"].(*types.AttributeValueMemberS).Value)
			}
			scanned += int(pg.ScannedCount)
			counted += int(pg.Count)
			if limit > 0 && i < len(pages)-1 && pg.ScannedCount != limit {
				t.Errorf("Limit %d: page %d read %d items", limit, i, pg.ScannedCount)
			}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("Limit %d: items scanned (-want +got):\n%s", limit, d)
		}
		if scanned != 160 || counted != 160 {
			t.Errorf("Limit %d: ScannedCount adds up to %d, Count to %d, want 160 each", limit, scanned, counted)
		}
		// A page that reads Limit items ends with LastEvaluatedKey, even
		// the one that reads the last item: then an empty page follows.
		wantPages := 1
		if limit > 0 {
			wantPages = 160/int(limit) + 1
		}
		if len(pages) != wantPages {
			t.Errorf("Limit %d: %d pages, want %d", limit, len(pages), wantPages)
		}
	}

	// Select COUNT with a filter across partitions (the monitor's counts).
	out := scanAll(t, rt.db, &dynamodb.ScanInput{TableName: aws.String(testTables.Meals.Name), Limit: aws.Int32(30),
		Select: types.SelectCount, FilterExpression: aws.String("kcal < :k"), ExpressionAttributeValues: map[string]types.AttributeValue{":k": n("10")}})
	count := 0
	for _, pg := range out {
		count += int(pg.Count)
		if len(pg.Items) > 0 {
			t.Fatalf("Select COUNT page sent %d items", len(pg.Items))
		}
	}
	if count != 40 {
		t.Errorf("Select COUNT kcal < 10 over 4 owners = %d, want 40", count)
	}
}

// TestScanResumesAfterDeletions: a paged Scan that deletes what each page
// read (as a clean-up does), partitions emptying and vanishing on the
// way, still reads every item once; so does one over a table without a
// sort key.
func TestScanResumesAfterDeletions(t *testing.T) {
	t.Parallel()
	rt := newRouted(t)
	ctx := context.Background()
	rt.fill(t, []string{"ana", "ben", "cy"}, 10)
	for i := 0; i < 12; i++ {
		if err := putUser(rt.db, fmt.Sprintf("u%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		table string
		want  int
	}{{testTables.Meals.Name, 30}, {testTables.Users.Name, 12}} {
		in := &dynamodb.ScanInput{TableName: aws.String(tc.table), Limit: aws.Int32(4)}
		seen := map[string]bool{}
		for pages := 0; ; pages++ {
			out, err := rt.db.Scan(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range out.Items {
				k := fmt.Sprint(it["user_id"], it["sk"])
				if seen[k] {
					t.Fatalf("%s: item %s read twice", tc.table, k)
				}
				seen[k] = true
			}
			// Delete the last item read, which the next page starts after.
			if out.LastEvaluatedKey == nil {
				break
			}
			if _, err := rt.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tc.table), Key: out.LastEvaluatedKey}); err != nil {
				t.Fatal(err)
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
			if pages > 100 {
				t.Fatal("scan does not end")
			}
		}
		if len(seen) != tc.want {
			t.Errorf("%s: scan read %d items, want %d", tc.table, len(seen), tc.want)
		}
	}
}

// TestParallelScan: segment 0 holds every item, the others none; bad
// segment parameters are refused as DynamoDB refuses them.
func TestParallelScan(t *testing.T) {
	t.Parallel()
	rt := newRouted(t)
	rt.fill(t, []string{"ana", "ben"}, 10)
	total := 0
	for seg := int32(0); seg < 3; seg++ {
		for _, pg := range scanAll(t, rt.db, &dynamodb.ScanInput{TableName: aws.String(testTables.Meals.Name), Segment: aws.Int32(seg), TotalSegments: aws.Int32(3)}) {
			total += len(pg.Items)
			if seg > 0 && len(pg.Items) > 0 {
				t.Errorf("segment %d holds %d items", seg, len(pg.Items))
			}
		}
	}
	if total != 20 {
		t.Errorf("three segments hold %d items, want 20", total)
	}
	for _, tc := range []struct {
		seg, total *int32
		want       string
	}{
		{aws.Int32(0), nil, "TotalSegments parameter is required"},
		{nil, aws.Int32(2), "Segment parameter is required"},
		{aws.Int32(2), aws.Int32(2), "must be less than parameter TotalSegments"},
		{aws.Int32(0), aws.Int32(0), "between 1 and 1000000"},
	} {
		_, err := rt.db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(testTables.Meals.Name), Segment: tc.seg, TotalSegments: tc.total})
		checkValidation(t, fmt.Sprintf("Scan Segment %v TotalSegments %v", aws.ToInt32(tc.seg), aws.ToInt32(tc.total)), err, tc.want)
	}
}

// checkValidation fails unless err is a ValidationException whose
// message holds want.
func checkValidation(t *testing.T, what string, err error, want string) {
	t.Helper()
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "ValidationException" || !strings.Contains(api.ErrorMessage(), want) {
		t.Errorf("%s = %v, want a ValidationException saying %q", what, err, want)
	}
}

// partitions returns the owners whose meals partition exists.
func (rt *routed) partitions() []string {
	rt.router.mu.RLock()
	defer rt.router.mu.RUnlock()
	var out []string
	for _, p := range rt.router.tables[testTables.Meals.Name].order {
		out = append(out, p.pk)
	}
	return out
}

// TestBatchesAcrossPartitions: BatchWriteItem and BatchGetItem over
// several owners' partitions, answers under the table's own name, items
// left unprocessed by the emulator handed back under it too.
func TestBatchesAcrossPartitions(t *testing.T) {
	t.Parallel()
	rt := newRouted(t)
	ctx := context.Background()
	table := testTables.Meals.Name
	var reqs []types.WriteRequest
	for i := 0; i < 25; i++ {
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: meal(fmt.Sprintf("o%d", i%5), mealSK(i), i)}})
	}
	out, err := rt.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}})
	if err != nil || len(out.UnprocessedItems) != 0 {
		t.Fatalf("BatchWriteItem = %v, %d unprocessed", err, len(out.UnprocessedItems))
	}
	if d := cmp.Diff([]string{"o0", "o1", "o2", "o3", "o4"}, rt.partitions()); d != "" {
		t.Errorf("partitions (-want +got):\n%s", d)
	}
	keys := []map[string]types.AttributeValue{
		{"user_id": s("o1"), "sk": s(mealSK(1))}, {"user_id": s("o1"), "sk": s(mealSK(6))},
		{"user_id": s("o3"), "sk": s(mealSK(8))}, {"user_id": s("o3"), "sk": s(mealSK(1))}, // no such meal
		{"user_id": s("nobody"), "sk": s(mealSK(1))}, // no such partition
	}
	got, err := rt.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{table: {Keys: keys}}})
	if err != nil {
		t.Fatal(err)
	}
	var read []string
	for _, it := range got.Responses[table] {
		read = append(read, it["user_id"].(*types.AttributeValueMemberS).Value+" "+it["sk"].(*types.AttributeValueMemberS).Value)
	}
	slices.Sort(read)
	if d := cmp.Diff([]string{"o1 " + mealSK(1), "o1 " + mealSK(6), "o3 " + mealSK(8)}, read); d != "" || len(got.Responses) != 1 {
		t.Errorf("BatchGetItem read %d tables (-want +got):\n%s", len(got.Responses), d)
	}

	// The emulator leaves o2's deletes unprocessed: they come back under
	// the meals table's name, and the rest of the batch is applied.
	emu := rt.rec.emu.(*server.Server)
	emu.EmulateUnprocessedItems(rt.router.tables[table].parts["o2"].table, func(int, map[string]*server.AttributeValue) bool { return true })
	var dels []types.WriteRequest
	for i := 0; i < 25; i++ {
		dels = append(dels, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{"user_id": s(fmt.Sprintf("o%d", i%5)), "sk": s(mealSK(i))}}})
	}
	out, err = rt.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: dels}})
	if err != nil {
		t.Fatal(err)
	}
	emu.ClearUnprocessedItems()
	if len(out.UnprocessedItems) != 1 || len(out.UnprocessedItems[table]) != 5 {
		t.Errorf("UnprocessedItems = %v, want o2's 5 deletes under %s", out.UnprocessedItems, table)
	}
	if d := cmp.Diff([]string{"o2"}, rt.partitions()); d != "" {
		t.Errorf("partitions after deleting all but o2's meals (-want +got):\n%s", d)
	}
	if _, err := rt.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: out.UnprocessedItems}); err != nil {
		t.Fatal(err)
	}
	if p := rt.partitions(); len(p) != 0 {
		t.Errorf("partitions left after every meal was deleted: %v", p)
	}

	// One batch deletes a partition's only meal and puts another: the
	// partition stays, with the new meal.
	if _, err := rt.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: meal("o9", mealSK(1), 1)}); err != nil {
		t.Fatal(err)
	}
	_, err = rt.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: {
		{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{"user_id": s("o9"), "sk": s(mealSK(1))}}},
		{PutRequest: &types.PutRequest{Item: meal("o9", mealSK(2), 2)}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := rt.db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), KeyConditionExpression: aws.String("user_id = :u"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":u": s("o9")}})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{mealSK(2)}, sks(q.Items)); d != "" {
		t.Errorf("o9's meals after a batch deleted the only one and put another (-want +got):\n%s", d)
	}
}

// TestTransactionAcrossPartitions: a transaction writing two owners'
// partitions is all or nothing; a refused one creates no partition.
func TestTransactionAcrossPartitions(t *testing.T) {
	t.Parallel()
	rt := newRouted(t)
	ctx := context.Background()
	table := aws.String(testTables.Meals.Name)
	if _, err := rt.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: meal("ana", mealSK(1), 1)}); err != nil {
		t.Fatal(err)
	}
	absent := aws.String("attribute_not_exists(sk)")
	tx := func(items ...types.TransactWriteItem) error {
		_, err := rt.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		return err
	}
	// ben's put would succeed, ana's fails its condition: neither happens.
	err := tx(types.TransactWriteItem{Put: &types.Put{TableName: table, Item: meal("ben", mealSK(2), 2), ConditionExpression: absent}},
		types.TransactWriteItem{Put: &types.Put{TableName: table, Item: meal("ana", mealSK(1), 9), ConditionExpression: absent}})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || len(tce.CancellationReasons) != 2 || aws.ToString(tce.CancellationReasons[1].Code) != "ConditionalCheckFailed" {
		t.Fatalf("transaction with a failed condition = %v, want TransactionCanceledException with the second item's ConditionalCheckFailed", err)
	}
	if d := cmp.Diff([]string{"ana"}, rt.partitions()); d != "" {
		t.Errorf("partitions after the refused transaction (-want +got):\n%s", d)
	}
	got, _ := rt.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: map[string]types.AttributeValue{"user_id": s("ana"), "sk": s(mealSK(1))}})
	if got.Item["kcal"].(*types.AttributeValueMemberN).Value != "1" {
		t.Errorf("ana's meal after the refused transaction: kcal %v, want 1", got.Item["kcal"])
	}
	// A move across partitions: ana's meal deleted, ben's put, cy checked absent.
	err = tx(types.TransactWriteItem{Delete: &types.Delete{TableName: table, Key: map[string]types.AttributeValue{"user_id": s("ana"), "sk": s(mealSK(1))}, ConditionExpression: aws.String("attribute_exists(sk)")}},
		types.TransactWriteItem{Put: &types.Put{TableName: table, Item: meal("ben", mealSK(1), 1), ConditionExpression: absent}},
		types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: table, Key: map[string]types.AttributeValue{"user_id": s("cy"), "sk": s(mealSK(1))}, ConditionExpression: absent}})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"ben"}, rt.partitions()); d != "" {
		t.Errorf("partitions after the move (-want +got):\n%s", d)
	}
	tg, err := rt.db.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: table, Key: map[string]types.AttributeValue{"user_id": s("ana"), "sk": s(mealSK(1))}}},
		{Get: &types.Get{TableName: table, Key: map[string]types.AttributeValue{"user_id": s("ben"), "sk": s(mealSK(1))}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tg.Responses) != 2 || tg.Responses[0].Item != nil || tg.Responses[1].Item == nil {
		t.Errorf("TransactGetItems after the move = %+v, want ana's gone and ben's there", tg.Responses)
	}
}

// TestConditionalWrites: conditions are the emulator's, partition or
// not; a write refused on a partition that held nothing leaves none.
func TestConditionalWrites(t *testing.T) {
	t.Parallel()
	rt := newRouted(t)
	ctx := context.Background()
	table := aws.String(testTables.Meals.Name)
	key := map[string]types.AttributeValue{"user_id": s("ana"), "sk": s(mealSK(1))}
	put := &dynamodb.PutItemInput{TableName: table, Item: meal("ana", mealSK(1), 1), ConditionExpression: aws.String("attribute_not_exists(sk)")}
	if _, err := rt.db.PutItem(ctx, put); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.db.PutItem(ctx, put); !dynamo.IsConditionFailed(err) {
		t.Errorf("second conditional put = %v, want ConditionalCheckFailedException", err)
	}
	_, err := rt.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: table, Key: map[string]types.AttributeValue{"user_id": s("ben"), "sk": s(mealSK(1))},
		UpdateExpression: aws.String("SET kcal = :k"), ConditionExpression: aws.String("attribute_exists(sk)"), ExpressionAttributeValues: map[string]types.AttributeValue{":k": n("5")}})
	if !dynamo.IsConditionFailed(err) {
		t.Errorf("update of a missing meal with attribute_exists = %v, want ConditionalCheckFailedException", err)
	}
	if d := cmp.Diff([]string{"ana"}, rt.partitions()); d != "" {
		t.Errorf("partitions after refused writes (-want +got):\n%s", d)
	}
	del, err := rt.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: table, Key: key, ReturnValues: types.ReturnValueAllOld})
	if err != nil || del.Attributes["kcal"] == nil {
		t.Fatalf("DeleteItem ALL_OLD = %v, %v; want the old item", del, err)
	}
	if p := rt.partitions(); len(p) != 0 {
		t.Errorf("partitions after the last meal went: %v", p)
	}
	del, err = rt.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: table, Key: key, ReturnValues: types.ReturnValueAllOld})
	if err != nil || len(del.Attributes) != 0 {
		t.Errorf("DeleteItem of a missing meal = %v, %v; want nothing and no error", del.Attributes, err)
	}
	d, err := rt.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: table})
	if err != nil || aws.ToInt64(d.Table.ItemCount) != 0 {
		t.Errorf("DescribeTable = %v, %v; want ItemCount 0", d, err)
	}
}

// TestRefusedRequests: what DynamoDB refuses, or the embedded store
// cannot serve, is a ValidationException saying why, and nothing is
// written.
func TestRefusedRequests(t *testing.T) {
	t.Parallel()
	rt := newRouted(t)
	ctx := context.Background()
	rt.fill(t, []string{"ana"}, 5)
	table := aws.String(testTables.Meals.Name)
	vals := map[string]types.AttributeValue{":u": s("ana"), ":a": s("2024-"), ":b": s("2023-"), ":n": n("1")}
	q := func(cond string) error {
		used := map[string]types.AttributeValue{}
		for k, v := range vals {
			if strings.Contains(cond, k) {
				used[k] = v
			}
		}
		_, err := rt.db.Query(ctx, &dynamodb.QueryInput{TableName: table, KeyConditionExpression: aws.String(cond), ExpressionAttributeValues: used})
		return err
	}
	for _, tc := range []struct{ cond, want string }{
		{"user_id = :u OR sk > :a", "Invalid operator used in KeyConditionExpression: OR"},
		{"NOT user_id = :u", "Invalid operator used in KeyConditionExpression: NOT"},
		{"user_id <> :u", "Invalid operator used in KeyConditionExpression: <>"},
		{"sk > :a", "Query condition missed key schema element: user_id"},
		{"user_id > :u", "Query key condition not supported"},
		{"user_id = :u AND kcal = :n", "Query key condition not supported"},
		{"user_id = :u AND sk > :a AND sk < :a", "Query key condition not supported"},
		{"user_id = :n", "Condition parameter type does not match schema type"},
		{"#x = :u", "An expression attribute name used in the document path is not defined"},
		{"user_id = :u AND sk BETWEEN :a AND :b", "BETWEEN operator requires upper bound to be greater than or equal to lower bound"},
		{"user_id = :u AND (sk > :a", "Syntax error"},
		{"user_id = = :u", "Syntax error"},
		{"user_id = :u AND sk IN :a", "Invalid operator used in KeyConditionExpression: IN"},
		{"user_id = :u AND begins_with(sk)", "Syntax error"},
		{"user_id = :u; sk > :a", "Syntax error"},
	} {
		checkValidation(t, fmt.Sprintf("Query %q", tc.cond), q(tc.cond), tc.want)
	}
	_, err := rt.db.Query(ctx, &dynamodb.QueryInput{TableName: table, KeyConditionExpression: aws.String("user_id = :u"), ExpressionAttributeValues: map[string]types.AttributeValue{":u": s("ana")}, Limit: aws.Int32(0)})
	checkValidation(t, "Query Limit 0", err, "Member must have value greater than or equal to 1")
	_, err = rt.db.Query(ctx, &dynamodb.QueryInput{TableName: table, KeyConditionExpression: aws.String("user_id = :u"), ExpressionAttributeValues: map[string]types.AttributeValue{":u": s("ana")},
		ExclusiveStartKey: map[string]types.AttributeValue{"user_id": s("ben"), "sk": s(mealSK(1))}})
	checkValidation(t, "Query with another owner's ExclusiveStartKey", err, "outside query boundaries")
	_, err = rt.db.Scan(ctx, &dynamodb.ScanInput{TableName: table, ExclusiveStartKey: map[string]types.AttributeValue{"user_id": s("ben")}})
	checkValidation(t, "Scan with half a key", err, "The provided starting key is invalid")
	_, err = rt.db.Query(ctx, &dynamodb.QueryInput{TableName: table, IndexName: aws.String("by_date"), KeyConditionExpression: aws.String("user_id = :u"), ExpressionAttributeValues: map[string]types.AttributeValue{":u": s("ana")}})
	checkValidation(t, "Query on an index", err, "no secondary indexes")

	for _, tc := range []struct {
		name string
		item map[string]types.AttributeValue
	}{
		{"no sort key", map[string]types.AttributeValue{"user_id": s("ana")}},
		{"numeric partition key", map[string]types.AttributeValue{"user_id": n("7"), "sk": s("x")}},
		{"no partition key", map[string]types.AttributeValue{"sk": s("x")}},
	} {
		_, err := rt.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: tc.item})
		checkValidation(t, "PutItem "+tc.name, err, "The provided key element does not match the schema")
		_, err = rt.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{*table: {
			{PutRequest: &types.PutRequest{Item: meal("zed", mealSK(1), 1)}}, {PutRequest: &types.PutRequest{Item: tc.item}}}}})
		checkValidation(t, "BatchWriteItem with "+tc.name, err, "The provided key element does not match the schema")
	}
	if d := cmp.Diff([]string{"ana"}, rt.partitions()); d != "" {
		t.Errorf("partitions after refused writes (-want +got):\n%s", d)
	}
	if got := remaining(t, rt); len(got) != 5 {
		t.Errorf("ana has %d meals after refused writes, want 5", len(got))
	}

	numeric := testTables.Meals.CreateInput()
	numeric.TableName = aws.String("numeric-keys")
	numeric.AttributeDefinitions[1].AttributeType = types.ScalarAttributeTypeN
	_, err = rt.db.CreateTable(ctx, numeric)
	checkValidation(t, "CreateTable with a numeric sort key", err, "keeps string (S) keys only")
	indexed := testTables.Meals.CreateInput()
	indexed.TableName = aws.String("indexed")
	indexed.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{{IndexName: aws.String("by_sk"),
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("sk"), KeyType: types.KeyTypeHash}}, Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}
	_, err = rt.db.CreateTable(ctx, indexed)
	checkValidation(t, "CreateTable with an index", err, "keeps no secondary indexes")
}

// TestPartitionsSurviveRestart: meals of several owners written through
// the journal come back, from the journal after a crash and from the
// snapshot after a clean stop, each owner's in a partition of its own:
// a month's Query after the restart reads that month only.
func TestPartitionsSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := startDir(t, dir)
	rt := &routed{db: env.DynamoDB, rec: &recorder{}}
	keys := rt.fill(t, []string{"ana", "ben", "cy"}, 200)
	want := withPrefix(keys, "2024-02-")
	check := func(what string, db *dynamodb.Client) {
		t.Helper()
		out, err := db.Query(context.Background(), monthQuery("ben", "2024-02-"))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, sks(out.Items)); d != "" || out.ScannedCount != int32(len(want)) {
			t.Errorf("%s: ben's February read %d items (-want +got):\n%s", what, out.ScannedCount, d)
		}
		if n := len(scanAll(t, db, &dynamodb.ScanInput{TableName: aws.String(testTables.Meals.Name), Limit: aws.Int32(599)})); n != 2 {
			t.Errorf("%s: a Scan of 600 meals with Limit 599 took %d pages, want 2", what, n)
		}
	}
	crashed := startDir(t, crashCopy(t, env, dir))
	check("replayed from the journal", crashed.DynamoDB)
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	check("restored from the snapshot", startDir(t, dir).DynamoDB)
}
