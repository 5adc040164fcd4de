// Package auth signs people in through an OpenID Connect provider, Google by
// default (authorization-code flow with state, nonce and PKCE), signs up
// invited people and ADMIN_EMAILS, and guards every private page by reading
// the users row on each request.
package auth

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"ndiro/internal/invite"
	"ndiro/internal/limit"
	"ndiro/internal/token"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// keyUserID is the session's one key: the signed-in session holds only
// the user ID. What a sign-in needs until its callback lives in an
// attempt cookie (attempt.go), not in the session.
const keyUserID = "user_id"

// Sign-in starts (GET /login) are rate-limited per client address:
// SignInBurst at once, then one every SignInEvery (20 a minute). A
// household behind one address signing in on a few devices, and a
// person retrying, never notice; a script starting sign-ins in a loop is
// slowed to that.
const (
	SignInBurst = 20
	SignInEvery = 3 * time.Second
	// limitKeys bounds the limiter's memory: addresses tracked at once.
	limitKeys = 10_000
)

// Provider configures the OIDC identity provider: Google or another
// provider (NDIRO_OIDC_ISSUER) in AWS mode, the in-process mock in local
// mode.
type Provider struct {
	// Issuer is the OIDC issuer URL, e.g. "https://accounts.google.com".
	Issuer       string
	ClientID     string
	ClientSecret string
	// RedirectURL is this app's callback, e.g.
	// "https://ndiro.example.org/auth/callback"; it must be registered with
	// the provider.
	RedirectURL string
	// HTTPClient talks to the provider (discovery, keys, token exchange);
	// nil means a client with a 10 s timeout.
	HTTPClient *http.Client
}

// Handler serves sign-in, sign-out and the guards.
type Handler struct {
	oauth    oauth2.Config
	verifier *oidc.IDTokenVerifier
	// provider answers userinfo requests (see Callback).
	provider *oidc.Provider
	issuer   string
	// issRequired is set when the provider promises the iss parameter on
	// every authorization response (RFC 9207); it is then required.
	issRequired bool
	// name is how messages call the provider ("Google").
	name string
	// selectAccount adds prompt=select_account to the authorization
	// request (see wantsSelectAccount).
	selectAccount bool
	httpClient    *http.Client

	sessions *scs.SessionManager
	attempts *attempts
	gate     *user.Gate
	users    *user.Store
	invites  *invite.Store
	pages    *web.Pages
	isAdmin  func(email string) bool
	now      func() time.Time
	log      *slog.Logger

	proxyHeader  string
	signIns      *limit.Limiter // sign-in starts, per client address
	inviteMisses *limit.Limiter // unknown invite tokens, per client address
}

// Deps are the Handler's collaborators.
type Deps struct {
	Sessions *scs.SessionManager
	Users    *user.Store
	Invites  *invite.Store
	Pages    *web.Pages
	// IsAdminEmail reports whether an email may sign up without an invite,
	// as an admin (ADMIN_EMAILS).
	IsAdminEmail func(email string) bool
	// ProviderName is how messages call the provider, e.g. "Google"
	// (NDIRO_OIDC_NAME).
	ProviderName string
	// Gate orders each account's writes against its deletion
	// (HoldWrites).
	Gate *user.Gate
	// Now is the clock of every rule: invite expiry, the sign-in
	// attempt's lifetime, rate limits.
	Now func() time.Time
	Log *slog.Logger
	// SecureCookies marks the sign-in attempt cookies Secure (every mode
	// but local).
	SecureCookies bool
	// TrustedProxyHeader names the header carrying the client address
	// (config.Config.TrustedProxyHeader); "" means the direct peer.
	TrustedProxyHeader string
	// InviteMisses limits unknown invite tokens per client address
	// (invite.NewMissLimiter), shared with the invite landing page.
	InviteMisses *limit.Limiter
}

