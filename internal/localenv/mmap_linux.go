package localenv

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// releaseMap hands the pages of db's memory map back to the kernel
// (madvise MADV_DONTNEED): they leave this process's resident set, and
// the next read faults them in again from the page cache. The map is
// read-only and backed by the file, so nothing is lost. The caller must
// keep db from remapping meanwhile (no write running). The map's extent
// is read from /proc/self/maps, so the advice never reaches past it.
func releaseMap(db *bolt.DB) error {
	start := db.Info().Data
	end, err := mappingEnd(start)
	if err != nil {
		return err
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, syscall.MADV_DONTNEED); errno != 0 {
		return fmt.Errorf("localenv: madvise bolt map: %w", errno)
	}
	return nil
}

// mappingEnd returns the end address of this process's mapping that
// begins at start, from /proc/self/maps ("start-end perms …" in hex).
func mappingEnd(start uintptr) (uintptr, error) {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("localenv: read memory maps: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rng, _, _ := bytes.Cut(sc.Bytes(), []byte(" "))
		lo, hi, ok := bytes.Cut(rng, []byte("-"))
		if !ok {
			continue
		}
		l, err1 := strconv.ParseUint(string(lo), 16, 64)
		h, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 == nil && err2 == nil && uintptr(l) == start && h > l {
			return uintptr(h), nil
		}
	}
	return 0, fmt.Errorf("localenv: no memory map starts at %#x", start)
}
