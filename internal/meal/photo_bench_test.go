package meal_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"ndiro/internal/apptest"
)

// BenchmarkOwnerPhoto serves a cached thumbnail to its owner through the
// whole stack (read-only session, guard GetItem, cache, ETag) as 200 and as
// 304, and reports each as a multiple of a bare http.ServeContent handler
// serving the same bytes, measured in the same run ("x-bare").
func BenchmarkOwnerPhoto(b *testing.B) {
	app := apptest.New(b)
	c := app.Client()
	c.SignIn(admin)
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
	u, _ := url.Parse(app.URL)
	request := func(inm string) *http.Request {
		req := httptest.NewRequest(http.MethodGet, m.ThumbURL(), nil)
		for _, ck := range c.HTTP.Jar.Cookies(u) {
			req.AddCookie(ck)
		}
		if inm != "" {
			req.Header.Set("If-None-Match", inm)
		}
		return req
	}
	loop := func(b *testing.B, h http.Handler, req *http.Request, want int) {
		b.ReportAllocs()
		for b.Loop() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != want {
				b.Fatalf("status %d, want %d", rec.Code, want)
			}
		}
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
			loop(b, bare, request(tc.inm), tc.want)
			bareNs = perOp(b)
		})
		b.Run("owner-"+tc.name, func(b *testing.B) {
			loop(b, app.Handler, request(tc.inm), tc.want)
			b.ReportMetric(perOp(b)/bareNs, "x-bare")
		})
	}
}
