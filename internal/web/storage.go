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

// storageRefused returns the page for a write that storage refused
// (storage.Refused: the server's disk is full, or cannot be written): 507
// Insufficient Storage, with Retry-After set on w, saying that nothing was
// saved and that what was sent can be sent again; nil for any other error.
// The page script keeps the form on screen and sends it again after
// Retry-After (static/upload.js); a form sent without it is gone from the
// page, so the message promises no more than the browser's history.
func storageRefused(w http.ResponseWriter, err error) *Error {
	why := storage.Refused(err)
	if why == nil {
		return nil
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
