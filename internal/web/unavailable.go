package web

import "net/http"

// UnavailableRetryAfter is the Retry-After, in seconds, of the 503 for a
// storage call that got no answer in time: long enough for a stalled
// connection to be replaced, short enough that the page script's own
// retry (static/upload.js) does not keep a person waiting.
const UnavailableRetryAfter = "15"

// MsgUnavailable is what a form shown again after storage did not answer
// says above it: nothing to fix, send it again.
const MsgUnavailable = "ndiro's storage is not answering at the moment, so this may not have been saved. Your form is kept: send it again in a few seconds."

// Unavailable is the 503 for err, a storage call that got no answer in
// time (storage.ErrUnavailable, which Pages.Error also maps here). It
// sets Retry-After on w. The page tells a person sending a form that the
// form is kept (the browser's Back keeps it; a photo is kept by the meal
// form itself) and anyone else to reload in a moment.
func Unavailable(w http.ResponseWriter, r *http.Request, err error) *Error {
	w.Header().Set("Retry-After", UnavailableRetryAfter)
	msg := "ndiro's storage did not answer in time. Try again in a few seconds."
	if r.Method == http.MethodPost {
		msg = "ndiro's storage did not answer in time, so ndiro cannot tell whether this was saved. Your form is kept: go back, wait a few seconds and send it again (check the diary first if it was a new meal)."
	}
	return &Error{Status: http.StatusServiceUnavailable, Title: "Storage is not answering", Msg: msg, Err: err}
}
