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
// the 303 after a POST. The cookie is HttpOnly, SameSite=Lax and Secure
// unless w comes from a Pages whose cookies are not (local mode, see
// Pages.SecureCookies); a w from outside Pages.Handle gets Secure.
func SetFlash(w http.ResponseWriter, msg string) {
	http.SetCookie(w, &http.Cookie{
		Name:     flashCookie,
		Value:    base64.RawURLEncoding.EncodeToString([]byte(msg)),
		Path:     "/",
		MaxAge:   60,
		HttpOnly: true,
		Secure:   secureCookies(w),
		SameSite: http.SameSiteLaxMode,
	})
}

// SecureCookie reports whether a cookie a handler sets on w should be
// Secure, by the same policy as the flash message's (Pages.SecureCookies;
// true for a w from outside Pages.Handle): for a handler's own short-lived
// cookies.
func SecureCookie(w http.ResponseWriter) bool { return secureCookies(w) }

// secureCookies reports whether cookies written to w should be Secure:
// what the Pages that handed out w (through Handle, perhaps wrapped
// since) says, and true if none did.
func secureCookies(w http.ResponseWriter) bool {
	for {
		switch x := w.(type) {
		case *trackingWriter:
			return x.secure
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return true
		}
	}
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
func clearFlash(w http.ResponseWriter, secure bool) {
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Path: "/", MaxAge: -1, HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode})
}
