package web

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/google/go-cmp/cmp"
)

func TestLocalPath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/meals", "/meals"},
		{"/meals?month=2026-09", "/meals?month=2026-09"},
		{"", ""},
		{"meals", ""},
		{"//evil.example", ""},
		{"///evil.example", ""},
		{"/\\evil.example", ""},
		{"https://evil.example/", ""},
		{"/ok\r\nSet-Cookie: x", ""},
		{"javascript:alert(1)", ""},
	} {
		if got := LocalPath(tc.in); got != tc.want {
			t.Errorf("LocalPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzLocalPath(f *testing.F) {
	for _, s := range []string{"/meals", "//x", "/\\x", "https://x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := LocalPath(s)
		if p == "" {
			return
		}
		if p[0] != '/' || len(p) > 1 && (p[1] == '/' || p[1] == '\\') {
			t.Fatalf("LocalPath(%q) = %q, which leaves the site", s, p)
		}
	})
}

// logLines parses the JSON log lines in s.
func logLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for l := range strings.Lines(s) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		delete(m, "time")
		lines = append(lines, m)
	}
	return lines
}

// TestAccessLog: one line per request with the route pattern, never the
// path or query; the status a handler wrote (200 for a body without one,
// never a 1xx), 499 for a client gone before any response, and nothing
// for a success on a quiet route.
func TestAccessLog(t *testing.T) {
	t.Parallel()
	const tok = "s3cr3t-t0ken"
	for _, tc := range []struct {
		name    string
		path    string
		handler http.HandlerFunc
		gone    bool
		want    []map[string]any // without ms and request_id
	}{
		{"status and bytes", "/items/" + tok + "?q=" + tok, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte("hello"))
		}, false, []map[string]any{{"level": "INFO", "msg": "request", "method": "GET", "route": "/items/{token}", "status": 201.0, "bytes": 5.0}}},
		{"body without a status", "/items/" + tok, func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("hi"))
		}, false, []map[string]any{{"level": "INFO", "msg": "request", "method": "GET", "route": "/items/{token}", "status": 200.0, "bytes": 2.0}}},
		{"informational first", "/items/" + tok, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusNoContent)
		}, false, []map[string]any{{"level": "INFO", "msg": "request", "method": "GET", "route": "/items/{token}", "status": 204.0, "bytes": 0.0}}},
		{"client gone", "/items/" + tok, func(w http.ResponseWriter, r *http.Request) {}, true,
			[]map[string]any{{"level": "INFO", "msg": "request", "method": "GET", "route": "/items/{token}", "status": 499.0, "bytes": 0.0}}},
		{"quiet route, success", "/quiet/" + tok, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("jpeg")) }, false, nil},
		{"quiet route, failure", "/quiet/" + tok, func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, false,
			[]map[string]any{{"level": "INFO", "msg": "request", "method": "GET", "route": "/quiet/{token}", "status": 404.0, "bytes": 19.0}}},
		{"no route", "/nowhere/" + tok, func(http.ResponseWriter, *http.Request) {}, false, []map[string]any{{"level": "INFO", "msg": "request", "method": "GET", "route": "unmatched", "status": 404.0, "bytes": 19.0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var log syncBuffer
			r := chi.NewRouter()
			r.Use(RequestID(), AccessLog(slog.New(slog.NewJSONHandler(&log, nil)), "/quiet/{token}"))
			r.Get("/items/{token}", tc.handler)
			r.Get("/quiet/{token}", tc.handler)
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			if tc.gone {
				ctx, cancel := context.WithCancel(req.Context())
				cancel()
				req = req.WithContext(ctx)
			}
			r.ServeHTTP(httptest.NewRecorder(), req)
			if strings.Contains(log.String(), tok) {
				t.Errorf("the log holds the path's token: %s", log.String())
			}
			lines := logLines(t, log.String())
			for _, l := range lines {
				if id, _ := l["request_id"].(string); id == "" {
					t.Errorf("log line %v has no request_id", l)
				}
				if _, ok := l["ms"].(float64); !ok {
					t.Errorf("log line %v has no ms", l)
				}
				delete(l, "request_id")
				delete(l, "ms")
			}
			if d := cmp.Diff(tc.want, lines); d != "" {
				t.Errorf("log lines (-want +got):\n%s", d)
			}
		})
	}
}

// TestRequestID: every request gets an ID of ours, "prefix-n", whatever
// X-Request-Id the client sends.
func TestRequestID(t *testing.T) {
	t.Parallel()
	var ids []string
	h := RequestID()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ids = append(ids, middleware.GetReqID(r.Context()))
	}))
	for range 2 {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("X-Request-Id", "planted@example.com")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	pattern := regexp.MustCompile(`^[0-9a-f]{8}-[0-9]+$`)
	for _, id := range ids {
		if !pattern.MatchString(id) {
			t.Errorf("request ID %q, want prefix-n (the client's X-Request-Id ignored)", id)
		}
	}
	if len(ids) != 2 || ids[0] == ids[1] {
		t.Errorf("request IDs %q, want two different ones", ids)
	}
}

