package config

import (
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// optionCase is one value given to one option's parse function, on a
// Config already holding before; want is the Config after it, or wantErr
// a part of the error's text ("" for no error).
type optionCase struct {
	name    string
	before  Config
	value   string
	want    Config
	wantErr string
}

// parserOf returns the parse function of the row for env, failing the
// test if the table has none: the tests go through the table itself.
func parserOf(t *testing.T, env string) func(*Config, string) error {
	t.Helper()
	for _, o := range options {
		if o.env == env {
			return o.parse
		}
	}
	t.Fatalf("options has no row for %s", env)
	return nil
}

func runOption(t *testing.T, env string, cases []optionCase) {
	t.Helper()
	parse := parserOf(t, env)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.before
			err := parse(&c, tc.value)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("%s=%q: %v, want no error", env, tc.value, err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("%s=%q: no error, want one saying %q", env, tc.value, tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("%s=%q: %q, want it to say %q", env, tc.value, err, tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), env):
				t.Errorf("%s=%q: %q does not name %s", env, tc.value, err, env)
			case tc.wantErr == "":
				if d := cmp.Diff(tc.want, c); d != "" {
					t.Errorf("%s=%q: Config mismatch (-want +got):\n%s", env, tc.value, d)
				}
			}
		})
	}
}

var (
	local    = Config{Mode: ModeLocal}
	inAWS    = Config{Mode: ModeAWS}
	inServer = Config{Mode: ModeServer}
)

func TestParseMode(t *testing.T) {
	runOption(t, "NDIRO_MODE", []optionCase{
		{name: "local", value: "local", want: Config{Mode: ModeLocal}},
		{name: "aws", value: "aws", want: Config{Mode: ModeAWS}},
		{name: "server", value: "server", want: Config{Mode: ModeServer}},
		{name: "other", value: "prod", wantErr: `"local", "server" or "aws", not "prod"`},
		{name: "case matters", value: "AWS", wantErr: `not "AWS"`},
	})
}

func TestParseAddr(t *testing.T) {
	runOption(t, "NDIRO_ADDR", []optionCase{
		{name: "host and port", value: "127.0.0.1:8080", want: Config{Addr: "127.0.0.1:8080"}},
		{name: "any port", value: "127.0.0.1:0", want: Config{Addr: "127.0.0.1:0"}},
		{name: "all interfaces", value: ":8080", want: Config{Addr: ":8080"}},
		{name: "ipv6", value: "[::1]:65535", want: Config{Addr: "[::1]:65535"}},
		{name: "no port", value: "8080", wantErr: "must be host:port"},
		{name: "port too large", value: "127.0.0.1:65536", wantErr: `port must be a number from 0 to 65535, not "65536"`},
		{name: "port a name", value: "127.0.0.1:http", wantErr: `not "http"`},
	})
}

func TestParseDataDir(t *testing.T) {
	runOption(t, "NDIRO_DATA_DIR", []optionCase{
		{name: "path", value: "/srv/ndiro", want: Config{DataDir: "/srv/ndiro"}},
	})
}

func TestParseTablePrefix(t *testing.T) {
	runOption(t, "NDIRO_TABLE_PREFIX", []optionCase{
		{name: "default", value: "ndiro-", want: Config{TablePrefix: "ndiro-"}},
		{name: "every allowed character", value: "aZ09-_.", want: Config{TablePrefix: "aZ09-_."}},
		{name: "empty", value: "", want: Config{}},
		{name: "200 characters", value: strings.Repeat("p", 200), want: Config{TablePrefix: strings.Repeat("p", 200)}},
		{name: "201 characters", value: strings.Repeat("p", 201), wantErr: "at most 200 characters"},
		{name: "space", value: "bad prefix", wantErr: "may hold only"},
		{name: "slash", value: "a/b", wantErr: "may hold only"},
	})
}

func TestParseBaseURL(t *testing.T) {
	bad := "must be an origin like https://ndiro.example.org"
	runOption(t, "NDIRO_BASE_URL", []optionCase{
		{name: "unset", value: "", want: Config{}},
		{name: "https", value: "https://ndiro.example.org", want: Config{BaseURL: "https://ndiro.example.org"}},
		{name: "trailing slashes dropped", value: "https://ndiro.example.org//", want: Config{BaseURL: "https://ndiro.example.org"}},
		{name: "http with port", value: "http://127.0.0.1:8080", want: Config{BaseURL: "http://127.0.0.1:8080"}},
		{name: "no scheme", value: "ndiro.example.org", wantErr: bad},
		{name: "other scheme", value: "ftp://ndiro.example.org", wantErr: bad},
		{name: "path", value: "https://x.org/app", wantErr: bad},
		{name: "fragment", value: "https://x.org#a", wantErr: bad},
		{name: "empty fragment", value: "https://x.org#", wantErr: bad},
		{name: "empty query", value: "https://x.org?", wantErr: bad},
		{name: "query", value: "https://x.org?a=1", wantErr: bad},
		{name: "user info", value: "https://u:p@x.org", wantErr: bad},
	})
}

