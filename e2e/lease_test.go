//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"ndiro/internal/dynamo"
)

// The one-writer test's lease settings: a short TTL, so the wait after a
// crash is short, with storage budgets short enough that the write window
// (TTL less the longest budget and a tenth of TTL) holds two renewals.
const (
	leaseTTL   = 20 * time.Second
	leaseRenew = 2 * time.Second
)

// TestOneWriter runs the release binary in AWS mode as an upgrade and a
// crash would: a session survives a restart (the same cookie opens
// /meals); a second process against the same tables refuses to start,
// naming the holder; after the holder is killed with SIGKILL a new one
// starts once the lease's TTL has passed, not before, and takes writes
// with the same cookie.
func TestOneWriter(t *testing.T) {
	s := loadSettings(t)
	ctx := context.Background()
	db, s3c := clients(s)
	run := randomHex(t, 4)
	tablePrefix := "e2e-" + run + "-"
	bucket := "ndiro-e2e-" + run
	if err := dynamo.CreateTables(ctx, db, dynamo.NewTables(tablePrefix)); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	cert, pool := selfSigned(t)
	h := &harness{t: t, s: s, base: "https://" + s.ProxyAddr, issuer: s.Issuer}
	h.rec = &recorder{base: &http.Transport{TLSClientConfig: tlsConfig(pool)}}
	env := []string{
		"NDIRO_MODE=aws", "NDIRO_ADDR=127.0.0.1:0", "NDIRO_BASE_URL=" + h.base,
		"NDIRO_TABLE_PREFIX=" + tablePrefix, "NDIRO_BUCKET=" + bucket, "ADMIN_EMAILS=" + admin.email,
		"AWS_REGION=" + region, "AWS_ACCESS_KEY_ID=" + accessKey, "AWS_SECRET_ACCESS_KEY=" + secretKey,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_ENDPOINT_URL_DYNAMODB=" + s.DynamoDB, "AWS_ENDPOINT_URL_S3=" + s.S3,
		"NDIRO_OIDC_ISSUER=" + s.Issuer, "NDIRO_OIDC_CLIENT_ID=" + s.ClientID, "NDIRO_OIDC_CLIENT_SECRET=" + s.ClientSecret,
		"NDIRO_STORAGE_ITEM_TIMEOUT=2s", "NDIRO_STORAGE_QUERY_TIMEOUT=4s", "NDIRO_STORAGE_TRANSFER_TIMEOUT=6s",
		"NDIRO_ORPHAN_GRACE=1m", "NDIRO_LEASE_TTL=" + leaseTTL.String(), "NDIRO_LEASE_RENEW=" + leaseRenew.String(),
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}

	first := start(t, s.Bin, env)
	px := startProxy(t, s.ProxyAddr, cert)
	px.forward(first.listenAddr(t))
	ac := h.client()
	if r := h.signIn(ac, "/login", admin); r.StatusCode != http.StatusSeeOther || r.Location() != "/meals" {
		t.Fatalf("admin sign-in = %d %q, want 303 /meals; body: %s", r.StatusCode, r.Location(), r.Body)
	}

	// An upgrade: SIGTERM (the lease is released), a new process takes
	// the lease at once, and the same cookie still opens /meals.
	first.terminate(t)
	if !first.exited(10*time.Second) || first.exitCode() != 0 {
		t.Fatalf("first process: no clean exit after SIGTERM; stderr: %s", first.stderr)
	}
	started := time.Now()
	second := start(t, s.Bin, env)
	px.forward(second.listenAddr(t))
	if took := time.Since(started); took > leaseTTL/2 {
		t.Errorf("a start after a clean stop took %s, want well under the lease TTL %s (the lease was released)", took, leaseTTL)
	}
	if r := ac.Get("/meals"); r.StatusCode != http.StatusOK {
		t.Fatalf("GET /meals with the cookie from before the restart = %d %q, want 200", r.StatusCode, r.Location())
	}
	if r := ac.PostForm("/account/name", map[string][]string{"name": {"Ada"}}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("a write on the second process = %d, want 303; body: %s", r.StatusCode, r.Body)
	}

	// A second process against the same tables refuses to start, naming
	// the holder and until when, within a few renewals.
	started = time.Now()
	third := start(t, s.Bin, env)
	if !third.exited(leaseTTL + 10*time.Second) {
		t.Fatal("a second process against the same tables kept running")
	}
	holder := fmt.Sprintf("%s pid %d", host, second.cmd.Process.Pid)
	if e := third.stderr.String(); third.exitCode() != 1 || !strings.Contains(e, "another process holds the writer lease: "+holder+", renewed until 20") {
		t.Errorf("second process: exit %d, stderr %q; want 1 and a message naming %q and until when", third.exitCode(), e, holder)
	}
	if took := time.Since(started); took > leaseTTL {
		t.Errorf("the refusal took %s, want it within the TTL %s (the counter moves every %s)", took, leaseTTL, leaseRenew)
	}
	if r := ac.Get("/meals"); r.StatusCode != http.StatusOK {
		t.Errorf("GET /meals on the holder after the refused start = %d, want 200", r.StatusCode)
	}

	// A crash: SIGKILL leaves the lease item behind. The next process
	// waits out the TTL on its own clock, then takes it.
	if err := second.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-second.done
	killed := time.Now()
	fourth := start(t, s.Bin, env)
	addr := fourth.listenAddr(t)
	took := time.Since(killed)
	if took < leaseTTL-leaseRenew || took > leaseTTL+10*time.Second {
		t.Errorf("the start after SIGKILL took %s, want the lease TTL %s give or take a renewal (it waits out the TTL, no longer)", took, leaseTTL)
	}
	px.forward(addr)
	if r := ac.Get("/meals"); r.StatusCode != http.StatusOK {
		t.Fatalf("GET /meals with the same cookie after the crash = %d, want 200", r.StatusCode)
	}
	if r := ac.PostForm("/account/name", map[string][]string{"name": {"Ada Lovelace"}}); r.StatusCode != http.StatusSeeOther {
		t.Errorf("a write on the process that took the lease = %d, want 303; body: %s", r.StatusCode, r.Body)
	}
	fourth.terminate(t)
	if !fourth.exited(10*time.Second) || fourth.exitCode() != 0 {
		t.Errorf("last process: no clean exit after SIGTERM; stderr: %s", fourth.stderr)
	}
	if !strings.Contains(fourth.stdout.String(), `"msg":"writer lease released"`) {
		t.Error("the last process did not log that it released the lease")
	}
}
