package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/textproto"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"ndiro/internal/email"
)

// option is one environment variable: its name, the value it has when
// unset or blank, and the function that checks a value and stores it in
// a Config. Parse functions see the value with surrounding spaces
// trimmed, and the Config as filled by the options above them in the
// table (so NDIRO_MODE comes first). An error names the variable and
// says what a good value looks like; several problems with one value
// are joined (errors.Join) and reported one by one.
type option struct {
	env   string
	def   string
	parse func(c *Config, v string) error
}

// options is every single-variable setting, in the order Load reads
// them. A new setting is a row here, a parse function below (with its
// test in options_test.go) and a row in README.md's settings table
// (TestREADMEListsEveryOption).
var options = []option{
	{"NDIRO_MODE", string(ModeLocal), parseMode},
	{"NDIRO_ADDR", "127.0.0.1:8080", parseAddr},
	{"NDIRO_DATA_DIR", "./var", parseDataDir},
	{"NDIRO_TABLE_PREFIX", "ndiro-", parseTablePrefix},
	{"NDIRO_BASE_URL", "", parseBaseURL},
	{"AWS_REGION", "", parseRegion},
	{"NDIRO_BUCKET", "", parseBucket},
	{"NDIRO_OIDC_ISSUER", DefaultOIDCIssuer, parseOIDCIssuer},
	{"NDIRO_OIDC_NAME", DefaultOIDCName, parseOIDCName},
	{"NDIRO_PHOTO_CACHE_BYTES", strconv.Itoa(DefaultPhotoCacheBytes), parsePhotoCacheBytes},
	{"NDIRO_DECODE_BUDGET_BYTES", "", parseDecodeBudget},
	{"NDIRO_UPLOAD_WAIT", "", parseUploadWait},
	{"NDIRO_IMPORT_MAX_BYTES", strconv.FormatInt(DefaultImportMaxBytes, 10), parseImportMaxBytes},
	{"NDIRO_IMPORT_STAGING_PER_OWNER", strconv.Itoa(DefaultImportStagingPerOwner), parseImportStagingPerOwner},
	{"NDIRO_IMPORT_STAGING_MAX", strconv.Itoa(DefaultImportStagingMax), parseImportStagingMax},
	{"NDIRO_IMPORT_MIN_BYTES", strconv.Itoa(DefaultImportMinBytes), parseImportMinBytes},
	{"NDIRO_IMPORT_MIN_WINDOW", DefaultImportMinWindow.String(), parseImportMinWindow},
	{"NDIRO_QUOTA_MEALS", strconv.Itoa(DefaultQuotaMeals), parseQuotaMeals},
	{"NDIRO_QUOTA_BYTES", strconv.FormatInt(DefaultQuotaBytes, 10), parseQuotaBytes},
	{"NDIRO_TRUSTED_PROXY_HEADER", "", parseTrustedProxyHeader},
	{"NDIRO_DEMO", "", parseDemo},
	{"ADMIN_EMAILS", "", parseAdminEmails},
	{"NDIRO_STORAGE_ITEM_TIMEOUT", DefaultStorage.Item.String(), parseStorageItem},
	{"NDIRO_STORAGE_QUERY_TIMEOUT", DefaultStorage.Query.String(), parseStorageQuery},
	{"NDIRO_STORAGE_TRANSFER_TIMEOUT", DefaultStorage.Transfer.String(), parseStorageTransfer},
	{"NDIRO_STORAGE_ATTEMPTS", strconv.Itoa(DefaultStorage.Attempts), parseStorageAttempts},
	{"NDIRO_STORAGE_MAX_BACKOFF", DefaultStorage.MaxBackoff.String(), parseStorageMaxBackoff},
	{"NDIRO_ORPHAN_GRACE", DefaultOrphanGrace.String(), parseOrphanGrace},
	{"NDIRO_MOVE_MARK_DAYS", strconv.Itoa(DefaultMoveMarkDays), parseMoveMarkDays},
	{"NDIRO_LOG_LEVEL", "info", parseLogLevel},
	{"NDIRO_METRICS_ADDR", "", parseMetricsAddr},
	{"NDIRO_PPROF", "", parsePprof},
	{"NDIRO_LEASE_TTL", DefaultLease.TTL.String(), parseLeaseTTL},
	{"NDIRO_LEASE_RENEW", DefaultLease.Renew.String(), parseLeaseRenew},
}

