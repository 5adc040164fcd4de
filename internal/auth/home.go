package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"

	"ndiro/internal/user"
	"ndiro/internal/web"
)

// Viewer describes the signed-in user for the page layout, with no
// UserHash (ViewerWith gives one).
func Viewer(r *http.Request) web.Viewer { return ViewerWith(nil)(r) }

// ViewerWith returns Viewer with web.Viewer.UserHash set by
// UserHash(key, …); a nil key sets none.
func ViewerWith(key []byte) func(*http.Request) web.Viewer {
	return func(r *http.Request) web.Viewer {
		u := user.FromContext(r.Context())
		if u == nil {
			return web.Viewer{}
		}
		v := web.Viewer{SignedIn: true, Email: u.Email, IsAdmin: u.IsAdmin()}
		if key != nil {
			v.UserHash = UserHash(key, u.ID)
		}
		return v
	}
}

// UserHash is what stands for userID on a device (the service worker's
// cache names, the owner of each queued meal in the offline outbox): the
// first 128 bits of HMAC-SHA256(key, userID), 22 characters of base64url.
// Without key it reveals neither the ID nor the e-mail, and it is the same
// for a user across restarts as long as key is.
func UserHash(key []byte, userID string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(userID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// UserHashKey derives UserHash's key from the OpenID client secret, a
// secret of the deployment that stays the same across restarts (so a
// device's caches and outbox stay bound to their user); local mode, with
// a client secret of its own making each start, passes "" and gets a
// fixed key, which is enough for one developer's machine. Rotating the
// client secret makes every user's hash new: the outbox then offers the
// meals queued before to be sent after confirming, as another account's.
func UserHashKey(clientSecret string) []byte {
	sum := sha256.Sum256([]byte("ndiro user hash\x00" + clientSecret))
	return sum[:]
}

type homePage struct{ web.Base }

// Home is the start page: signed-in people go to their diary, everyone else
// sees what ndiro is and a sign-in button.
func (h *Handler) Home(w http.ResponseWriter, r *http.Request) error {
	if h.SignedIn(r) {
		web.Redirect(w, r, "/meals")
		return nil
	}
	return h.pages.Render(w, r, http.StatusOK, "auth/home", &homePage{})
}
