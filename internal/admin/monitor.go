package admin

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"ndiro/internal/invite"
	"ndiro/internal/limit"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/share"
	"ndiro/internal/storage"
	"ndiro/internal/user"
	"ndiro/internal/version"
)

// Background reads are paced so that the monitor and the orphan check take
// a small, stated share of what the owners' pages need: deploy/terraform
// caps each table at max_read_request_units (500 by default), and
// background work may spend ReadUnitsPerSecond of it, 5 %, with at most
// ReadUnitsBurst at once (one Scan page of dynamo.PacedPageItems). S3 calls
// (listing pages, a HeadObject per photo) are paced to S3CallsPerSecond.
const (
	ReadUnitsPerSecond = 25
	ReadUnitsBurst     = 100
	S3CallsPerSecond   = 20
)

// CountsEvery is how often at most the monitor recomputes its counts: the
// page shows them with their age in between.
const CountsEvery = 10 * time.Minute

// Counts are what the app holds, as the monitor page shows them.
type Counts struct {
	Users         user.Counts
	Meals         int
	Photos        int   // objects under users/
	PhotoBytes    int64 // their size
	Pending       int   // short-lived uploads under pending/
	SharesActive  int
	SharesExpired int
	Invites       invite.Counts
	// UsageRepaired is how many accounts' user.Usage the recount that
	// follows the counts repaired (recountUsage).
	UsageRepaired int
	// At is when the counts were taken; Took how long the paced reads
	// needed.
	At   time.Time
	Took time.Duration
}

// MonitorDeps are a Monitor's collaborators.
type MonitorDeps struct {
	Users   *user.Store
	Meals   *meal.Store
	Shares  *share.Store
	Invites *invite.Store
	Photos  *photo.Store
	Cache   *photo.Cache
	// HEIC reports the HEIC decoder's state for the process panel; nil
	// shows none.
	HEIC func() photo.HEICStatus
	// Admission reports the decode admission's counters
	// (photo.Pipeline.Admission); nil shows none.
	Admission func() photo.AdmissionStats
	// Clock paces the background reads and dates the results.
	Clock limit.Clock
	// Mode is "local" or "aws", for the process panel.
	Mode string
	// Grace is how old something must be before the orphan check counts
	// it (NDIRO_ORPHAN_GRACE); 0 means the package's Grace, an hour.
	Grace time.Duration
	Log   *slog.Logger
}

// Monitor computes the admin monitor's counts and runs the orphan check,
// both in the background, paced, and never twice at once.
type Monitor struct {
	d       MonitorDeps
	reads   *limit.Pacer // DynamoDB read units
	s3      *limit.Pacer // S3 calls
	finder  *meal.Orphans
	grace   time.Duration // MonitorDeps.Grace, or Grace when unset
	started time.Time
	// stop is the background jobs' parent context; Close cancels it.
	stop   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// usage is what the last count found of each account whose usage
	// differed from its row's (recountUsage); only the count job, one at
	// a time, reads and writes it.
	usage map[string]usageSeen

	mu       sync.Mutex
	closed   bool
	counts   *Counts
	counting bool
	countErr string
	orphans  orphanState
}

// NewMonitor returns a Monitor; it starts no work until asked.
func NewMonitor(d MonitorDeps) *Monitor {
	stop, cancel := context.WithCancel(context.Background())
	m := &Monitor{
		d:       d,
		reads:   limit.NewPacer(ReadUnitsPerSecond, ReadUnitsBurst, d.Clock),
		s3:      limit.NewPacer(S3CallsPerSecond, S3CallsPerSecond, d.Clock),
		started: d.Clock.Now(),
		stop:    stop,
		cancel:  cancel,
	}
	grace := d.Grace
	if grace <= 0 {
		grace = Grace
	}
	m.grace = grace
	m.finder = meal.NewOrphans(meal.OrphanDeps{
		Rows: d.Meals, Objects: d.Photos, Users: d.Users,
		Grace: grace, Now: d.Clock.Now, Versions: true,
		Pace: m.reads.Wait, ObjectPace: m.s3.Wait, Progress: m.progress,
	})
	return m
}

