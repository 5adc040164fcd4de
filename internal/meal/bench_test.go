package meal_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
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
