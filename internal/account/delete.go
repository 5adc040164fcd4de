package account

import (
	"errors"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"ndiro/internal/email"
	"ndiro/internal/token"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// deletePage is the confirmation page of a deletion: what will go, and a
// field for the account's email.
type deletePage struct {
	web.Base
	Target *user.User
	// ByAdmin: an admin deletes someone else's account.
	ByAdmin bool
	// Listed: the account's email is in ADMIN_EMAILS, so signing in again
	// needs no invite: it starts a new, empty account.
	Listed                bool
	Meals, Photos, Shares int
	Action                string
	Typed, Err            string
}

// DeletePage asks the owner to confirm deleting their own account.
func (h *Handler) DeletePage(w http.ResponseWriter, r *http.Request) error {
	u := user.FromContext(r.Context())
	return h.renderDelete(w, r, http.StatusOK, &deletePage{Target: u, Action: "/account/delete"})
}

// Delete deletes the signed-in owner's account once they have typed its
// email: the users row is marked at once, the session ends, and the rest
// runs in the background. It lands on a page that follows the deletion.
func (h *Handler) Delete(w http.ResponseWriter, r *http.Request) error {
	u := user.FromContext(r.Context())
	if err := r.ParseForm(); err != nil {
		return web.BadRequest("The form could not be read.")
	}
	p := &deletePage{Target: u, Action: "/account/delete", Typed: r.PostForm.Get("email")}
	if email.Normalize(p.Typed) != u.Email {
		p.Err = "Type your account's email address exactly as shown to confirm. Nothing was deleted."
		return h.renderDelete(w, r, http.StatusUnprocessableEntity, p)
	}
	if _, err := h.deleter.Start(r.Context(), u.ID); err != nil {
		return err
	}
	if err := h.signOut(r.Context()); err != nil {
		return err
	}
	web.Redirect(w, r, "/account/deleted?t="+h.deleted.add(u.ID, h.now()))
	return nil
}

// AdminDeletePage asks an admin to confirm deleting another user's account.
func (h *Handler) AdminDeletePage(w http.ResponseWriter, r *http.Request) error {
	target, err := h.adminTarget(r)
	if err != nil {
		return err
	}
	return h.renderDelete(w, r, http.StatusOK, &deletePage{Target: target, ByAdmin: true, Action: "/admin/users/" + target.ID + "/delete"})
}

// AdminDelete deletes another user's account, confirmed by typing its
// email; an admin cannot delete their own account here.
func (h *Handler) AdminDelete(w http.ResponseWriter, r *http.Request) error {
	target, err := h.adminTarget(r)
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return web.BadRequest("The form could not be read.")
	}
	p := &deletePage{Target: target, ByAdmin: true, Action: "/admin/users/" + target.ID + "/delete", Typed: r.PostForm.Get("email")}
	if email.Normalize(p.Typed) != target.Email {
		p.Err = "Type the account's email address exactly as shown to confirm. Nothing was deleted."
		return h.renderDelete(w, r, http.StatusUnprocessableEntity, p)
	}
	_, err = h.deleter.Start(r.Context(), target.ID)
	if errors.Is(err, user.ErrState) {
		return errMoving // claimed by a sign-in meanwhile
	}
	if err != nil {
		return err
	}
	web.SetFlash(w, "Deleting "+target.Email+"'s account and all its data.")
	web.Redirect(w, r, "/admin/users")
	return nil
}

// Resume restarts a deletion that stopped after its retries (admin).
func (h *Handler) Resume(w http.ResponseWriter, r *http.Request) error {
	u, err := h.users.Get(r.Context(), userIDParam(r))
	if errors.Is(err, user.ErrNotFound) {
		return web.NotFound("That account is gone: its deletion has finished.")
	}
	if err != nil {
		return err
	}
	if !u.Deleting() {
		return web.Errorf(http.StatusConflict, "Not being deleted", "This account is not being deleted, so there is nothing to resume.")
	}
	if h.deleter.Resume(u.ID) {
		web.SetFlash(w, "Deletion of "+u.Email+" resumed.")
	} else {
		web.SetFlash(w, "Deletion of "+u.Email+" is already running.")
	}
	web.Redirect(w, r, "/admin/users")
	return nil
}

