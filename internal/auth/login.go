package auth

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"ndiro/internal/invite"
	"ndiro/internal/limit"
	"ndiro/internal/token"
	"ndiro/internal/web"
)

// Login starts the authorization-code flow: it makes a fresh state, nonce
// and PKCE verifier, keeps them in an attempt cookie of their own (never
// in a session: GET /login stores nothing on the server) and redirects to
// the provider. ?next= is where to go afterwards (local paths only);
// ?invite= is an invite to claim. Starts are limited per client address
// (SignInBurst), unknown invites too (invite.MissBurst): 429 with
// Retry-After.
func (h *Handler) Login(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	next, inv := web.LocalPath(q.Get("next")), q.Get("invite")
	signedIn := h.sessions.GetString(r.Context(), keyUserID)
	if inv == "" && signedIn != "" {
		if next == "" {
			next = "/meals"
		}
		web.Redirect(w, r, next)
		return nil
	}
	ip := limit.ClientIP(r, h.proxyHeader)
	if ok, wait := h.signIns.Allow(ip); !ok {
		return web.TooManyRequests(w, wait, "There were too many sign-ins from your address.")
	}
	if inv != "" {
		if err := h.usableInvite(r.Context(), w, ip, inv, signedIn); err != nil {
			return err
		}
	}
	a := attempt{State: token.New(), Nonce: token.New(), Verifier: oauth2.GenerateVerifier(), Next: next, Invite: inv}
	h.attempts.start(w, r, a)
	opts := []oauth2.AuthCodeOption{oidc.Nonce(a.Nonce), oauth2.S256ChallengeOption(a.Verifier)}
	if h.selectAccount {
		opts = append(opts, oauth2.SetAuthURLParam("prompt", "select_account"))
	}
	// A bare 302: http.Redirect would also write a little HTML page with
	// the URL escaped into it, which no browser shows.
	w.Header().Set("Location", h.oauth.AuthCodeURL(a.State, opts...))
	w.WriteHeader(http.StatusFound)
	return nil
}

// usableInvite says at once, not after the provider, if the invite inv
// cannot be used by whoever starts a sign-in from address ip (signedIn
// the session's user ID, "" if none): the invite's page (404, 410, or 403
// for someone signed in who is not its claimer), or 429 once the address
// has tried too many unknown invites.
func (h *Handler) usableInvite(ctx context.Context, w http.ResponseWriter, ip, inv, signedIn string) error {
	if blocked, wait := h.inviteMisses.Blocked(ip); blocked {
		return invite.MissesRefused(w, wait)
	}
	got, err := h.invites.Get(ctx, inv)
	if errors.Is(err, invite.ErrNotFound) {
		h.inviteMisses.Allow(ip)
	}
	if err != nil {
		return invite.RefusalError(err)
	}
	switch got.StateAt(h.now()) {
	case invite.StateRevoked:
		return invite.RefusalError(invite.ErrRevoked)
	case invite.StateExpired:
		return invite.RefusalError(invite.ErrExpired)
	case invite.StateClaimed:
		// Someone signed in who is not the claimer cannot use it. With
		// nobody signed in it may be the claimer, whose sign-up failed
		// after the claim: the claim at the callback decides.
		if signedIn != "" && got.ClaimedBy != signedIn {
			return invite.RefusalError(invite.ErrClaimed)
		}
	}
	return nil
}

// restartLink is the /login that starts attempt a over, with its return
// path and invite.
func restartLink(a attempt) string {
	q := url.Values{}
	if a.Next != "" {
		q.Set("next", a.Next)
	}
	if a.Invite != "" {
		q.Set("invite", a.Invite)
	}
	if len(q) == 0 {
		return "/login"
	}
	return "/login?" + q.Encode()
}
