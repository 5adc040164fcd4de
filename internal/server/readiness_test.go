package server_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/readiness"
	"ndiro/internal/storage"
)

// readyBudget is the item budget the readiness tests run with: the
// deadline of readiness's checks.
const readyBudget = 2 * time.Second

// readyMargin is what a loaded machine may add to the deadline before
// /readyz answers.
const readyMargin = 3 * time.Second

// TestReadinessFollowsBackends: with S3, then DynamoDB, accepting
// connections and never answering, /readyz turns 503 naming it within
// the item budget (its deadline) while /healthz stays 200; once the
// backend answers again, the next check past readiness.CacheFor is 200.
func TestReadinessFollowsBackends(t *testing.T) {
	t.Parallel()
	app := apptest.New(t, apptest.Options{Links: true, Env: map[string]string{
		"NDIRO_STORAGE_ITEM_TIMEOUT": readyBudget.String(),
		"NDIRO_STORAGE_ATTEMPTS":     "2",
		"NDIRO_STORAGE_MAX_BACKOFF":  "10ms",
	}})
	c := app.Client()
	const ready = "ready\nDynamoDB: ok\nS3: ok\nlocal storage: ok\n" // local mode: no lease
	if r := c.Get("/readyz"); r.StatusCode != http.StatusOK || r.Body != ready {
		t.Fatalf("/readyz = %d %q, want 200 %q", r.StatusCode, r.Body, ready)
	}
	for _, tc := range []struct {
		name, op string
		link     *apptest.Link
		want     string
	}{
		{"S3", "HeadBucket", app.S3Link, "not ready\nDynamoDB: ok\nS3: not answering (no answer within 2s)\nlocal storage: ok\n"},
		{"DynamoDB", "DescribeTable", app.DynamoLink, "not ready\nDynamoDB: not answering (no answer within 2s)\nS3: ok\nlocal storage: ok\n"},
	} {
		tc.link.Stall()
		app.Clock.Advance(readiness.CacheFor)
		before := scrape(t, app)
		start := time.Now()
		r := c.Get("/readyz")
		took := time.Since(start)
		if r.StatusCode != http.StatusServiceUnavailable || r.Body != tc.want {
			t.Errorf("%s stalled: /readyz = %d %q, want 503 %q", tc.name, r.StatusCode, r.Body, tc.want)
		}
		if took > readyBudget+readyMargin {
			t.Errorf("%s stalled: /readyz took %s, want at most its deadline %s (+%s)", tc.name, took, readyBudget, readyMargin)
		}
		// The stalled call is counted as such, outside its bounds.
		unavailable := map[string]string{"service": tc.name, "operation": tc.op, "result": "unavailable"}
		if got := value(scrape(t, app), "ndiro_storage_calls_total", unavailable) - value(before, "ndiro_storage_calls_total", unavailable); got != 1 {
			t.Errorf("%s stalled: ndiro_storage_calls_total%v moved by %v, want 1", tc.name, unavailable, got)
		}
		if h := c.Get("/healthz"); h.StatusCode != http.StatusOK {
			t.Errorf("%s stalled: /healthz = %d, want 200 (liveness only)", tc.name, h.StatusCode)
		}
		// Within CacheFor the stalled result is reused: no wait.
		start = time.Now()
		if r := c.Get("/readyz"); r.StatusCode != http.StatusServiceUnavailable || time.Since(start) > readyMargin {
			t.Errorf("%s stalled, probed again: /readyz = %d after %s, want the cached 503 at once", tc.name, r.StatusCode, time.Since(start))
		}
		tc.link.Restore()
		app.Clock.Advance(readiness.CacheFor)
		if r := c.Get("/readyz"); r.StatusCode != http.StatusOK || r.Body != ready {
			t.Errorf("%s answering again: /readyz = %d %q, want 200 %q", tc.name, r.StatusCode, r.Body, ready)
		}
	}
}

// TestReadinessReportsLocalStorageAndLease: a failed journal (the write
// health hook) and a lease not held make /readyz 503 at once, each named,
// with no cache in between; both well again, 200.
func TestReadinessReportsLocalStorageAndLease(t *testing.T) {
	t.Parallel()
	var health, lease error
	app := apptest.New(t, apptest.Options{
		WriteHealth: func() error { return health },
		Lease:       func() error { return lease },
	})
	c := app.Client()
	if r := c.Get("/readyz"); r.StatusCode != http.StatusOK {
		t.Fatalf("/readyz = %d %q, want 200", r.StatusCode, r.Body)
	}
	health = fmt.Errorf("localenv: journal /data/dynamodb.journal: %w: %w", storage.ErrFull, errors.New("no space left on device"))
	if r := c.Get("/readyz"); r.StatusCode != http.StatusServiceUnavailable ||
		r.Body != "not ready\nDynamoDB: ok\nS3: ok\nlocal storage: refusing writes: the disk is full\nlease: ok\n" {
		t.Errorf("journal failed: /readyz = %d %q, want 503 naming local storage", r.StatusCode, r.Body)
	}
	health, lease = nil, errors.New("not held: host b holds it until 12:00:05Z")
	if r := c.Get("/readyz"); r.StatusCode != http.StatusServiceUnavailable ||
		r.Body != "not ready\nDynamoDB: ok\nS3: ok\nlocal storage: ok\nlease: not held: host b holds it until 12:00:05Z\n" {
		t.Errorf("lease lost: /readyz = %d %q, want 503 naming the lease", r.StatusCode, r.Body)
	}
	lease = nil
	if r := c.Get("/readyz"); r.StatusCode != http.StatusOK {
		t.Errorf("all well again: /readyz = %d %q, want 200", r.StatusCode, r.Body)
	}
}
