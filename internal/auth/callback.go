package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"ndiro/internal/storage"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// claims are the ID token claims sign-in uses.
type claims struct {
	Email         string `json:"email"`
	EmailVerified bool   `json:"email_verified"`
	Name          string `json:"name"`
}

const errRestart = "Start again from the sign-in button. If this keeps happening, make sure cookies are allowed for this site."

// Callback finishes the flow: it takes the attempt cookie named by the
// state (deleting it: one use), refuses an attempt older than
// AttemptLifetime with a page that starts again, checks the iss parameter,
// exchanges the code with the PKCE verifier, verifies the ID token and its
// nonce, requires a verified email (from the ID token, else from the
// userinfo endpoint), then signs in the users row keyed by the token's
// subject, creating it from an invite or ADMIN_EMAILS if it does not exist
// (SignUp). Each refusal is a page saying what happened and how to go on.
func (h *Handler) Callback(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	// One use: whatever happens next, this attempt's secrets are spent.
	a, err := h.attempts.take(w, r, q.Get("state"))
	if err != nil {
		return attemptPage(err, a)
	}
	if err := h.checkAnswer(q); err != nil {
		return err
	}
	n, err := h.identify(r.Context(), q.Get("code"), a)
	if err != nil {
		return err
	}
	if err := user.CheckSubject(n.Sub); err != nil {
		return &web.Error{Status: http.StatusForbidden, Title: "Account not usable here",
			Msg: h.name + " names your account with an ID ndiro cannot keep (it must be 1 to 255 printable ASCII characters, not starting with “" + user.ReservedPrefix + "”). Tell whoever runs this site.",
			Err: err}
	}
	u, err := h.account(r.Context(), w, n, a.Invite)
	if err != nil {
		return err
	}
	if err := signInRefusal(u); err != nil {
		return err
	}
	if err := h.startSession(w, r, u.ID); err != nil {
		return err
	}
	next := a.Next
	if next == "" {
		next = "/meals"
	}
	web.Redirect(w, r, next)
	return nil
}

// startSession signs r's browser in as uid: a fresh session token at the
// privilege change (session fixation), committed at once with the device
// the request comes from (user.SignIn), so that a session storage
// cannot keep is a page saying so, not a sign-in that silently fails.
// On any failure the session is dropped (no cookie is set).
func (h *Handler) startSession(w http.ResponseWriter, r *http.Request, uid string) error {
	ctx := r.Context()
	if err := h.sessions.RenewToken(ctx); err != nil {
		return err
	}
	h.sessions.Put(ctx, keyUserID, uid)
	_, _, err := h.sessions.Commit(user.SignIn(ctx, user.ParseDevice(r.UserAgent())))
	if err == nil {
		return nil
	}
	if derr := h.sessions.Destroy(ctx); derr != nil {
		h.log.Warn("session not dropped after a failed sign-in", "user_id", uid, "err", derr)
	}
	switch {
	case errors.Is(err, user.ErrState), errors.Is(err, user.ErrNotFound):
		return &web.Error{Status: http.StatusForbidden, Title: "Account cannot sign in", Msg: "This account was disabled or is being deleted while signing in, so it cannot sign in.", Err: err}
	case storage.Refused(err) != nil:
		return web.SignInRefused(w, err)
	}
	return err
}

// attemptPage is the page for an attempt attempts.take refused: expired
// (a, its content, starts it again) or not from this browser.
func attemptPage(err error, a attempt) error {
	if errors.Is(err, errAttemptExpired) {
		return &web.Error{Status: http.StatusBadRequest, Title: "Sign-in took too long",
			Msg:  fmt.Sprintf("A sign-in must be finished within %d minutes of starting it, and this one was not. Start again to sign in.", int(AttemptLifetime/time.Minute)),
			Back: restartLink(a), BackText: "Start again"}
	}
	return &web.Error{Status: http.StatusBadRequest, Title: "Sign-in expired", Msg: "This sign-in attempt does not match this browser, or it was already used. " + errRestart,
		Back: "/login", BackText: "Start again"}
}

