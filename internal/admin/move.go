package admin

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"ndiro/internal/user"
	"ndiro/internal/web"
)

// movePage confirms marking an account to move to a new sign-in
// provider: what will happen, and the button.
type movePage struct {
	web.Base
	Target *user.User
	// Path is "/admin/users/{id}", the user ID escaped for a URL.
	Path string
	// Self: the admin marks their own account.
	Self bool
}

// MovePage is the confirmation page of MarkMove.
func (h *Handler) MovePage(w http.ResponseWriter, r *http.Request) error {
	u, err := h.moveTarget(r)
	if err != nil {
		return err
	}
	if u.AwaitingOwner != nil {
		return errAlreadyMarked
	}
	p := &movePage{Base: web.Base{Title: "Move to a new sign-in provider"}, Target: u, Path: "/admin/users/" + url.PathEscape(u.ID), Self: u.ID == user.ID(r.Context())}
	return h.pages.Render(w, r, http.StatusOK, "admin/move", p)
}

// MarkMove marks an account as waiting for its owner
// (user.Store.MarkAwaitingOwner), for a deployment changing its sign-in
// provider: the first sign-in of a new subject with the account's
// verified email moves the account to it. An admin may mark their own
// account too (they change provider as well). The mark is logged as an
// audit line naming the account and the admin.
func (h *Handler) MarkMove(w http.ResponseWriter, r *http.Request) error {
	u, err := h.moveTarget(r)
	if err != nil {
		return err
	}
	err = h.users.MarkAwaitingOwner(r.Context(), u.ID, h.now())
	switch {
	case errors.Is(err, user.ErrEmailTaken):
		return web.Errorf(http.StatusConflict, "Email already waiting",
			"Another account with the email "+u.Email+" is marked to move already, and a sign-in could not tell the two apart. Unmark or delete the other one first.")
	case errors.Is(err, user.ErrState):
		return web.Errorf(http.StatusConflict, "Not possible now", "Only an active account can be marked to move: this one is disabled, being deleted or moving. Reload the list and try again.")
	case err != nil:
		return h.userChange(err)
	}
	h.log.Info("admin marked account to move", "user_id", u.ID, "admin_id", user.ID(r.Context()))
	web.SetFlash(w, u.Email+" is marked to move: the first sign-in with that verified email through a new sign-in takes the account.")
	web.Redirect(w, r, "/admin/users")
	return nil
}

// UnmarkMove clears the mark MarkMove set (user.Store.ClearAwaitingOwner),
// while no sign-in has claimed the account; logged as an audit line.
func (h *Handler) UnmarkMove(w http.ResponseWriter, r *http.Request) error {
	u, err := h.moveTarget(r)
	if err != nil {
		return err
	}
	if u.Moving() {
		return web.Errorf(http.StatusConflict, "Already moving", "A sign-in has claimed this account and it is moving; the mark goes when the move is done.")
	}
	if err := h.users.ClearAwaitingOwner(r.Context(), u.ID); err != nil {
		return err
	}
	h.log.Info("admin unmarked account to move", "user_id", u.ID, "admin_id", user.ID(r.Context()))
	web.SetFlash(w, u.Email+" is no longer marked to move.")
	web.Redirect(w, r, "/admin/users")
	return nil
}

var errAlreadyMarked = web.Errorf(http.StatusConflict, "Already marked", "This account is marked to move already. Reload the list.")

// moveTarget loads the user named by the route's user_id.
func (h *Handler) moveTarget(r *http.Request) (*user.User, error) {
	id, err := url.PathUnescape(chi.URLParam(r, "user_id"))
	if err != nil {
		return nil, web.NotFound("There is no such user.")
	}
	u, err := h.users.Get(r.Context(), id)
	if errors.Is(err, user.ErrNotFound) {
		return nil, web.NotFound("There is no such user.")
	}
	return u, err
}
