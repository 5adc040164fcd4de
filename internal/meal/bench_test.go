package meal_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/apptest"
	"ndiro/internal/dynamo"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
)

// serveLoop serves req with h until the benchmark ends, checking the status.
func serveLoop(b *testing.B, h http.Handler, req *http.Request, want int) {
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			b.Fatalf("status %d, want %d", rec.Code, want)
		}
	}
}

// BenchmarkMonthPage renders a month of 90 meals through the whole handler
// stack: session, guard GetItem, one Query against the in-process emulator,
// grouping and the template. Allocations include the emulator's, which runs
// in the same process.
func BenchmarkMonthPage(b *testing.B) {
	app, c := signedIn(b)
	owner := localenv.Subject(admin)
	var items []map[string]types.AttributeValue
	for i := 0; i < 90; i++ {
		items = append(items, mealItem(owner, fmt.Sprintf("2026-09-%02d", i%30+1), fmt.Sprintf("%02d%02d00-%06x", 6+i/30*6, i%60, i)))
	}
	batchPut(b, app, items)
	serveLoop(b, app.Handler, c.ServerRequest("/meals?month=2026-09"), http.StatusOK)
}

// BenchmarkOwnerPhoto serves a cached thumbnail to its owner through the
// whole stack (read-only session, guard GetItem, cache, ETag) as 200 and as
// 304, and reports each as a multiple of a bare http.ServeContent handler
// serving the same bytes, measured in the same run ("x-bare").
func BenchmarkOwnerPhoto(b *testing.B) {
	app, c := signedIn(b)
	if resp := upload(c, "/meals", "small.jpg", apptest.Photo(b, "small.jpg")); resp.StatusCode != http.StatusSeeOther {
		b.Fatalf("upload = %d", resp.StatusCode)
	}
	m := allMeals(b, app, admin)[0]
	body := []byte(c.Get(m.ThumbURL()).Body) // now cached
	etag := `"` + m.PhotoV.Tag() + `-thumb"`

	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/jpeg")
		w.Header().Set("ETag", etag)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	})
	request := func(inm string) *http.Request {
		req := c.ServerRequest(m.ThumbURL())
		if inm != "" {
			req.Header.Set("If-None-Match", inm)
		}
		return req
	}
	// Each bare run is measured right before the owner run it is compared
	// with; sub-benchmarks run in order.
	var bareNs float64
	perOp := func(b *testing.B) float64 { return float64(b.Elapsed().Nanoseconds()) / float64(b.N) }
	for _, tc := range []struct {
		name string
		inm  string
		want int
	}{{"200", "", http.StatusOK}, {"304", etag, http.StatusNotModified}} {
		b.Run("bare-"+tc.name, func(b *testing.B) {
			serveLoop(b, bare, request(tc.inm), tc.want)
			bareNs = perOp(b)
		})
		b.Run("owner-"+tc.name, func(b *testing.B) {
			serveLoop(b, app.Handler, request(tc.inm), tc.want)
			b.ReportMetric(perOp(b)/bareNs, "x-bare")
		})
	}
}

// BenchmarkCreate measures meal creates per second (creates/s) through the
// store against the in-process DynamoDB: in memory only ("memory"), and
// with a data dir, where each create's journal record is fsynced before it
// returns ("journal"); one writer at a time, and 16 at once ("-16"), which
// share fsyncs (group commit). Folds into a new snapshot (every 10,000
// records) are included in the cost.
func BenchmarkCreate(b *testing.B) {
	for _, tc := range []struct {
		name     string
		journal  bool
		parallel bool
	}{
		{"memory", false, false},
		{"journal", true, false},
		{"memory-16", false, true},
		{"journal-16", true, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			opts := localenv.Options{Tables: dynamo.NewTables("bench-"), Bucket: "photos"}
			if tc.journal {
				opts.DataDir = b.TempDir()
			}
			env, err := localenv.Start(ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { env.Close() })
			store := meal.NewStore(env.DynamoDB, opts.Tables.Meals.Name)
			create := func() error {
				return store.Create(ctx, &meal.Meal{UserID: "bench", Date: "2026-09-01", Time: "12:30:00", Kind: meal.Lunch, Notes: "lentil soup"})
			}
			if tc.parallel {
				b.SetParallelism(16 / runtime.GOMAXPROCS(0))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := create(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			} else {
				for b.Loop() {
					if err := create(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
		})
	}
}
