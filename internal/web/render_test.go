package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

// syncBuffer is a log sink safe to read while handlers write to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testPages parses a small template set: a page that fails to render when
// its data says so, and an error page that fails for status 418.
func testPages(t *testing.T, log io.Writer) *Pages {
	t.Helper()
	fsys := fstest.MapFS{
		"base.html":          {Data: []byte(`<!doctype html><title>{{.Title}}</title><body data-page="{{.Page}}">{{with .Flash}}<p class="flash">{{.}}</p>{{end}}{{template "content" .}}</body>`)},
		"partials/none.html": {Data: []byte(`{{define "none"}}{{end}}`)},
		"errors/error.html":  {Data: []byte(`{{define "content"}}{{if eq .Status 418}}{{index .Message 1000}}{{end}}<h1>{{.Title}}</h1><p>{{.Message}}</p>{{end}}`)},
		"t/page.html":        {Data: []byte(`{{define "content"}}<p>{{.Text}}</p>{{if .Fail}}{{index .Text 1000}}{{end}}{{end}}`)},
	}
	st, err := NewStatic(fstest.MapFS{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPages(fsys, st, nil, "Google", slog.New(slog.NewTextHandler(log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type testPage struct {
	Base
	Text string
	Fail bool
}

func TestHandleAfterResponseStarted(t *testing.T) {
	var log syncBuffer
	p := testPages(t, &log)
	h := p.Handle(func(w http.ResponseWriter, r *http.Request) error {
		w.Write([]byte("partial body"))
		return errors.New("stream broke")
	})
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != "partial body" {
		t.Errorf("response = %d %q, want 200 with only the partial body (no error page appended)", rec.Code, rec.Body.String())
	}
	if !strings.Contains(log.String(), "request failed after the response started") || !strings.Contains(log.String(), "stream broke") {
		t.Errorf("log = %q, want the failure logged", log.String())
	}
}

// TestClientGoneIsNotAnError: a response that fails because the client
// went away (broken pipe, reset, cancelled request) is logged at info,
// before or after the response started, never as an error.
func TestClientGoneIsNotAnError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		started bool
		err     error
		cancel  bool
	}{
		{"broken pipe mid-response", true, fmt.Errorf("write tcp 127.0.0.1:8080->127.0.0.1:5000: %w", &os.SyscallError{Syscall: "write", Err: syscall.EPIPE}), false},
		{"reset mid-response", true, fmt.Errorf("read: %w", syscall.ECONNRESET), false},
		{"cancelled mid-response", true, fmt.Errorf("s3: get object: %w", context.Canceled), true},
		{"cancelled before the response", false, fmt.Errorf("dynamodb: %w", context.Canceled), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var log syncBuffer
			p := testPages(t, &log)
			ctx, cancel := context.WithCancel(context.Background())
			if tc.cancel {
				cancel()
			}
			defer cancel()
			p.Handle(func(w http.ResponseWriter, r *http.Request) error {
				if tc.started {
					w.Write([]byte("partial"))
				}
				return tc.err
			})(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/x", nil).WithContext(ctx))
			got := log.String()
			if !strings.Contains(got, `level=INFO msg="client went away"`) || strings.Contains(got, "level=ERROR") {
				t.Errorf("log = %q, want one info line \"client went away\" and no error", got)
			}
		})
	}
}

func TestErrorPages(t *testing.T) {
	var log syncBuffer
	p := testPages(t, &log)
	for _, tc := range []struct {
		name       string
		err        error
		status     int
		body, hide string
	}{
		{"user error", &Error{Status: http.StatusNotFound, Title: "Meal not found", Msg: "There is no such meal."}, 404, "There is no such meal.", ""},
		{"internal error", errors.New("dynamodb: secret-table-name unreachable"), 500, internalErrorMsg, "secret-table-name"},
		{"error page fails to render", &Error{Status: http.StatusTeapot, Msg: "short and stout"}, 500, internalErrorMsg, "short and stout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			p.Handle(func(http.ResponseWriter, *http.Request) error { return tc.err })(rec, httptest.NewRequest(http.MethodGet, "/x", nil))
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.body) {
				t.Errorf("status %d body %q, want %d with %q", rec.Code, rec.Body.String(), tc.status, tc.body)
			}
			if tc.hide != "" && strings.Contains(rec.Body.String(), tc.hide) {
				t.Errorf("body %q shows %q", rec.Body.String(), tc.hide)
			}
			if got := rec.Header().Get("Content-Type"); got != "text/html; charset=utf-8" {
				t.Errorf("Content-Type = %q", got)
			}
		})
	}
}

func TestRecoverHidesInternals(t *testing.T) {
	var log syncBuffer
	p := testPages(t, &log)
	h := AccessLog(slog.New(slog.NewTextHandler(&log, nil)))(p.Recover(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("nil map in secret-handler")
	})))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), internalErrorMsg) || strings.Contains(rec.Body.String(), "secret-handler") {
		t.Errorf("panic = %d %q, want 500 with the generic message and no internals", rec.Code, rec.Body.String())
	}
	if !strings.Contains(log.String(), "nil map in secret-handler") || !strings.Contains(log.String(), "status=500") {
		t.Errorf("log = %q, want the panic and a 500 logged", log.String())
	}
}

