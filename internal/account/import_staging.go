package account

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"ndiro/internal/config"
	"ndiro/internal/web"
)

// StagingLimits bound the uploads POST /account/import receives and
// checks at once (config: NDIRO_IMPORT_STAGING_PER_OWNER,
// NDIRO_IMPORT_STAGING_MAX, NDIRO_IMPORT_MIN_BYTES,
// NDIRO_IMPORT_MIN_WINDOW). Each one holds a part's buffer while it
// arrives and Open's heap while it is checked; a zero field takes
// config's default.
type StagingLimits struct {
	// PerOwner and Total are how many uploads one owner, and every owner
	// together, may have in hand; one more is refused before its body is
	// read.
	PerOwner, Total int
	// MaxBytes bounds what one owner's uploads in hand stage together,
	// in bytes: the import size limit (NDIRO_IMPORT_MAX_BYTES).
	MaxBytes int64
	// MinBytes in any Window: an upload that sends less is closed.
	MinBytes int64
	Window   time.Duration
}

// withDefaults returns l with every zero field set from config's
// defaults.
func (l StagingLimits) withDefaults() StagingLimits {
	if l.PerOwner <= 0 {
		l.PerOwner = config.DefaultImportStagingPerOwner
	}
	if l.Total <= 0 {
		l.Total = config.DefaultImportStagingMax
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = config.DefaultImportMaxBytes
	}
	if l.MinBytes <= 0 {
		l.MinBytes = config.DefaultImportMinBytes
	}
	if l.Window <= 0 {
		l.Window = config.DefaultImportMinWindow
	}
	return l
}

// StagingHooks let tests drive what the staging gate waits on. Ticker
// returns a channel that ticks every d and its stop (time.NewTicker's, by
// default); it is called once an upload holds its place. Read, if set, is
// called with an owner's staged bytes after each read of a zip.
type StagingHooks struct {
	Ticker func(d time.Duration) (<-chan time.Time, func())
	Read   func(ownerID string, staged int64)
}

// Stagings is the gate of the uploads an import receives: at most
// PerOwner of one owner's and Total of everyone's in hand at once
// (enter), each closed once a window passes in which it sent fewer than
// MinBytes (watch), an owner's together staging at most MaxBytes
// (count). Its methods are safe for concurrent use.
type Stagings struct {
	lim   StagingLimits
	mu    sync.Mutex
	n     int
	owner map[string]*ownerStaging
	hooks StagingHooks
}

type ownerStaging struct {
	n      int
	staged int64
}

// NewStagings returns a gate with l's limits (zero fields: defaults).
func NewStagings(l StagingLimits) *Stagings {
	return &Stagings{lim: l.withDefaults(), owner: map[string]*ownerStaging{}, hooks: StagingHooks{Ticker: func(d time.Duration) (<-chan time.Time, func()) {
		t := time.NewTicker(d)
		return t.C, t.Stop
	}}}
}

// SetHooks replaces the gate's ticker (if h.Ticker is set) and read hook:
// for tests.
func (s *Stagings) SetHooks(h StagingHooks) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h.Ticker != nil {
		s.hooks.Ticker = h.Ticker
	}
	s.hooks.Read = h.Read
}

// staging is one upload's place in the gate, from enter to release.
type staging struct {
	s       *Stagings
	ownerID string
	staged  int64 // guarded by s.mu
	// read counts the body's bytes for the minimum rate; stalled is set
	// once the watch closed the body for it.
	read     atomic.Int64
	stalled  atomic.Bool
	stop     func()
	stopOnce sync.Once
	once     sync.Once
}

// enter takes a place for an upload of ownerID, or refuses it: a 409 if
// the owner has PerOwner uploads in hand, a 429 (Retry-After one window,
// by which a stalled upload is closed) if everyone together has Total.
func (s *Stagings) enter(w http.ResponseWriter, ownerID string) (*staging, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.owner[ownerID]
	if o != nil && o.n >= s.lim.PerOwner {
		return nil, &web.Error{Status: http.StatusConflict, Title: "An upload is in progress",
			Msg: "Another zip of yours is being received or checked for import. Wait until it has finished, then send the next one."}
	}
	if s.n >= s.lim.Total {
		return nil, web.TooManyRequests(w, s.lim.Window, "This server is receiving as many zips to import as it takes at once.")
	}
	if o == nil {
		o = &ownerStaging{}
		s.owner[ownerID] = o
	}
	o.n++
	s.n++
	return &staging{s: s, ownerID: ownerID, stop: func() {}}, nil
}