// TestHandleQuiet: a success writes no log line; an error gets its page
// and one line with the route pattern and status (a chi route's, or an
// http.ServeMux pattern's without its method); a client gone gets
// nothing written and status 499.
func TestHandleQuiet(t *testing.T) {
	t.Parallel()
	routers := map[string]func(http.HandlerFunc) http.Handler{
		"chi": func(h http.HandlerFunc) http.Handler {
			r := chi.NewRouter()
			r.Get("/photo/{id}", h)
			return r
		},
		"ServeMux": func(h http.HandlerFunc) http.Handler {
			m := http.NewServeMux()
			m.Handle("GET /photo/{id}", h)
			return m
		},
	}
	for _, tc := range []struct {
		name   string
		err    error
		gone   bool
		code   int // written; 0 for nothing
		status float64
	}{
		{"success", nil, false, http.StatusOK, 0},
		{"refused", NotFound("No such photo."), false, http.StatusNotFound, 404},
		{"failed", errors.New("s3: unreachable"), false, http.StatusInternalServerError, 500},
		{"client gone", context.Canceled, true, 0, 499},
	} {
		for router, route := range routers {
			t.Run(tc.name+"/"+router, func(t *testing.T) {
				t.Parallel()
				var log syncBuffer
				p, err := NewPages(fstest.MapFS{
					"base.html":         {Data: []byte(`{{template "content" .}}`)},
					"errors/error.html": {Data: []byte(`{{define "content"}}<h1>{{.Title}}</h1><p>{{.Message}}</p>{{end}}`)},
				}, nil, nil, "Google", slog.New(slog.NewJSONHandler(&log, nil)))
				if err != nil {
					t.Fatal(err)
				}
				r := route(p.HandleQuiet(func(w http.ResponseWriter, r *http.Request) error {
					if tc.err == nil {
						w.Write([]byte("jpeg"))
					}
					return tc.err
				}))
				req := httptest.NewRequest(http.MethodGet, "/photo/secret-id", nil)
				if tc.gone {
					ctx, cancel := context.WithCancel(req.Context())
					cancel()
					req = req.WithContext(ctx)
				}
				rec := httptest.NewRecorder()
				r.ServeHTTP(rec, req)
				if written := rec.Body.Len() > 0; written != (tc.code != 0) || written && rec.Code != tc.code {
					t.Errorf("response %d %q, want %d (0: nothing written)", rec.Code, rec.Body.String(), tc.code)
				}
				var requests []map[string]any
				for _, l := range logLines(t, log.String()) {
					if l["msg"] == "request" {
						requests = append(requests, l)
					}
				}
				if tc.status == 0 {
					if len(requests) != 0 {
						t.Errorf("a success was logged: %v", requests)
					}
					return
				}
				want := []map[string]any{{"level": "INFO", "msg": "request", "method": "GET", "route": "/photo/{id}", "status": tc.status}}
				if d := cmp.Diff(want, requests); d != "" {
					t.Errorf("request lines (-want +got):\n%s", d)
				}
				if strings.Contains(log.String(), "secret-id") {
					t.Errorf("the log holds the path: %s", log.String())
				}
			})
		}
	}
}

// TestSecurityHeaders: the literal headers every response carries, HSTS
// only when asked, and a handler changing one of them (Set, or even Add)
// changes its own response only, never the values the next ones share.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	want := http.Header{
		"X-Content-Type-Options":  {"nosniff"},
		"X-Frame-Options":         {"DENY"},
		"Referrer-Policy":         {"same-origin"},
		"Content-Security-Policy": {"default-src 'self'; img-src 'self' blob: data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"},
	}
	for _, hsts := range []bool{false, true} {
		h := SecurityHeaders(hsts)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/share" {
				w.Header().Set("Referrer-Policy", "no-referrer")
				w.Header().Add("Content-Security-Policy", "sandbox")
			}
		}))
		for _, path := range []string{"/", "/share", "/"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			w := want.Clone()
			if hsts {
				w.Set("Strict-Transport-Security", "max-age=63072000; includeSubDomains")
			}
			if path == "/share" {
				w.Set("Referrer-Policy", "no-referrer")
				w.Add("Content-Security-Policy", "sandbox")
			}
			if d := cmp.Diff(w, rec.Header()); d != "" {
				t.Errorf("hsts %v, GET %s: headers (-want +got):\n%s", hsts, path, d)
			}
		}
	}
}