// checkAnswer refuses an authorization response q that carries an error,
// names another issuer than ours, or has no code.
func (h *Handler) checkAnswer(q url.Values) error {
	if e := q.Get("error"); e != "" {
		if e == "access_denied" {
			return &web.Error{Status: http.StatusUnauthorized, Title: "Sign-in cancelled", Msg: "Sign-in was cancelled at " + h.name + ". " + errRestart, Err: fmt.Errorf("provider error %.40q", e)}
		}
		// Anything else is the provider refusing the request itself: a
		// setting to fix on one side or the other, so a 5xx, logged as an
		// error with the provider's code.
		return &web.Error{Status: http.StatusBadGateway, Title: "Sign-in failed",
			Msg: h.name + " could not sign you in. Try again in a moment; if it keeps happening, tell whoever runs this site.",
			Err: fmt.Errorf("provider error %.40q: %.200q", e, q.Get("error_description"))}
	}
	// RFC 9207: the answer must name the provider the request went to (a
	// mix-up attack swaps in another provider's code).
	if iss := q.Get("iss"); iss != h.issuer && (iss != "" || h.issRequired) {
		return &web.Error{Status: http.StatusBadRequest, Title: "Sign-in refused", Msg: "The sign-in answer did not come from " + h.name + ". " + errRestart, Err: fmt.Errorf("iss parameter %.80q, want %s", iss, h.issuer)}
	}
	if q.Get("code") == "" {
		return web.BadRequest("The sign-in answer had no code. " + errRestart)
	}
	return nil
}

// refused is the 400 "Sign-in refused" page with msg, then errRestart.
func refused(msg string, err error) error {
	return &web.Error{Status: http.StatusBadRequest, Title: "Sign-in refused", Msg: msg + " " + errRestart, Err: err}
}

