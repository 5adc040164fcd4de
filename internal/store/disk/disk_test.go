package disk

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ndiro/internal/storage"
	"ndiro/internal/store"
)

// TestOpenTheProductionWay: a data directory opens with WAL and
// synchronous=FULL on the writer (every acknowledged write is on disk),
// incremental auto-vacuum, and is the owner's only.
func TestOpenTheProductionWay(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s, err := Open(dir, Options{Holder: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for pragma, want := range map[string]string{"journal_mode": "wal", "synchronous": "2", "auto_vacuum": "2"} {
		var got string
		if err := s.Items.w.QueryRow("PRAGMA " + pragma).Scan(&got); err != nil || got != want {
			t.Errorf("writer PRAGMA %s = %q, %v; want %q", pragma, got, err, want)
		}
	}
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("data directory mode %v, %v; want 0700", st.Mode().Perm(), err)
	}
	for _, f := range []string{DBFile, LockFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: %v, %v; want no access for group or others", f, st.Mode().Perm(), err)
		}
	}
}

// TestLockNamesTheHolder: a second Open of a held directory is refused,
// naming the holder; once the first closes, it opens.
func TestLockNamesTheHolder(t *testing.T) {
	dir := t.TempDir()
	first, err := Open(dir, Options{Holder: "web-1 pid 4242"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, Options{Holder: "web-2"})
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "web-1 pid 4242") {
		t.Fatalf("second Open = %v, want ErrHeld naming web-1 pid 4242", err)
	}
	first.Close()
	second, err := Open(dir, Options{Holder: "web-2"})
	if err != nil {
		t.Fatalf("Open after the holder closed = %v", err)
	}
	second.Close()
}

// TestFullDisk: on a file system that fills up, a write is refused with
// storage.ErrFull and nothing half-written; WriteHealth then refuses
// writes early while reads go on, and once there is room again a probe
// finds it and writes resume by themselves. Needs root (a tmpfs).
func TestFullDisk(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	now := time.Now()
	clock := func() time.Time { return now }
	s, err := Open(dir, Options{Holder: "test", Now: clock, ProbeEvery: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	tb := store.Table{Name: "meals", PK: "user_id", SK: "sk"}
	if _, err := s.Items.Put(ctx, tb, store.Item{"user_id": store.S("u"), "sk": store.S("before")}, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(dir, "filler")
	os.WriteFile(filler, bytes.Repeat([]byte("x"), 8<<20), 0o600) // fills it; the error is the point
	var werr error
	for i := 0; werr == nil && i < 1000; i++ {
		werr = s.Blobs.Put(ctx, "users/u/"+string(rune('a'+i%26))+".jpg", bytes.NewReader(make([]byte, 64<<10)), 64<<10, store.Meta{})
	}
	if !errors.Is(werr, storage.ErrFull) {
		t.Fatalf("a write on a full disk = %v, want storage.ErrFull", werr)
	}
	if err := s.WriteHealth(); !errors.Is(err, storage.ErrFull) {
		t.Errorf("WriteHealth after a refused write = %v, want ErrFull", err)
	}
	if _, err := s.Items.Put(ctx, tb, store.Item{"user_id": store.S("u"), "sk": store.S("early")}, store.Cond{}); !errors.Is(err, storage.ErrFull) {
		t.Errorf("a write while storage is down = %v, want the early refusal", err)
	}
	if _, found, err := s.Items.Get(ctx, tb, store.Key{PK: "u", SK: "before"}, store.Read{}); err != nil || !found {
		t.Errorf("a read while storage is down = %v, %v; want the item", found, err)
	}
	os.Remove(filler)
	now = now.Add(2 * time.Second)
	if err := s.WriteHealth(); err != nil {
		t.Errorf("WriteHealth once there is room and the pause is over = %v, want nil", err)
	}
	if _, err := s.Items.Put(ctx, tb, store.Item{"user_id": store.S("u"), "sk": store.S("after")}, store.Cond{}); err != nil {
		t.Errorf("a write after room came back = %v", err)
	}
}
