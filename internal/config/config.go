// Package config reads ndiro's settings from the environment. The zero
// configuration is local mode: every backend in-process, data under ./var.
package config

import (
	"fmt"
	"net"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"ndiro/internal/email"
)

// Mode says where ndiro keeps its data and who signs people in.
type Mode string

const (
	// ModeLocal runs DynamoDB, S3 and a stand-in sign-in provider
	// in-process (package localenv) and persists them under DataDir.
	ModeLocal Mode = "local"
	// ModeAWS uses real DynamoDB tables, an S3 bucket and an OpenID Connect
	// provider (Google unless NDIRO_OIDC_ISSUER says otherwise).
	ModeAWS Mode = "aws"
)

// DefaultOIDCIssuer is the sign-in provider when NDIRO_OIDC_ISSUER is
// unset: Google.
const DefaultOIDCIssuer = "https://accounts.google.com"

// DefaultOIDCName is the provider's name on pages ("Sign in with Google")
// when NDIRO_OIDC_NAME is unset.
const DefaultOIDCName = "Google"

// DefaultPhotoCacheBytes is the photo cache budget when
// NDIRO_PHOTO_CACHE_BYTES is unset: 64 MiB (DESIGN.md, photos).
const DefaultPhotoCacheBytes = 64 << 20

// MaxPhotoCacheBytes is the largest NDIRO_PHOTO_CACHE_BYTES accepted: 1 TiB,
// far above any machine ndiro runs on, and low enough that the soft memory
// limit derived from it (budget + 64 MB) cannot overflow.
const MaxPhotoCacheBytes = 1 << 40

// Config is every setting ndiro reads at start. Load fills it; the zero
// value is not usable.
type Config struct {
	// Mode is ModeLocal (in-process backends under DataDir) or ModeAWS
	// (NDIRO_MODE).
	Mode Mode
	// Addr is the host:port the HTTP server listens on (NDIRO_ADDR).
	Addr string
	// DataDir holds local mode's persisted tables and bucket (NDIRO_DATA_DIR).
	DataDir string
	// TablePrefix is prepended to the four table names (NDIRO_TABLE_PREFIX).
	TablePrefix string
	// BaseURL is the public origin, e.g. "https://ndiro.example.org", with no
	// trailing slash (NDIRO_BASE_URL). Local mode derives it from Addr.
	BaseURL string
	// PhotoCacheBytes is the in-process photo cache budget in bytes; 0
	// disables the cache (NDIRO_PHOTO_CACHE_BYTES).
	PhotoCacheBytes int64
	// DecodeBudget is how many bytes photo decodes in progress may hold
	// together (NDIRO_DECODE_BUDGET_BYTES); 0 means the pipeline's default
	// (photo.DefaultBudget, 160 MiB).
	DecodeBudget int64
	// UploadWait is the longest an upload waits for its share of the
	// decode budget before a 503 (NDIRO_UPLOAD_WAIT, e.g. "30s"); 0 means
	// the pipeline's default (photo.DefaultWait).
	UploadWait time.Duration
	// AdminEmails may sign up without an invite and become admins
	// (ADMIN_EMAILS, comma-separated, compared lower-cased).
	AdminEmails []string
	// TrustedProxyHeader names the request header in which a reverse proxy
	// in front of ndiro passes the client's address, in canonical form
	// (e.g. "X-Forwarded-For"); "" means the direct peer is the client
	// (NDIRO_TRUSTED_PROXY_HEADER). Rate limits key on that address, so
	// set it only when every request passes through that proxy.
	TrustedProxyHeader string

	// OIDCName is the sign-in provider's name as pages show it, e.g. "Sign
	// in with Google" (NDIRO_OIDC_NAME, default DefaultOIDCName). Local mode
	// shows it too, on the buttons that lead to its stand-in.
	OIDCName string

	// Demo fills an empty local ndiro with a demo owner's six weeks of
	// meals and a share link at start (NDIRO_DEMO=1; local mode only).
	Demo bool

	// AWS mode only.
	Region string // AWS_REGION
	Bucket string // NDIRO_BUCKET
	// OIDCIssuer is the OpenID Connect issuer URL, exactly as the
	// provider's discovery document states it, trailing slash included
	// (NDIRO_OIDC_ISSUER, default DefaultOIDCIssuer). It must be https,
	// except on a loopback host (tests).
	OIDCIssuer string
	// OIDCClientID and OIDCClientSecret are the app's client at the
	// provider: NDIRO_OIDC_CLIENT_ID and NDIRO_OIDC_CLIENT_SECRET, or, when
	// neither of those is set, GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET.
	// The pair is taken whole from one set of names, never mixed.
	OIDCClientID     string
	OIDCClientSecret string
}