// identify exchanges code with attempt a's PKCE verifier and returns who
// the verified ID token, issued for a's nonce, names, with a verified
// email: from the token, or else from the userinfo endpoint.
func (h *Handler) identify(ctx context.Context, code string, a attempt) (Newcomer, error) {
	octx := oidc.ClientContext(ctx, h.httpClient)
	tok, err := h.oauth.Exchange(octx, code, oauth2.VerifierOption(a.Verifier))
	if err != nil {
		return Newcomer{}, refused(h.name+" did not accept this sign-in; the code may have been used already.", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Newcomer{}, &web.Error{Status: http.StatusBadGateway, Msg: h.name + " sent no identity token. " + errRestart}
	}
	idt, err := h.verifier.Verify(octx, raw)
	if err != nil {
		return Newcomer{}, refused("The identity token could not be verified.", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(a.Nonce)) != 1 || a.Nonce == "" {
		return Newcomer{}, refused("The identity token was not issued for this sign-in.", errors.New("nonce mismatch"))
	}
	var c claims
	if err := idt.Claims(&c); err != nil {
		return Newcomer{}, refused("The identity token could not be read.", err)
	}
	if c.Email == "" {
		if c, err = h.userinfo(octx, tok, idt.Subject); err != nil {
			return Newcomer{}, err
		}
	}
	if !c.EmailVerified || c.Email == "" {
		return Newcomer{}, &web.Error{Status: http.StatusForbidden, Title: "Email not verified", Msg: "Your email address is not verified at " + h.name + ". Verify it there, then sign in again."}
	}
	name, _ := user.CleanName(c.Name) // a name we cannot show is no name
	return Newcomer{Sub: idt.Subject, Email: strings.ToLower(c.Email), Name: name, EmailVerified: c.EmailVerified, Issuer: idt.Issuer}, nil
}

// userinfo reads the email claims of sub from the provider's userinfo
// endpoint. A provider may return the email scope's claims from there
// only, not in the ID token (OIDC Core 5.4), as oidc-provider does by
// default; Google puts them in both. So an ID token without an email is
// not a refusal.
func (h *Handler) userinfo(ctx context.Context, tok *oauth2.Token, sub string) (claims, error) {
	ui, err := h.provider.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		return claims{}, &web.Error{Status: http.StatusBadGateway, Title: "Sign-in failed", Msg: h.name + " did not tell ndiro your email address. " + errRestart, Err: fmt.Errorf("userinfo: %w", err)}
	}
	// OIDC Core 5.3.2: the userinfo answer counts only for the ID
	// token's subject.
	if ui.Subject != sub {
		return claims{}, refused("The account details did not match the identity token.", errors.New("userinfo sub differs from the ID token's"))
	}
	return claims{Email: ui.Email, EmailVerified: ui.EmailVerified}, nil
}

// account returns n's users row, signing them up (SignUp) if they have
// none, with the invite inviteTok the sign-in came with ("" for none). An
// existing account keeps its row; the invite is then left for someone
// else, and a flash message says so. A mark ndiro migrate left on that
// row ends here (user.Store.ClearMigrateMark): its own subject signing in
// is the owner it waited for, and a mark left in place would let a later
// subject with the same email take the account. A failure to clear it
// fails the sign-in.
func (h *Handler) account(ctx context.Context, w http.ResponseWriter, n Newcomer, inviteTok string) (*user.User, error) {
	u, err := h.users.Get(ctx, n.Sub)
	if errors.Is(err, user.ErrNotFound) {
		u, created, err := SignUp(ctx, SignUpDeps{Users: h.users, Invites: h.invites, IsAdminEmail: h.isAdmin, Moves: h.moves, Now: h.now()}, n, inviteTok)
		if err != nil {
			return nil, signUpPage(err, inviteTok)
		}
		if created && !u.Moving() {
			h.log.Info("user signed up", "user_id", u.ID, "role", string(u.Role))
		}
		return u, nil
	}
	if err != nil {
		return nil, err
	}
	if u.MarkedByMigrate() {
		if err := h.users.ClearMigrateMark(ctx, u.ID); err != nil {
			return nil, err
		}
		h.log.Info("mark of ndiro migrate cleared at its owner's sign-in", "user_id", u.ID)
	}
	h.followProviderName(ctx, u, n.Name)
	if inviteTok != "" && u.InviteToken != inviteTok {
		web.SetFlash(w, "You already have an account, so the invite was not used; it still works for someone else.")
	}
	return u, nil
}

// signInRefusal is the page for an account that may not sign in (being
// deleted, disabled by an admin, or the old row of a move), nil for one
// that may. The new row of a move signs in: the guard shows it the
// moving page until the move is done.
func signInRefusal(u *user.User) error {
	switch {
	case u.Moving() && u.MoveFrom == "":
		return &web.Error{Status: http.StatusForbidden, Title: "Account moved", Msg: "This account is moving to a new sign-in, so it can no longer sign in this way. Sign in with the new one to reach it."}
	case u.Deleting():
		return &web.Error{Status: http.StatusForbidden, Title: "Account being deleted", Msg: "This account is being deleted and can no longer sign in."}
	case u.Disabled():
		return &web.Error{Status: http.StatusForbidden, Title: "Account disabled", Msg: "An admin has disabled this account, so it cannot sign in. Ask them to enable it again."}
	}
	return nil
}

// followProviderName brings u's display name up to date with the
// provider's, unless the owner chose one on the account page; a provider
// that sends no name leaves the last one. A failure does not stop the
// sign-in: the name is cosmetic.
func (h *Handler) followProviderName(ctx context.Context, u *user.User, name string) {
	if u.NameSet || u.Name == name || name == "" {
		return
	}
	err := h.users.SetProviderName(ctx, u.ID, name)
	switch {
	case err == nil:
		u.Name = name
	case errors.Is(err, user.ErrNameChosen), errors.Is(err, user.ErrNotFound):
	default:
		h.log.Warn("could not update display name", "user_id", u.ID, "err", err)
	}
}
