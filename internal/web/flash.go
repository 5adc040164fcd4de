package web

import (
	"encoding/base64"
	"net/http"
)

// flashCookie carries a one-time message from an action to the page its
// redirect leads to ("Invite created").
const flashCookie = "ndiro_flash"

// SetFlash makes msg appear once on the next page rendered for this
// browser. It is a short-lived cookie, so it needs no session and survives
// the 303 after a POST.
func SetFlash(w http.ResponseWriter, msg string) {
	http.SetCookie(w, &http.Cookie{
		Name:     flashCookie,
		Value:    base64.RawURLEncoding.EncodeToString([]byte(msg)),
		Path:     "/",
		MaxAge:   60,
		HttpOnly: true,
		SameSite: http.SameSiteLaxMode,
	})
}

// peekFlash returns the pending flash message, if any, and whether a flash
// cookie came with r (to be cleared by clearFlash once the page showing it
// has rendered).
func peekFlash(r *http.Request) (msg string, present bool) {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil || len(b) > 500 {
		return "", true
	}
	return string(b), true
}

// clearFlash removes the flash cookie: its message has been shown.
func clearFlash(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
}