// Load reads the configuration through getenv (os.Getenv in production, a
// map in tests). It returns an error naming the variable for every value
// that is malformed, or missing in AWS mode.
func Load(getenv func(string) string) (Config, error) {
	get := func(key, def string) string {
		if v := strings.TrimSpace(getenv(key)); v != "" {
			return v
		}
		return def
	}
	c := Config{
		Mode:        Mode(get("NDIRO_MODE", string(ModeLocal))),
		Addr:        get("NDIRO_ADDR", "127.0.0.1:8080"),
		DataDir:     get("NDIRO_DATA_DIR", "./var"),
		TablePrefix: get("NDIRO_TABLE_PREFIX", "ndiro-"),
		BaseURL:     strings.TrimRight(get("NDIRO_BASE_URL", ""), "/"),
		Region:      get("AWS_REGION", ""),
		Bucket:      get("NDIRO_BUCKET", ""),
		OIDCIssuer:  get("NDIRO_OIDC_ISSUER", DefaultOIDCIssuer),
		OIDCName:    get("NDIRO_OIDC_NAME", DefaultOIDCName),
	}
	// The NDIRO_OIDC_ names win over the Google ones; a pair is never mixed
	// from both, which would fail only at the first sign-in.
	idVar, secretVar := "NDIRO_OIDC_CLIENT_ID", "NDIRO_OIDC_CLIENT_SECRET"
	c.OIDCClientID, c.OIDCClientSecret = get(idVar, ""), get(secretVar, "")
	if c.OIDCClientID == "" && c.OIDCClientSecret == "" {
		idVar, secretVar = "GOOGLE_CLIENT_ID", "GOOGLE_CLIENT_SECRET"
		c.OIDCClientID, c.OIDCClientSecret = get(idVar, ""), get(secretVar, "")
	}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	switch c.Mode {
	case ModeLocal, ModeAWS:
	default:
		bad("NDIRO_MODE must be %q or %q, not %q", ModeLocal, ModeAWS, c.Mode)
	}
	if _, port, err := net.SplitHostPort(c.Addr); err != nil {
		bad("NDIRO_ADDR must be host:port like 127.0.0.1:8080: %v", err)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		bad("NDIRO_ADDR port must be a number from 0 to 65535, not %q", port)
	}
	if !validPrefix(c.TablePrefix) {
		bad("NDIRO_TABLE_PREFIX may hold only letters, digits, '-', '_' and '.', at most 200 characters, not %q", c.TablePrefix)
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Opaque != "" ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.HasSuffix(c.BaseURL, "#") {
			bad("NDIRO_BASE_URL must be an origin like https://ndiro.example.org, not %q", c.BaseURL)
		}
	}

	if !validIssuer(c.OIDCIssuer) {
		bad("NDIRO_OIDC_ISSUER must be an https URL like %s, with no query (plain http only on a loopback host), not %q", DefaultOIDCIssuer, c.OIDCIssuer)
	}
	if n := utf8.RuneCountInString(c.OIDCName); n > 40 || strings.IndexFunc(c.OIDCName, unicode.IsControl) >= 0 {
		bad("NDIRO_OIDC_NAME must be at most 40 characters on one line, like \"Google\" or \"Keycloak\", not %q", c.OIDCName)
	}

	c.PhotoCacheBytes = DefaultPhotoCacheBytes
	if v := get("NDIRO_PHOTO_CACHE_BYTES", ""); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > MaxPhotoCacheBytes {
			bad("NDIRO_PHOTO_CACHE_BYTES must be a whole number of bytes from 0 to %d (1 TiB), not %q", int64(MaxPhotoCacheBytes), v)
		}
		c.PhotoCacheBytes = n
	}

	if v := get("NDIRO_DECODE_BUDGET_BYTES", ""); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 16<<20 {
			bad("NDIRO_DECODE_BUDGET_BYTES must be a whole number of bytes, at least 16777216 (16 MiB), not %q", v)
		}
		c.DecodeBudget = n
	}
	if v := get("NDIRO_UPLOAD_WAIT", ""); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			bad("NDIRO_UPLOAD_WAIT must be a duration like 30s, not %q", v)
		}
		c.UploadWait = d
	}

	if h := get("NDIRO_TRUSTED_PROXY_HEADER", ""); h != "" {
		switch canon := textproto.CanonicalMIMEHeaderKey(h); {
		case !validHeaderName(h):
			bad("NDIRO_TRUSTED_PROXY_HEADER must be a header name like X-Forwarded-For, not %q", h)
		case canon == "Forwarded":
			bad("NDIRO_TRUSTED_PROXY_HEADER: the Forwarded header's for= syntax is not supported; have the proxy set X-Forwarded-For or X-Real-IP")
		case canon == "Host" || canon == "Cookie" || canon == "Authorization" || canon == "User-Agent" || canon == "Referer":
			bad("NDIRO_TRUSTED_PROXY_HEADER cannot be %s, which no proxy uses for the client address", canon)
		default:
			c.TrustedProxyHeader = canon
		}
	}

	switch v := get("NDIRO_DEMO", ""); {
	case v == "" || v == "0":
	case v != "1":
		bad("NDIRO_DEMO must be 1 (or unset), not %q", v)
	case c.Mode != ModeLocal:
		bad("NDIRO_DEMO works only in local mode (NDIRO_MODE=local)")
	default:
		c.Demo = true
	}

	admins := get("ADMIN_EMAILS", "")
	if admins == "" && c.Mode == ModeLocal {
		admins = "admin@example.com"
	}
	invalidAdmin := false
	for _, e := range strings.Split(admins, ",") {
		e = email.Normalize(e)
		if e == "" {
			continue
		}
		if !email.Valid(e) {
			invalidAdmin = true
			bad("ADMIN_EMAILS holds %q, which is not an email address", e)
			continue
		}
		c.AdminEmails = append(c.AdminEmails, e)
	}

	if c.Mode == ModeLocal && len(c.AdminEmails) == 0 && !invalidAdmin {
		bad("ADMIN_EMAILS holds no email address (%q); give at least one, like admin@example.com, or leave it unset in local mode", admins)
	}

	if c.Mode == ModeAWS {
		if c.OIDCClientID == "" && c.OIDCClientSecret == "" {
			bad("NDIRO_OIDC_CLIENT_ID and NDIRO_OIDC_CLIENT_SECRET (or GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET) are required when NDIRO_MODE=aws")
		} else if c.OIDCClientID == "" {
			bad("%s is required when %s is set", idVar, secretVar)
		} else if c.OIDCClientSecret == "" {
			bad("%s is required when %s is set", secretVar, idVar)
		}
		for _, req := range []struct{ key, val string }{
			{"AWS_REGION", c.Region},
			{"NDIRO_BUCKET", c.Bucket},
			{"NDIRO_BASE_URL", c.BaseURL},
			{"ADMIN_EMAILS", strings.Join(c.AdminEmails, ",")},
		} {
			if req.val == "" {
				bad("%s is required when NDIRO_MODE=aws", req.key)
			}
		}
		if strings.HasPrefix(c.BaseURL, "http://") {
			bad("NDIRO_BASE_URL must use https when NDIRO_MODE=aws, not %q", c.BaseURL)
		}
	}
	if len(problems) > 0 {
		return Config{}, fmt.Errorf("config: %s", strings.Join(problems, "; "))
	}
	return c, nil
}