// rule is a check that spans several variables or the whole
// configuration; it runs after every option has been parsed. getenv
// returns a variable's trimmed value ("" when unset).
type rule func(c *Config, getenv func(string) string) error

// rules run in this order after the options.
var rules = []rule{
	oidcClient,
	awsRequired,
	serverRequired,
	orphanGrace,
	quotaTakesImport,
	metricsListener,
	leaseWindow,
}

func parseMode(c *Config, v string) error {
	c.Mode = Mode(v)
	switch c.Mode {
	case ModeLocal, ModeServer, ModeAWS:
		return nil
	}
	return fmt.Errorf("NDIRO_MODE must be %q, %q or %q, not %q", ModeLocal, ModeServer, ModeAWS, v)
}

func parseAddr(c *Config, v string) error {
	c.Addr = v
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Errorf("NDIRO_ADDR must be host:port like 127.0.0.1:8080: %v", err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("NDIRO_ADDR port must be a number from 0 to 65535, not %q", port)
	}
	return nil
}

func parseDataDir(c *Config, v string) error {
	c.DataDir = v
	return nil
}

func parseTablePrefix(c *Config, v string) error {
	c.TablePrefix = v
	if !validPrefix(v) {
		return fmt.Errorf("NDIRO_TABLE_PREFIX may hold only letters, digits, '-', '_' and '.', at most 200 characters, not %q", v)
	}
	return nil
}

// parseBaseURL takes an origin: scheme http or https, a host, nothing
// after it but trailing slashes (dropped). AWS mode's https requirement
// is awsRequired's.
func parseBaseURL(c *Config, v string) error {
	c.BaseURL = strings.TrimRight(v, "/")
	if c.BaseURL == "" {
		return nil
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Opaque != "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.HasSuffix(c.BaseURL, "#") {
		return fmt.Errorf("NDIRO_BASE_URL must be an origin like https://ndiro.example.org, not %q", c.BaseURL)
	}
	return nil
}

func parseRegion(c *Config, v string) error {
	c.Region = v
	return nil
}

func parseBucket(c *Config, v string) error {
	c.Bucket = v
	return nil
}

func parseOIDCIssuer(c *Config, v string) error {
	c.OIDCIssuer = v
	if !validIssuer(v) {
		return fmt.Errorf("NDIRO_OIDC_ISSUER must be an https URL like %s, with no query (plain http only on a loopback host), not %q", DefaultOIDCIssuer, v)
	}
	return nil
}

func parseOIDCName(c *Config, v string) error {
	c.OIDCName = v
	if utf8.RuneCountInString(v) > 40 || strings.IndexFunc(v, unicode.IsControl) >= 0 {
		return fmt.Errorf("NDIRO_OIDC_NAME must be at most 40 characters on one line, like \"Google\" or \"Keycloak\", not %q", v)
	}
	return nil
}

func parsePhotoCacheBytes(c *Config, v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > MaxPhotoCacheBytes {
		return fmt.Errorf("NDIRO_PHOTO_CACHE_BYTES must be a whole number of bytes from 0 to %d (1 TiB), not %q", int64(MaxPhotoCacheBytes), v)
	}
	c.PhotoCacheBytes = n
	return nil
}

// minDecodeBudget is the smallest NDIRO_DECODE_BUDGET_BYTES: 16 MiB.
const minDecodeBudget = 16 << 20

