package localenv_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/apptest"
	"ndiro/internal/dynamo"
	"ndiro/internal/localenv"
)

// storedOwners is how many owners the stored meals belong to.
const storedOwners = 20

// viewedMonth is the month the benchmarks show: 90 meals of the viewer.
const viewedMonth = "2026-09"

// storedMeals writes stored meals for storedOwners owners (viewer and
// 19 others) with BatchWriteItem: the viewer's 90 meals of viewedMonth,
// and the rest spread evenly, three a day up to the end of August 2026
// (100,000 meals are 5,000 an owner, about four and a half years each),
// oldest first, as a diary fills.
func storedMeals(tb testing.TB, db *dynamodb.Client, tables dynamo.Tables, viewer string, stored int) {
	tb.Helper()
	ctx := context.Background()
	var reqs []types.WriteRequest
	flush := func() {
		for pending := map[string][]types.WriteRequest{tables.Meals.Name: reqs}; len(pending) > 0; {
			out, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
			if err != nil {
				tb.Fatal(err)
			}
			pending = out.UnprocessedItems
		}
		reqs = reqs[:0]
	}
	put := func(item map[string]types.AttributeValue) {
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
		if len(reqs) == 25 {
			flush()
		}
	}
	sept := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	rest := stored - 90
	perOwner := (rest + storedOwners - 1) / storedOwners
	first := sept.AddDate(0, 0, -(perOwner+2)/3)
	for i := 0; i < rest; i++ {
		owner := viewer
		if o := i % storedOwners; o > 0 {
			owner = fmt.Sprintf("owner-%02d", o)
		}
		n := i / storedOwners // the owner's n-th meal
		put(storedItem(owner, first.AddDate(0, 0, n/3), n))
	}
	for i := 0; i < 90; i++ {
		put(storedItem(viewer, sept.AddDate(0, 0, i/3), i))
	}
	if len(reqs) > 0 {
		flush()
	}
}

// storedItem is a meals row as the app writes it, without a photo.
func storedItem(owner string, day time.Time, n int) map[string]types.AttributeValue {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	date := day.Format("2006-01-02")
	hh := []string{"08", "13", "19"}[n%3]
	id := fmt.Sprintf("%s%02d00-%06x", hh, n%60, n&0xffffff)
	kind := []string{"breakfast", "lunch", "dinner"}[n%3]
	return map[string]types.AttributeValue{
		"user_id": s(owner), "sk": s(date + "#" + id), "meal_id": s(id), "date": s(date),
		"time": s(hh + ":" + id[2:4] + ":00"), "kind": s(kind), "notes": s("lentil soup with bread"),
		"kcal": &types.AttributeValueMemberN{Value: "512.5"}, "protein_g": &types.AttributeValueMemberN{Value: "21"},
		"version": &types.AttributeValueMemberN{Value: "1"},
	}
}

// pageSink is a ResponseWriter that keeps the status and drops the body.
type pageSink struct {
	h    http.Header
	code int
	n    int
}

func (s *pageSink) Header() http.Header { return s.h }
func (s *pageSink) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
}
func (s *pageSink) Write(p []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	s.n += len(p)
	return len(p), nil
}

// BenchmarkMonthPageStored renders the signed-in owner's month of 90
// meals through the whole app (session, guard, one Query on the embedded
// DynamoDB, the template) with 90, 1,000 and 100,000 meals stored across
// 20 owners. The month page must cost the same however many meals other
// months and owners hold: the Query reads the month's meals only (issue
// 29's target: 100,000 within 2x of an empty store). setup-s is how long
// storing the meals took.
func BenchmarkMonthPageStored(b *testing.B) {
	for _, stored := range []int{90, 1_000, 100_000} {
		b.Run(fmt.Sprintf("meals=%d", stored), func(b *testing.B) {
			app := apptest.New(b, apptest.Options{Log: io.Discard})
			c := app.Client()
			c.SignIn("admin@example.com")
			start := time.Now()
			storedMeals(b, app.Env.DynamoDB, app.Tables, localenv.Subject("admin@example.com"), stored)
			setup := time.Since(start)
			req := c.ServerRequest("/meals?month=" + viewedMonth)
			w := &pageSink{h: http.Header{}}
			if app.Handler.ServeHTTP(w, req); w.code != http.StatusOK || w.n < 90*200 {
				b.Fatalf("month page = %d, %d bytes", w.code, w.n)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				w := &pageSink{h: http.Header{}}
				app.Handler.ServeHTTP(w, req)
				if w.code != http.StatusOK {
					b.Fatalf("month page = %d", w.code)
				}
			}
			b.ReportMetric(setup.Seconds(), "setup-s")
		})
	}
}

// BenchmarkStartStored measures local mode's start-up with 1,000 and with
// 100,000 meals of 20 owners in its data directory: the snapshot read
// back into the embedded DynamoDB (localenv.Start; the photo check that
// local mode runs next is not included).
func BenchmarkStartStored(b *testing.B) {
	for _, stored := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("meals=%d", stored), func(b *testing.B) {
			dir := b.TempDir()
			tables := dynamo.NewTables("ndiro-")
			opts := localenv.Options{DataDir: dir, Tables: tables, Bucket: "photos"}
			env, err := localenv.Start(context.Background(), opts)
			if err != nil {
				b.Fatal(err)
			}
			storedMeals(b, env.DynamoDB, tables, "viewer", stored)
			if err := env.Close(); err != nil { // folds: the meals are in the snapshot
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				env, err := localenv.Start(context.Background(), opts)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				env.Close()
				b.StartTimer()
			}
		})
	}
}
