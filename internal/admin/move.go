package admin

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

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
	// Days is how many days the mark can be claimed.
	Days int
}

// MovePage is the confirmation page of MarkMove.
func (h *Handler) MovePage(w http.ResponseWriter, r *http.Request) error {
	u, err := h.moveTarget(r)
	if err != nil {
		return err
	}
	if u.OwnerMark != nil {
		return errAlreadyMarked
	}
	p := &movePage{Base: web.Base{Title: "Move to a new sign-in provider"}, Target: u, Path: "/admin/users/" + url.PathEscape(u.ID), Self: u.ID == user.ID(r.Context()),
		Days: int(h.markLife / (24 * time.Hour))}
	return h.pages.Render(w, r, http.StatusOK, "admin/move", p)
}

// MarkMove marks an account as waiting for its owner
// (user.Store.MarkAwaitingOwner), for a deployment changing its sign-in
// provider: the first sign-in of a new subject of another issuer with
// the account's verified email, within MarkLifetime, moves the account
// to it. The mark records the admin and, for a row that does not record
// its own issuer, the one in use now: so it is made before the provider
// changes. An admin may mark their own account too (they change
// provider as well). The mark is logged as an audit line naming the
// account and the admin.
func (h *Handler) MarkMove(w http.ResponseWriter, r *http.Request) error {
	u, err := h.moveTarget(r)
	if err != nil {
		return err
	}
	now := h.now()
	admin := user.ID(r.Context())
	err = h.users.MarkAwaitingOwner(r.Context(), u.ID, now, user.OwnerMark{By: admin, Expires: now.Add(h.markLife), Issuer: h.issuer})
	switch {
	case errors.Is(err, user.ErrEmailTaken):
		return web.Errorf(http.StatusConflict, "Email already waiting",
			"Another account with the email "+u.Email+" is marked to move already, and a sign-in could not tell the two apart. Unmark or delete the other one first.")
	case errors.Is(err, user.ErrState):
		return web.Errorf(http.StatusConflict, "Not possible now", "Only an active account can be marked to move: this one is disabled, being deleted or moving. Reload the list and try again.")
	case err != nil:
		return h.userChange(err)
	}
	h.log.Info("admin marked account to move", "user_id", u.ID, "admin_id", admin)
	web.SetFlash(w, u.Email+" is marked to move until "+now.Add(h.markLife).Format(dateLayout)+": the first sign-in with that verified email through a new sign-in provider takes the account.")
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

// ExtendMove makes the mark of an account claimable for MarkLifetime
// from now (user.Store.ExtendAwaitingOwner), whether or not it had
// expired; logged as an audit line.
func (h *Handler) ExtendMove(w http.ResponseWriter, r *http.Request) error {
	u, err := h.moveTarget(r)
	if err != nil {
		return err
	}
	until := h.now().Add(h.markLife)
	err = h.users.ExtendAwaitingOwner(r.Context(), u.ID, until)
	switch {
	case errors.Is(err, user.ErrState):
		return web.Errorf(http.StatusConflict, "Not marked",
			"Only an active account marked to move on this page or by ndiro migrate can be extended: this one is not (it may have been claimed, unmarked, or marked by an earlier version of ndiro, which you unmark and mark again). Reload the list.")
	case err != nil:
		return h.userChange(err)
	}
	h.log.Info("admin extended account's mark to move", "user_id", u.ID, "admin_id", user.ID(r.Context()))
	web.SetFlash(w, u.Email+" can be claimed by a new sign-in until "+until.Format(dateLayout)+".")
	web.Redirect(w, r, "/admin/users#marked")
	return nil
}

// dateLayout is how flash messages write a day, as the pages' date
// function does.
const dateLayout = "2 Jan 2006"

// markView is what the users page says of an account's mark to move.
type markView struct {
	// By is who marked it: "ndiro migrate", an admin's email (or user
	// ID, if that account is gone), or "" when the mark does not say.
	By string
	// Since is when it was marked; Until when it stops being claimable.
	Since, Until time.Time
	// Left is the time it stays claimable, in words ("29 days"); "" once
	// Expired.
	Left    string
	Expired bool
	// Issuer is the issuer of the account's own sign-in, whose subjects
	// never claim it.
	Issuer string
	// Inert: a mark made before marks recorded who made them, until when
	// and for which issuer; it claims nothing.
	Inert bool
}

// newMarkView describes u's mark at now, naming admins by their email
// in emails (by user ID); nil if u is not marked.
func newMarkView(u *user.User, emails map[string]string, now time.Time) *markView {
	if u.AwaitingOwner == nil {
		return nil
	}
	v := &markView{Since: *u.AwaitingOwner}
	m := u.OwnerMark
	if m == nil {
		v.Inert = true
		return v
	}
	v.Until, v.Issuer = m.Expires, m.Issuer
	switch {
	case m.By == user.MarkedByMigrate:
		v.By = "ndiro migrate"
	case emails[m.By] != "":
		v.By = emails[m.By]
	default:
		v.By = m.By
	}
	if left := m.Expires.Sub(now); left > 0 {
		v.Left = leftWords(left)
	} else {
		v.Expired = true
	}
	return v
}

// before orders marks for the page: claimable ones by their expiry,
// then expired ones, then inert ones.
func (v *markView) before(o *markView) bool {
	rank := func(m *markView) int {
		switch {
		case m.Inert:
			return 2
		case m.Expired:
			return 1
		}
		return 0
	}
	if a, b := rank(v), rank(o); a != b {
		return a < b
	}
	return v.Until.Before(o.Until)
}

// leftWords says d, a time still to run, in days rounded to the nearest
// ("1 day", "30 days"), or whole hours under a day ("5 hours"), or
// "less than an hour".
func leftWords(d time.Duration) string {
	plural := func(n int64, unit string) string {
		if n == 1 {
			return "1 " + unit
		}
		return strconv.FormatInt(n, 10) + " " + unit + "s"
	}
	switch {
	case d >= 24*time.Hour:
		return plural(int64(d.Round(24*time.Hour)/(24*time.Hour)), "day")
	case d >= time.Hour:
		return plural(int64(d/time.Hour), "hour")
	}
	return "less than an hour"
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