func parseDecodeBudget(c *Config, v string) error {
	if v == "" {
		return nil // the pipeline's default
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < minDecodeBudget {
		return fmt.Errorf("NDIRO_DECODE_BUDGET_BYTES must be a whole number of bytes, at least %d (16 MiB), not %q", minDecodeBudget, v)
	}
	c.DecodeBudget = n
	return nil
}

func parseUploadWait(c *Config, v string) error {
	if v == "" {
		return nil // the pipeline's default
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return fmt.Errorf("NDIRO_UPLOAD_WAIT must be a duration like 30s, not %q", v)
	}
	c.UploadWait = d
	return nil
}

// MaxImportMaxBytes is the largest NDIRO_IMPORT_MAX_BYTES, 64 GiB: a
// staged archive is sent to S3 in at most 10,000 parts of 8 MiB.
const MaxImportMaxBytes = 64 << 30

func parseImportMaxBytes(c *Config, v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > MaxImportMaxBytes {
		return fmt.Errorf("NDIRO_IMPORT_MAX_BYTES must be a whole number of bytes from 1 to %d (64 GiB), not %q", int64(MaxImportMaxBytes), v)
	}
	c.ImportMaxBytes = n
	return nil
}

// maxImportStaging bounds NDIRO_IMPORT_STAGING_PER_OWNER and
// NDIRO_IMPORT_STAGING_MAX: each upload in hand may hold a part's buffer
// and an archive check's heap.
const maxImportStaging = 100

func parseImportStagingPerOwner(c *Config, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxImportStaging {
		return fmt.Errorf("NDIRO_IMPORT_STAGING_PER_OWNER must be a whole number of uploads from 1 to %d, not %q", maxImportStaging, v)
	}
	c.ImportStagingPerOwner = n
	return nil
}

func parseImportStagingMax(c *Config, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxImportStaging {
		return fmt.Errorf("NDIRO_IMPORT_STAGING_MAX must be a whole number of uploads from 1 to %d, not %q", maxImportStaging, v)
	}
	c.ImportStagingMax = n
	return nil
}

func parseImportMinBytes(c *Config, v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > 1<<30 {
		return fmt.Errorf("NDIRO_IMPORT_MIN_BYTES must be a whole number of bytes from 1 to 1073741824 (1 GiB), not %q", v)
	}
	c.ImportMinBytes = n
	return nil
}

func parseImportMinWindow(c *Config, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second || d > time.Hour {
		return fmt.Errorf("NDIRO_IMPORT_MIN_WINDOW must be a duration from 1s to 1h like 60s, not %q", v)
	}
	c.ImportMinWindow = d
	return nil
}

// MaxQuotaMeals is the largest NDIRO_QUOTA_MEALS: a billion meals, far
// past any diary.
const MaxQuotaMeals = 1_000_000_000

func parseQuotaMeals(c *Config, v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > MaxQuotaMeals {
		return fmt.Errorf("NDIRO_QUOTA_MEALS must be a whole number of meals from 1 to %d, not %q", MaxQuotaMeals, v)
	}
	c.QuotaMeals = n
	return nil
}

// MaxQuotaBytes is the largest NDIRO_QUOTA_BYTES, 1 PiB: the counts on
// the users rows stay exact where an emulator adds them as float64.
const MaxQuotaBytes = 1 << 50

func parseQuotaBytes(c *Config, v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > MaxQuotaBytes {
		return fmt.Errorf("NDIRO_QUOTA_BYTES must be a whole number of bytes from 1 to %d (1 PiB), not %q", int64(MaxQuotaBytes), v)
	}
	c.QuotaBytes = n
	return nil
}

// StoredPerExported is how many times its bytes in an export zip a photo
// may take once stored: the zip holds its display copy, the bucket that
// copy, its thumbnail and its sized copies (package photo's
// TestMakeVariants holds the fixtures to it).
const StoredPerExported = 4

// quotaTakesImport requires NDIRO_QUOTA_BYTES to be at least
// StoredPerExported times NDIRO_IMPORT_MAX_BYTES, so that the largest
// export zip the import takes fits an empty account: a smaller quota
// would stop an import of ndiro's own export part-way.
func quotaTakesImport(c *Config, _ func(string) string) error {
	if min := StoredPerExported * c.ImportMaxBytes; c.QuotaBytes < min {
		return fmt.Errorf("NDIRO_QUOTA_BYTES must be at least %d (%d times NDIRO_IMPORT_MAX_BYTES, what the largest zip the import takes stores), not %d: raise it or lower NDIRO_IMPORT_MAX_BYTES", min, StoredPerExported, c.QuotaBytes)
	}
	return nil
}

// parseTrustedProxyHeader takes a header name a proxy sets with the
// client's address, stored in canonical form. Forwarded is refused (its
// for= syntax is not read), and so are headers that carry something
// else.
func parseTrustedProxyHeader(c *Config, v string) error {
	if v == "" {
		return nil
	}
	switch canon := textproto.CanonicalMIMEHeaderKey(v); {
	case !validHeaderName(v):
		return fmt.Errorf("NDIRO_TRUSTED_PROXY_HEADER must be a header name like X-Forwarded-For, not %q", v)
	case canon == "Forwarded":
		return errors.New("NDIRO_TRUSTED_PROXY_HEADER: the Forwarded header's for= syntax is not supported; have the proxy set X-Forwarded-For or X-Real-IP")
	case canon == "Host" || canon == "Cookie" || canon == "Authorization" || canon == "User-Agent" || canon == "Referer":
		return fmt.Errorf("NDIRO_TRUSTED_PROXY_HEADER cannot be %s, which no proxy uses for the client address", canon)
	default:
		c.TrustedProxyHeader = canon
		return nil
	}
}

func parseDemo(c *Config, v string) error {
	switch {
	case v == "" || v == "0":
		return nil
	case v != "1":
		return fmt.Errorf("NDIRO_DEMO must be 1 (or unset), not %q", v)
	case c.Mode != ModeLocal:
		return errors.New("NDIRO_DEMO works only in local mode (NDIRO_MODE=local)")
	}
	c.Demo = true
	return nil
}

// localAdmin is ADMIN_EMAILS in local mode when it is unset.
const localAdmin = "admin@example.com"

// parseAdminEmails takes comma-separated addresses, normalised
// (email.Normalize); blank entries are skipped, each invalid one is a
// problem of its own. Local mode needs at least one and has localAdmin
// when the variable is unset; AWS mode's requirement is awsRequired's.
func parseAdminEmails(c *Config, v string) error {
	if v == "" && c.Mode == ModeLocal {
		v = localAdmin
	}
	var errs []error
	for _, e := range strings.Split(v, ",") {
		e = email.Normalize(e)
		if e == "" {
			continue
		}
		if !email.Valid(e) {
			errs = append(errs, fmt.Errorf("ADMIN_EMAILS holds %q, which is not an email address", e))
			continue
		}
		c.AdminEmails = append(c.AdminEmails, e)
	}
	if c.Mode == ModeLocal && len(c.AdminEmails) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("ADMIN_EMAILS holds no email address (%q); give at least one, like %s, or leave it unset in local mode", v, localAdmin))
	}
	return errors.Join(errs...)
}

