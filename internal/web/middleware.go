package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// RoutePattern returns the route pattern that matched r, such as
// "/invite/{token}": chi's ("/*" for a path no page route matched), or,
// for a route of the http.ServeMux in front of chi, the ServeMux's
// pattern without its method ("/photo/{date}/{meal_id}" for "GET
// /photo/{date}/{meal_id}"); "" before routing. Logs use it instead of
// the raw path because share and invite tokens live in URLs.
func RoutePattern(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		return rc.RoutePattern()
	}
	if i := strings.IndexByte(r.Pattern, '/'); i >= 0 {
		return r.Pattern[i:]
	}
	return ""
}

// RequestID gives each request an ID, "prefix-n" with a random prefix per
// process and a counter, kept where chi's middleware.GetReqID finds it
// (logs and error pages quote it). chi's middleware.RequestID is not used
// because it takes the ID from the client's X-Request-Id header when
// there is one, so any client could write what it likes (a token, an
// email) into every log line of its request and onto its error page, and
// the IDs it makes name the host, which error pages would then show.
func RequestID() func(http.Handler) http.Handler {
	var b [4]byte
	rand.Read(b[:])
	prefix := hex.EncodeToString(b[:]) + "-"
	var n atomic.Uint64
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := prefix + strconv.FormatUint(n.Add(1), 10)
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), middleware.RequestIDKey, id)))
		})
	}
}

// AccessLog logs one line per request with the route pattern, status, bytes
// and duration; never the raw path or query, which may hold tokens. A
// request whose client went away before any response is logged with status
// 499, and one a handler aborted on purpose (a panic with
// http.ErrAbortHandler, e.g. a download failing mid-stream) as "request
// aborted", so neither reads as a 500.
//
// Requests to the quiet route patterns (photos: a month page makes up to
// 90 of them, and a log line costs more than serving a cached photo) are
// logged only when they fail (status 400 or more).
func AccessLog(log *slog.Logger, quiet ...string) func(http.Handler) http.Handler {
	quietRoutes := map[string]bool{}
	for _, q := range quiet {
		quietRoutes[q] = true
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			start := time.Now()
			line := func(msg string) {
				status := ww.Status()
				if status == 0 && r.Context().Err() != nil {
					status = StatusClientGone
				}
				route := RoutePattern(r)
				if route == "" {
					route = "unmatched"
				}
				if quietRoutes[route] && status < 400 && msg == "request" {
					return
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

// StatusClientGone is the status logs give a request whose client went
// away before any response was written (nginx's "client closed request").
const StatusClientGone = 499

// HandleQuiet adapts h as Handle does, for a route served without
// AccessLog because pages ask for it many times (the owner's photos: up
// to 90 on a month page; an access-log wrapper and line cost more than
// serving a cached photo). A success is not logged. An error gets its
// page from Error and one line like AccessLog's ("request" with method,
// route pattern and status; never the path), as AccessLog logs a failure
// on its quiet routes. h must write nothing before it returns an error:
// unlike Handle, HandleQuiet does not wrap the response to tell.
func (p *Pages) HandleQuiet(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		if err == nil {
			return
		}
		p.Error(w, r, err)
		status := http.StatusInternalServerError
		if e, ok := AsError(err); ok {
			status = e.Status
		}
		if clientGone(r, err) {
			status = StatusClientGone
		}
		p.log.Info("request", "method", r.Method, "route", RoutePattern(r), "status", status)
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
//
// The values are built once and assigned by canonical key: setting them
// costs no allocation per request. Handlers replace them with Set (a new
// slice), never append to them.
func SecurityHeaders(hsts bool) func(http.Handler) http.Handler {
	fixed := [][2]string{
		{"X-Content-Type-Options", "nosniff"},
		{"X-Frame-Options", "DENY"},
		{"Referrer-Policy", "same-origin"},
		{"Content-Security-Policy", "default-src 'self'; img-src 'self' blob: data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"},
	}
	if hsts {
		fixed = append(fixed, [2]string{"Strict-Transport-Security", "max-age=63072000; includeSubDomains"})
	}
	keys := make([]string, len(fixed))
	values := make([][]string, len(fixed))
	for i, kv := range fixed {
		keys[i] = http.CanonicalHeaderKey(kv[0])
		values[i] = []string{kv[1]}[:1:1] // full: an append copies
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			for i, k := range keys {
				h[k] = values[i]
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