func TestParseRegion(t *testing.T) {
	runOption(t, "AWS_REGION", []optionCase{
		{name: "region", value: "eu-central-1", want: Config{Region: "eu-central-1"}},
	})
}

func TestParseBucket(t *testing.T) {
	runOption(t, "NDIRO_BUCKET", []optionCase{
		{name: "bucket", value: "photos", want: Config{Bucket: "photos"}},
	})
}

func TestParseOIDCIssuer(t *testing.T) {
	bad := "must be an https URL"
	runOption(t, "NDIRO_OIDC_ISSUER", []optionCase{
		{name: "google", value: "https://accounts.google.com", want: Config{OIDCIssuer: "https://accounts.google.com"}},
		{name: "path and trailing slash kept", value: "https://sso.example.org/o/ndiro/", want: Config{OIDCIssuer: "https://sso.example.org/o/ndiro/"}},
		{name: "http on loopback", value: "http://127.0.0.1:9000", want: Config{OIDCIssuer: "http://127.0.0.1:9000"}},
		{name: "http on localhost", value: "http://localhost:9000", want: Config{OIDCIssuer: "http://localhost:9000"}},
		{name: "http elsewhere", value: "http://sso.example.org/realms/home", wantErr: bad},
		{name: "no scheme", value: "sso.example.org", wantErr: bad},
		{name: "query", value: "https://sso.example.org/?realm=home", wantErr: bad},
		{name: "fragment", value: "https://sso.example.org/#x", wantErr: bad},
		{name: "user info", value: "https://u@sso.example.org", wantErr: bad},
	})
}

func TestParseOIDCName(t *testing.T) {
	runOption(t, "NDIRO_OIDC_NAME", []optionCase{
		{name: "name", value: "Example SSO", want: Config{OIDCName: "Example SSO"}},
		{name: "40 characters, not bytes", value: strings.Repeat("é", 40), want: Config{OIDCName: strings.Repeat("é", 40)}},
		{name: "41 characters", value: strings.Repeat("x", 41), wantErr: "at most 40 characters"},
		{name: "newline", value: "Key\ncloak", wantErr: "on one line"},
	})
}

func TestParsePhotoCacheBytes(t *testing.T) {
	bad := "must be a whole number of bytes from 0 to 1099511627776"
	runOption(t, "NDIRO_PHOTO_CACHE_BYTES", []optionCase{
		{name: "zero disables", value: "0", want: Config{}},
		{name: "bytes", value: "1048576", want: Config{PhotoCacheBytes: 1 << 20}},
		{name: "1 TiB", value: "1099511627776", want: Config{PhotoCacheBytes: MaxPhotoCacheBytes}},
		{name: "over 1 TiB", value: "1099511627777", wantErr: bad},
		{name: "negative", value: "-1", wantErr: bad},
		{name: "overflow", value: "9223372036854775808", wantErr: bad},
		{name: "unit", value: "64MB", wantErr: bad},
	})
}

func TestParseImportMaxBytes(t *testing.T) {
	bad := "must be a whole number of bytes from 1 to 68719476736 (64 GiB)"
	runOption(t, "NDIRO_IMPORT_MAX_BYTES", []optionCase{
		{name: "bytes", value: "1048576", want: Config{ImportMaxBytes: 1 << 20}},
		{name: "64 GiB", value: "68719476736", want: Config{ImportMaxBytes: MaxImportMaxBytes}},
		{name: "over 64 GiB", value: "68719476737", wantErr: bad},
		{name: "zero", value: "0", wantErr: bad},
		{name: "negative", value: "-1", wantErr: bad},
		{name: "unit", value: "8GiB", wantErr: bad},
	})
}

func TestParseImportStaging(t *testing.T) {
	for _, env := range []string{"NDIRO_IMPORT_STAGING_PER_OWNER", "NDIRO_IMPORT_STAGING_MAX"} {
		bad := env + " must be a whole number of uploads from 1 to 100"
		want := func(n int) Config {
			if env == "NDIRO_IMPORT_STAGING_MAX" {
				return Config{ImportStagingMax: n}
			}
			return Config{ImportStagingPerOwner: n}
		}
		runOption(t, env, []optionCase{
			{name: "one", value: "1", want: want(1)},
			{name: "a hundred", value: "100", want: want(100)},
			{name: "zero", value: "0", wantErr: bad},
			{name: "over a hundred", value: "101", wantErr: bad},
			{name: "not a number", value: "four", wantErr: bad},
		})
	}
}