// oidcClient takes the client ID and secret as one pair:
// NDIRO_OIDC_CLIENT_ID and NDIRO_OIDC_CLIENT_SECRET if either is set,
// else GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET, never one from each,
// which would fail only at the first sign-in. Server and AWS mode need a
// whole pair.
func oidcClient(c *Config, getenv func(string) string) error {
	idVar, secretVar := "NDIRO_OIDC_CLIENT_ID", "NDIRO_OIDC_CLIENT_SECRET"
	c.OIDCClientID, c.OIDCClientSecret = getenv(idVar), getenv(secretVar)
	if c.OIDCClientID == "" && c.OIDCClientSecret == "" {
		idVar, secretVar = "GOOGLE_CLIENT_ID", "GOOGLE_CLIENT_SECRET"
		c.OIDCClientID, c.OIDCClientSecret = getenv(idVar), getenv(secretVar)
	}
	if c.Mode == ModeLocal {
		return nil
	}
	switch {
	case c.OIDCClientID == "" && c.OIDCClientSecret == "":
		return fmt.Errorf("NDIRO_OIDC_CLIENT_ID and NDIRO_OIDC_CLIENT_SECRET (or GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET) are required when NDIRO_MODE=%s", c.Mode)
	case c.OIDCClientID == "":
		return fmt.Errorf("%s is required when %s is set", idVar, secretVar)
	case c.OIDCClientSecret == "":
		return fmt.Errorf("%s is required when %s is set", secretVar, idVar)
	}
	return nil
}

// awsRequired names every setting AWS mode cannot do without, and
// requires an https base URL there.
func awsRequired(c *Config, _ func(string) string) error {
	if c.Mode != ModeAWS {
		return nil
	}
	var errs []error
	for _, req := range []struct{ key, val string }{
		{"AWS_REGION", c.Region},
		{"NDIRO_BUCKET", c.Bucket},
		{"NDIRO_BASE_URL", c.BaseURL},
		{"ADMIN_EMAILS", strings.Join(c.AdminEmails, ",")},
	} {
		if req.val == "" {
			errs = append(errs, fmt.Errorf("%s is required when NDIRO_MODE=aws", req.key))
		}
	}
	if strings.HasPrefix(c.BaseURL, "http://") {
		errs = append(errs, fmt.Errorf("NDIRO_BASE_URL must use https when NDIRO_MODE=aws, not %q", c.BaseURL))
	}
	return errors.Join(errs...)
}

