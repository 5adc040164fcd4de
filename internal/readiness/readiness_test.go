package readiness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/smithy-go"

	"ndiro/internal/storage"
)

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func get(t *testing.T, c *Checker) (int, string) {
	t.Helper()
	w := httptest.NewRecorder()
	c.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", cc)
	}
	return w.Code, w.Body.String()
}

// TestAnswer: 200 "ready" with every check fine; 503 naming the one that
// is not, with its problem worded without the error's details.
func TestAnswer(t *testing.T) {
	secret := errors.New("dial tcp 10.1.2.3:443: AKIAEXAMPLE refused")
	for _, tc := range []struct {
		name       string
		dynamo, s3 error
		local      error
		wantStatus int
		wantBody   string
	}{
		{"all fine", nil, nil, nil, 200, "ready\nDynamoDB: ok\nS3: ok\nlocal storage: ok\n"},
		{"S3 stalled", nil, &storage.UnavailableError{Service: "S3", Operation: "HeadBucket", Err: secret}, nil, 503,
			"not ready\nDynamoDB: ok\nS3: not answering (no answer within 2s)\nlocal storage: ok\n"},
		{"DynamoDB refused", &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "user arn:aws:iam::123:user/x"}, nil, nil, 503,
			"not ready\nDynamoDB: refused the check (AccessDeniedException)\nS3: ok\nlocal storage: ok\n"},
		{"DynamoDB failed otherwise", secret, nil, nil, 503, "not ready\nDynamoDB: failed after 0s\nS3: ok\nlocal storage: ok\n"},
		{"disk full", nil, nil, fmt.Errorf("journal /var/lib/x: %w", storage.ErrFull), 503,
			"not ready\nDynamoDB: ok\nS3: ok\nlocal storage: refusing writes: the disk is full\n"},
		{"disk failed", nil, nil, fmt.Errorf("journal: %w", storage.ErrFailed), 503,
			"not ready\nDynamoDB: ok\nS3: ok\nlocal storage: refusing writes: the data files cannot be written\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New([]Backend{
				{Name: "DynamoDB", Deadline: 2 * time.Second, Check: func(context.Context) error { return tc.dynamo }},
				{Name: "S3", Deadline: 2 * time.Second, Check: func(context.Context) error { return tc.s3 }},
			}, []Local{{Name: "local storage", Check: func() error { return tc.local }}}, (&clock{}).Now)
			status, body := get(t, c)
			if status != tc.wantStatus || body != tc.wantBody {
				t.Errorf("/readyz = %d %q, want %d %q", status, body, tc.wantStatus, tc.wantBody)
			}
			if strings.Contains(body, "10.1.2.3") || strings.Contains(body, "AKIA") || strings.Contains(body, "arn:") {
				t.Errorf("/readyz body %q shows the error's details", body)
			}
		})
	}
}

// TestLocalChecksAreNotCached: a journal that fails (or a lease lost)
// shows on the next probe, cache or not; a nil Check is fine.
func TestLocalChecksAreNotCached(t *testing.T) {
	var lease atomic.Pointer[error]
	c := New(nil, []Local{
		{Name: "local storage"},
		{Name: "lease", Check: func() error {
			if p := lease.Load(); p != nil {
				return *p
			}
			return nil
		}},
	}, (&clock{}).Now)
	if status, body := get(t, c); status != 200 || body != "ready\nlocal storage: ok\nlease: ok\n" {
		t.Fatalf("/readyz = %d %q, want 200", status, body)
	}
	lost := errors.New("held by host b until 12:00:05")
	lease.Store(&lost)
	if status, body := get(t, c); status != 503 || body != "not ready\nlocal storage: ok\nlease: held by host b until 12:00:05\n" {
		t.Errorf("/readyz with the lease lost = %d %q, want 503 naming the holder", status, body)
	}
}

// TestOneCheckPerCacheFor: probes within CacheFor reuse the result;
// probes arriving while a check runs wait for that one (held at a
// barrier, so all of them are waiting); after CacheFor a new check runs.
func TestOneCheckPerCacheFor(t *testing.T) {
	clk := &clock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	var calls atomic.Int32
	const probes = 20
	release := make(chan struct{})
	entered := make(chan struct{}, probes)
	c := New([]Backend{{Name: "DynamoDB", Deadline: time.Minute, Check: func(ctx context.Context) error {
		calls.Add(1)
		entered <- struct{}{}
		<-release
		return nil
	}}}, nil, clk.Now)

	var wg sync.WaitGroup
	results := make([]Result, probes)
	for i := range probes {
		wg.Go(func() { results[i] = c.Check(context.Background()) })
	}
	<-entered // one check runs, and holds
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("%d probes at once made %d checks, want 1", probes, n)
	}
	for i, r := range results {
		if !r.Ready {
			t.Errorf("probe %d = %+v, want ready", i, r)
		}
	}
	clk.advance(CacheFor - time.Millisecond)
	c.Check(context.Background())
	if n := calls.Load(); n != 1 {
		t.Errorf("a probe within CacheFor made a check (%d in all), want the cached result", n)
	}
	clk.advance(time.Millisecond)
	c.Check(context.Background())
	if n := calls.Load(); n != 2 {
		t.Errorf("a probe CacheFor after the check made %d checks in all, want 2", n)
	}
}

// TestStalledBackendWithinDeadline: a check that never returns by
// itself ends at its deadline, reported as not answering.
func TestStalledBackendWithinDeadline(t *testing.T) {
	const deadline = 200 * time.Millisecond
	c := New([]Backend{{Name: "S3", Deadline: deadline, Check: func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}}}, nil, (&clock{}).Now)
	start := time.Now()
	status, body := get(t, c)
	took := time.Since(start)
	if status != 503 || body != "not ready\nS3: not answering (no answer within 200ms)\n" {
		t.Errorf("/readyz = %d %q, want 503, S3 not answering", status, body)
	}
	if took < deadline || took > deadline+5*time.Second {
		t.Errorf("/readyz answered after %s, want at its deadline %s", took, deadline)
	}
}

// TestCallerGivesUp: a probe whose own context ends stops waiting, and
// the check it started still completes for the next probe.
func TestCallerGivesUp(t *testing.T) {
	release := make(chan struct{})
	c := New([]Backend{{Name: "S3", Deadline: time.Minute, Check: func(context.Context) error {
		<-release
		return nil
	}}}, nil, (&clock{}).Now)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := c.Check(ctx); r.Ready {
		t.Errorf("Check with an ended context = %+v, want not ready", r)
	}
	close(release)
	if r := c.Check(context.Background()); !r.Ready {
		t.Errorf("Check after the check returned = %+v, want ready", r)
	}
}