func TestParseImportMinRate(t *testing.T) {
	bytesBad := "NDIRO_IMPORT_MIN_BYTES must be a whole number of bytes from 1 to 1073741824"
	runOption(t, "NDIRO_IMPORT_MIN_BYTES", []optionCase{
		{name: "64 KiB", value: "65536", want: Config{ImportMinBytes: 64 << 10}},
		{name: "zero", value: "0", wantErr: bytesBad},
		{name: "over 1 GiB", value: "1073741825", wantErr: bytesBad},
		{name: "unit", value: "64KiB", wantErr: bytesBad},
	})
	windowBad := "NDIRO_IMPORT_MIN_WINDOW must be a duration from 1s to 1h"
	runOption(t, "NDIRO_IMPORT_MIN_WINDOW", []optionCase{
		{name: "a minute", value: "60s", want: Config{ImportMinWindow: time.Minute}},
		{name: "under a second", value: "500ms", wantErr: windowBad},
		{name: "over an hour", value: "61m", wantErr: windowBad},
		{name: "no unit", value: "60", wantErr: windowBad},
	})
}

func TestParseQuotaMeals(t *testing.T) {
	bad := "NDIRO_QUOTA_MEALS must be a whole number of meals from 1 to 1000000000"
	runOption(t, "NDIRO_QUOTA_MEALS", []optionCase{
		{name: "meals", value: "50000", want: Config{QuotaMeals: 50_000}},
		{name: "one", value: "1", want: Config{QuotaMeals: 1}},
		{name: "a billion", value: "1000000000", want: Config{QuotaMeals: MaxQuotaMeals}},
		{name: "over a billion", value: "1000000001", wantErr: bad},
		{name: "zero", value: "0", wantErr: bad},
		{name: "negative", value: "-5", wantErr: bad},
		{name: "grouped", value: "100,000", wantErr: bad},
	})
}

func TestParseQuotaBytes(t *testing.T) {
	bad := "NDIRO_QUOTA_BYTES must be a whole number of bytes from 1 to 1125899906842624 (1 PiB)"
	runOption(t, "NDIRO_QUOTA_BYTES", []optionCase{
		{name: "bytes", value: "34359738368", want: Config{QuotaBytes: 32 << 30}},
		{name: "1 PiB", value: "1125899906842624", want: Config{QuotaBytes: MaxQuotaBytes}},
		{name: "over 1 PiB", value: "1125899906842625", wantErr: bad},
		{name: "zero", value: "0", wantErr: bad},
		{name: "negative", value: "-1", wantErr: bad},
		{name: "unit", value: "64GiB", wantErr: bad},
	})
}

// TestQuotaTakesImport: the byte quota must hold what the largest zip
// the import takes stores, StoredPerExported times its size.
func TestQuotaTakesImport(t *testing.T) {
	c := Config{ImportMaxBytes: 1 << 30, QuotaBytes: 4 << 30}
	if err := quotaTakesImport(&c, nil); err != nil {
		t.Errorf("quota 4 GiB with imports of 1 GiB: %v, want nil", err)
	}
	c.QuotaBytes--
	if err := quotaTakesImport(&c, nil); err == nil || !strings.Contains(err.Error(), "NDIRO_QUOTA_BYTES must be at least 4294967296") {
		t.Errorf("quota a byte under 4 GiB with imports of 1 GiB: %v, want it refused naming 4294967296", err)
	}
	_, err := Load(env(map[string]string{"NDIRO_QUOTA_BYTES": "34359738367"}))
	if err == nil || !strings.Contains(err.Error(), "at least 34359738368") || !strings.Contains(err.Error(), "NDIRO_IMPORT_MAX_BYTES") {
		t.Errorf("Load with a quota under 32 GiB and the default import limit = %v, want it refused (at least 34359738368, naming NDIRO_IMPORT_MAX_BYTES)", err)
	}
	if _, err := Load(env(map[string]string{"NDIRO_QUOTA_BYTES": "1073741824", "NDIRO_IMPORT_MAX_BYTES": "268435456"})); err != nil {
		t.Errorf("Load with a 1 GiB quota and imports of 256 MiB = %v, want nil", err)
	}
}

func TestParseDecodeBudget(t *testing.T) {
	bad := "at least 16777216 (16 MiB)"
	runOption(t, "NDIRO_DECODE_BUDGET_BYTES", []optionCase{
		{name: "unset is the pipeline's default", value: "", want: Config{}},
		{name: "16 MiB", value: "16777216", want: Config{DecodeBudget: 16 << 20}},
		{name: "below 16 MiB", value: "16777215", wantErr: bad},
		{name: "unit", value: "160MiB", wantErr: bad},
	})
}

func TestParseUploadWait(t *testing.T) {
	runOption(t, "NDIRO_UPLOAD_WAIT", []optionCase{
		{name: "unset is the pipeline's default", value: "", want: Config{}},
		{name: "duration", value: "45s", want: Config{UploadWait: 45 * time.Second}},
		{name: "zero", value: "0s", wantErr: "must be a duration like 30s"},
		{name: "negative", value: "-1s", wantErr: "must be a duration like 30s"},
		{name: "no unit", value: "30", wantErr: `not "30"`},
	})
}

