// Package web is the HTTP plumbing every concept shares: typed page
// rendering, the error-returning handler adapter, and middleware. It knows
// no concept.
package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"ndiro/internal/limit"
)

// Error is a failure the user caused or must be told about: Status is the
// HTTP status to answer with, Msg is shown on the error page as is, and Err
// (optional) is the cause, logged but never shown.
type Error struct {
	Status int
	// Title is the page heading; "" uses the status text.
	Title string
	Msg   string
	Err   error
	// Link, if set, is a local path the page offers as its way on, a
	// button labelled LinkText: e.g. "/login?next=%2Fmeals" and "Start
	// again" for a sign-in that took too long.
	Link, LinkText string
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%d %s: %v", e.Status, e.Msg, e.Err)
	}
	return fmt.Sprintf("%d %s", e.Status, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// BadRequest is a 400 with msg saying what to fix.
func BadRequest(msg string) *Error { return &Error{Status: http.StatusBadRequest, Msg: msg} }

// NotFound is a 404 with msg. Pages use it for things that do not exist and
// for things that exist but belong to someone else, alike.
func NotFound(msg string) *Error { return &Error{Status: http.StatusNotFound, Msg: msg} }

// Forbidden is a 403 with msg.
func Forbidden(msg string) *Error { return &Error{Status: http.StatusForbidden, Msg: msg} }

// Errorf builds an Error with a status, a heading and a message.
func Errorf(status int, title, msg string) *Error {
	return &Error{Status: status, Title: title, Msg: msg}
}

// AsError returns the *Error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// TooManyRequests is the 429 for a spent rate limit. It sets Retry-After
// on w to wait in whole seconds, rounded up (limit.RetryAfter), and
// returns the page: msg says what there was too much of, e.g. "There
// were too many sign-in attempts from your address.", and the page adds
// when to try again ("Try again in 3 seconds.").
func TooManyRequests(w http.ResponseWriter, wait time.Duration, msg string) *Error {
	secs := limit.RetryAfter(wait)
	w.Header().Set("Retry-After", secs)
	n, _ := strconv.Atoi(secs)
	when := "in " + strconv.Itoa(n) + " seconds"
	switch {
	case n == 1:
		when = "in a second"
	case n > 90:
		when = "in " + strconv.Itoa((n+59)/60) + " minutes"
	}
	return &Error{Status: http.StatusTooManyRequests, Title: "Too many requests", Msg: msg + " Try again " + when + "."}
}
