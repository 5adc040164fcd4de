package disk

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"ndiro/internal/store"
)

// recorder is the operating system's FS, noting each step of a write.
type recorder struct {
	osFS
	steps []string
	db    *Items
}

type recFile struct {
	*os.File
	r *recorder
}

func (f recFile) Sync() error {
	f.r.note("fsync file")
	return f.File.Sync()
}

func (r *recorder) note(s string) {
	// Whether the row is there yet, at each step.
	var n int
	r.db.r.QueryRow("SELECT count(*) FROM blobs").Scan(&n)
	r.steps = append(r.steps, s+map[bool]string{true: " (row there)", false: ""}[n > 0])
}

func (r *recorder) CreateTemp(dir, pattern string) (File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err == nil {
		r.note("create " + strings.TrimRight(pattern, "*"))
	}
	return recFile{f, r}, err
}

func (r *recorder) Rename(from, to string) error {
	r.note("rename to " + filepath.Base(to))
	return os.Rename(from, to)
}

func (r *recorder) SyncDir(dir string) error {
	r.note("fsync dir " + filepath.Base(dir))
	return r.osFS.SyncDir(dir)
}

// TestPutOrder: a blob's bytes reach the disk before its row: a
// temporary file, its fsync, the rename into place, the directory's
// fsync, and only then the row.
func TestPutOrder(t *testing.T) {
	dir := t.TempDir()
	db, err := OpenItems(filepath.Join(dir, DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rec := &recorder{db: db}
	b, err := OpenBlobs(filepath.Join(dir, "blobs"), db, rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(context.Background(), "users/u1/a.jpg", bytes.NewReader([]byte("x")), 1, store.Meta{}); err != nil {
		t.Fatal(err)
	}
	var n int
	db.r.QueryRow("SELECT count(*) FROM blobs").Scan(&n)
	want := []string{"create .tmp-", "fsync file", "rename to a.jpg", "fsync dir u1"}
	if d := cmp.Diff(want, rec.steps); d != "" || n != 1 {
		t.Errorf("steps of a Put (-want +got):\n%s\nrows after: %d, want 1", d, n)
	}
}

// TestBlobPaths: every file lies under the blob directory, no path part
// is longer than 255 bytes, and the files and directories are the
// owner's only (0600, 0700).
func TestBlobPaths(t *testing.T) {
	dir := t.TempDir()
	db, err := OpenItems(filepath.Join(dir, DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	blobs := filepath.Join(dir, "blobs")
	b, err := OpenBlobs(blobs, db, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"users/../../escape", "../up", "users/" + strings.Repeat("é", 300) + "/a", "users//x", "/abs"} {
		if err := b.Put(context.Background(), k, bytes.NewReader([]byte("x")), 1, store.Meta{}); err != nil {
			t.Fatal(err)
		}
		if p := b.blobPath(k); !strings.HasPrefix(p, blobs+string(filepath.Separator)) {
			t.Errorf("blobPath(%q) = %s, outside %s", k, p, blobs)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), DBFile) && e.Name() != "blobs" {
			t.Errorf("a write left %s beside the blob directory", e.Name())
		}
	}
	filepath.WalkDir(blobs, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Name()) > 255 {
			t.Errorf("path part of %d bytes: %s", len(d.Name()), d.Name())
		}
		info, _ := d.Info()
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, info.Mode().Perm(), want)
		}
		return nil
	})
}