func TestParseTrustedProxyHeader(t *testing.T) {
	runOption(t, "NDIRO_TRUSTED_PROXY_HEADER", []optionCase{
		{name: "unset", value: "", want: Config{}},
		{name: "canonical form", value: "x-forwarded-for", want: Config{TrustedProxyHeader: "X-Forwarded-For"}},
		{name: "x-real-ip", value: "X-Real-IP", want: Config{TrustedProxyHeader: "X-Real-Ip"}},
		{name: "spaces", value: "X Forwarded For", wantErr: "must be a header name"},
		{name: "colon", value: "X-Forwarded-For:", wantErr: "must be a header name"},
		{name: "65 characters", value: strings.Repeat("x", 65), wantErr: "must be a header name"},
		{name: "forwarded", value: "forwarded", wantErr: "for= syntax is not supported"},
		{name: "host", value: "Host", wantErr: "cannot be Host"},
		{name: "cookie", value: "cookie", wantErr: "cannot be Cookie"},
	})
}

func TestParseDemo(t *testing.T) {
	runOption(t, "NDIRO_DEMO", []optionCase{
		{name: "unset", before: local, value: "", want: local},
		{name: "zero", before: local, value: "0", want: local},
		{name: "one", before: local, value: "1", want: Config{Mode: ModeLocal, Demo: true}},
		{name: "other", before: local, value: "yes", wantErr: `must be 1 (or unset), not "yes"`},
		{name: "aws mode", before: inAWS, value: "1", wantErr: "works only in local mode"},
		{name: "server mode", before: inServer, value: "1", wantErr: "works only in local mode"},
	})
}

func TestParseAdminEmails(t *testing.T) {
	runOption(t, "ADMIN_EMAILS", []optionCase{
		{name: "local default", before: local, value: "", want: Config{Mode: ModeLocal, AdminEmails: []string{"admin@example.com"}}},
		{name: "none in aws mode", before: inAWS, value: "", want: inAWS},
		{name: "normalised, blanks skipped", before: inAWS, value: " A@Example.com,, b@example.com ",
			want: Config{Mode: ModeAWS, AdminEmails: []string{"a@example.com", "b@example.com"}}},
		{name: "not an address", before: local, value: "admin", wantErr: `holds "admin", which is not an email address`},
		{name: "only commas in local mode", before: local, value: " , ", wantErr: "holds no email address"},
	})
	// Each bad address is a problem of its own.
	c := local
	err := parserOf(t, "ADMIN_EMAILS")(&c, "x,a@example.com,y")
	if got := strings.Count(err.Error(), "which is not an email address"); got != 2 {
		t.Errorf("ADMIN_EMAILS=x,a@example.com,y: %q, want two problems", err)
	}
}

func TestParseStorageBudgets(t *testing.T) {
	for _, tc := range []struct {
		env   string
		field func(*Config) *time.Duration
	}{
		{"NDIRO_STORAGE_ITEM_TIMEOUT", func(c *Config) *time.Duration { return &c.Storage.Item }},
		{"NDIRO_STORAGE_QUERY_TIMEOUT", func(c *Config) *time.Duration { return &c.Storage.Query }},
		{"NDIRO_STORAGE_TRANSFER_TIMEOUT", func(c *Config) *time.Duration { return &c.Storage.Transfer }},
	} {
		t.Run(tc.env, func(t *testing.T) {
			with := func(d time.Duration) Config {
				var c Config
				*tc.field(&c) = d
				return c
			}
			bad := "must be a duration from 1ms to 10m"
			runOption(t, tc.env, []optionCase{
				{name: "seconds", value: "2.5s", want: with(2500 * time.Millisecond)},
				{name: "1ms", value: "1ms", want: with(time.Millisecond)},
				{name: "10m", value: "10m", want: with(10 * time.Minute)},
				{name: "below 1ms", value: "999us", wantErr: bad},
				{name: "zero", value: "0s", wantErr: bad},
				{name: "over 10m", value: "10m1s", wantErr: bad},
				{name: "no unit", value: "5", wantErr: bad},
			})
		})
	}
}

func TestParseStorageAttempts(t *testing.T) {
	bad := "must be a whole number from 1 to 10"
	runOption(t, "NDIRO_STORAGE_ATTEMPTS", []optionCase{
		{name: "one: no retries", value: "1", want: Config{Storage: Storage{Attempts: 1}}},
		{name: "ten", value: "10", want: Config{Storage: Storage{Attempts: 10}}},
		{name: "zero", value: "0", wantErr: bad},
		{name: "eleven", value: "11", wantErr: bad},
		{name: "not a number", value: "three", wantErr: bad},
	})
}