// adminTarget loads the account an admin acts on, refusing their own.
func (h *Handler) adminTarget(r *http.Request) (*user.User, error) {
	target, err := h.users.Get(r.Context(), userIDParam(r))
	if errors.Is(err, user.ErrNotFound) {
		return nil, web.NotFound("There is no such user.")
	}
	if err != nil {
		return nil, err
	}
	if target.ID == user.ID(r.Context()) {
		return nil, web.Forbidden("You cannot delete your own account from the admin pages. Use Account → Delete my account, after making someone else an admin.")
	}
	if target.Deleting() {
		return nil, web.Errorf(http.StatusConflict, "Already being deleted", "This account is already being deleted.")
	}
	if target.Moving() {
		return nil, errMoving
	}
	return target, nil
}

// errMoving refuses to delete either row of an account moving to a new
// sign-in: the move copies and deletes rows of both IDs, and would bring
// back what a deletion took.
var errMoving = web.Errorf(http.StatusConflict, "Account moving", "This account is moving to a new sign-in. Delete it once the move is done: the users list shows it active again.")

// userIDParam reads the {user_id} URL parameter, which the admin pages
// path-escape (OIDC subjects may hold any character).
func userIDParam(r *http.Request) string {
	id, err := url.PathUnescape(chi.URLParam(r, "user_id"))
	if err != nil {
		return ""
	}
	return id
}

// renderDelete fills in what will be deleted and shows the page.
func (h *Handler) renderDelete(w http.ResponseWriter, r *http.Request, status int, p *deletePage) error {
	ctx := r.Context()
	p.Listed = h.isAdmin != nil && h.isAdmin(p.Target.Email)
	meals, err := h.meals.All(ctx, p.Target.ID)
	if err != nil {
		return err
	}
	shares, err := h.shares.ListByOwner(ctx, p.Target.ID)
	if err != nil {
		return err
	}
	p.Meals, p.Shares = len(meals), len(shares)
	for i := range meals {
		if meals[i].HasPhoto() {
			p.Photos++
		}
	}
	p.Title = "Delete account"
	return h.pages.Render(w, r, status, "account/delete", p)
}

// deletedPage follows a deletion after the owner was signed out.
type deletedPage struct {
	web.Base
	// State is "deleting", "gone" or "" (an unknown or old link).
	State string
}

// Deleted is where an owner lands after deleting their account: it says
// the account is being deleted, and, reloaded once the sequence has
// finished, that it is gone. The ?t= ticket names the account for an hour
// without a session (the deletion ended it).
func (h *Handler) Deleted(w http.ResponseWriter, r *http.Request) error {
	// The account is gone: nothing the device cached of it is shown again
	// (the page script empties the service worker's page caches too).
	w.Header().Set("Clear-Site-Data", web.ClearCache)
	p := &deletedPage{Base: web.Base{Title: "Account deleted"}}
	if id, ok := h.deleted.get(r.URL.Query().Get("t"), h.now()); ok {
		u, err := h.users.Get(r.Context(), id)
		switch {
		case errors.Is(err, user.ErrNotFound):
			p.State = "gone"
		case err != nil:
			return err
		case u.Deleting():
			p.State, p.Title = "deleting", "Deleting your account"
		}
	}
	w.Header().Set("Referrer-Policy", "no-referrer")
	return h.pages.Render(w, r, http.StatusOK, "account/deleted", p)
}

// ticketTTL is how long the page after a deletion can follow it.
const ticketTTL = time.Hour

// tickets map the random ?t= of the page after a deletion to the account
// being deleted, for ticketTTL. In memory: one process serves every
// request, and after a restart the page simply says the account is gone or
// going.
type tickets struct {
	mu sync.Mutex
	m  map[string]ticket
}

type ticket struct {
	userID  string
	expires time.Time
}

// add returns a new ticket for userID, dropping expired ones.
func (t *tickets) add(userID string, now time.Time) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, v := range t.m {
		if now.After(v.expires) {
			delete(t.m, k)
		}
	}
	tok := token.New()
	t.m[tok] = ticket{userID: userID, expires: now.Add(ticketTTL)}
	return tok
}

// get returns the account of an unexpired ticket.
func (t *tickets) get(tok string, now time.Time) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[tok]
	if !ok || now.After(v.expires) {
		return "", false
	}
	return v.userID, true
}
