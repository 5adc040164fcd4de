package metrics

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// Unmatched is the route label of a request no route matched (a 404 of
// the router, or a method no route takes): one label value for every
// such path, so no raw path ever becomes a label.
const Unmatched = "unmatched"

// methods are the method label's values; any other method is "other".
var methods = [...]string{"GET", "HEAD", "POST", "other"}

// classes are the status label's values, indexed by status/100 - 1.
var classes = [...]string{"1xx", "2xx", "3xx", "4xx", "5xx"}

// Requests counts a router's requests (ndiro_http_requests_total and
// ndiro_http_request_duration_seconds) by route pattern, method and
// status class. Its label children are resolved once per combination
// that occurs and then looked up without allocating: a request costs a
// map lookup, two clock reads and two atomic adds.
type Requests struct {
	m *Metrics
	// routes holds every route pattern of the router (Routes); it is
	// written before the router serves and only read after.
	routes map[string]*route
	none   *route
	pool   sync.Pool
}

// route is one route pattern's label children, filled as they occur.
type route struct {
	name  string
	cells [len(methods)][len(classes)]atomic.Pointer[cell]
}

type cell struct {
	count prometheus.Counter
	took  prometheus.Observer
}

// Requests returns a counter for one chi router: install Count with the
// router's Use before its routes, and call Routes once they are all
// added, before it serves.
func (m *Metrics) Requests() *Requests {
	q := &Requests{m: m, routes: map[string]*route{}, none: &route{name: Unmatched}}
	q.pool.New = func() any { return &statusWriter{} }
	return q
}

// Routes learns every route pattern of r (chi.Walk), as the label
// values requests may carry: a pattern chi reports that is not among
// them (its "/*" for a path no page matched) is counted as Unmatched.
// Patterns are written as RoutePattern reports them, without a trailing
// slash ("/s/{token}", not "/s/{token}/").
func (q *Requests) Routes(r chi.Routes) error {
	return chi.Walk(r, func(_ string, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		pattern = trimPattern(pattern)
		if _, ok := q.routes[pattern]; !ok && pattern != "/*" {
			q.routes[pattern] = &route{name: pattern}
		}
		return nil
	})
}

// trimPattern is p as chi's RoutePattern gives it for a request: no
// "/*/" of a mount, no trailing slash.
func trimPattern(p string) string {
	for strings.Contains(p, "/*/") {
		p = strings.ReplaceAll(p, "/*/", "/")
	}
	if p != "/" {
		p = strings.TrimSuffix(p, "/")
	}
	return p
}

// Route returns middleware that counts every request it wraps under the
// route pattern given (a route served outside the chi router: the
// owner's photos, an http.ServeMux pattern), with no lookup at all.
func (q *Requests) Route(pattern string) func(http.Handler) http.Handler {
	rt, ok := q.routes[pattern]
	if !ok {
		rt = &route{name: pattern}
		q.routes[pattern] = rt
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			q.serve(rt, next, w, r)
		})
	}
}

// Count is middleware for the router's Use: after the handler returns it
// counts the request under the pattern the router matched. A request
// whose handler wrote nothing is counted as 200, which net/http sends
// then.
func (q *Requests) Count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q.serve(nil, next, w, r)
	})
}

// serve runs next and counts the request under rt, or, if rt is nil,
// under the pattern the chi router matched.
func (q *Requests) serve(rt *route, next http.Handler, w http.ResponseWriter, r *http.Request) {
	sw := q.pool.Get().(*statusWriter)
	sw.ResponseWriter, sw.status = w, 0
	start := sinceEpoch()
	defer func() {
		took := sinceEpoch() - start
		status := sw.status
		sw.ResponseWriter = nil
		q.pool.Put(sw)
		if rt == nil {
			rt = q.matched(r)
		}
		q.observe(rt, r.Method, status, took)
	}()
	next.ServeHTTP(sw, r)
}

// epoch is when the process started, by the monotonic clock.
var epoch = time.Now()

// sinceEpoch is the monotonic clock's reading as time since epoch: a
// request's duration is the difference of two. time.Since reads the
// monotonic clock only, where time.Now reads the wall clock too (~40 ns
// against ~57 ns for the pair on a virtual machine).
func sinceEpoch() time.Duration { return time.Since(epoch) }

// matched is the route chi matched for r, or the unmatched one.
func (q *Requests) matched(r *http.Request) *route {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		if known, ok := q.routes[rc.RoutePattern()]; ok {
			return known
		}
	}
	return q.none
}

func (q *Requests) observe(rt *route, method string, status int, took time.Duration) {
	mi := len(methods) - 1
	switch method {
	case http.MethodGet:
		mi = 0
	case http.MethodHead:
		mi = 1
	case http.MethodPost:
		mi = 2
	}
	if status == 0 {
		status = http.StatusOK
	}
	ci := min(max(status/100-1, 0), len(classes)-1)
	c := rt.cells[mi][ci].Load()
	if c == nil {
		labels := []string{rt.name, methods[mi], classes[ci]}
		c = &cell{count: q.m.requests.WithLabelValues(labels...), took: q.m.durations.WithLabelValues(labels...)}
		if !rt.cells[mi][ci].CompareAndSwap(nil, c) {
			c = rt.cells[mi][ci].Load()
		}
	}
	c.count.Inc()
	c.took.Observe(took.Seconds())
}

// statusWriter notes the status a handler sends. Unwrap lets
// http.ResponseController reach the writer underneath (flushes, write
// deadlines).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Flush passes a flush on (a streamed export), so that wrappers outside
// this one that look for http.Flusher find it.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
