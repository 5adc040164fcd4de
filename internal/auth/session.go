package auth

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/alexedwards/scs/v2"

	"ndiro/internal/user"
	"ndiro/internal/web"
)

// keyUserID is the session's one key: the signed-in session holds only
// the user ID. What a sign-in needs until its callback lives in an
// attempt cookie (attempt.go), not in the session.
const keyUserID = "user_id"

// SessionUserID returns the user ID in r's session, "" if none. It does
// not check the users row; the guards do.
func (h *Handler) SessionUserID(r *http.Request) string {
	return h.sessions.GetString(r.Context(), keyUserID)
}

// SignedIn reports whether r carries a session with a user ID. It does not
// check the users row; the guards do.
func (h *Handler) SignedIn(r *http.Request) bool {
	return h.SessionUserID(r) != ""
}

// Logout ends the session: it is deleted from the store, so its cookie,
// sent again (a copy kept somewhere), finds no session.
func (h *Handler) Logout(w http.ResponseWriter, r *http.Request) error {
	if err := h.sessions.Destroy(r.Context()); err != nil {
		return err
	}
	// What this device kept of the account goes with the session: the
	// HTTP cache always; site storage too (the service worker's page
	// caches, the offline outbox) once the page script says the outbox is
	// empty, having asked first when meals were waiting (static/outbox.js).
	if r.PostFormValue(OutboxField) == OutboxEmpty {
		w.Header().Set("Clear-Site-Data", web.ClearCacheAndStorage)
	} else {
		w.Header().Set("Clear-Site-Data", web.ClearCache)
	}
	web.Redirect(w, r, "/")
	return nil
}

// OutboxField is the sign-out form's field the page script sets to
// OutboxEmpty once no meal waits in this device's offline outbox (or the
// person chose to discard them): only then does Logout clear storage.
const (
	OutboxField = "outbox"
	OutboxEmpty = "empty"
)

// SignOut ends the session of the request ctx belongs to (account
// deletion signs the owner out at once).
func (h *Handler) SignOut(ctx context.Context) error { return h.sessions.Destroy(ctx) }

// session is how a guard reaches the request's session: through the
// session manager, which loaded it into ctx (scs LoadAndSave ran before
// the guard), or, on a route without the manager (stored), straight from
// the session store under tok, the session cookie's value.
type session struct {
	sm     *scs.SessionManager
	ctx    context.Context
	stored bool
	tok    string
}

// loadedSession is the session the session manager loaded into ctx.
func loadedSession(ctx context.Context, sm *scs.SessionManager) session {
	return session{sm: sm, ctx: ctx}
}

// storedSession is the session r's cookie names, read from the store: no
// session is loaded into the request, none is saved, no cookie is set.
// The session manager must not hash tokens in its store (Build leaves
// HashTokenInStore off).
func storedSession(sm *scs.SessionManager, r *http.Request) session {
	return session{sm: sm, ctx: r.Context(), stored: true, tok: cookieValue(r, sm.Cookie.Name)}
}

// userID returns the signed-in user ID s holds, "" if none (no cookie, no
// such session, or a session of a sign-out). A stored session is read
// from its encoded bytes (sessionUserID), without decoding it; if its
// store reads the users row along with it (accountStore), acct is that
// row's state, which the guard then takes instead of reading the row
// again. acct.UserID is "" when the caller must read the row itself.
func (s session) userID() (id string, acct user.Account, err error) {
	if !s.stored {
		return s.sm.GetString(s.ctx, keyUserID), user.Account{}, nil
	}
	if s.tok == "" {
		return "", user.Account{}, nil
	}
	var b []byte
	var found bool
	if as, ok := s.sm.Store.(accountStore); ok {
		b, acct, found, err = as.FindAccount(s.ctx, s.tok)
	} else {
		b, found, err = s.sm.Store.Find(s.tok)
	}
	if err != nil {
		return "", user.Account{}, fmt.Errorf("auth: session store: %w", err)
	}
	if !found {
		return "", user.Account{}, nil
	}
	if acct.UserID != "" && string(sessionUserIDBytes(b)) == acct.UserID {
		return acct.UserID, acct, nil // the row's ID: no copy of the bytes
	}
	return sessionUserID(b), acct, nil
}

// accountStore is a session store that reads the users row a session
// lives on with the session (user.Sessions.FindAccount), so the photo
// guard reads the row once.
type accountStore interface {
	FindAccount(ctx context.Context, token string) ([]byte, user.Account, bool, error)
}

// sent reports whether r carried a session cookie s was read from.
func (s session) sent(r *http.Request) bool {
	if s.stored {
		return s.tok != ""
	}
	return cookieValue(r, s.sm.Cookie.Name) != ""
}

// end ends s: Destroy through the manager (the response deletes the
// cookie), or a delete from the store (no cookie is written; the next
// page finds no session under it).
func (s session) end() error {
	if !s.stored {
		return s.sm.Destroy(s.ctx)
	}
	if err := s.sm.Store.Delete(s.tok); err != nil {
		return fmt.Errorf("auth: session store: %w", err)
	}
	return nil
}

// cookieValue returns the value of the first cookie called name in r's
// Cookie headers, "" if none, quotes around it removed: what
// (*http.Request).Cookie returns for a session token (FuzzCookieValue),
// without its checks of every character, which a token looked up in the
// session store does not need. It is kept for the owner-photo guard
// because Cookie parses into a slice of new *http.Cookie, 2 allocations
// and 208 B a request, which took BenchmarkOwnerPhoto's x-bare from 0.29
// to 0.26 (thumbnail, 304) and from 0.30 to 0.27 (display, 304), medians
// of 5 interleaved runs on 2 shared cores.
func cookieValue(r *http.Request, name string) string {
	for _, line := range r.Header["Cookie"] {
		for line != "" {
			var part string
			part, line, _ = strings.Cut(line, ";")
			part = strings.TrimSpace(part)
			k, v, ok := strings.Cut(part, "=")
			if !ok || strings.TrimSpace(k) != name {
				continue
			}
			if len(v) > 1 && v[0] == '"' && v[len(v)-1] == '"' {
				v = v[1 : len(v)-1]
			}
			return v
		}
	}
	return ""
}
