package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"ndiro/internal/meal"
	"ndiro/internal/storage"
)

// Kind is one kind of orphan the check finds (meal.OrphanKind, where
// each is defined and found).
type Kind = meal.OrphanKind

// The kinds of orphan, in the order the page lists them.
const (
	MealsWithoutUser  = meal.MealsWithoutUser
	PhotosWithoutUser = meal.PhotosWithoutUser
	PhotosWithoutMeal = meal.PhotosWithoutMeal
	MissingPhotos     = meal.MissingPhotos
	ForeignObjects    = meal.ForeignObjects
	SessionKeys       = meal.SessionKeysWithoutSession
)

// Kinds lists every Kind in page order.
var Kinds = meal.OrphanKinds

// Grace is the monitor's grace period (meal.OrphanDeps.Grace): how old an
// object or a meal's last change must be before the check calls it an
// orphan, and how old an object must still be when a clean-up deletes
// it.
const Grace = time.Hour

// SampleSize is how many keys of each kind the page lists.
const SampleSize = 5

// Finding is what the check found of one kind.
type Finding struct {
	Kind  Kind
	Count int
	// Sample is the first SampleSize labels found, sorted
	// (meal.Orphan.Label: keys, or "user_id sk" for rows).
	Sample []string
	items  []meal.Orphan
}

// Report is the result of one check, or of one clean-up.
type Report struct {
	Findings map[Kind]*Finding
	At       time.Time
	Took     time.Duration
	// Cleaned, after a clean-up: the kind and how many were repaired.
	Cleaned      Kind
	CleanedCount int
}

// orphanState is the check's job: at most one runs at a time.
type orphanState struct {
	running  bool
	phase    string // what the running job does now
	scanned  int    // rows and objects read so far
	report   *Report
	lastErr  string
	finished time.Time
}

// OrphanStatus is the check's state as the page shows it.
type OrphanStatus struct {
	Running bool
	Phase   string
	Scanned int
	Report  *Report
	Err     string
}

// Orphans returns the state of the orphan check.
func (m *Monitor) Orphans() OrphanStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.orphans
	return OrphanStatus{Running: o.running, Phase: o.phase, Scanned: o.scanned, Report: o.report, Err: o.lastErr}
}

// ErrBusy is returned when a check or clean-up is asked for while one runs.
var ErrBusy = errors.New("admin: the orphan check is already running")

// ErrClosed is returned when a check or clean-up is asked for after Close.
var ErrClosed = errors.New("admin: the monitor is stopped")

// StartCheck starts the orphan check in the background, or returns ErrBusy.
func (m *Monitor) StartCheck() error {
	return m.startJob("starting", func(ctx context.Context) (*Report, error) { return m.check(ctx) })
}

// ErrNotOurs is returned by StartClean for ForeignObjects: written
// outside ndiro, they are not its to delete.
var ErrNotOurs = meal.ErrForeign

// StartClean repairs the orphans of kind the last check found, in the
// background, each checked again first, or returns ErrBusy (or ErrNotOurs
// for ForeignObjects). Repairing deletes orphan rows and objects, and
// clears a dangling photo_v.
func (m *Monitor) StartClean(kind Kind) error {
	if kind == ForeignObjects {
		return ErrNotOurs
	}
	m.mu.Lock()
	rep := m.orphans.report
	m.mu.Unlock()
	if rep == nil || rep.Findings[kind] == nil {
		return fmt.Errorf("admin: no findings of kind %q to clean", kind)
	}
	items := rep.Findings[kind].items
	return m.startJob("cleaning", func(ctx context.Context) (*Report, error) {
		n, err := m.cleanWaiting(ctx, kind, items)
		if err != nil {
			return nil, err
		}
		// What was repaired is gone from the findings; the rest stays until
		// the next check.
		out := &Report{Findings: map[Kind]*Finding{}, At: rep.At, Cleaned: kind, CleanedCount: n}
		for k, f := range rep.Findings {
			if k == kind {
				f = &Finding{Kind: k}
			}
			out.Findings[k] = f
		}
		return out, nil
	})
}

// WaitOrphans blocks until no check or clean-up runs, or ctx ends (tests).
func (m *Monitor) WaitOrphans(ctx context.Context) error {
	for {
		if !m.Orphans().Running {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

func (m *Monitor) startJob(phase string, job func(context.Context) (*Report, error)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.orphans.running {
		return ErrBusy
	}
	if m.closed {
		return ErrClosed
	}
	m.orphans.running, m.orphans.phase, m.orphans.scanned = true, phase, 0
	m.goBackground(2*time.Hour, func(ctx context.Context) {
		start := m.d.Clock.Now()
		rep, err := job(ctx)
		m.mu.Lock()
		defer m.mu.Unlock()
		m.orphans.running, m.orphans.finished = false, m.d.Clock.Now()
		if err != nil {
			m.orphans.lastErr = err.Error()
			m.d.Log.Error("orphan job failed", "err", err)
			return
		}
		if rep.Cleaned == "" {
			rep.Took = m.d.Clock.Now().Sub(start)
		}
		m.orphans.report, m.orphans.lastErr = rep, ""
	})
	return nil
}

// progress records what the running job does.
func (m *Monitor) progress(phase string, scanned int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.orphans.phase, m.orphans.scanned = phase, scanned
}

// check runs the orphan check (meal.Orphans.Find): every users key,
// every meals row and every photo object, all paced, with the monitor's
// grace period and the copies' versions compared.
func (m *Monitor) check(ctx context.Context) (*Report, error) {
	now := m.d.Clock.Now()
	f, err := m.finder.Find(ctx)
	if err != nil {
		return nil, err
	}
	rep := &Report{Findings: map[Kind]*Finding{}, At: now}
	for _, k := range Kinds {
		items := f.Of[k]
		fd := &Finding{Kind: k, Count: len(items), items: items}
		for _, x := range items[:min(len(items), SampleSize)] {
			fd.Sample = append(fd.Sample, x.Label())
		}
		rep.Findings[k] = fd
	}
	return rep, nil
}

// cleanWaiting is clean, run again while storage refuses writes (a full
// disk, storage.Refused) instead of failing the clean-up: each item is
// checked again before it is repaired, so a run again repairs only what
// is left. It waits on the monitor's clock, a second and doubling up to
// maxFullPause, within the job's time; the phase says it waits.
func (m *Monitor) cleanWaiting(ctx context.Context, kind Kind, items []meal.Orphan) (int, error) {
	total, pause := 0, time.Second
	for {
		n, err := m.clean(ctx, kind, items)
		total += n
		if storage.Refused(err) == nil {
			return total, err
		}
		m.progress("waiting for storage to take writes", total)
		if err := m.d.Clock.Sleep(ctx, pause); err != nil {
			return total, err
		}
		pause = min(2*pause, maxFullPause)
	}
}

// maxFullPause caps the pause between two runs of a clean-up while
// storage refuses writes.
const maxFullPause = time.Minute

// clean repairs items of kind (meal.Orphans.Clean, each checked again
// first) and returns how many it repaired.
func (m *Monitor) clean(ctx context.Context, kind Kind, items []meal.Orphan) (int, error) {
	n, err := m.finder.Clean(ctx, kind, items)
	if err != nil {
		return n, err
	}
	m.d.Log.Info("orphans cleaned", "kind", string(kind), "count", n)
	return n, nil
}