func TestParseStorageMaxBackoff(t *testing.T) {
	bad := "must be a duration from 0s to 1m"
	runOption(t, "NDIRO_STORAGE_MAX_BACKOFF", []optionCase{
		{name: "zero: retry at once", value: "0s", want: Config{}},
		{name: "milliseconds", value: "250ms", want: Config{Storage: Storage{MaxBackoff: 250 * time.Millisecond}}},
		{name: "1m", value: "1m", want: Config{Storage: Storage{MaxBackoff: time.Minute}}},
		{name: "over 1m", value: "61s", wantErr: bad},
		{name: "negative", value: "-1s", wantErr: bad},
	})
}

func TestParseOrphanGrace(t *testing.T) {
	runOption(t, "NDIRO_ORPHAN_GRACE", []optionCase{
		{name: "hour", value: "1h", want: Config{OrphanGrace: time.Hour}},
		{name: "seconds", value: "30s", want: Config{OrphanGrace: 30 * time.Second}},
		{name: "zero", value: "0s", wantErr: "must be a duration like 1h"},
		{name: "no unit", value: "60", wantErr: "must be a duration like 1h"},
	})
}

func TestParseMoveMarkDays(t *testing.T) {
	bad := "must be a whole number of days from 1 to 365"
	runOption(t, "NDIRO_MOVE_MARK_DAYS", []optionCase{
		{name: "a month", value: "30", want: Config{MoveMarkLifetime: 30 * 24 * time.Hour}},
		{name: "one day", value: "1", want: Config{MoveMarkLifetime: 24 * time.Hour}},
		{name: "a year", value: "365", want: Config{MoveMarkLifetime: 365 * 24 * time.Hour}},
		{name: "over a year", value: "366", wantErr: bad},
		{name: "zero", value: "0", wantErr: bad},
		{name: "a duration", value: "720h", wantErr: bad},
		{name: "a fraction", value: "1.5", wantErr: bad},
	})
}

func TestOrphanGraceOutlastsWrites(t *testing.T) {
	c := Config{Storage: Storage{Item: time.Second, Query: 2 * time.Second, Transfer: 3 * time.Second}}
	c.OrphanGrace = 12 * time.Second
	if err := orphanGrace(&c, nil); err != nil {
		t.Errorf("grace 12s with budgets 1s+2s+3s: %v, want nil", err)
	}
	c.OrphanGrace = 12*time.Second - time.Millisecond
	if err := orphanGrace(&c, nil); err == nil || !strings.Contains(err.Error(), "NDIRO_ORPHAN_GRACE must be at least 12s") {
		t.Errorf("grace just under 12s: %v, want it refused naming 12s", err)
	}
	if _, err := Load(env(map[string]string{"NDIRO_ORPHAN_GRACE": "1m"})); err == nil || !strings.Contains(err.Error(), "at least 1m28s") {
		t.Errorf("Load with a 1m grace and the default budgets = %v, want it refused (at least 1m28s)", err)
	}
}

func TestParseLogLevel(t *testing.T) {
	runOption(t, "NDIRO_LOG_LEVEL", []optionCase{
		{name: "debug", value: "debug", want: Config{LogLevel: slog.LevelDebug}},
		{name: "info", value: "info", want: Config{LogLevel: slog.LevelInfo}},
		{name: "warn", value: "warn", want: Config{LogLevel: slog.LevelWarn}},
		{name: "error", value: "error", want: Config{LogLevel: slog.LevelError}},
		{name: "any case", value: "WARN", want: Config{LogLevel: slog.LevelWarn}},
		{name: "slog's long name", value: "warning", wantErr: `debug, info, warn or error, not "warning"`},
		{name: "a number", value: "4", wantErr: `not "4"`},
	})
	c, err := Load(env(map[string]string{"NDIRO_LOG_LEVEL": "error"}))
	if err != nil || c.LogLevel != slog.LevelError {
		t.Errorf("Load(NDIRO_LOG_LEVEL=error) = %v, %v; want level ERROR", c.LogLevel, err)
	}
	if c, _ := Load(env(nil)); c.LogLevel != slog.LevelInfo {
		t.Errorf("Load() log level = %v, want INFO", c.LogLevel)
	}
}

func TestParseMetricsAddr(t *testing.T) {
	runOption(t, "NDIRO_METRICS_ADDR", []optionCase{
		{name: "unset", value: "", want: Config{}},
		{name: "loopback", value: "127.0.0.1:9090", want: Config{MetricsAddr: "127.0.0.1:9090"}},
		{name: "every interface", value: ":9090", want: Config{MetricsAddr: ":9090"}},
		{name: "no port", value: "127.0.0.1", wantErr: "must be host:port like 127.0.0.1:9090"},
		{name: "bad port", value: "127.0.0.1:metrics", wantErr: `port must be a number from 0 to 65535, not "metrics"`},
		{name: "port too large", value: "127.0.0.1:70000", wantErr: `not "70000"`},
	})
}

func TestParsePprof(t *testing.T) {
	runOption(t, "NDIRO_PPROF", []optionCase{
		{name: "unset", value: "", want: Config{}},
		{name: "off", value: "0", want: Config{}},
		{name: "on", value: "1", want: Config{Pprof: true}},
		{name: "yes", value: "yes", wantErr: `must be 1 (or unset), not "yes"`},
	})
}