// NewHandler fetches the provider's discovery document and returns the
// sign-in handlers. It fails if the provider cannot be reached.
func NewHandler(ctx context.Context, p Provider, d Deps) (*Handler, error) {
	hc := p.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	provider, err := oidc.NewProvider(oidc.ClientContext(ctx, hc), p.Issuer)
	if err != nil {
		return nil, fmt.Errorf("auth: discover the sign-in provider %s (check NDIRO_OIDC_ISSUER): %w", p.Issuer, err)
	}
	var disc struct {
		Prompts     []string `json:"prompt_values_supported"`
		IssResponse bool     `json:"authorization_response_iss_parameter_supported"`
	}
	if err := provider.Claims(&disc); err != nil {
		return nil, fmt.Errorf("auth: discovery document of %s: %w", p.Issuer, err)
	}
	att, err := newAttempts(d.SecureCookies, d.Now)
	if err != nil {
		return nil, err
	}
	return &Handler{
		oauth: oauth2.Config{
			ClientID:     p.ClientID,
			ClientSecret: p.ClientSecret,
			Endpoint:     provider.Endpoint(),
			RedirectURL:  p.RedirectURL,
			// profile brings the name claim: the heading share
			// recipients see (user.User.Name).
			Scopes: []string{oidc.ScopeOpenID, "email", "profile"},
		},
		verifier:      provider.Verifier(&oidc.Config{ClientID: p.ClientID}),
		selectAccount: wantsSelectAccount(p.Issuer, disc.Prompts),
		provider:      provider,
		issuer:        p.Issuer,
		issRequired:   disc.IssResponse,
		name:          d.ProviderName,
		httpClient:    hc,
		sessions:      d.Sessions,
		gate:          d.Gate,
		users:         d.Users,
		invites:       d.Invites,
		pages:         d.Pages,
		isAdmin:       d.IsAdminEmail,
		now:           d.Now,
		log:           d.Log,
		attempts:      att,
		proxyHeader:   d.TrustedProxyHeader,
		signIns:       limit.New(limit.Rule{Every: SignInEvery, Burst: SignInBurst, MaxKeys: limitKeys}, d.Now),
		inviteMisses:  d.InviteMisses,
	}, nil
}

