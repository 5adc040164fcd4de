package localenv

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// MountTmpfs mounts a tmpfs of size (e.g. "12m") on a new directory and
// returns it, unmounted when the test ends (after every cleanup registered
// later, such as the backends' Close). It skips the test where mounting is
// refused (not root, no CAP_SYS_ADMIN).
func MountTmpfs(t testing.TB, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (%v); the injected-ENOSPC variant covers this", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// FillDisk writes a filler file into dir so that the file system has
// about leave bytes free, and returns a func that removes it (space comes
// back).
func FillDisk(t testing.TB, dir string, leave int64) (free func()) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	avail := int64(st.Bavail) * int64(st.Bsize)
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for n := avail - leave; n > 0; n -= int64(len(chunk)) {
		if _, err := f.Write(chunk[:min(n, int64(len(chunk)))]); err != nil {
			break // the disk is full already
		}
	}
	f.Close()
	return func() {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
}