// TestMetricsListener keeps metrics and profiles off the public port.
func TestMetricsListener(t *testing.T) {
	for _, tc := range []struct {
		name, addr, metrics string
		pprof               bool
		wantErr             string
	}{
		{"none", "127.0.0.1:8080", "", false, ""},
		{"another port", "127.0.0.1:8080", "127.0.0.1:9090", false, ""},
		{"same address", "127.0.0.1:8080", "127.0.0.1:8080", false, "must use another port than NDIRO_ADDR"},
		{"same port, another interface", "0.0.0.0:8080", "127.0.0.1:8080", false, "must use another port than NDIRO_ADDR"},
		{"fresh ports both", "127.0.0.1:0", "127.0.0.1:0", false, ""},
		{"pprof on the metrics listener", "127.0.0.1:8080", "127.0.0.1:9090", true, ""},
		{"pprof without it", "127.0.0.1:8080", "", true, "NDIRO_PPROF=1 needs NDIRO_METRICS_ADDR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := metricsListener(&Config{Addr: tc.addr, MetricsAddr: tc.metrics, Pprof: tc.pprof}, nil)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("metricsListener(%s, %s) = %v, want nil", tc.addr, tc.metrics, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("metricsListener(%s, %s) = %v, want an error saying %q", tc.addr, tc.metrics, err, tc.wantErr)
			}
		})
	}
	if _, err := Load(env(map[string]string{"NDIRO_METRICS_ADDR": "127.0.0.1:8080"})); err == nil || !strings.Contains(err.Error(), "NDIRO_METRICS_ADDR (127.0.0.1:8080) must use another port") {
		t.Errorf("Load with NDIRO_METRICS_ADDR on the default NDIRO_ADDR = %v, want it refused", err)
	}
}

func TestOIDCClient(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode Mode
		env  map[string]string
		// want is client ID and secret.
		want    [2]string
		wantErr string
	}{
		{"google names", ModeAWS, map[string]string{"GOOGLE_CLIENT_ID": "gid", "GOOGLE_CLIENT_SECRET": "gs"}, [2]string{"gid", "gs"}, ""},
		{"own names win", ModeAWS, map[string]string{"NDIRO_OIDC_CLIENT_ID": "id", "NDIRO_OIDC_CLIENT_SECRET": "s", "GOOGLE_CLIENT_ID": "gid", "GOOGLE_CLIENT_SECRET": "gs"}, [2]string{"id", "s"}, ""},
		{"half a pair is not mixed", ModeAWS, map[string]string{"NDIRO_OIDC_CLIENT_ID": "id", "GOOGLE_CLIENT_SECRET": "gs"}, [2]string{}, "NDIRO_OIDC_CLIENT_SECRET is required when NDIRO_OIDC_CLIENT_ID is set"},
		{"secret without id", ModeAWS, map[string]string{"NDIRO_OIDC_CLIENT_SECRET": "s"}, [2]string{}, "NDIRO_OIDC_CLIENT_ID is required when NDIRO_OIDC_CLIENT_SECRET is set"},
		{"google id without secret", ModeAWS, map[string]string{"GOOGLE_CLIENT_ID": "gid"}, [2]string{}, "GOOGLE_CLIENT_SECRET is required when GOOGLE_CLIENT_ID is set"},
		{"none in aws mode", ModeAWS, nil, [2]string{}, "are required when NDIRO_MODE=aws"},
		{"none in server mode", ModeServer, nil, [2]string{}, "are required when NDIRO_MODE=server"},
		{"half a pair in server mode", ModeServer, map[string]string{"NDIRO_OIDC_CLIENT_ID": "id"}, [2]string{}, "NDIRO_OIDC_CLIENT_SECRET is required when NDIRO_OIDC_CLIENT_ID is set"},
		{"own names in server mode", ModeServer, map[string]string{"NDIRO_OIDC_CLIENT_ID": "id", "NDIRO_OIDC_CLIENT_SECRET": "s"}, [2]string{"id", "s"}, ""},
		{"none in local mode", ModeLocal, nil, [2]string{}, ""},
		{"half a pair in local mode", ModeLocal, map[string]string{"GOOGLE_CLIENT_ID": "gid"}, [2]string{"gid", ""}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Mode: tc.mode}
			err := oidcClient(&c, env(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("oidcClient(%v) = %v, want an error saying %q", tc.env, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := [2]string{c.OIDCClientID, c.OIDCClientSecret}; got != tc.want {
				t.Errorf("oidcClient(%v) = %q, want %q", tc.env, got, tc.want)
			}
		})
	}
}

