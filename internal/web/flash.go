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

// takeFlash returns the pending flash message, if any, and clears it.
func takeFlash(w http.ResponseWriter, r *http.Request) string {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return ""
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	b, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil || len(b) > 500 {
		return ""
	}
	return string(b)
}
