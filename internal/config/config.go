// Package config reads ndiro's settings from the environment. The zero
// configuration is local mode: every backend in-process, data under ./var.
// Server mode keeps local mode's embedded storage and signs people in
// through a real OpenID Connect provider, for one machine serving others;
// AWS mode uses DynamoDB, S3 and the provider.
package config

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"
)

// Mode says where ndiro keeps its data and who signs people in.
type Mode string

const (
	// ModeLocal runs DynamoDB, S3 and a stand-in sign-in provider
	// in-process (package localenv) and persists them under DataDir.
	ModeLocal Mode = "local"
	// ModeServer runs ndiro on one machine without AWS, serving other
	// devices: local mode's embedded DynamoDB and S3, journaled under
	// DataDir, and sign-in through an OpenID Connect provider as in AWS
	// mode (Google unless NDIRO_OIDC_ISSUER says otherwise), never the
	// stand-in; an https BaseURL (a TLS proxy in front), Secure cookies,
	// HSTS and JSON logs, as in AWS mode (README, On one machine without
	// AWS).
	ModeServer Mode = "server"
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

// DefaultImportMaxBytes is the largest export zip an import takes when
// NDIRO_IMPORT_MAX_BYTES is unset: 8 GiB, years of photos.
const DefaultImportMaxBytes = 8 << 30

// Defaults of the import's staging gate (NDIRO_IMPORT_STAGING_PER_OWNER,
// NDIRO_IMPORT_STAGING_MAX, NDIRO_IMPORT_MIN_BYTES,
// NDIRO_IMPORT_MIN_WINDOW): one upload an owner and four in all in hand
// at once (each holds a part's buffer, 8 MiB, while it arrives and up to
// 64 MiB of heap while it is checked), and an upload that sends less than
// 64 KiB in a minute closed.
const (
	DefaultImportStagingPerOwner = 1
	DefaultImportStagingMax      = 4
	DefaultImportMinBytes        = 64 << 10
	DefaultImportMinWindow       = time.Minute
)

// DefaultQuotaMeals is NDIRO_QUOTA_MEALS when unset: the 50,000 meals
// (more than thirteen years of ten a day) an owner is promised; the
// export of a diary at the quota, a photo a meal, stays well within what
// the import reads (archive.DefaultLimits).
const DefaultQuotaMeals = 50_000

// DefaultQuotaBytes is NDIRO_QUOTA_BYTES when unset: 64 GiB, twice what
// quotaTakesImport asks of the default NDIRO_IMPORT_MAX_BYTES, so the
// largest export the import takes fits an empty account with room to
// spare, and room for the photos of 50,000 meals.
const DefaultQuotaBytes = 64 << 30

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
	// Mode is ModeLocal (in-process backends under DataDir), ModeServer
	// (the same storage, a real provider's sign-in) or ModeAWS
	// (NDIRO_MODE).
	Mode Mode
	// Addr is the host:port the HTTP server listens on (NDIRO_ADDR).
	Addr string
	// DataDir holds the embedded tables and bucket of local and server
	// mode (NDIRO_DATA_DIR); server mode needs it set, as an absolute path.
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
	// ImportMaxBytes is the largest export zip POST /account/import
	// takes, in bytes (NDIRO_IMPORT_MAX_BYTES; DefaultImportMaxBytes).
	ImportMaxBytes int64
	// ImportStagingPerOwner and ImportStagingMax are how many import
	// uploads one owner, and all together, may have in hand (received or
	// checked) at once (NDIRO_IMPORT_STAGING_PER_OWNER,
	// NDIRO_IMPORT_STAGING_MAX).
	ImportStagingPerOwner int
	ImportStagingMax      int
	// ImportMinBytes and ImportMinWindow: an import upload that sends
	// fewer than ImportMinBytes bytes in any ImportMinWindow is closed
	// (NDIRO_IMPORT_MIN_BYTES, NDIRO_IMPORT_MIN_WINDOW).
	ImportMinBytes  int64
	ImportMinWindow time.Duration
	// QuotaMeals and QuotaBytes bound what one account stores (user.Quota):
	// its meals (NDIRO_QUOTA_MEALS; DefaultQuotaMeals) and its photos'
	// bytes, every copy (NDIRO_QUOTA_BYTES; DefaultQuotaBytes).
	QuotaMeals, QuotaBytes int64
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

	// Storage bounds every DynamoDB and S3 call (NDIRO_STORAGE_*).
	Storage Storage
	// OrphanGrace is how old a photo object or a meal's last change must
	// be before the admin monitor's orphan check counts it
	// (NDIRO_ORPHAN_GRACE, default DefaultOrphanGrace): younger ones may
	// be half-way through a write.
	OrphanGrace time.Duration
	// MoveMarkLifetime is how long an account marked as waiting for its
	// owner (on the admin's users page, or by ndiro migrate) can be
	// claimed by a new sign-in, from when it is marked or an admin
	// extends it (NDIRO_MOVE_MARK_DAYS, whole days, default
	// DefaultMoveMarkDays).
	MoveMarkLifetime time.Duration
	// Lease is the one-writer lease of AWS mode (package lease).
	Lease Lease

	// LogLevel is the lowest level of log lines written
	// (NDIRO_LOG_LEVEL: debug, info, warn or error; default info).
	LogLevel slog.Level
	// MetricsAddr is the host:port of the listener that serves
	// Prometheus metrics at /metrics (NDIRO_METRICS_ADDR); "" serves
	// none. It never shares NDIRO_ADDR's port.
	MetricsAddr string
	// Pprof serves Go's profiles under /debug/pprof/ on the metrics
	// listener (NDIRO_PPROF=1); it requires MetricsAddr.
	Pprof bool

	// AWS mode only.
	Region string // AWS_REGION
	Bucket string // NDIRO_BUCKET

	// The sign-in provider of AWS and server mode (local mode signs in
	// through its stand-in instead).
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

// Storage is how long one DynamoDB or S3 call may take and how often it
// is tried (NDIRO_STORAGE_*; package storage applies it to the clients).
// A budget covers the whole call: every attempt, the backoff between
// them and, for GetObject, reading the body. Each attempt gets at most
// the budget divided by Attempts, so a connection that stalls once is
// tried again within the budget.
type Storage struct {
	// Item is the budget of a call on one item or one object's metadata:
	// GetItem, PutItem, UpdateItem, DeleteItem, DescribeTable,
	// HeadObject, HeadBucket, DeleteObject (NDIRO_STORAGE_ITEM_TIMEOUT).
	Item time.Duration
	// Query is the budget of a call on many items or keys: Query, Scan,
	// the batch and transaction calls, ListObjectsV2, DeleteObjects
	// (NDIRO_STORAGE_QUERY_TIMEOUT).
	Query time.Duration
	// Transfer is the budget of a call moving an object's bytes:
	// GetObject (the body read included), PutObject, CopyObject
	// (NDIRO_STORAGE_TRANSFER_TIMEOUT).
	Transfer time.Duration
	// Attempts is how many times a call is tried before it fails, 1 to
	// 10 (NDIRO_STORAGE_ATTEMPTS).
	Attempts int
	// MaxBackoff caps the SDK's exponential backoff with jitter before a
	// retry (NDIRO_STORAGE_MAX_BACKOFF).
	MaxBackoff time.Duration
}

// DefaultStorage is Storage when no NDIRO_STORAGE_ variable is set: a
// stalled DynamoDB fails a point read in 4 s and a month page's Query in
// 10 s, a stalled S3 an upload in 30 s.
var DefaultStorage = Storage{Item: 4 * time.Second, Query: 10 * time.Second, Transfer: 30 * time.Second, Attempts: 3, MaxBackoff: 500 * time.Millisecond}

// Lease is the writer lease's timing (deploy/README.md, one writer).
type Lease struct {
	// TTL is how long the lease's renewal counter must stand still
	// before another process takes it (NDIRO_LEASE_TTL).
	TTL time.Duration
	// Renew is how often the holder renews it (NDIRO_LEASE_RENEW).
	Renew time.Duration
}

// DefaultLease is Lease when no NDIRO_LEASE_ variable is set: renewed
// every 10 s; a crashed holder's lease is taken a minute after it was
// last seen renewed.
var DefaultLease = Lease{TTL: time.Minute, Renew: 10 * time.Second}

// LeaseGuard is how much shorter than NDIRO_LEASE_TTL the holder's write
// window is: the longest storage call budget (a write begun at the end
// of the window lands within it) plus a tenth of the TTL for clocks that
// run at different rates. With the defaults, 36 s: writes pause 24 s
// after the last renewal that succeeded.
func (c Config) LeaseGuard() time.Duration {
	s := c.Storage
	return max(s.Item, s.Query, s.Transfer) + c.Lease.TTL/10
}

// DefaultOrphanGrace is NDIRO_ORPHAN_GRACE when unset: an hour, far
// longer than any write takes.
const DefaultOrphanGrace = time.Hour

// Load reads the configuration through getenv (os.Getenv in production, a
// map in tests): each row of options in turn, then the rules across them.
// It returns one error listing every problem, each naming its variable:
// a value that is malformed, or missing in server or AWS mode.
func Load(getenv func(string) string) (Config, error) {
	get := func(key string) string { return strings.TrimSpace(getenv(key)) }
	var c Config
	var problems []string
	add := func(err error) {
		if err == nil {
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				problems = append(problems, e.Error())
			}
			return
		}
		problems = append(problems, err.Error())
	}
	for _, o := range options {
		v := get(o.env)
		if v == "" {
			v = o.def
		}
		add(o.parse(&c, v))
	}
	for _, r := range rules {
		add(r(&c, get))
	}
	if len(problems) > 0 {
		return Config{}, fmt.Errorf("config: %s", strings.Join(problems, "; "))
	}
	return c, nil
}

// Production reports whether ndiro serves other devices, in server or
// AWS mode: then cookies are Secure, responses carry HSTS, logs are JSON
// lines, and people sign in through the configured provider. Local mode,
// for the machine it runs on, is the one that is not.
func (c Config) Production() bool { return c.Mode != ModeLocal }

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
