package auth

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"ndiro/internal/storage"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// RequireUser is the guard of every signed-in user's route (DESIGN.md,
// sessions): the session's user ID, then its users row (the users
// store's write-through cache; a consistent GetItem on a miss), which
// must be active (user.User.Active). No session redirects to sign-in
// (returning here afterwards for GETs; a page script gets a 401 with
// {"signin": …}); a missing, deleting or disabled row ends the session
// first. The handler finds the row in the request's context
// (user.FromContext). It reads the session the session manager loaded:
// scs LoadAndSave must run before it.
func (h *Handler) RequireUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g, err := h.admit(w, r, loadedSession(r.Context(), h.sessions), true)
		switch {
		case err != nil:
			h.pages.Error(w, r, err)
		case g.row != nil:
			next.ServeHTTP(w, r.WithContext(user.WithUser(r.Context(), g.row)))
		}
	})
}

// UserFromStore is RequireUser for the route without the session
// manager, the owner's photos, which a month page asks up to 90 times:
// it wraps fn, which gets the signed-in user's ID as uid. The rule is
// RequireUser's, in the same code (admit); what differs is what it
// costs a cached photo, which is every bit it spends (BenchmarkOwnerPhoto):
// it looks the session cookie's token up in the session store and reads
// the user ID from the stored bytes, without loading the session into
// the manager or the request's context, and checks the row the session
// was found on, in the same cached read and at the same clock reading
// (user.Sessions.FindAccount; user.Store.Active for a store without it),
// without copying it or putting it in a context. The user ID it hands to
// fn is the row's, once the stored bytes are found to hold it, so a
// cached photo's guard allocates nothing (reading the row twice and the
// clock four times cost a tenth of a cached photo's 304: 1045 ns against
// 947 for the display copy in BenchmarkOwnerPhoto, medians of 3
// interleaved runs). A session it ends is deleted from the
// store; it never writes a session or sets a cookie, so photos stay
// cacheable. A store failure is returned, as fn's errors are.
func (h *Handler) UserFromStore(fn func(w http.ResponseWriter, r *http.Request, uid string) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		g, err := h.admit(w, r, storedSession(h.sessions, r), false)
		if g.id == "" {
			return err
		}
		return fn(w, r, g.id)
	}
}

// admitted is whom admit let in: the user ID, and the users row if asked.
type admitted struct {
	id  string
	row *user.User
}

// admit is the guard's rule, however s is read: a session without a user
// ID is sent to sign in; one whose users row is the new row of a move
// not finished gets the moving page (movingPage), its session kept; one
// whose row is missing or not active (deleting, disabled, the old row of
// a move) is ended, then sent to sign in; anyone else is let in, with a copy of their row if row is set. It returns the zero
// admitted and no error once it has answered the request itself, and a
// store failure as an error.
func (h *Handler) admit(w http.ResponseWriter, r *http.Request, s session, row bool) (admitted, error) {
	id, acct, err := s.userID()
	if err != nil {
		return admitted{}, err
	}
	if id == "" {
		// A cookie naming no session (signed out elsewhere, or its
		// account's row gone) is deleted, with its key if one is left.
		if s.sent(r) {
			if err := s.end(); err != nil && storage.Refused(err) == nil {
				return admitted{}, err
			}
		}
		h.toLogin(w, r)
		return admitted{}, nil
	}
	g := admitted{id: id}
	var active bool
	switch {
	case row:
		if g.row, err = h.users.Get(r.Context(), id); err == nil {
			active = g.row.Active()
		}
	case acct.UserID == id:
		active = acct.Active // read with the session, a moment ago
	default:
		active, err = h.users.Active(r.Context(), id)
	}
	if err == nil && !active {
		// The new row of a move keeps its session: the owner waits on
		// the moving page until their diary is there.
		var moving bool
		if moving, err = h.movingHere(r, id, g.row); moving {
			return admitted{}, h.movingPage(w, r)
		}
	}
	switch {
	case errors.Is(err, user.ErrNotFound), err == nil && !active:
		// The row refuses the account whatever happens to the session:
		// one storage refuses to end (a full disk) is sent to sign in all
		// the same, and ends when the next request tries again.
		if err := s.end(); err != nil && storage.Refused(err) == nil {
			return admitted{}, err
		}
		h.toLogin(w, r)
		return admitted{}, nil
	case err != nil:
		return admitted{}, err
	}
	return g, nil
}

// movingHere reports whether the account id, whose row is not active,
// is the new row of a move not finished; u is its row if admit read it
// (else one cached read gets it).
func (h *Handler) movingHere(r *http.Request, id string, u *user.User) (bool, error) {
	if u == nil {
		var err error
		if u, err = h.users.Get(r.Context(), id); err != nil {
			return false, err
		}
	}
	return u.Moving() && u.MoveFrom != "", nil
}

// movingPage answers r, from an owner whose account is moving to their
// new sign-in (user.StatusMoving): a page saying so that reloads itself
// every MovingRefresh, so the diary shows once the move is done. A GET
// or HEAD gets it with 200; anything else (a write, a page script's
// request) 503 with Retry-After, as nothing can be saved meanwhile.
func (h *Handler) movingPage(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	status := http.StatusOK
	if (r.Method != http.MethodGet && r.Method != http.MethodHead) || web.Scripted(r) {
		status = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", strconv.Itoa(int(MovingRefresh/time.Second)))
	}
	return h.pages.Render(w, r, status, "auth/moving", &movingPage{
		Base:    web.Base{Title: "Moving your diary"},
		Refresh: int(MovingRefresh / time.Second),
	})
}

// MovingRefresh is how often the moving page reloads itself.
const MovingRefresh = 5 * time.Second

// movingPage is the page an owner sees while their account moves.
type movingPage struct {
	web.Base
	// Refresh is the seconds between reloads.
	Refresh int
}

// toLogin sends r to sign in, to come back to r's URL afterwards if it is
// a GET or HEAD. A page script's request (web.Scripted) gets a 401 with
// {"signin": "/login?next=…"} instead of the redirect.
func (h *Handler) toLogin(w http.ResponseWriter, r *http.Request) {
	to := "/login"
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		to += "?next=" + url.QueryEscape(r.URL.RequestURI())
	}
	if web.Scripted(r) {
		// The page script keeps the form and says to sign in again.
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(map[string]string{"signin": to})
		return
	}
	web.Redirect(w, r, to)
}

// HoldWrites makes every unsafe request (POST and the like) of the
// signed-in user hold their account's write gate while it runs, so a
// deletion waits for it, and refuses it with 403 once the account's
// deletion has begun (DESIGN.md, account deletion). It must run after
// RequireUser; reads pass straight through.
func (h *Handler) HoldWrites(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			next.ServeHTTP(w, r)
			return
		}
		release, err := h.gate.Enter(user.ID(r.Context()))
		if err != nil {
			h.pages.Error(w, r, &web.Error{Status: http.StatusForbidden, Title: "Account being deleted", Msg: "This account is being deleted, so nothing can be saved to it.", Err: err})
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}

// RequireAdmin refuses non-admins with 403. It must run after RequireUser.
func (h *Handler) RequireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := user.FromContext(r.Context())
		if u == nil || !u.IsAdmin() {
			h.pages.Error(w, r, web.Forbidden("This page is for admins only."))
			return
		}
		next.ServeHTTP(w, r)
	})
}