// TestAbortIsNotA500: a handler that aborts on purpose reaches the client as
// a broken response, and the access log says aborted, not 500.
func TestAbortIsNotA500(t *testing.T) {
	var log syncBuffer
	p := testPages(t, &log)
	srv := httptest.NewServer(AccessLog(slog.New(slog.NewTextHandler(&log, nil)))(p.Recover(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/zip")
		w.Write(bytes.Repeat([]byte("z"), 64<<10))
		panic(http.ErrAbortHandler)
	}))))
	srv.Config.ErrorLog = slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Error("the client read an aborted response to its end without an error")
	}
	got := log.String()
	if !strings.Contains(got, `msg="request aborted"`) || strings.Contains(got, "status=500") || strings.Contains(got, "level=ERROR") {
		t.Errorf("log = %q, want one \"request aborted\" line and no 500 or error", got)
	}
}

// TestFlashSurvivesFailedRender: a flash is cleared only by a page that
// rendered and showed it.
func TestFlashSurvivesFailedRender(t *testing.T) {
	var log syncBuffer
	p := testPages(t, &log)
	req := func() *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		rec := httptest.NewRecorder()
		SetFlash(rec, "Meal saved.")
		r.AddCookie(rec.Result().Cookies()[0])
		return r
	}
	cleared := func(rec *httptest.ResponseRecorder) bool {
		for _, c := range rec.Result().Cookies() {
			if c.Name == flashCookie && c.MaxAge < 0 {
				return true
			}
		}
		return false
	}

	rec := httptest.NewRecorder()
	if err := p.Render(rec, req(), http.StatusOK, "t/page", &testPage{Text: "x", Fail: true}); err == nil {
		t.Fatal("Render of a failing page = nil error")
	}
	if cleared(rec) {
		t.Error("a page that failed to render cleared the flash")
	}

	rec = httptest.NewRecorder()
	if err := p.Render(rec, req(), http.StatusOK, "t/page", &testPage{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if !cleared(rec) || !strings.Contains(rec.Body.String(), `<p class="flash">Meal saved.</p>`) {
		t.Errorf("rendered page: flash cleared=%v body %q; want it shown and cleared", cleared(rec), rec.Body.String())
	}
	if !strings.Contains(rec.Body.String(), `data-page="t/page"`) {
		t.Errorf("body %q does not name its page", rec.Body.String())
	}
}

// TestFlashCookieFlags: the flash cookie, set and cleared, is HttpOnly,
// SameSite=Lax, and Secure unless the Pages says otherwise (local mode).
func TestFlashCookieFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		secure     bool
		set, clear string
	}{
		{"secure", true, "ndiro_flash=TWVhbCBzYXZlZC4; Path=/; Max-Age=60; HttpOnly; Secure; SameSite=Lax", "ndiro_flash=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Lax"},
		{"local mode", false, "ndiro_flash=TWVhbCBzYXZlZC4; Path=/; Max-Age=60; HttpOnly; SameSite=Lax", "ndiro_flash=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := testPages(t, io.Discard)
			p.SecureCookies(tc.secure)
			rec := httptest.NewRecorder()
			p.Handle(func(w http.ResponseWriter, r *http.Request) error {
				SetFlash(w, "Meal saved.")
				return nil
			})(rec, httptest.NewRequest(http.MethodPost, "/", nil))
			if got := rec.Header().Get("Set-Cookie"); got != tc.set {
				t.Errorf("SetFlash: Set-Cookie = %q, want %q", got, tc.set)
			}
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Header.Set("Cookie", strings.SplitN(tc.set, ";", 2)[0])
			rec = httptest.NewRecorder()
			p.Handle(func(w http.ResponseWriter, r *http.Request) error {
				return p.Render(w, r, http.StatusOK, "t/page", &testPage{Text: "x"})
			})(rec, req)
			if got := rec.Header().Get("Set-Cookie"); got != tc.clear {
				t.Errorf("page showing the flash: Set-Cookie = %q, want %q", got, tc.clear)
			}
		})
	}
}

// TestTooManyRequests: a 429 says in Retry-After and in words when to try
// again, rounded up to whole seconds.
func TestTooManyRequests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		wait        time.Duration
		header, msg string
	}{
		{500 * time.Millisecond, "1", "Too many tries. Try again in a second."},
		{2100 * time.Millisecond, "3", "Too many tries. Try again in 3 seconds."},
		{90 * time.Second, "90", "Too many tries. Try again in 90 seconds."},
		{150 * time.Second, "150", "Too many tries. Try again in 3 minutes."},
	} {
		rec := httptest.NewRecorder()
		e := TooManyRequests(rec, tc.wait, "Too many tries.")
		if got := rec.Header().Get("Retry-After"); got != tc.header {
			t.Errorf("TooManyRequests(%v): Retry-After = %q, want %q", tc.wait, got, tc.header)
		}
		if e.Status != http.StatusTooManyRequests || e.Msg != tc.msg {
			t.Errorf("TooManyRequests(%v) = %d %q, want 429 %q", tc.wait, e.Status, e.Msg, tc.msg)
		}
	}
}