// Grace is how old a row or object must be before the orphan check
// counts it: MonitorDeps.Grace, or the package's Grace when that is 0.
func (m *Monitor) Grace() time.Duration { return m.grace }

// Close cancels the count and the orphan job running, if any, and starts
// no more, then waits for them to return or ctx to end (ctx.Err()). Call
// it when the server has stopped taking requests, before the stores close.
func (m *Monitor) Close(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("admin: stop the monitor: %w", ctx.Err())
	}
}

// goBackground runs job in the background under the Monitor's stop
// context, bounded by timeout. The caller holds m.mu and has checked
// m.closed.
func (m *Monitor) goBackground(timeout time.Duration, job func(context.Context)) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		ctx, cancel := context.WithTimeout(m.stop, timeout)
		defer cancel()
		job(ctx)
	}()
}

// Counts returns the last counts (nil before the first) and whether a
// count is running, and starts one in the background if the last is older
// than CountsEvery and none is running.
func (m *Monitor) Counts() (c *Counts, running bool, lastErr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.counting && !m.closed && (m.counts == nil || m.d.Clock.Now().Sub(m.counts.At) >= CountsEvery) {
		m.counting = true
		m.goBackground(time.Hour, m.count)
	}
	return m.counts, m.counting, m.countErr
}

// WaitCounts blocks until no count is running, or ctx ends (tests).
func (m *Monitor) WaitCounts(ctx context.Context) error {
	for {
		m.mu.Lock()
		running := m.counting
		m.mu.Unlock()
		if !running {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// count computes every count with paced reads and keeps the result,
// then repairs the accounts' usage from them (recountUsage); the count
// runs until that is done.
func (m *Monitor) count(ctx context.Context) {
	start := m.d.Clock.Now()
	c, rc, err := m.compute(ctx)
	m.mu.Lock()
	if err != nil {
		m.counting, m.countErr = false, err.Error()
		m.mu.Unlock()
		m.d.Log.Error("monitor counts failed", "err", err)
		return
	}
	c.At, c.Took, m.countErr = m.d.Clock.Now(), m.d.Clock.Now().Sub(start), ""
	m.counts = c
	m.mu.Unlock()

	n, err := m.recountUsage(ctx, rc)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counting = false
	if n > 0 {
		done := *m.counts
		done.UsageRepaired = n
		m.counts = &done
	}
	if err != nil {
		m.countErr = err.Error()
		m.d.Log.Error("usage recount failed", "err", err)
	}
}

// recount is what the counts read of each account, for recountUsage:
// its users row as read before anything else, and its meals and photo
// bytes as counted after.
type recount struct {
	users   []user.User
	counted map[string]user.Usage
}

// usageSeen is a drift one count found: the revision of the account's
// usage on its row, and what the count counted.
type usageSeen struct {
	rev     int64
	counted user.Usage
}

// recountUsage repairs the accounts whose usage has drifted (a crash
// between a write and its count): an active account, no import running,
// whose row's usage differs from what this count counted, the same as
// the count before found, at the same revision. Counts are CountsEvery
// apart, far longer than any write takes from its row or object to its
// count, so a drift seen twice with no counted write between is no write
// half-way; the repair (user.Store.RepairUsage) is conditional on the
// revision still, against writes since. A drift seen once waits for the
// next count. It returns how many rows it repaired. A write storage
// refuses (a full disk) leaves the rest to the next count.
func (m *Monitor) recountUsage(ctx context.Context, rc recount) (int, error) {
	before := m.usage
	m.usage = map[string]usageSeen{}
	n, refused := 0, false
	for _, u := range rc.users {
		got := rc.counted[u.ID]
		if !u.Active() || u.Import.Running() || got == u.Usage {
			continue
		}
		seen := usageSeen{rev: u.UsageRev, counted: got}
		m.usage[u.ID] = seen
		if refused || before[u.ID] != seen {
			continue
		}
		ok, err := m.d.Users.RepairUsage(ctx, u.ID, u.UsageRev, got)
		if storage.Refused(err) != nil {
			m.d.Log.Warn("usage not repaired: storage refuses writes; the next count tries again", "err", err)
			refused = true
			continue
		}
		if err != nil {
			return n, err
		}
		if ok {
			n++
			delete(m.usage, u.ID)
			m.d.Log.Info("usage repaired", "user_id", u.ID, "meals_was", u.Meals, "meals", got.Meals,
				"photo_bytes_was", u.PhotoBytes, "photo_bytes", got.PhotoBytes)
		}
	}
	return n, nil
}

func (m *Monitor) compute(ctx context.Context) (*Counts, recount, error) {
	pace := m.reads.Wait
	now := m.d.Clock.Now()
	c := &Counts{}
	rc := recount{counted: map[string]user.Usage{}}
	var err error
	// The rows first: a write after this read moves a row's revision on.
	if rc.users, err = m.d.Users.ListPaced(ctx, pace); err != nil {
		return nil, rc, err
	}
	if c.Users, err = m.d.Users.Count(ctx, pace); err != nil {
		return nil, rc, err
	}
	meals, err := m.d.Meals.CountByOwner(ctx, pace)
	if err != nil {
		return nil, rc, err
	}
	for id, n := range meals {
		c.Meals += int(n)
		got := rc.counted[id]
		got.Meals = n
		rc.counted[id] = got
	}
	if c.SharesActive, c.SharesExpired, err = m.d.Shares.Count(ctx, pace, now); err != nil {
		return nil, rc, err
	}
	if c.Invites, err = m.d.Invites.Count(ctx, pace, now); err != nil {
		return nil, rc, err
	}
	err = m.d.Photos.List(ctx, "users/", m.s3.Wait, func(o photo.ObjectInfo) error {
		c.Photos++
		c.PhotoBytes += o.Size
		if id, ok := photo.OwnerOfKey(o.Key); ok {
			got := rc.counted[id]
			got.PhotoBytes += o.Size
			rc.counted[id] = got
		}
		return nil
	})
	if err != nil {
		return nil, rc, err
	}
	err = m.d.Photos.List(ctx, "pending/", m.s3.Wait, func(photo.ObjectInfo) error {
		c.Pending++
		return nil
	})
	return c, rc, err
}

// Process is the process panel: how this one ndiro process runs. Its
// counters are read from the same sources as /metrics (the photo cache's
// Stats, the HEIC decoder's Status, the pipeline's Admission, and
// version.String, as ndiro_build_info), so the two never disagree.
type Process struct {
	Uptime     time.Duration
	Version    string
	Mode       string
	Goroutines int
	HeapBytes  uint64
	// GCPauseMedian and GCPauseMax summarise the recent stop-the-world
	// pauses; GCs counts collections since start.
	GCPauseMedian, GCPauseMax time.Duration
	GCs                       int64
	// HEIC is the HEIC decoder worker's state ("not started", "ready",
	// "failed", …), its counters and last failure; nil if there is none.
	HEIC *photo.HEICStatus
	// Admission is the decode admission's counters; nil if none.
	Admission *photo.AdmissionStats
}

// Process reads the process panel now.
func (m *Monitor) Process() Process {
	p := Process{Uptime: m.d.Clock.Now().Sub(m.started).Round(time.Second), Version: version.String(), Mode: m.d.Mode, Goroutines: runtime.NumGoroutine()}
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	p.HeapBytes = s[0].Value.Uint64()
	if m.d.HEIC != nil {
		st := m.d.HEIC()
		p.HEIC = &st
	}
	if m.d.Admission != nil {
		a := m.d.Admission()
		p.Admission = &a
	}
	var gc debug.GCStats
	gc.PauseQuantiles = make([]time.Duration, 3) // min, median, max
	debug.ReadGCStats(&gc)
	p.GCs = gc.NumGC
	if gc.NumGC > 0 {
		p.GCPauseMedian, p.GCPauseMax = gc.PauseQuantiles[1], gc.PauseQuantiles[2]
	}
	return p
}

// CacheStats are the photo cache's counters.
func (m *Monitor) CacheStats() photo.Stats { return m.d.Cache.Stats() }