func TestAWSRequired(t *testing.T) {
	full := Config{Mode: ModeAWS, Region: "r", Bucket: "b", BaseURL: "https://x.org", AdminEmails: []string{"a@example.com"}}
	if err := awsRequired(&full, nil); err != nil {
		t.Errorf("awsRequired(complete) = %v, want nil", err)
	}
	if err := awsRequired(&Config{Mode: ModeLocal}, nil); err != nil {
		t.Errorf("awsRequired(local mode) = %v, want nil", err)
	}
	err := awsRequired(&Config{Mode: ModeAWS}, nil)
	for _, v := range []string{"AWS_REGION", "NDIRO_BUCKET", "NDIRO_BASE_URL", "ADMIN_EMAILS"} {
		if err == nil || !strings.Contains(err.Error(), v+" is required when NDIRO_MODE=aws") {
			t.Errorf("awsRequired(empty) = %v, want it to require %s", err, v)
		}
	}
	plain := full
	plain.BaseURL = "http://x.org"
	if err := awsRequired(&plain, nil); err == nil || !strings.Contains(err.Error(), "NDIRO_BASE_URL must use https") {
		t.Errorf("awsRequired(http base URL) = %v, want https required", err)
	}
}

func TestServerRequired(t *testing.T) {
	full := Config{Mode: ModeServer, BaseURL: "https://ndiro.example.org", AdminEmails: []string{"a@example.com"}}
	dir := env(map[string]string{"NDIRO_DATA_DIR": "/var/lib/ndiro"})
	if err := serverRequired(&full, dir); err != nil {
		t.Errorf("serverRequired(complete) = %v, want nil", err)
	}
	for _, mode := range []Mode{ModeLocal, ModeAWS} {
		if err := serverRequired(&Config{Mode: mode}, env(nil)); err != nil {
			t.Errorf("serverRequired(%s mode) = %v, want nil", mode, err)
		}
	}
	err := serverRequired(&Config{Mode: ModeServer}, env(nil))
	for _, want := range []string{"NDIRO_BASE_URL is required when NDIRO_MODE=server", "ADMIN_EMAILS is required when NDIRO_MODE=server", "NDIRO_DATA_DIR is required when NDIRO_MODE=server"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("serverRequired(empty) = %v, want it to say %q", err, want)
		}
	}
	plain := full
	plain.BaseURL = "http://ndiro.example.org"
	if err := serverRequired(&plain, dir); err == nil || !strings.Contains(err.Error(), "NDIRO_BASE_URL must use https when NDIRO_MODE=server") {
		t.Errorf("serverRequired(http base URL) = %v, want https required", err)
	}
	for _, rel := range []string{"./var", "var", "~/ndiro"} {
		if err := serverRequired(&full, env(map[string]string{"NDIRO_DATA_DIR": rel})); err == nil || !strings.Contains(err.Error(), "NDIRO_DATA_DIR must be an absolute path") {
			t.Errorf("serverRequired(NDIRO_DATA_DIR=%s) = %v, want an absolute path required", rel, err)
		}
	}
}

func TestProduction(t *testing.T) {
	for mode, want := range map[Mode]bool{ModeLocal: false, ModeServer: true, ModeAWS: true} {
		if got := (Config{Mode: mode}).Production(); got != want {
			t.Errorf("Config{Mode: %s}.Production() = %v, want %v", mode, got, want)
		}
	}
}

// TestOptionsDefaults checks each row's default by loading an empty
// environment through the row alone: what README.md's table promises.
func TestOptionsDefaults(t *testing.T) {
	want := map[string]string{
		"NDIRO_MODE":              "local",
		"NDIRO_ADDR":              "127.0.0.1:8080",
		"NDIRO_DATA_DIR":          "./var",
		"NDIRO_TABLE_PREFIX":      "ndiro-",
		"NDIRO_OIDC_ISSUER":       "https://accounts.google.com",
		"NDIRO_OIDC_NAME":         "Google",
		"NDIRO_PHOTO_CACHE_BYTES": "67108864",
		"NDIRO_IMPORT_MAX_BYTES":  "8589934592", // 8 GiB
		// One import upload an owner and four in all; closed under 64 KiB a minute.
		"NDIRO_IMPORT_STAGING_PER_OWNER": "1",
		"NDIRO_IMPORT_STAGING_MAX":       "4",
		"NDIRO_IMPORT_MIN_BYTES":         "65536",
		"NDIRO_IMPORT_MIN_WINDOW":        "1m0s",
		// The 50,000 meals an owner is promised; 64 GiB, twice what the
		// default import limit stores.
		"NDIRO_QUOTA_MEALS": "50000",
		"NDIRO_QUOTA_BYTES": "68719476736",
		// The storage budgets: a stalled backend fails a page in seconds.
		"NDIRO_STORAGE_ITEM_TIMEOUT":     "4s",
		"NDIRO_STORAGE_QUERY_TIMEOUT":    "10s",
		"NDIRO_STORAGE_TRANSFER_TIMEOUT": "30s",
		"NDIRO_STORAGE_ATTEMPTS":         "3",
		"NDIRO_STORAGE_MAX_BACKOFF":      "500ms",
		"NDIRO_ORPHAN_GRACE":             "1h0m0s",
		"NDIRO_MOVE_MARK_DAYS":           "30",
		"NDIRO_LOG_LEVEL":                "info",
		// A crashed writer's lease is taken a minute after its last renewal.
		"NDIRO_LEASE_TTL":   "1m0s",
		"NDIRO_LEASE_RENEW": "10s",
	}
	for _, o := range options {
		if o.def != want[o.env] {
			t.Errorf("%s defaults to %q, want %q", o.env, o.def, want[o.env])
		}
	}
}

