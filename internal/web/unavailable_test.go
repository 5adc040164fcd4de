package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"ndiro/internal/storage"
)

// TestStorageNotAnswering: a handler whose storage call got no answer
// (storage.ErrUnavailable, however wrapped) gets the 503 page with
// Retry-After, saying so in plain words, and no error line of its own
// per request (package storage logs the stall, rate-limited).
func TestStorageNotAnswering(t *testing.T) {
	t.Parallel()
	stalled := fmt.Errorf("meal: month 2026-09: %w", &storage.UnavailableError{Service: "DynamoDB", Operation: "Query", Kind: storage.Query, Err: context.DeadlineExceeded})
	for _, tc := range []struct {
		method, want string
	}{
		{http.MethodGet, "ndiro's storage did not answer in time. Try again in a few seconds."},
		{http.MethodPost, "ndiro's storage did not answer in time, so ndiro cannot tell whether this was saved. Your form is kept: go back, wait a few seconds and send it again (check the diary first if it was a new meal)."},
	} {
		t.Run(tc.method, func(t *testing.T) {
			t.Parallel()
			var log syncBuffer
			p := testPages(t, &log)
			rec := httptest.NewRecorder()
			p.Handle(func(http.ResponseWriter, *http.Request) error { return stalled })(rec, httptest.NewRequest(tc.method, "/meals", nil))
			if rec.Code != http.StatusServiceUnavailable {
				t.Errorf("status %d, want 503", rec.Code)
			}
			if got := rec.Header().Get("Retry-After"); got != "15" {
				t.Errorf("Retry-After = %q, want 15", got)
			}
			body := rec.Body.String()
			if !strings.Contains(body, "<h1>Storage is not answering</h1>") || !strings.Contains(body, "<p>"+escaped(tc.want)+"</p>") {
				t.Errorf("body %q, want the heading Storage is not answering and %q", body, tc.want)
			}
			if strings.Contains(body, "Query") || strings.Contains(body, "DynamoDB") {
				t.Errorf("body %q names the internals", body)
			}
			if got := log.String(); strings.Contains(got, "level=ERROR") {
				t.Errorf("log = %q, want no error line per request", got)
			}
		})
	}
}

// escaped is s as html/template prints it in text.
func escaped(s string) string { return strings.ReplaceAll(s, "'", "&#39;") }

// TestBackendResetIsNotClientGone: a storage call whose connection to
// the backend was reset (ECONNRESET inside it) is the 503, not a client
// gone away answered with nothing.
func TestBackendResetIsNotClientGone(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	p := testPages(t, &log)
	reset := &storage.UnavailableError{Service: "DynamoDB", Operation: "Query", Kind: storage.Query, Err: fmt.Errorf("read tcp 127.0.0.1:5000: %w", syscall.ECONNRESET)}
	rec := httptest.NewRecorder()
	p.Handle(func(http.ResponseWriter, *http.Request) error { return reset })(rec, httptest.NewRequest(http.MethodGet, "/meals", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "Storage is not answering") {
		t.Errorf("backend reset = %d %q, want the 503 page", rec.Code, rec.Body.String())
	}
}

// TestOtherErrorsStay500: an error that is not a stall is still the
// generic 500, logged.
func TestOtherErrorsStay500(t *testing.T) {
	var log syncBuffer
	p := testPages(t, &log)
	rec := httptest.NewRecorder()
	p.Handle(func(http.ResponseWriter, *http.Request) error { return errors.New("dynamodb: ValidationException") })(rec, httptest.NewRequest(http.MethodGet, "/meals", nil))
	if rec.Code != http.StatusInternalServerError || rec.Header().Get("Retry-After") != "" || !strings.Contains(log.String(), "level=ERROR") {
		t.Errorf("status %d, Retry-After %q, log %q; want 500, none, an error line", rec.Code, rec.Header().Get("Retry-After"), log.String())
	}
}