// IsAdminEmail reports whether email (any case) is listed in ADMIN_EMAILS.
func (c Config) IsAdminEmail(email string) bool {
	email = strings.ToLower(email)
	for _, a := range c.AdminEmails {
		if a == email {
			return true
		}
	}
	return false
}

// validIssuer reports whether s can be an OIDC issuer: an absolute https
// URL with no query or fragment (OpenID Connect Discovery 1.0, section 2),
// or plain http on a loopback host, which only a test provider uses.
func validIssuer(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		h := u.Hostname()
		ip := net.ParseIP(h)
		return h == "localhost" || (ip != nil && ip.IsLoopback())
	}
	return false
}

// validHeaderName reports whether h is an HTTP header name: 1 to 64
// letters, digits and '-' (RFC 9110 allows more; no proxy uses it).
func validHeaderName(h string) bool {
	if len(h) == 0 || len(h) > 64 {
		return false
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// validPrefix reports whether p can start a DynamoDB table name: at most
// 200 characters (a table name is at most 255, and ndiro adds its own
// suffix), each from [a-zA-Z0-9_.-]. The empty prefix is valid.
func validPrefix(p string) bool {
	if len(p) > 200 {
		return false
	}
	for _, r := range p {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
		default:
			return false
		}
	}
	return true
}