// serverRequired names every setting server mode cannot do without: an
// https base URL (the address phones open, through the TLS proxy in
// front), admins, and a data directory given as an absolute path, so the
// diary never lands in whatever directory the service happened to start
// in.
func serverRequired(c *Config, getenv func(string) string) error {
	if c.Mode != ModeServer {
		return nil
	}
	var errs []error
	switch {
	case c.BaseURL == "":
		errs = append(errs, errors.New("NDIRO_BASE_URL is required when NDIRO_MODE=server: the https address people open, like https://ndiro.example.org"))
	case !strings.HasPrefix(c.BaseURL, "https://"):
		errs = append(errs, fmt.Errorf("NDIRO_BASE_URL must use https when NDIRO_MODE=server (put a TLS proxy such as Caddy in front), not %q", c.BaseURL))
	}
	if len(c.AdminEmails) == 0 {
		errs = append(errs, errors.New("ADMIN_EMAILS is required when NDIRO_MODE=server"))
	}
	switch dir := getenv("NDIRO_DATA_DIR"); {
	case dir == "":
		errs = append(errs, errors.New("NDIRO_DATA_DIR is required when NDIRO_MODE=server: an absolute path on a disk that keeps what it fsyncs, like /var/lib/ndiro"))
	case !filepath.IsAbs(dir):
		errs = append(errs, fmt.Errorf("NDIRO_DATA_DIR must be an absolute path when NDIRO_MODE=server, like /var/lib/ndiro, not %q", dir))
	}
	return errors.Join(errs...)
}

// maxStorageBudget is the longest budget of a storage call: 10 minutes,
// past which a person has long given up on the page.
const maxStorageBudget = 10 * time.Minute

// parseBudget reads a storage call budget, from 1ms to maxStorageBudget.
func parseBudget(env, v string, d *time.Duration) error {
	n, err := time.ParseDuration(v)
	if err != nil || n < time.Millisecond || n > maxStorageBudget {
		return fmt.Errorf("%s must be a duration from 1ms to 10m like 5s, not %q", env, v)
	}
	*d = n
	return nil
}

func parseStorageItem(c *Config, v string) error {
	return parseBudget("NDIRO_STORAGE_ITEM_TIMEOUT", v, &c.Storage.Item)
}

func parseStorageQuery(c *Config, v string) error {
	return parseBudget("NDIRO_STORAGE_QUERY_TIMEOUT", v, &c.Storage.Query)
}

func parseStorageTransfer(c *Config, v string) error {
	return parseBudget("NDIRO_STORAGE_TRANSFER_TIMEOUT", v, &c.Storage.Transfer)
}

// maxStorageAttempts is the most NDIRO_STORAGE_ATTEMPTS: beyond it each
// attempt's share of the budget is too short to be of use.
const maxStorageAttempts = 10

func parseStorageAttempts(c *Config, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxStorageAttempts {
		return fmt.Errorf("NDIRO_STORAGE_ATTEMPTS must be a whole number from 1 to %d, not %q", maxStorageAttempts, v)
	}
	c.Storage.Attempts = n
	return nil
}

func parseStorageMaxBackoff(c *Config, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > time.Minute {
		return fmt.Errorf("NDIRO_STORAGE_MAX_BACKOFF must be a duration from 0s to 1m like 500ms, not %q", v)
	}
	c.Storage.MaxBackoff = d
	return nil
}

// parseOrphanGrace takes a positive duration; orphanGrace checks it
// against the storage budgets.
func parseOrphanGrace(c *Config, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return fmt.Errorf("NDIRO_ORPHAN_GRACE must be a duration like 1h, not %q", v)
	}
	c.OrphanGrace = d
	return nil
}

// DefaultMoveMarkDays is NDIRO_MOVE_MARK_DAYS's default and
// MaxMoveMarkDays its largest value: a mark waits a month for its
// owner unless set otherwise, a year at most.
const (
	DefaultMoveMarkDays = 30
	MaxMoveMarkDays     = 365
)

func parseMoveMarkDays(c *Config, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxMoveMarkDays {
		return fmt.Errorf("NDIRO_MOVE_MARK_DAYS must be a whole number of days from 1 to %d, not %q", MaxMoveMarkDays, v)
	}
	c.MoveMarkLifetime = time.Duration(n) * 24 * time.Hour
	return nil
}

// orphanGrace requires NDIRO_ORPHAN_GRACE to be at least twice the
// longest a meal write can take between its photo objects and its row
// (a transfer, a query and an item call, at their budgets): an object
// younger than that may be on its way to its row, and the monitor's
// clean-up would delete a photo a row is about to name.
func orphanGrace(c *Config, _ func(string) string) error {
	s := c.Storage
	if min := 2 * (s.Item + s.Query + s.Transfer); c.OrphanGrace < min {
		return fmt.Errorf("NDIRO_ORPHAN_GRACE must be at least %s (twice NDIRO_STORAGE_ITEM_TIMEOUT + NDIRO_STORAGE_QUERY_TIMEOUT + NDIRO_STORAGE_TRANSFER_TIMEOUT), not %s", min, c.OrphanGrace)
	}
	return nil
}

