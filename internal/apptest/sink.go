package apptest

import (
	"net/http"
	"testing"
)

// Sink is the ResponseWriter of the handler benchmarks: a fresh header
// map per request, as net/http's server gives each, and the body copied
// into a buffer reused across requests, as a socket's send buffer would
// take it, so a benchmark measures the handler and the copy, not a
// recorder's buffer growth. Call Reset before each request.
type Sink struct {
	// Code is the status written: 0 before the first WriteHeader or
	// Write, 200 for a Write without one.
	Code int
	// Body is what the handler wrote since the last Reset.
	Body []byte
	h    http.Header
}

// Reset readies s for the next request: a new header map, no status, the
// body's buffer kept for reuse.
func (s *Sink) Reset() { s.h, s.Code, s.Body = http.Header{}, 0, s.Body[:0] }

// Header returns the response header of the current request.
func (s *Sink) Header() http.Header {
	if s.h == nil {
		s.h = http.Header{}
	}
	return s.h
}

// WriteHeader records the first status written.
func (s *Sink) WriteHeader(code int) {
	if s.Code == 0 {
		s.Code = code
	}
}

// Write appends p to Body, recording 200 if no status was written.
func (s *Sink) Write(p []byte) (int, error) {
	if s.Code == 0 {
		s.Code = http.StatusOK
	}
	s.Body = append(s.Body, p...)
	return len(p), nil
}

// ServeLoop serves req with h until the benchmark ends, into one Sink,
// failing it on a status other than want; it reports allocations.
func ServeLoop(b *testing.B, h http.Handler, req *http.Request, want int) {
	b.ReportAllocs()
	w := &Sink{}
	for b.Loop() {
		w.Reset()
		h.ServeHTTP(w, req)
		if w.Code != want {
			b.Fatalf("status %d, want %d", w.Code, want)
		}
	}
}
