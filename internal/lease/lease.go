// Package lease keeps one process the only writer of a deployment's
// storage: the process holds a lease, one item it renews with a
// conditional write that bumps a renewal counter, and writes only while
// its last renewal is recent enough (deploy/README.md, one writer).
//
// The rules, each held by a test in lease_test.go:
//
//   - The holder renews every Options.Renew. A renewal is a conditional
//     write (the stored counter must be the one it wrote last) that stores
//     counter+1. Writes are allowed for Options.TTL − Options.Guard after
//     the renewal that succeeded was sent, measured on the holder's own
//     monotonic clock; past that, Err refuses them (storage.ErrNotWriter)
//     until a renewal succeeds again. Guard covers a write still in flight
//     when the window closes (the longest storage call budget) and clock
//     rate differences.
//   - A process that finds the item held by another watches the counter,
//     never the holder's wall clock: if the counter stays the same for TTL
//     on its own monotonic clock since it first saw it, the holder has
//     stopped writing (its window is shorter than TTL) and the lease is
//     taken with the same conditional write. A counter that moves means
//     the holder is alive: Acquire refuses to start (HeldError names the
//     holder and until when, as the holder last wrote it); a running
//     process that lost the lease keeps watching and takes it once it is
//     free.
//   - A renewal whose answer was lost but which was stored is recognised
//     by the instance ID on the item and adopted, not taken for a loss.
//   - A clean stop releases the item (Release), so the next start takes it
//     at once; after a crash the next start waits out TTL.
//
// Stalls of storage shorter than TTL − Guard cost nothing; longer ones
// pause writes, and the lease is renewed (or, if another process took
// it meanwhile, watched and re-acquired) when storage answers again.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"ndiro/internal/storage"
)

// Record is the lease item as stored.
type Record struct {
	// Holder names the holding process for people: host name and
	// process ID, "web-1 pid 4242".
	Holder string
	// Instance is a random ID of the holding process, so that it knows
	// its own writes.
	Instance string
	// Counter counts the lease's writes: every acquisition and renewal
	// stores the counter it read plus one, conditionally on it.
	Counter int64
	// Until is the holder's wall clock at the write plus TTL: shown in
	// messages only, never compared with another host's clock.
	Until time.Time
	// TTL is the holder's TTL; a taker waits the longer of it and its
	// own.
	TTL time.Duration
}

// ConflictError is a write refused because the stored item is not the
// one the write was conditional on. Current is the item as stored
// (Found false: there is none).
type ConflictError struct {
	Current Record
	Found   bool
}

func (e *ConflictError) Error() string {
	if !e.Found {
		return "lease: the lease item is gone"
	}
	return fmt.Sprintf("lease: the lease item is at counter %d, held by %s", e.Current.Counter, e.Current.Holder)
}

// Store reads and writes the lease item. Implementations: Dynamo; a map in
// tests.
type Store interface {
	// Read returns the item, found false if there is none.
	Read(ctx context.Context) (rec Record, found bool, err error)
	// Write stores rec if the stored item's counter is prev, or, for prev
	// 0, if there is no item; otherwise it returns a *ConflictError.
	Write(ctx context.Context, rec Record, prev int64) error
	// Delete removes the item if its counter is prev and its instance is
	// instance; otherwise it does nothing and returns nil.
	Delete(ctx context.Context, prev int64, instance string) error
}

// Clock is the lease's time: Now's monotonic reading measures every
// duration (time.Now's does; a test's fake clock moves on command), and
// After waits.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Options are a Lease's settings (NDIRO_LEASE_TTL, NDIRO_LEASE_RENEW;
// Guard is derived from the storage call budgets).
type Options struct {
	// TTL is how long the counter must stand still before another
	// process takes the lease.
	TTL time.Duration
	// Renew is how often the holder renews.
	Renew time.Duration
	// Guard is how much shorter than TTL the holder's write window is;
	// TTL − Guard must be more than Renew.
	Guard time.Duration
	// Holder names this process (host name and process ID).
	Holder string
	// Clock is time.Now and time.After when nil.
	Clock Clock
	Log   *slog.Logger
}

// Check returns an error saying what to change if o cannot hold a lease:
// TTL, Renew and Guard positive, and TTL − Guard at least twice Renew,
// so that one renewal can fail without closing the write window.
func (o Options) Check() error {
	switch {
	case o.TTL <= 0 || o.Renew <= 0 || o.Guard < 0:
		return fmt.Errorf("lease: TTL %s and renewal %s must be positive", o.TTL, o.Renew)
	case o.TTL-o.Guard < 2*o.Renew:
		return fmt.Errorf("lease: the write window, TTL %s minus %s for the longest storage call, is %s: it must be at least twice the renewal interval %s", o.TTL, o.Guard, o.TTL-o.Guard, o.Renew)
	}
	return nil
}