// parseLogLevel takes the lowest level of log lines written: debug,
// info, warn or error (slog's levels, any case).
func parseLogLevel(c *Config, v string) error {
	switch strings.ToLower(v) {
	case "debug":
		c.LogLevel = slog.LevelDebug
	case "info":
		c.LogLevel = slog.LevelInfo
	case "warn":
		c.LogLevel = slog.LevelWarn
	case "error":
		c.LogLevel = slog.LevelError
	default:
		return fmt.Errorf("NDIRO_LOG_LEVEL must be debug, info, warn or error, not %q", v)
	}
	return nil
}

// parseMetricsAddr takes the host:port of the metrics listener, or ""
// for none; metricsListener keeps it off the public port.
func parseMetricsAddr(c *Config, v string) error {
	c.MetricsAddr = v
	if v == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Errorf("NDIRO_METRICS_ADDR must be host:port like 127.0.0.1:9090 (or unset, for no metrics listener): %v", err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("NDIRO_METRICS_ADDR port must be a number from 0 to 65535, not %q", port)
	}
	return nil
}

func parsePprof(c *Config, v string) error {
	switch v {
	case "", "0":
		return nil
	case "1":
		c.Pprof = true
		return nil
	}
	return fmt.Errorf("NDIRO_PPROF must be 1 (or unset), not %q", v)
}

// metricsListener keeps the metrics listener (and pprof, which lives
// only there) off the public one: NDIRO_METRICS_ADDR may not use
// NDIRO_ADDR's port (port 0, a fresh port each, excepted), which would
// either fail to listen or, on another interface of the same port, put
// the figures where the public looks. NDIRO_PPROF needs the listener.
func metricsListener(c *Config, _ func(string) string) error {
	if c.MetricsAddr == "" {
		if c.Pprof {
			return errors.New("NDIRO_PPROF=1 needs NDIRO_METRICS_ADDR: profiles are served only on the metrics listener, never on the public one")
		}
		return nil
	}
	_, mport, err1 := net.SplitHostPort(c.MetricsAddr)
	_, port, err2 := net.SplitHostPort(c.Addr)
	if err1 == nil && err2 == nil && mport == port && port != "0" {
		return fmt.Errorf("NDIRO_METRICS_ADDR (%s) must use another port than NDIRO_ADDR (%s): metrics are never served on the public listener", c.MetricsAddr, c.Addr)
	}
	return nil
}

// parseLeaseDuration reads a lease duration, from 1s to 10m.
func parseLeaseDuration(env, v string, d *time.Duration) error {
	n, err := time.ParseDuration(v)
	if err != nil || n < time.Second || n > 10*time.Minute {
		return fmt.Errorf("%s must be a duration from 1s to 10m like 30s, not %q", env, v)
	}
	*d = n
	return nil
}

func parseLeaseTTL(c *Config, v string) error {
	return parseLeaseDuration("NDIRO_LEASE_TTL", v, &c.Lease.TTL)
}

func parseLeaseRenew(c *Config, v string) error {
	return parseLeaseDuration("NDIRO_LEASE_RENEW", v, &c.Lease.Renew)
}

// leaseWindow requires the writer lease's write window (NDIRO_LEASE_TTL
// less LeaseGuard) to hold two renewals (NDIRO_LEASE_RENEW), so that one
// failed renewal does not pause writes. Local mode holds no lease (its
// data dir lock keeps a second process out), so it is not checked there.
func leaseWindow(c *Config, _ func(string) string) error {
	g := c.LeaseGuard()
	if c.Mode == ModeAWS && c.Lease.TTL-g < 2*c.Lease.Renew {
		return fmt.Errorf("NDIRO_LEASE_TTL %s less %s (the longest NDIRO_STORAGE_*_TIMEOUT plus a tenth of the TTL) leaves a write window of %s, which must be at least twice NDIRO_LEASE_RENEW (%s): raise NDIRO_LEASE_TTL to at least %s or lower NDIRO_LEASE_RENEW",
			c.Lease.TTL, g, c.Lease.TTL-g, c.Lease.Renew, ((g-c.Lease.TTL/10+2*c.Lease.Renew)*10/9).Truncate(time.Second)+time.Second)
	}
	return nil
}