// Login starts the authorization-code flow: it makes a fresh state, nonce
// and PKCE verifier, keeps them in an attempt cookie of their own (never
// in a session: GET /login stores nothing on the server) and redirects to
// the provider. ?next= is where to go afterwards (local paths only);
// ?invite= is an invite to claim. Starts are limited per client address
// (SignInBurst), unknown invites too (invite.MissBurst): 429 with
// Retry-After.
func (h *Handler) Login(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	q := r.URL.Query()
	next, inv := web.LocalPath(q.Get("next")), q.Get("invite")
	signedIn := h.sessions.GetString(ctx, keyUserID)
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
		if blocked, wait := h.inviteMisses.Blocked(ip); blocked {
			return invite.MissesRefused(w, wait)
		}
		// Say at once if the invite cannot be used, not after the provider.
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

// googleIssuer is Google's OIDC issuer.
const googleIssuer = "https://accounts.google.com"

// wantsSelectAccount reports whether sign-in should ask the provider at issuer
// to let people pick an account (prompt=select_account), given the
// prompt_values_supported of its discovery document. Google lists none but
// honours it, and people there often have several accounts; other
// providers get it only if they list it, because some (oidc-provider among
// them) refuse the whole authorization request, not just the parameter,
// for a prompt value they do not support.
func wantsSelectAccount(issuer string, supported []string) bool {
	if issuer == googleIssuer {
		return true
	}
	for _, p := range supported {
		if p == "select_account" {
			return true
		}
	}
	return false
}

// claims are the ID token claims sign-in uses.
type claims struct {
	Email         string `json:"email"`
	EmailVerified bool   `json:"email_verified"`
	Name          string `json:"name"`
}

var errRestart = "Start again from the sign-in button. If this keeps happening, make sure cookies are allowed for this site."

// Callback finishes the flow: it takes the attempt cookie named by the
// state (deleting it: one use), refuses an attempt older than
// AttemptLifetime with a page that starts again, checks the iss parameter,
// exchanges the code with the PKCE verifier, verifies the ID token and its
// nonce, requires a verified email (from the ID token, else from the
// userinfo endpoint), then signs in the users row keyed by the token's
// subject, creating it from an invite or ADMIN_EMAILS if it does not exist.
func (h *Handler) Callback(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	q := r.URL.Query()
	// One use: whatever happens next, this attempt's secrets are spent.
	a, aerr := h.attempts.take(w, r, q.Get("state"))
	nonce, verifier, next, inviteTok := a.Nonce, a.Verifier, a.Next, a.Invite

	switch {
	case errors.Is(aerr, errAttemptExpired):
		return &web.Error{Status: http.StatusBadRequest, Title: "Sign-in took too long",
			Msg:  fmt.Sprintf("A sign-in must be finished within %d minutes of starting it, and this one was not. Start again to sign in.", int(AttemptLifetime/time.Minute)),
			Back: restartLink(a), BackText: "Start again"}
	case aerr != nil:
		return &web.Error{Status: http.StatusBadRequest, Title: "Sign-in expired", Msg: "This sign-in attempt does not match this browser, or it was already used. " + errRestart,
			Back: "/login", BackText: "Start again"}
	}
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
	code := q.Get("code")
	if code == "" {
		return web.BadRequest("The sign-in answer had no code. " + errRestart)
	}

	octx := oidc.ClientContext(ctx, h.httpClient)
	tok, err := h.oauth.Exchange(octx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		return &web.Error{Status: http.StatusBadRequest, Title: "Sign-in refused", Msg: h.name + " did not accept this sign-in; the code may have been used already. " + errRestart, Err: err}
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return &web.Error{Status: http.StatusBadGateway, Msg: h.name + " sent no identity token. " + errRestart}
	}
	idt, err := h.verifier.Verify(octx, raw)
	if err != nil {
		return &web.Error{Status: http.StatusBadRequest, Title: "Sign-in refused", Msg: "The identity token could not be verified. " + errRestart, Err: err}
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 || nonce == "" {
		return &web.Error{Status: http.StatusBadRequest, Title: "Sign-in refused", Msg: "The identity token was not issued for this sign-in. " + errRestart, Err: errors.New("nonce mismatch")}
	}
	var c claims
	if err := idt.Claims(&c); err != nil {
		return &web.Error{Status: http.StatusBadRequest, Title: "Sign-in refused", Msg: "The identity token could not be read. " + errRestart, Err: err}
	}
	if c.Email == "" {
		// A provider may return the email scope's claims from its userinfo
		// endpoint only, not in the ID token (OIDC Core 5.4), as
		// oidc-provider does by default; Google puts them in both. So an ID
		// token without an email is not a refusal: ask userinfo.
		ui, err := h.provider.UserInfo(octx, oauth2.StaticTokenSource(tok))
		if err != nil {
			return &web.Error{Status: http.StatusBadGateway, Title: "Sign-in failed", Msg: h.name + " did not tell ndiro your email address. " + errRestart, Err: fmt.Errorf("userinfo: %w", err)}
		}
		// OIDC Core 5.3.2: the userinfo answer counts only for the ID
		// token's subject.
		if ui.Subject != idt.Subject {
			return &web.Error{Status: http.StatusBadRequest, Title: "Sign-in refused", Msg: "The account details did not match the identity token. " + errRestart, Err: errors.New("userinfo sub differs from the ID token's")}
		}
		c = claims{Email: ui.Email, EmailVerified: ui.EmailVerified}
	}
	if !c.EmailVerified || c.Email == "" {
		return &web.Error{Status: http.StatusForbidden, Title: "Email not verified", Msg: "Your email address is not verified at " + h.name + ". Verify it there, then sign in again."}
	}
	email := strings.ToLower(c.Email)
	name, _ := user.CleanName(c.Name) // a name we cannot show is no name

	u, err := h.users.Get(ctx, idt.Subject)
	switch {
	case errors.Is(err, user.ErrNotFound):
		u, err = h.signUp(ctx, idt.Subject, email, name, inviteTok)
	case err == nil:
		h.followProviderName(ctx, u, name)
		if inviteTok != "" && u.InviteToken != inviteTok {
			web.SetFlash(w, "You already have an account, so the invite was not used; it still works for someone else.")
		}
	}
	if err != nil {
		return err
	}
	if u.Deleting() {
		return &web.Error{Status: http.StatusForbidden, Title: "Account being deleted", Msg: "This account is being deleted and can no longer sign in."}
	}
	if u.Disabled() {
		return &web.Error{Status: http.StatusForbidden, Title: "Account disabled", Msg: "An admin has disabled this account, so it cannot sign in. Ask them to enable it again."}
	}
	// A fresh session token at the privilege change (session fixation).
	if err := h.sessions.RenewToken(ctx); err != nil {
		return err
	}
	h.sessions.Put(ctx, keyUserID, u.ID)
	if next == "" {
		next = "/meals"
	}
	web.Redirect(w, r, next)
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

// signUp creates the users row for a first sign-in: from the invite being
// claimed, or as an admin for ADMIN_EMAILS, who need no invite (an invite
// of theirs that cannot be used is left unclaimed); anyone else gets the
// "you need an invite" page, or the invite's refusal. A claim re-run by the same person is a no-op, so a
// sign-up that failed half-way (the claim written, the users row not) is
// finished by the next sign-in, through the invite link or without it:
// a sign-in without an invite looks for one claimed by sub.
func (h *Handler) signUp(ctx context.Context, sub, email, name, inviteTok string) (*user.User, error) {
	u := &user.User{ID: sub, Email: email, Name: name, Role: user.RoleOwner, Status: user.StatusActive, CreatedAt: h.now().UTC()}
	if inviteTok == "" && !h.isAdmin(email) {
		inv, err := h.invites.FindClaimed(ctx, sub)
		switch {
		case err == nil:
			inviteTok = inv.Token
		case !errors.Is(err, invite.ErrNotFound):
			return nil, err
		}
	}
	var claimed *invite.Invite
	if inviteTok != "" {
		inv, err := h.invites.Claim(ctx, inviteTok, sub, email, h.now())
		switch {
		case err == nil:
			claimed = inv
		case h.isAdmin(email) && invite.Refused(err):
			// ADMIN_EMAILS need no invite: one that cannot be used
			// (expired, claimed, revoked, for another address) is left as
			// it is, and they sign up as an admin without it.
		default:
			e := invite.RefusalError(err)
			if we, ok := e.(*web.Error); ok && errors.Is(err, invite.ErrWrongEmail) {
				// The way on is the invite again, to sign in with the
				// account it was sent to, not the start page.
				we.Back, we.BackText = "/invite/"+inviteTok, "Back to the invite"
			}
			return nil, e
		}
	}
	switch {
	case claimed != nil:
		u.Role, u.InviteToken = claimed.Role, claimed.Token
		if h.isAdmin(email) {
			u.Role = user.RoleAdmin
		}
	case h.isAdmin(email):
		u.Role = user.RoleAdmin
	default:
		return nil, &web.Error{Status: http.StatusForbidden, Title: "You need an invite",
			Msg: "ndiro is invite-only. Ask someone who uses it to send you an invite link, then open that link to sign up."}
	}
	err := h.users.Create(ctx, u)
	if errors.Is(err, user.ErrExists) {
		// The same person signing in twice at once: the other request won.
		return h.users.Get(ctx, sub)
	}
	if err != nil {
		return nil, err
	}
	h.log.Info("user signed up", "user_id", u.ID, "role", string(u.Role))
	return u, nil
}

// Logout ends the session.
func (h *Handler) Logout(w http.ResponseWriter, r *http.Request) error {
	if err := h.sessions.Destroy(r.Context()); err != nil {
		return err
	}
	web.Redirect(w, r, "/")
	return nil
}

// SessionUserID returns the user ID in r's session, "" if none. It does
// not check the users row; RequireUser does.
func (h *Handler) SessionUserID(r *http.Request) string {
	return h.sessions.GetString(r.Context(), keyUserID)
}

// SignedIn reports whether r carries a session with a user ID. It does not
// check the users row; RequireUser does.
func (h *Handler) SignedIn(r *http.Request) bool {
	return h.sessions.GetString(r.Context(), keyUserID) != ""
}

// RequireUser is the auth guard: one users-table GetItem per request. No
// session redirects to sign-in (returning here afterwards for GETs); a
// missing, deleting or disabled users row ends the session first.
func (h *Handler) RequireUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		id := h.sessions.GetString(ctx, keyUserID)
		if id == "" {
			h.toLogin(w, r)
			return
		}
		u, err := h.users.Get(ctx, id)
		if err == nil && !u.Active() {
			err = user.ErrNotFound
		}
		if errors.Is(err, user.ErrNotFound) {
			if derr := h.sessions.Destroy(ctx); derr != nil {
				h.pages.Error(w, r, derr)
				return
			}
			h.toLogin(w, r)
			return
		}
		if err != nil {
			h.pages.Error(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(user.WithUser(ctx, u)))
	})
}

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

// SignOut ends the session of the request ctx belongs to (account
// deletion signs the owner out at once).
func (h *Handler) SignOut(ctx context.Context) error { return h.sessions.Destroy(ctx) }

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
