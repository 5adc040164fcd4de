package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/lease"
	"ndiro/internal/user"
)

// TestAWSModeReadinessNamesTheLease: in AWS mode /readyz checks the
// writer lease and has no local storage; once another process takes the
// lease, it is the lease line, and only it, that says what is wrong.
func TestAWSModeReadinessNamesTheLease(t *testing.T) {
	env, tables := apptest.Local(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", apptest.Expose(t, env.DynamoEndpoint))
	t.Setenv("AWS_ENDPOINT_URL_S3", apptest.Expose(t, env.S3Endpoint))
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	op := provider(t)
	base, _ := startServer(t, map[string]string{
		"NDIRO_MODE": "aws", "AWS_REGION": "us-east-1", "NDIRO_ADDR": "127.0.0.1:0",
		"NDIRO_OIDC_ISSUER": op.Issuer(), "NDIRO_OIDC_CLIENT_ID": op.ClientID, "NDIRO_OIDC_CLIENT_SECRET": op.ClientSecret,
		"NDIRO_BASE_URL": "https://ndiro.example.org", "ADMIN_EMAILS": "admin@example.org",
		"NDIRO_TABLE_PREFIX": strings.TrimSuffix(tables.Users.Name, "users"), "NDIRO_BUCKET": "test-photos",
		"NDIRO_LEASE_TTL": "10s", "NDIRO_LEASE_RENEW": "1s",
		"NDIRO_STORAGE_ITEM_TIMEOUT": "2s", "NDIRO_STORAGE_QUERY_TIMEOUT": "2s", "NDIRO_STORAGE_TRANSFER_TIMEOUT": "2s",
	})
	readyz := func() (int, string) {
		t.Helper()
		r, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b)
	}
	if code, body := readyz(); code != http.StatusOK || body != "ready\nDynamoDB: ok\nS3: ok\nlease: ok\n" {
		t.Fatalf("/readyz = %d %q, want 200 with DynamoDB, S3 and the lease ok, and no local storage", code, body)
	}

	// Another process takes the lease over: the next renewal finds it.
	store := lease.Dynamo{DB: env.DynamoDB, Table: tables.Users.Name, PK: "user_id", Key: user.LeaseKey}
	ctx := context.Background()
	cur, found, err := store.Read(ctx)
	if err != nil || !found {
		t.Fatalf("lease item: found %v, %v", found, err)
	}
	taken := lease.Record{Holder: "web-2 pid 7", Instance: "other", Counter: cur.Counter + 1000, Until: time.Now().Add(time.Hour).UTC(), TTL: 10 * time.Second}
	if err := store.Write(ctx, taken, cur.Counter); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	code, body := readyz()
	for code == http.StatusOK && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // the renewal runs on its own timer
		code, body = readyz()
	}
	if code != http.StatusServiceUnavailable || strings.Contains(body, "local storage") ||
		!strings.HasPrefix(body, "not ready\nDynamoDB: ok\nS3: ok\nlease: ") || strings.HasSuffix(body, "lease: ok\n") {
		t.Errorf("/readyz after the lease was taken = %d %q, want 503 whose lease line says what is wrong, and no local storage", code, body)
	}
}
