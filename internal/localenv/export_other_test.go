//go:build !linux

package localenv

import "testing"

// MountTmpfs skips: mounting a tmpfs to fill is Linux-only here.
func MountTmpfs(t testing.TB, size string) string {
	t.Skip("mounting a tmpfs to fill needs Linux; the injected-ENOSPC variant covers this")
	return ""
}

// FillDisk is not reached: MountTmpfs skipped.
func FillDisk(t testing.TB, dir string, leave int64) (free func()) {
	t.Skip("needs Linux")
	return nil
}