// release ends the watch and gives the place back, with the bytes its
// upload staged; later calls do nothing.
func (st *staging) release() {
	st.once.Do(func() {
		st.endWatch()
		s := st.s
		s.mu.Lock()
		defer s.mu.Unlock()
		o := s.owner[st.ownerID]
		o.n--
		o.staged -= st.staged
		s.n--
		if o.n == 0 {
			delete(s.owner, st.ownerID)
		}
	})
}

// endWatch stops the watch, once the body is read; later calls do
// nothing.
func (st *staging) endWatch() { st.stopOnce.Do(st.stop) }

// errOwnerStaged: the owner's uploads in hand staged more than MaxBytes
// together.
var errOwnerStaged = errors.New("account: import: the owner's uploads in hand exceed the import size limit")

// count passes zip through, adding what it reads to the owner's staged
// bytes: a read that takes them past MaxBytes fails with errOwnerStaged.
func (st *staging) count(zip io.Reader) io.Reader { return &stagedCounter{st: st, r: zip} }

type stagedCounter struct {
	st *staging
	r  io.Reader
}

func (c *stagedCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n == 0 {
		return n, err
	}
	s := c.st.s
	s.mu.Lock()
	o := s.owner[c.st.ownerID]
	o.staged += int64(n)
	c.st.staged += int64(n)
	total, over, hook := o.staged, o.staged > s.lim.MaxBytes, s.hooks.Read
	s.mu.Unlock()
	if hook != nil {
		hook(c.st.ownerID, total)
	}
	if over {
		return 0, errOwnerStaged
	}
	return n, err
}

// watch passes body through, counting its bytes, and closes it (through
// rc's read deadline) once a window ends in which it gave fewer than
// MinBytes; stalled reports that afterwards. The watch ends with
// endWatch (or release).
func (st *staging) watch(body io.Reader, rc *http.ResponseController) io.Reader {
	s := st.s
	s.mu.Lock()
	ticker := s.hooks.Ticker
	s.mu.Unlock()
	tick, stopTicker := ticker(s.lim.Window)
	done := make(chan struct{})
	stopped := make(chan struct{})
	st.stop = func() {
		close(done)
		<-stopped
		stopTicker()
	}
	go func() {
		defer close(stopped)
		var last int64
		for {
			select {
			case <-done:
				return
			case <-tick:
			}
			now := st.read.Load()
			if now-last < s.lim.MinBytes {
				st.stalled.Store(true)
				// A deadline in the past fails the read in progress and
				// every later one.
				_ = rc.SetReadDeadline(time.Unix(1, 0))
				return
			}
			last = now
		}
	}()
	return &rateCounter{st: st, r: body}
}

type rateCounter struct {
	st *staging
	r  io.Reader
}

func (c *rateCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.st.read.Add(int64(n))
	return n, err
}

// tooSlow is the 408 of an upload closed for sending too little.
func (s *Stagings) tooSlow(err error) error {
	return &web.Error{Status: http.StatusRequestTimeout, Title: "Upload too slow", Err: err,
		Msg: fmt.Sprintf("The zip arrived too slowly: less than %s in %s, the least this server waits for. Nothing was imported; send it again over a faster connection.",
			byteSize(s.lim.MinBytes), s.lim.Window)}
}

// ownerTooLarge is the 413 of an upload past what the owner's uploads in
// hand may stage together.
func (s *Stagings) ownerTooLarge() error {
	return &web.Error{Status: http.StatusRequestEntityTooLarge, Title: "Too large",
		Msg: fmt.Sprintf("Your zips being received add up to more than %s, the most this server imports (NDIRO_IMPORT_MAX_BYTES). Nothing was imported.", byteSize(s.lim.MaxBytes))}
}
