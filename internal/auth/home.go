package auth

import (
	"net/http"

	"ndiro/internal/user"
	"ndiro/internal/web"
)

// Viewer describes the signed-in user for the page layout.
func Viewer(r *http.Request) web.Viewer {
	u := user.FromContext(r.Context())
	if u == nil {
		return web.Viewer{}
	}
	return web.Viewer{SignedIn: true, Email: u.Email, IsAdmin: u.IsAdmin()}
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
