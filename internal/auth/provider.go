package auth

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// Provider configures the OIDC identity provider: Google or another
// provider (NDIRO_OIDC_ISSUER) in server and AWS mode, the in-process
// mock in local mode.
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

// discovered is what sign-in takes from the provider's discovery
// document besides its endpoints and keys.
type discovered struct {
	provider *oidc.Provider
	client   *http.Client
	// selectAccount: send prompt=select_account (wantsSelectAccount).
	selectAccount bool
	// issRequired: the provider promises the iss parameter on every
	// authorization response (RFC 9207), which is then required.
	issRequired bool
}

// discover fetches p's discovery document (OIDC Discovery 1.0) with p's
// HTTP client. It fails if the provider cannot be reached or its document
// cannot be read.
func discover(ctx context.Context, p Provider) (discovered, error) {
	hc := p.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	provider, err := oidc.NewProvider(oidc.ClientContext(ctx, hc), p.Issuer)
	if err != nil {
		return discovered{}, fmt.Errorf("auth: discover the sign-in provider %s (check NDIRO_OIDC_ISSUER): %w", p.Issuer, err)
	}
	var doc struct {
		Prompts     []string `json:"prompt_values_supported"`
		IssResponse bool     `json:"authorization_response_iss_parameter_supported"`
	}
	if err := provider.Claims(&doc); err != nil {
		return discovered{}, fmt.Errorf("auth: discovery document of %s: %w", p.Issuer, err)
	}
	return discovered{
		provider:      provider,
		client:        hc,
		selectAccount: wantsSelectAccount(p.Issuer, doc.Prompts),
		issRequired:   doc.IssResponse,
	}, nil
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
	return issuer == googleIssuer || slices.Contains(supported, "select_account")
}
