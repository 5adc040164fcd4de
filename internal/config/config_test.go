package config

import (
	"strings"
	"testing"

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
		AdminEmails:     []string{"admin@example.com"},
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
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got.BaseURL != "https://ndiro.example.org" || got.PhotoCacheBytes != 0 || got.TrustedProxyHeader != "X-Forwarded-For" ||
		!cmp.Equal(got.AdminEmails, []string{"a@example.com", "b@example.com"}) {
		t.Errorf("Load(aws) = %+v", got)
	}
	if !got.IsAdminEmail("B@EXAMPLE.COM") || got.IsAdminEmail("c@example.com") {
		t.Error("IsAdminEmail is wrong")
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
		{map[string]string{"NDIRO_PHOTO_CACHE_BYTES": "-1"}, []string{"NDIRO_PHOTO_CACHE_BYTES"}},
		{map[string]string{"NDIRO_PHOTO_CACHE_BYTES": "64MB"}, []string{"NDIRO_PHOTO_CACHE_BYTES"}},
		{map[string]string{"ADMIN_EMAILS": "admin"}, []string{"ADMIN_EMAILS"}},
		{map[string]string{"NDIRO_TRUSTED_PROXY_HEADER": "X Forwarded For"}, []string{"NDIRO_TRUSTED_PROXY_HEADER"}},
		{map[string]string{"NDIRO_TRUSTED_PROXY_HEADER": "X-Forwarded-For:"}, []string{"NDIRO_TRUSTED_PROXY_HEADER"}},
		{map[string]string{"NDIRO_TRUSTED_PROXY_HEADER": "forwarded"}, []string{"NDIRO_TRUSTED_PROXY_HEADER"}},
		{map[string]string{"NDIRO_TRUSTED_PROXY_HEADER": "Host"}, []string{"NDIRO_TRUSTED_PROXY_HEADER"}},
		{map[string]string{"NDIRO_MODE": "aws"}, []string{"AWS_REGION", "NDIRO_BUCKET", "GOOGLE_CLIENT_ID", "GOOGLE_CLIENT_SECRET", "NDIRO_BASE_URL", "ADMIN_EMAILS"}},
		{map[string]string{"NDIRO_MODE": "aws", "NDIRO_BASE_URL": "http://x.org"}, []string{"https"}},
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
