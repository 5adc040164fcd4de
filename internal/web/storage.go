package web

import (
	"net/http"
	"strconv"
	"time"

	"ndiro/internal/storage"
)

// StorageRetryAfter is how long the page of a write storage refused asks
// the client to wait before sending again (Retry-After): about the
// longest pause of local mode's probe, which takes writes again within
// that long of space coming back.
const StorageRetryAfter = 30 * time.Second

// NotWriterRetryAfter is the Retry-After of a write refused while this
// process does not hold the one-writer lease: about how long a renewal
// that failed takes to be tried again and succeed once storage answers.
const NotWriterRetryAfter = 15 * time.Second

// SignInRefused is the page for a sign-in whose new session storage
// refused to keep (storage.Refused): the status and Retry-After of a
// refused write (507, or 503 without the writer lease), saying that
// signing in needs storage that takes writes and that nothing else
// changed.
func SignInRefused(w http.ResponseWriter, err error) *Error {
	e := storageRefused(w, err)
	if e == nil {
		return nil
	}
	e.Title = "Cannot sign in right now"
	e.Msg = "Signing in has to save that this browser is signed in, and the server cannot save anything at the moment. Try again in a minute; whoever runs the server has been told."
	if storage.Refused(err) == storage.ErrFull {
		e.Msg = "Signing in has to save that this browser is signed in, and the disk of the server that keeps this diary is full. Try again once whoever runs the server has made room."
	}
	return e
}

// storageRefused returns the page for a write that storage refused
// (storage.Refused: the server's disk is full, or cannot be written): 507
// Insufficient Storage, with Retry-After set on w, saying that nothing was
// saved and that what was sent can be sent again; nil for any other error.
// The page script keeps the form on screen and sends it again after
// Retry-After (static/upload.js); a form sent without it is gone from the
// page, so the message promises no more than the browser's history.
//
// A write refused because this process does not hold the one-writer
// lease (storage.ErrNotWriter) is 503 Service Unavailable instead, with
// Retry-After NotWriterRetryAfter: the storage is fine, this server may
// not write to it for now.
func storageRefused(w http.ResponseWriter, err error) *Error {
	why := storage.Refused(err)
	if why == nil {
		return nil
	}
	if why == storage.ErrNotWriter {
		w.Header().Set("Retry-After", strconv.Itoa(int(NotWriterRetryAfter/time.Second)))
		return &Error{Status: http.StatusServiceUnavailable, Title: "Not taking changes right now", Err: err,
			Msg: "Nothing was saved: this server is not taking changes at the moment, because it cannot confirm that it is the only one writing to the diary's storage. " +
				"Go back and send it again in a minute; your browser may still have what you typed in the form. Everything saved before is safe and can still be read."}
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(StorageRetryAfter/time.Second)))
	e := &Error{Status: http.StatusInsufficientStorage, Err: err}
	if why == storage.ErrFull {
		e.Title = "The server's disk is full"
		e.Msg = "Nothing was saved: the disk of the server that keeps this diary is full. "
	} else {
		e.Title = "The server cannot save anything"
		e.Msg = "Nothing was saved: the server that keeps this diary cannot write to its disk. "
	}
	e.Msg += "Go back and send it again once whoever runs the server has made room; your browser may still have what you typed in the form. " +
		"Everything saved before is safe and can still be read."
	return e
}
