package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadDefaultsAreLocalMode(t *testing.T) {
	got, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Mode:            ModeLocal,
		Addr:            "127.0.0.1:8080",
		DataDir:         "./var",
		TablePrefix:     "ndiro-",
		PhotoCacheBytes: 64 << 20,
		ImportMaxBytes:  8 << 30,
		// One import upload an owner, four in all, closed under 64 KiB a minute.
		ImportStagingPerOwner: 1, ImportStagingMax: 4, ImportMinBytes: 64 << 10, ImportMinWindow: time.Minute,
		QuotaMeals:       DefaultQuotaMeals,
		QuotaBytes:       64 << 30,
		AdminEmails:      []string{"admin@example.com"},
		OIDCIssuer:       "https://accounts.google.com",
		OIDCName:         "Google",
		Storage:          Storage{Item: 4 * time.Second, Query: 10 * time.Second, Transfer: 30 * time.Second, Attempts: 3, MaxBackoff: 500 * time.Millisecond},
		OrphanGrace:      time.Hour,
		MoveMarkLifetime: DefaultMoveMarkDays * 24 * time.Hour,
		Lease:            Lease{TTL: time.Minute, Renew: 10 * time.Second},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Load(empty) mismatch (-want +got):\n%s", d)
	}
}

func TestLoadAWS(t *testing.T) {
	got, err := Load(env(map[string]string{
		"NDIRO_MODE": "aws", "AWS_REGION": "eu-central-1", "NDIRO_BUCKET": "b",
		"GOOGLE_CLIENT_ID": "id", "GOOGLE_CLIENT_SECRET": "secret",
		"NDIRO_BASE_URL": "https://ndiro.example.org/", "ADMIN_EMAILS": " A@Example.com, b@example.com ",
		"NDIRO_PHOTO_CACHE_BYTES": "0", "NDIRO_TRUSTED_PROXY_HEADER": "x-forwarded-for",
		"NDIRO_DECODE_BUDGET_BYTES": "100000000", "NDIRO_UPLOAD_WAIT": "45s",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got.DecodeBudget != 100000000 || got.UploadWait != 45*time.Second {
		t.Errorf("Load(aws) decode budget %d, upload wait %v; want 100000000 and 45s", got.DecodeBudget, got.UploadWait)
	}
	if got.BaseURL != "https://ndiro.example.org" || got.PhotoCacheBytes != 0 || got.TrustedProxyHeader != "X-Forwarded-For" ||
		!cmp.Equal(got.AdminEmails, []string{"a@example.com", "b@example.com"}) {
		t.Errorf("Load(aws) = %+v", got)
	}
	if !got.IsAdminEmail("B@EXAMPLE.COM") || got.IsAdminEmail("c@example.com") {
		t.Error("IsAdminEmail is wrong")
	}
}

func TestLoadServer(t *testing.T) {
	got, err := Load(env(map[string]string{
		"NDIRO_MODE": "server", "NDIRO_DATA_DIR": "/var/lib/ndiro", "NDIRO_BASE_URL": "https://ndiro.example.org",
		"ADMIN_EMAILS": "a@example.com", "NDIRO_OIDC_ISSUER": "https://sso.example.org/realms/home",
		"NDIRO_OIDC_CLIENT_ID": "ndiro", "NDIRO_OIDC_CLIENT_SECRET": "s3cret", "NDIRO_OIDC_NAME": "Keycloak",
		"NDIRO_TRUSTED_PROXY_HEADER": "X-Forwarded-For",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Mode: ModeServer, Addr: "127.0.0.1:8080", DataDir: "/var/lib/ndiro", TablePrefix: "ndiro-",
		BaseURL: "https://ndiro.example.org", PhotoCacheBytes: 64 << 20, ImportMaxBytes: 8 << 30, QuotaMeals: DefaultQuotaMeals, QuotaBytes: 64 << 30,
		ImportStagingPerOwner: 1, ImportStagingMax: 4, ImportMinBytes: 64 << 10, ImportMinWindow: time.Minute, AdminEmails: []string{"a@example.com"},
		TrustedProxyHeader: "X-Forwarded-For", OIDCName: "Keycloak", OIDCIssuer: "https://sso.example.org/realms/home",
		OIDCClientID: "ndiro", OIDCClientSecret: "s3cret",
		Storage: DefaultStorage, OrphanGrace: time.Hour, MoveMarkLifetime: DefaultMoveMarkDays * 24 * time.Hour, Lease: DefaultLease,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Load(server) mismatch (-want +got):\n%s", d)
	}
}

// awsWith returns a complete AWS-mode environment without any client
// variables, plus kv.
func awsWith(kv ...string) map[string]string {
	m := map[string]string{
		"NDIRO_MODE": "aws", "AWS_REGION": "eu-central-1", "NDIRO_BUCKET": "b",
		"NDIRO_BASE_URL": "https://ndiro.example.org", "ADMIN_EMAILS": "a@example.com",
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestLoadOIDC(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		// want is issuer, client ID, client secret, display name.
		want [4]string
	}{
		{"google names", awsWith("GOOGLE_CLIENT_ID", "gid", "GOOGLE_CLIENT_SECRET", "gsecret"),
			[4]string{"https://accounts.google.com", "gid", "gsecret", "Google"}},
		{"own provider", awsWith("NDIRO_OIDC_ISSUER", "https://sso.example.org/realms/home", "NDIRO_OIDC_CLIENT_ID", "ndiro", "NDIRO_OIDC_CLIENT_SECRET", "s3cret", "NDIRO_OIDC_NAME", "Example SSO"),
			[4]string{"https://sso.example.org/realms/home", "ndiro", "s3cret", "Example SSO"}},
		{"NDIRO_OIDC names win over Google's", awsWith("NDIRO_OIDC_CLIENT_ID", "ndiro", "NDIRO_OIDC_CLIENT_SECRET", "s3cret", "GOOGLE_CLIENT_ID", "gid", "GOOGLE_CLIENT_SECRET", "gsecret"),
			[4]string{"https://accounts.google.com", "ndiro", "s3cret", "Google"}},
		{"trailing slash kept", awsWith("NDIRO_OIDC_ISSUER", "https://sso.example.org/application/o/ndiro/", "NDIRO_OIDC_CLIENT_ID", "ndiro", "NDIRO_OIDC_CLIENT_SECRET", "s3cret"),
			[4]string{"https://sso.example.org/application/o/ndiro/", "ndiro", "s3cret", "Google"}},
		{"plain http on loopback", awsWith("NDIRO_OIDC_ISSUER", "http://127.0.0.1:9000", "NDIRO_OIDC_CLIENT_ID", "ndiro", "NDIRO_OIDC_CLIENT_SECRET", "s3cret"),
			[4]string{"http://127.0.0.1:9000", "ndiro", "s3cret", "Google"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if got := [4]string{c.OIDCIssuer, c.OIDCClientID, c.OIDCClientSecret, c.OIDCName}; got != tc.want {
				t.Errorf("Load() OIDC = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLoadErrorsNameTheVariable(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{"NDIRO_MODE": "prod"}, []string{"NDIRO_MODE"}},
		{map[string]string{"NDIRO_ADDR": "8080"}, []string{"NDIRO_ADDR"}},
		{map[string]string{"NDIRO_ADDR": "127.0.0.1:99999"}, []string{"NDIRO_ADDR"}},
		{map[string]string{"NDIRO_TABLE_PREFIX": "bad prefix!"}, []string{"NDIRO_TABLE_PREFIX"}},
		{map[string]string{"NDIRO_BASE_URL": "ndiro.example.org"}, []string{"NDIRO_BASE_URL"}},
		{map[string]string{"NDIRO_BASE_URL": "https://x.org/app"}, []string{"NDIRO_BASE_URL"}},
		{map[string]string{"NDIRO_BASE_URL": "https://x.org#a"}, []string{"NDIRO_BASE_URL"}},
		{map[string]string{"NDIRO_BASE_URL": "https://x.org#"}, []string{"NDIRO_BASE_URL"}},
		{map[string]string{"NDIRO_BASE_URL": "https://x.org?"}, []string{"NDIRO_BASE_URL"}},
		{map[string]string{"NDIRO_BASE_URL": "https://u:p@x.org"}, []string{"NDIRO_BASE_URL"}},
		{map[string]string{"NDIRO_PHOTO_CACHE_BYTES": "-1"}, []string{"NDIRO_PHOTO_CACHE_BYTES"}},
		{map[string]string{"NDIRO_PHOTO_CACHE_BYTES": "9223372036854775807"}, []string{"NDIRO_PHOTO_CACHE_BYTES"}},
		{map[string]string{"NDIRO_PHOTO_CACHE_BYTES": "64MB"}, []string{"NDIRO_PHOTO_CACHE_BYTES"}},
		{map[string]string{"NDIRO_DECODE_BUDGET_BYTES": "1000"}, []string{"NDIRO_DECODE_BUDGET_BYTES"}},
		{map[string]string{"NDIRO_UPLOAD_WAIT": "soon"}, []string{"NDIRO_UPLOAD_WAIT"}},
		{map[string]string{"ADMIN_EMAILS": "admin"}, []string{"ADMIN_EMAILS"}},
		{map[string]string{"ADMIN_EMAILS": " , "}, []string{"ADMIN_EMAILS holds no email address"}},
		{map[string]string{"NDIRO_TRUSTED_PROXY_HEADER": "X Forwarded For"}, []string{"NDIRO_TRUSTED_PROXY_HEADER"}},
		{map[string]string{"NDIRO_TRUSTED_PROXY_HEADER": "X-Forwarded-For:"}, []string{"NDIRO_TRUSTED_PROXY_HEADER"}},
		{map[string]string{"NDIRO_TRUSTED_PROXY_HEADER": "forwarded"}, []string{"NDIRO_TRUSTED_PROXY_HEADER"}},
		{map[string]string{"NDIRO_TRUSTED_PROXY_HEADER": "Host"}, []string{"NDIRO_TRUSTED_PROXY_HEADER"}},
		{map[string]string{"NDIRO_MODE": "aws"}, []string{"AWS_REGION", "NDIRO_BUCKET", "NDIRO_OIDC_CLIENT_ID", "NDIRO_OIDC_CLIENT_SECRET", "GOOGLE_CLIENT_ID", "GOOGLE_CLIENT_SECRET", "NDIRO_BASE_URL", "ADMIN_EMAILS"}},
		{map[string]string{"NDIRO_MODE": "aws", "NDIRO_BASE_URL": "http://x.org"}, []string{"https"}},
		{map[string]string{"NDIRO_MODE": "server"}, []string{"NDIRO_BASE_URL", "ADMIN_EMAILS", "NDIRO_DATA_DIR", "NDIRO_OIDC_CLIENT_ID", "NDIRO_OIDC_CLIENT_SECRET"}},
		{map[string]string{"NDIRO_MODE": "server", "NDIRO_BASE_URL": "http://x.org", "NDIRO_DATA_DIR": "var", "ADMIN_EMAILS": "a@example.com",
			"NDIRO_OIDC_CLIENT_ID": "id", "NDIRO_OIDC_CLIENT_SECRET": "s"}, []string{"NDIRO_BASE_URL must use https", "NDIRO_DATA_DIR must be an absolute path"}},
		{map[string]string{"NDIRO_OIDC_ISSUER": "http://sso.example.org/realms/home"}, []string{"NDIRO_OIDC_ISSUER"}},
		{map[string]string{"NDIRO_OIDC_ISSUER": "sso.example.org"}, []string{"NDIRO_OIDC_ISSUER"}},
		{map[string]string{"NDIRO_OIDC_ISSUER": "https://sso.example.org/?realm=home"}, []string{"NDIRO_OIDC_ISSUER"}},
		{map[string]string{"NDIRO_OIDC_NAME": strings.Repeat("x", 41)}, []string{"NDIRO_OIDC_NAME"}},
		{map[string]string{"NDIRO_OIDC_NAME": "Key\ncloak"}, []string{"NDIRO_OIDC_NAME"}},
		{map[string]string{"NDIRO_DEMO": "yes"}, []string{"NDIRO_DEMO"}},
		{awsWith("NDIRO_DEMO", "1", "GOOGLE_CLIENT_ID", "gid", "GOOGLE_CLIENT_SECRET", "gsecret"), []string{"NDIRO_DEMO works only in local mode"}},
		// Half a pair is refused, even with the other names set: the pair
		// is never mixed.
		{awsWith("NDIRO_OIDC_CLIENT_ID", "id", "GOOGLE_CLIENT_ID", "gid", "GOOGLE_CLIENT_SECRET", "gsecret"), []string{"NDIRO_OIDC_CLIENT_SECRET is required when NDIRO_OIDC_CLIENT_ID is set"}},
		{awsWith("NDIRO_OIDC_CLIENT_SECRET", "secret"), []string{"NDIRO_OIDC_CLIENT_ID is required when NDIRO_OIDC_CLIENT_SECRET is set"}},
		{awsWith("GOOGLE_CLIENT_ID", "gid"), []string{"GOOGLE_CLIENT_SECRET is required when GOOGLE_CLIENT_ID is set"}},
	} {
		_, err := Load(env(tc.env))
		if err == nil {
			t.Errorf("Load(%v) = nil error, want one naming %v", tc.env, tc.want)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Load(%v) = %q, want it to name %s", tc.env, err, w)
			}
		}
	}
}

func TestLoadDemo(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "0": false, "": false} {
		got, err := Load(env(map[string]string{"NDIRO_DEMO": v}))
		if err != nil || got.Demo != want {
			t.Errorf("NDIRO_DEMO=%q: Demo = %v (%v), want %v", v, got.Demo, err, want)
		}
	}
}
