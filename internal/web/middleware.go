package web

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// RoutePattern returns the chi route pattern that matched r, such as
// "/invite/{token}", or "" before routing. Logs use it instead of the raw
// path because share and invite tokens live in URLs.
func RoutePattern(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		return rc.RoutePattern()
	}
	return ""
}

// AccessLog logs one line per request with the route pattern, status, bytes
// and duration; never the raw path or query, which may hold tokens. A
// request whose client went away before any response is logged with status
// 499, and one a handler aborted on purpose (a panic with
// http.ErrAbortHandler, e.g. a download failing mid-stream) as "request
// aborted", so neither reads as a 500.
func AccessLog(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			start := time.Now()
			line := func(msg string) {
				route := RoutePattern(r)
				if route == "" {
					route = "unmatched"
				}
				status := ww.Status()
				if status == 0 && r.Context().Err() != nil {
					status = 499 // client closed the request (nginx's convention)
				}
				log.Info(msg,
					"method", r.Method,
					"route", route,
					"status", status,
					"bytes", ww.BytesWritten(),
					"ms", time.Since(start).Milliseconds(),
					"request_id", middleware.GetReqID(r.Context()),
				)
			}
			defer func() {
				if v := recover(); v != nil {
					if v == http.ErrAbortHandler {
						line("request aborted")
					}
					panic(v)
				}
			}()
			next.ServeHTTP(ww, r)
			line("request")
		})
	}
}

// Recover turns a panic into a logged 500 page instead of a dropped
// connection. http.ErrAbortHandler passes through: it is how a handler
// makes the client see that a response failed half-way.
func (p *Pages) Recover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				p.log.Error("panic", "panic", fmt.Sprint(v), "stack", string(debug.Stack()), "request_id", middleware.GetReqID(r.Context()), "route", RoutePattern(r))
				p.Error(w, r, &Error{Status: http.StatusInternalServerError, Msg: internalErrorMsg})
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// SecurityHeaders sets headers every response carries: no sniffing, no
// framing, a strict content security policy (scripts and styles only from
// our own origin; forms may post only to it: form-action 'self'), and,
// when hsts is true (HTTPS deployments), HSTS.
func SecurityHeaders(hsts bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("X-Frame-Options", "DENY")
			h.Set("Referrer-Policy", "same-origin")
			h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' blob: data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
			if hsts {
				h.Set("Strict-Transport-Security", "max-age=63072000; includeSubDomains")
			}
			next.ServeHTTP(w, r)
		})
	}
}

// LocalPath returns p if it is a path on this site ("/meals?month=2026-09")
// and "" otherwise. It refuses absolute URLs, scheme-relative "//host",
// backslash tricks and control characters, so a return-to parameter cannot
// become an open redirect.
func LocalPath(p string) string {
	if p == "" || p[0] != '/' || len(p) > 2000 {
		return ""
	}
	if strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\") || strings.ContainsAny(p, "\\\r\n\t\x00") {
		return ""
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, "/") {
		return ""
	}
	return p
}
