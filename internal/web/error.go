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
	// Title is the page heading, saying what happened ("Meal not found");
	// "" uses StatusTitle(Status).
	Title string
	Msg   string
	Err   error
	// Back, if set, is a local URL the error page offers as the way on
	// (the day a missing meal was on), with BackText as the link's text;
	// otherwise the page links to the diary or the start page.
	Back, BackText string
	// Unlisted renders the error page as Base.Unlisted: for refusals
	// under a secret link (a share), whose viewer has no account.
	Unlisted bool
}

// Error returns "status msg" and, if there is one, the cause: the text
// logs show. Pages show only Msg.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%d %s: %v", e.Status, e.Msg, e.Err)
	}
	return fmt.Sprintf("%d %s", e.Status, e.Msg)
}

// Unwrap returns the cause (nil if none), so errors.Is and errors.As see
// through an Error to a store's sentinel.
func (e *Error) Unwrap() error { return e.Err }

// StatusTitle returns a heading for an error page of status that says in
// plain words what happened, for errors without a Title: "Page not found"
// for 404, never the bare "Bad Request" of the HTTP status text.
func StatusTitle(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "Something in that request was wrong"
	case http.StatusUnauthorized:
		return "Please sign in"
	case http.StatusForbidden:
		return "Not allowed"
	case http.StatusNotFound:
		return "Page not found"
	case http.StatusMethodNotAllowed:
		return "That action is not available here"
	case http.StatusConflict:
		return "Changed meanwhile"
	case http.StatusRequestEntityTooLarge:
		return "Too large"
	case http.StatusUnprocessableEntity:
		return "Please check the form"
	case http.StatusTooManyRequests:
		return "Too many requests"
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return "ndiro can't reach a service it needs"
	case http.StatusInsufficientStorage:
		return "The server's disk is full"
	}
	if status >= 500 {
		return "Something went wrong"
	}
	return "That did not work"
}

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
