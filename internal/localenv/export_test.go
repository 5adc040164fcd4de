package localenv

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
)

// DiskLimit makes the data dir behave as a file system of a given size
// for the DynamoDB journal and snapshot: a write that would take the dir's
// files past the limit writes what fits and fails with ENOSPC, as a full
// disk does. s3.bolt counts towards the size but is written as usual (its
// writes do not go through here).
type DiskLimit struct {
	dir   string
	mu    sync.Mutex
	limit int64 // < 0: none
	hits  atomic.Int64
}

// NewDiskLimit returns a limit on dir, not yet in force.
func NewDiskLimit(dir string) *DiskLimit { return &DiskLimit{dir: dir, limit: -1} }

// Apply makes opts write the journal and snapshot through d.
func (d *DiskLimit) Apply(opts *Options) { opts.writeFile = d.write }

// Fill limits the dir to what its files hold now plus slack bytes.
func (d *DiskLimit) Fill(slack int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.limit = usage(d.dir) + slack
}

// Free lifts the limit: space came back.
func (d *DiskLimit) Free() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.limit = -1
}

// Hits returns how many writes failed with ENOSPC.
func (d *DiskLimit) Hits() int64 { return d.hits.Load() }

func (d *DiskLimit) write(f *os.File, b []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.limit >= 0 {
		if room := d.limit - usage(d.dir); room < int64(len(b)) {
			n, _ := f.Write(b[:max(room, 0)])
			d.hits.Add(1)
			return n, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
		}
	}
	return f.Write(b)
}

// usage is the bytes the regular files in dir hold.
func usage(dir string) int64 {
	var n int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
	}
	return n
}

// JournalPath is the journal file of a data dir.
func JournalPath(dir string) string { return filepath.Join(dir, "dynamodb.journal") }