// HeldError is Acquire's refusal: another process renews the lease.
type HeldError struct {
	// Holder and Until are as the holder last wrote them.
	Holder string
	Until  time.Time
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("another process holds the writer lease: %s, renewed until %s by its own clock. Only one ndiro process may write to these tables; stop the other one (a stopped process releases the lease; a crashed one's lapses after the lease TTL)", e.Holder, e.Until.UTC().Format(time.RFC3339))
}

// State is what the lease is doing, for the readiness check, metrics and
// the admin monitor (State).
type State struct {
	// Held: this process may write now.
	Held bool
	// Owner: this process holds the counter (it may still be outside
	// its write window, while renewals fail).
	Owner bool
	// Holder is the holder as last seen ("" if none was seen).
	Holder string
	// Counter is the renewal counter as last seen.
	Counter int64
	// WindowLeft is how long writes stay allowed without another
	// renewal (0 when not Held).
	WindowLeft time.Duration
	// LastErr is the last failed read or write of the item ("" after a
	// success).
	LastErr string
}

// Lease is one process's hold on the lease. Its methods are safe for
// concurrent use.
type Lease struct {
	store    Store
	o        Options
	clock    Clock
	log      *slog.Logger
	instance string
	retry    time.Duration
	err      error // Err's refusal, made once

	mu sync.Mutex
	// owner: this process wrote the stored counter last (rec).
	owner bool
	rec   Record
	// until closes the write window (monotonic); zero when not owner.
	until time.Time
	// seen and seenAt: the counter as a watcher first saw it, and when
	// (seenFound false: no item was there).
	seen      Record
	seenFound bool
	seenAt    time.Time
	lastErr   error
	paused    bool // the window closed and was logged so
}

// New returns a Lease on store that holds nothing yet (Acquire, Run).
func New(store Store, o Options) (*Lease, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("lease: instance id: %w", err)
	}
	l := &Lease{store: store, o: o, clock: o.Clock, log: o.Log, instance: hex.EncodeToString(b[:])}
	if l.clock == nil {
		l.clock = realClock{}
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	l.retry = min(time.Second, o.Renew)
	l.err = fmt.Errorf("%w: its last renewal is older than the write window", storage.ErrNotWriter)
	return l, nil
}

// Err returns nil while this process may write, and otherwise an error
// wrapping storage.ErrNotWriter (the write gate: web answers it with a
// 503 and Retry-After, background writers wait and try again).
func (l *Lease) Err() error {
	now := l.clock.Now()
	l.mu.Lock()
	ok := l.owner && now.Before(l.until)
	l.mu.Unlock()
	if ok {
		return nil
	}
	return l.err
}

// State returns what the lease is doing now.
func (l *Lease) State() State {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	s := State{Owner: l.owner, Holder: l.seen.Holder, Counter: l.seen.Counter}
	if l.owner {
		s.Holder, s.Counter = l.rec.Holder, l.rec.Counter
		if now.Before(l.until) {
			s.Held, s.WindowLeft = true, l.until.Sub(now)
		}
	}
	if l.lastErr != nil {
		s.LastErr = l.lastErr.Error()
	}
	return s
}

// Acquire takes the lease at start-up: at once if there is no item; after
// TTL if the counter does not move meanwhile (its holder stopped without
// releasing it: a crash). If the counter moves, the holder is alive and
// Acquire returns a *HeldError. Read and write errors are returned as
// they are; ctx bounds the wait.
func (l *Lease) Acquire(ctx context.Context) error {
	for {
		wait, err := l.watch(ctx, true)
		if err != nil {
			return err
		}
		if l.State().Owner {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.clock.After(wait):
		}
	}
}

// Run renews the lease while held, and watches and re-takes it when it
// was lost, until ctx ends.
func (l *Lease) Run(ctx context.Context) {
	for {
		wait := l.Step(ctx)
		select {
		case <-ctx.Done():
			return
		case <-l.clock.After(wait):
		}
	}
}

// Step does one round of Run's work, a renewal or a look at the item,
// and returns how long to wait before the next.
func (l *Lease) Step(ctx context.Context) time.Duration {
	l.mu.Lock()
	owner := l.owner
	l.mu.Unlock()
	if owner {
		return l.renew(ctx)
	}
	wait, _ := l.watch(ctx, false)
	return wait
}

// record is what this process writes at counter n.
func (l *Lease) record(now time.Time, n int64) Record {
	return Record{Holder: l.o.Holder, Instance: l.instance, Counter: n, Until: now.Add(l.o.TTL).Round(0).UTC(), TTL: l.o.TTL}
}

