package metrics

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"ndiro/internal/version"
)

// TestHandlerServesPprofOnlyWhenAsked: /metrics always; the profiles
// only with pprof on; nothing else.
func TestHandlerServesPprofOnlyWhenAsked(t *testing.T) {
	m := New(version.Build{Version: "v1.2.3", Commit: "abc", GoVersion: "go1.26.8"})
	for _, tc := range []struct {
		pprof bool
		path  string
		want  int
	}{
		{false, "/metrics", 200},
		{false, "/debug/pprof/", 404},
		{false, "/debug/pprof/heap", 404},
		{false, "/", 404},
		{true, "/metrics", 200},
		{true, "/debug/pprof/", 200},
		{true, "/debug/pprof/heap?debug=1", 200},
		{true, "/debug/pprof/cmdline", 200},
	} {
		w := httptest.NewRecorder()
		m.Handler(tc.pprof).ServeHTTP(w, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if w.Code != tc.want {
			t.Errorf("pprof=%v GET %s = %d, want %d", tc.pprof, tc.path, w.Code, tc.want)
		}
		if tc.path == "/metrics" && !strings.Contains(w.Body.String(), `ndiro_build_info{commit="abc",goversion="go1.26.8",version="v1.2.3"} 1`) {
			t.Errorf("/metrics lacks ndiro_build_info of the build:\n%s", w.Body.String())
		}
	}
}

// TestRequestsLabels: a mounted router's patterns are counted as chi
// reports them, a trailing slash trimmed; a path no route matched, and
// chi's catch-all, are "unmatched"; methods and status classes map to
// their few values.
func TestRequestsLabels(t *testing.T) {
	m := New(version.Build{})
	q := m.Requests()
	r := chi.NewRouter()
	r.Use(q.Count)
	r.Use(middleware.GetHead) // as server.New: HEAD by the GET route, labelled HEAD
	r.Get("/photo/{id}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotModified) })
	sub := chi.NewRouter()
	sub.Route("/s/{token}", func(r chi.Router) {
		r.Get("/", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("page")) })
		r.Post("/c", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusSeeOther) })
	})
	sub.Delete("/x", func(w http.ResponseWriter, _ *http.Request) {}) // writes nothing: a 200
	sub.NotFound(func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) })
	r.Mount("/", sub)
	if err := q.Routes(r); err != nil {
		t.Fatal(err)
	}
	for _, req := range []struct{ method, path string }{
		{"GET", "/photo/secret-id-1"}, {"HEAD", "/photo/secret-id-2"},
		{"GET", "/s/secret-token"}, {"GET", "/s/secret-token/"}, {"POST", "/s/secret-token/c"},
		{"DELETE", "/x"}, {"GET", "/nothing/here"}, {"GET", "/s/secret-token/nothing"},
	} {
		r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(req.method, req.path, nil))
	}
	for _, tc := range []struct {
		route, method, status string
		want                  float64
	}{
		{"/photo/{id}", "GET", "3xx", 1},
		{"/photo/{id}", "HEAD", "3xx", 1},
		{"/s/{token}", "GET", "2xx", 2},
		{"/s/{token}/c", "POST", "3xx", 1},
		{"/x", "other", "2xx", 1},
		{Unmatched, "GET", "4xx", 2},
	} {
		if got := testutil.ToFloat64(m.requests.WithLabelValues(tc.route, tc.method, tc.status)); got != tc.want {
			t.Errorf("requests{%s %s %s} = %v, want %v", tc.route, tc.method, tc.status, got, tc.want)
		}
	}
	if n := testutil.CollectAndCount(m.requests); n != 6 {
		t.Errorf("%d request series, want the 6 above", n)
	}
	if n := testutil.CollectAndCount(m.durations); n != 6 {
		t.Errorf("%d duration series, want 6", n)
	}
}

// TestCountAllocatesNothing: once a route's label children exist, a
// request costs no allocation for its count (the owner's photo route is
// the hot path; BenchmarkOwnerPhoto in package meal measures it whole).
func TestCountAllocatesNothing(t *testing.T) {
	m := New(version.Build{})
	q := m.Requests()
	r := chi.NewRouter()
	r.Use(q.Count)
	r.Get("/photo/{id}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotModified) })
	if err := q.Routes(r); err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/photo/1", nil)
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	bare := chi.NewRouter()
	bare.Get("/photo/{id}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotModified) })
	counted := allocsPerRun(2000, func() { r.ServeHTTP(w, req) })
	plain := allocsPerRun(2000, func() { bare.ServeHTTP(w, req) })
	// Under the race detector sync.Pool drops a quarter of what is put
	// back, so the pooled status writer is made again about one request
	// in four: a quarter of an allocation a request, never a whole one.
	if counted-plain >= 0.5 {
		t.Errorf("a counted request allocates %.2f times, an uncounted one %.2f: want no more", counted, plain)
	}
}

// allocsPerRun is testing.AllocsPerRun without its rounding down to a
// whole number: the mean allocations of one call of f over runs calls,
// after one call to warm up, on one P. testing.AllocsPerRun's truncation
// made the comparison above fail whenever the uncounted figure sat just
// below a whole number and sync.Pool's random drops under the race
// detector lifted the counted one past it (2 processes in 20).
func allocsPerRun(runs int, f func()) float64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(runs)
}
