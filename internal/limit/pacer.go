package limit

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Clock is the time a Pacer reads and waits on: the wall clock in
// production (SystemClock), a fake one in tests.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or returns ctx's error if ctx ends first.
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep waits d or until ctx ends.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Pacer keeps background work to a rate: one token bucket of units (read
// units of DynamoDB, requests to S3) refilled at perSecond, holding at most
// burst. Work calls Wait with what it costs and is held back until the
// bucket allows it, so over any interval t it spends at most
// perSecond·t + burst. It is safe for concurrent use; callers that share
// one Pacer share its rate.
type Pacer struct {
	mu    sync.Mutex
	lim   *rate.Limiter
	burst int
	clock Clock
}

// NewPacer returns a Pacer of perSecond units a second (> 0) and burst
// units at most at once (≥ 1).
func NewPacer(perSecond float64, burst int, clock Clock) *Pacer {
	return &Pacer{lim: rate.NewLimiter(rate.Limit(perSecond), max(burst, 1)), burst: max(burst, 1), clock: clock}
}

// Wait spends n units (at least 1, at most the burst: a larger cost is
// charged as the burst) and returns once the bucket allows it, or ctx's
// error if ctx ends first.
func (p *Pacer) Wait(ctx context.Context, n int) error {
	n = min(max(n, 1), p.burst)
	p.mu.Lock()
	now := p.clock.Now()
	d := p.lim.ReserveN(now, n).DelayFrom(now)
	p.mu.Unlock()
	if d <= 0 {
		return nil
	}
	return p.clock.Sleep(ctx, d)
}
