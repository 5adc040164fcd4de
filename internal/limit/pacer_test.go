package limit

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fakeClock records the sleeps asked of it and moves its time by them.
type fakeClock struct {
	c     *clock
	slept []time.Duration
}

func (f *fakeClock) Now() time.Time { return f.c.now() }

func (f *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.slept = append(f.slept, d)
	f.c.advance(d)
	return nil
}

func TestPacer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fc := &fakeClock{c: newClock()}
	p := NewPacer(10, 20, fc) // 10 units a second, 20 at once
	if err := p.Wait(ctx, 20); err != nil || len(fc.slept) != 0 {
		t.Fatalf("Wait(20) within the burst = %v after sleeping %v, want no sleep", err, fc.slept)
	}
	if err := p.Wait(ctx, 5); err != nil || len(fc.slept) != 1 || fc.slept[0] != 500*time.Millisecond {
		t.Errorf("Wait(5) with the burst spent slept %v, want 500ms (5 units at 10/s)", fc.slept)
	}
	// A cost above the burst is charged as the burst, one below 1 as 1.
	fc.slept = nil
	if err := p.Wait(ctx, 1000); err != nil || len(fc.slept) != 1 || fc.slept[0] != 2*time.Second {
		t.Errorf("Wait(1000) slept %v, want 2s (charged as the burst of 20)", fc.slept)
	}
	fc.slept = nil
	if err := p.Wait(ctx, 0); err != nil || len(fc.slept) != 1 || fc.slept[0] != 100*time.Millisecond {
		t.Errorf("Wait(0) slept %v, want 100ms (charged as 1)", fc.slept)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := p.Wait(cctx, 5); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with the context ended = %v, want context.Canceled", err)
	}
}

func TestSystemClock(t *testing.T) {
	t.Parallel()
	var c SystemClock
	if d := time.Since(c.Now()); d < 0 || d > time.Minute {
		t.Errorf("SystemClock.Now is %v away from time.Now", d)
	}
	if err := c.Sleep(context.Background(), 0); err != nil {
		t.Errorf("Sleep(0) = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep(1h) with the context ended = %v, want context.Canceled at once", err)
	}
}

func TestNewRefusesUnusableRules(t *testing.T) {
	t.Parallel()
	for _, r := range []Rule{{Every: 0, Burst: 1, MaxKeys: 1}, {Every: time.Second, Burst: 0, MaxKeys: 1}, {Every: time.Second, Burst: 1, MaxKeys: 0}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%+v) did not panic", r)
				}
			}()
			New(r, time.Now)
		}()
	}
}