// TestREADMEListsEveryOption keeps README.md's settings table and the
// options table the same set of variables, so neither drifts.
func TestREADMEListsEveryOption(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n## Settings\n")
	if !ok {
		t.Fatal("README.md has no ## Settings section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	var documented []string
	row := regexp.MustCompile("(?m)^\\| ((?:`[A-Z0-9_]+`(?:, )?)+) \\|")
	for _, m := range row.FindAllStringSubmatch(table, -1) {
		for _, v := range regexp.MustCompile("`([A-Z0-9_]+)`").FindAllStringSubmatch(m[1], -1) {
			documented = append(documented, v[1])
		}
	}
	read := []string{"NDIRO_OIDC_CLIENT_ID", "NDIRO_OIDC_CLIENT_SECRET", "GOOGLE_CLIENT_ID", "GOOGLE_CLIENT_SECRET"} // oidcClient's
	for _, o := range options {
		read = append(read, o.env)
	}
	slices.Sort(documented)
	slices.Sort(read)
	if d := cmp.Diff(read, documented); d != "" {
		t.Errorf("README.md's settings table and the options differ (-options +README):\n%s", d)
	}
}

func TestParseLease(t *testing.T) {
	bad := "must be a duration from 1s to 10m"
	runOption(t, "NDIRO_LEASE_TTL", []optionCase{
		{name: "seconds", value: "45s", want: Config{Lease: Lease{TTL: 45 * time.Second}}},
		{name: "10m", value: "10m", want: Config{Lease: Lease{TTL: 10 * time.Minute}}},
		{name: "under 1s", value: "500ms", wantErr: bad},
		{name: "over 10m", value: "11m", wantErr: bad},
		{name: "no unit", value: "60", wantErr: bad},
	})
	runOption(t, "NDIRO_LEASE_RENEW", []optionCase{
		{name: "seconds", value: "5s", want: Config{Lease: Lease{Renew: 5 * time.Second}}},
		{name: "zero", value: "0s", wantErr: bad},
	})
}

// TestLeaseWindow: the write window (TTL less the longest storage budget
// and a tenth of TTL) must hold two renewals.
func TestLeaseWindow(t *testing.T) {
	c := Config{Mode: ModeAWS, Storage: Storage{Item: time.Second, Query: 2 * time.Second, Transfer: 5 * time.Second}, Lease: Lease{TTL: 20 * time.Second, Renew: 5 * time.Second}}
	if g := c.LeaseGuard(); g != 7*time.Second {
		t.Errorf("LeaseGuard = %s, want 7s (5s + 20s/10)", g)
	}
	if err := leaseWindow(&c, nil); err != nil {
		t.Errorf("window 13s for renewals every 5s: %v, want nil", err)
	}
	c.Lease.Renew = 6*time.Second + 500*time.Millisecond + time.Millisecond
	if err := leaseWindow(&c, nil); err == nil || !strings.Contains(err.Error(), "NDIRO_LEASE_RENEW") {
		t.Errorf("window 13s for renewals every 6.501s: %v, want it refused naming NDIRO_LEASE_RENEW", err)
	}
	c.Mode = ModeLocal
	if err := leaseWindow(&c, nil); err != nil {
		t.Errorf("local mode (no lease) with a short window: %v, want nil", err)
	}
	aws := map[string]string{"NDIRO_MODE": "aws", "AWS_REGION": "eu-central-1", "NDIRO_BUCKET": "b", "NDIRO_BASE_URL": "https://ndiro.example.org",
		"GOOGLE_CLIENT_ID": "id", "GOOGLE_CLIENT_SECRET": "secret", "ADMIN_EMAILS": "a@example.com", "NDIRO_LEASE_TTL": "40s"}
	// 30s + 4s leave 6s; 30s + 20s is 50s of the TTL's nine tenths: 56s.
	if _, err := Load(env(aws)); err == nil || !strings.Contains(err.Error(), "write window of 6s") || !strings.Contains(err.Error(), "at least 56s") {
		t.Errorf("Load in AWS mode with a 40s TTL and the default budgets = %v, want it refused (window 6s, at least 56s)", err)
	}
	aws["NDIRO_LEASE_TTL"] = "56s"
	if _, err := Load(env(aws)); err != nil {
		t.Errorf("Load in AWS mode with the suggested 56s TTL = %v, want it taken", err)
	}
}
