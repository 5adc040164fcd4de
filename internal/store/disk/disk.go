package disk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ncruces/go-sqlite3"

	"ndiro/internal/storage"
)

// The data directory holds DBFile (and SQLite's -wal and -shm beside
// it), BlobDir with the blobs' files, and LockFile, which the process
// that opened the directory holds locked for its life.
const (
	BlobDir  = "blobs"
	LockFile = "ndiro.lock"
)

// ErrHeld is wrapped by Open's refusal when another process holds the
// data directory; the error names the holder.
var ErrHeld = errors.New("disk: another process holds the data directory")

// Options configure Open.
type Options struct {
	Log *slog.Logger
	// Holder describes this process in the lock file ("host pid 42"),
	// for the refusal another process gets.
	Holder string
	// ProbeEvery is how soon after storage refused a write for a full
	// disk it is checked for room again; each check that finds none
	// doubles the pause, up to 30 s. Zero means 2 s.
	ProbeEvery time.Duration
	// FS is the blobs' file operations; nil is the operating system's.
	FS  FS
	Now func() time.Time
}

// Store is one machine's storage: the items and blobs of a data
// directory, held by this process until Close.
type Store struct {
	Items  *Items
	Blobs  *Blobs
	dir    string
	lock   *os.File
	health *health
}

// Open opens (creating if needed, mode 0700) the data directory dir: it
// takes the directory's lock, refusing with ErrHeld while another process
// holds it, then opens the database and the blobs. Writes refused for a
// full disk make WriteHealth fail until a probe finds room again.
func Open(dir string, o Options) (_ *Store, err error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.ProbeEvery <= 0 {
		o.ProbeEvery = 2 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("disk: data directory %s: %w", dir, err)
	}
	lock, err := Lock(dir, o.Holder)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lock.Close()
		}
	}()
	items, err := OpenItems(filepath.Join(dir, DBFile))
	if err != nil {
		return nil, err
	}
	h := &health{dir: dir, log: o.Log, now: o.Now, base: o.ProbeEvery}
	items.health = h
	blobs, err := OpenBlobs(filepath.Join(dir, BlobDir), items, o.FS, o.Now)
	if err != nil {
		items.Close()
		return nil, err
	}
	blobs.health = h
	return &Store{Items: items, Blobs: blobs, dir: dir, lock: lock, health: h}, nil
}

// Close closes the database and releases the directory.
func (s *Store) Close() error {
	return errors.Join(s.Items.Close(), s.lock.Close())
}

// WriteHealth returns nil while storage takes writes, and otherwise why
// not, wrapping storage.ErrFull or storage.ErrFailed: a write failed for
// the disk, and writes are refused at once until a probe finds the disk
// writable again. Reads are served throughout. It is cheap.
func (s *Store) WriteHealth() error { return s.health.err() }

// Lock takes the lock of data directory dir for this process, writing
// holder into the lock file; it refuses with an error wrapping ErrHeld,
// naming the holder, while another process has it. Closing the file
// releases it (as does the process's end, however it ends).
func Lock(dir, holder string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("disk: lock %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(f.Name())
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w %s: %s", ErrHeld, dir, strings.TrimSpace(string(b)))
		}
		return nil, fmt.Errorf("disk: lock %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(holder+"\n"), 0)
	}
	return f, nil
}

// health is the write health the items and blobs share: after a write
// failed for the disk, writes are refused early until a probe (a small
// file written and synced in the data directory) succeeds.
type health struct {
	dir  string
	log  *slog.Logger
	now  func() time.Time
	base time.Duration

	mu      sync.Mutex
	down    error // nil while writes are taken
	pause   time.Duration
	probeAt time.Time
}

// err returns the refusal while storage is down, probing for room when
// the pause since the last probe is over.
func (h *health) err() error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down == nil {
		return nil
	}
	if now := h.now(); !now.Before(h.probeAt) {
		if h.probe() == nil {
			h.log.Info("storage takes writes again")
			h.down = nil
			return nil
		}
		h.pause = min(2*h.pause, 30*time.Second)
		h.probeAt = now.Add(h.pause)
	}
	return h.down
}

// probe writes and syncs a small file in the data directory, where the
// database and the blobs grow.
func (h *health) probe() error {
	path := filepath.Join(h.dir, ".probe")
	defer os.Remove(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 64<<10)); err != nil {
		return err
	}
	return f.Sync()
}

// failed notes a write's error: one the disk caused (full, or failing)
// takes storage down and is returned as storage's refusal; any other is
// returned as it is.
func (h *health) failed(err error) error {
	if h == nil || err == nil {
		return err
	}
	cause := diskCause(err)
	if cause == nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down == nil {
		h.log.Error("storage refuses writes", "err", err)
		h.pause = h.base
		h.probeAt = h.now().Add(h.pause)
	}
	h.down = fmt.Errorf("%w: %w", cause, err)
	return h.down
}

// diskCause is storage.ErrFull or storage.ErrFailed when err is the disk
// refusing a write (SQLite's FULL or IOERR, or a file write's errno),
// else nil.
func diskCause(err error) error {
	var code sqlite3.ErrorCode
	if errors.As(err, &code) {
		switch code {
		case sqlite3.FULL:
			return storage.ErrFull
		case sqlite3.IOERR, sqlite3.READONLY:
			return storage.Cause(err)
		}
		return nil
	}
	var pe *fs.PathError
	var errno syscall.Errno
	if errors.As(err, &pe) || errors.As(err, &errno) {
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			return storage.ErrFull
		}
		if errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EROFS) {
			return storage.ErrFailed
		}
	}
	return nil
}

// ensure guards the start of every write: the refusal while storage is
// down.
func (h *health) ensure() error { return h.err() }

// SweepExpired deletes, in batches of at most 100 with pause between
// them, the items of tables whose TTL attribute lies more than grace in
// the past, as DynamoDB's TTL deletes them (lazily: the stores check
// expiry themselves). It returns how many it deleted.
func (s *Store) SweepExpired(ctx context.Context, grace time.Duration, pause func(context.Context) error) (int, error) {
	cutoff := s.health.now().Add(-grace).Unix()
	total := 0
	for {
		if err := s.health.ensure(); err != nil {
			return total, err
		}
		res, err := s.Items.w.ExecContext(ctx, `DELETE FROM items WHERE (tbl, pk, sk) IN
			(SELECT tbl, pk, sk FROM items WHERE expires IS NOT NULL AND expires < ? LIMIT 100)`, cutoff)
		if err != nil {
			return total, s.health.failed(fmt.Errorf("disk: sweep: %w", err))
		}
		n, _ := res.RowsAffected()
		total += int(n)
		if n < 100 {
			return total, nil
		}
		if err := pause(ctx); err != nil {
			return total, err
		}
	}
}