// renew writes the next counter; see the package rules.
func (l *Lease) renew(ctx context.Context) time.Duration {
	l.mu.Lock()
	prev := l.rec.Counter
	l.mu.Unlock()
	sent := l.clock.Now()
	rec := l.record(sent, prev+1)
	err := l.store.Write(ctx, rec, prev)
	l.mu.Lock()
	defer l.mu.Unlock()
	var conflict *ConflictError
	switch {
	case err == nil:
		l.rec, l.until, l.lastErr = rec, sent.Add(l.o.TTL-l.o.Guard), nil
		if l.paused {
			l.paused = false
			l.log.Info("writer lease renewed: writes resume", "counter", rec.Counter)
		}
		return l.o.Renew
	case errors.As(err, &conflict) && conflict.Found && conflict.Current.Instance == l.instance:
		// An earlier renewal was stored though its answer was lost: go
		// on from its counter (the window stays as the last confirmed
		// renewal left it) and renew again at once.
		l.rec = conflict.Current
		return 0
	case errors.As(err, &conflict):
		l.owner, l.until, l.lastErr = false, time.Time{}, err
		l.seen, l.seenFound, l.seenAt = conflict.Current, conflict.Found, l.clock.Now()
		l.log.Error("writer lease lost to another process: writes stop until it is free again", "holder", conflict.Current.Holder, "counter", conflict.Current.Counter)
		return l.o.Renew
	}
	l.lastErr = err
	if now := l.clock.Now(); !now.Before(l.until) && !l.paused {
		l.paused = true
		l.log.Error("writer lease not renewed within its window: writes are refused until a renewal succeeds", "err", err)
	} else {
		l.log.Warn("writer lease renewal failed; trying again", "err", err)
	}
	return l.retry
}

// watch looks at the item as a process that does not hold it: it takes a
// missing item, or one whose counter stood still for TTL since first
// seen. starting makes a moving counter Acquire's HeldError.
func (l *Lease) watch(ctx context.Context, starting bool) (time.Duration, error) {
	cur, found, err := l.store.Read(ctx)
	now := l.clock.Now()
	if err != nil {
		l.setErr(err)
		return l.retry, err
	}
	l.mu.Lock()
	first := l.seenAt.IsZero()
	moved := !first && (found != l.seenFound || found && cur.Counter != l.seen.Counter)
	if first || moved {
		l.seen, l.seenFound, l.seenAt = cur, found, now
	}
	seenAt := l.seenAt
	l.mu.Unlock()
	if moved && found && starting {
		return 0, &HeldError{Holder: cur.Holder, Until: cur.Until}
	}
	ttl := max(l.o.TTL, cur.TTL)
	if found && cur.Instance != l.instance {
		if left := ttl - now.Sub(seenAt); left > 0 {
			return min(l.o.Renew, left), nil
		}
	}
	// Free: no item, an item of this process's own, or a counter that
	// stood still for TTL.
	var prev int64
	if found {
		prev = cur.Counter
	}
	sent := l.clock.Now()
	rec := l.record(sent, prev+1)
	err = l.store.Write(ctx, rec, prev)
	var conflict *ConflictError
	switch {
	case err == nil:
		l.mu.Lock()
		l.owner, l.rec, l.until, l.lastErr, l.paused = true, rec, sent.Add(l.o.TTL-l.o.Guard), nil, false
		l.seen, l.seenFound, l.seenAt = Record{}, false, time.Time{}
		l.mu.Unlock()
		l.log.Info("writer lease taken", "counter", rec.Counter, "previous_holder", cur.Holder)
		return l.o.Renew, nil
	case errors.As(err, &conflict):
		// Another process wrote first: it is alive.
		l.mu.Lock()
		l.seen, l.seenFound, l.seenAt, l.lastErr = conflict.Current, conflict.Found, l.clock.Now(), nil
		l.mu.Unlock()
		if starting && conflict.Found {
			return 0, &HeldError{Holder: conflict.Current.Holder, Until: conflict.Current.Until}
		}
		return l.o.Renew, nil
	}
	l.setErr(err)
	return l.retry, err
}

func (l *Lease) setErr(err error) {
	l.mu.Lock()
	l.lastErr = err
	l.mu.Unlock()
}

// Release gives the lease up at a clean stop: the item is deleted if
// this process still holds it, so the next process takes it at once, and
// writes are refused from then on. Errors are returned; the lease then
// lapses after TTL.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	owner, prev := l.owner, l.rec.Counter
	l.owner, l.until = false, time.Time{}
	l.mu.Unlock()
	if !owner {
		return nil
	}
	return l.store.Delete(ctx, prev, l.instance)
}
