// Package auth signs people in through an OpenID Connect provider, Google by
// default (authorization-code flow with state, nonce and PKCE), signs up
// invited people and ADMIN_EMAILS, and guards every private page by reading
// the users row on each request.
//
// Files by concern: provider.go (discovery), login.go (GET /login),
// callback.go (the provider's answer), signup.go (who may sign up),
// attempt.go (a sign-in under way, in a sealed cookie), session.go (what
// a session holds, logout), codec.go (the session store's encoding),
// guard.go (the guards), home.go (the start page).
package auth

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"ndiro/internal/invite"
	"ndiro/internal/limit"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

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
	moves        SignUpMoves
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
	// Moves moves an account waiting for its owner to the subject that
	// signs in for it (account.Mover); nil matches no account by email.
	Moves SignUpMoves
}

// NewHandler fetches the provider's discovery document and returns the
// sign-in handlers. It fails if the provider cannot be reached.
func NewHandler(ctx context.Context, p Provider, d Deps) (*Handler, error) {
	disc, err := discover(ctx, p)
	if err != nil {
		return nil, err
	}
	att, err := newAttempts(d.SecureCookies, d.Now)
	if err != nil {
		return nil, err
	}
	return &Handler{
		oauth: oauth2.Config{
			ClientID:     p.ClientID,
			ClientSecret: p.ClientSecret,
			Endpoint:     disc.provider.Endpoint(),
			RedirectURL:  p.RedirectURL,
			// profile brings the name claim: the heading share
			// recipients see (user.User.Name).
			Scopes: []string{oidc.ScopeOpenID, "email", "profile"},
		},
		verifier:      disc.provider.Verifier(&oidc.Config{ClientID: p.ClientID}),
		selectAccount: disc.selectAccount,
		provider:      disc.provider,
		issuer:        p.Issuer,
		issRequired:   disc.issRequired,
		name:          d.ProviderName,
		httpClient:    disc.client,
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
		moves:         d.Moves,
	}, nil
}
