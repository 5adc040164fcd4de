package main

import (
	"bufio"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"ndiro/internal/account"
	"ndiro/internal/apptest"
	"ndiro/internal/archive/archivetest"
	"ndiro/internal/config"
)

// importMemoryEnv, set, runs TestImportMemory (make import-memory).
const importMemoryEnv = "NDIRO_TEST_IMPORT_MEMORY"

// importHeapBound is the heap in use one import may add while its zip is
// received and checked (archive.Limits, "64 MiB of heap").
const importHeapBound = 64 << 20

var memoryMaxLine = regexp.MustCompile(`(?m)^MemoryMax=(\d+)([KMG]?)$`)

// serviceMemoryMax reads MemoryMax, in bytes, from deploy/ndiro.service.
func serviceMemoryMax(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "ndiro.service"))
	if err != nil {
		t.Fatal(err)
	}
	m := memoryMaxLine.FindSubmatch(b)
	if m == nil {
		t.Fatal("deploy/ndiro.service sets no MemoryMax=")
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n << map[string]int{"": 0, "K": 10, "M": 20, "G": 30}[string(m[2])]
}

// heapInUse reads go_memstats_heap_inuse_bytes from the metrics
// listener at addr.
func heapInUse(addr string) (int64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_inuse_bytes "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return int64(f), err
		}
	}
	return 0, fmt.Errorf("no go_memstats_heap_inuse_bytes in /metrics: %v", sc.Err())
}

// TestImportMemory is the import memory harness on ndiro as a child
// process, in local mode with deploy/ndiro.service's GOMEMLIMIT and GOGC:
// as many owners as the staging gate admits at once
// (config.DefaultImportStagingMax) each send, all at once, a zip whose end
// reads two ways (73 MB, whose second end record points archive/zip at
// 1.2 million hidden entries), then one of 60,000 entries at one local
// header. Each must be refused (422) with its reason; during each burst
// the child's peak RSS (VmHWM, reset before it) must stay within the
// unit's MemoryMax, and its heap in use (sampled from /metrics every 50
// ms) grow by at most importHeapBound per upload. Not part of make test:
// it sends 300 MB (make import-memory).
func TestImportMemory(t *testing.T) {
	if os.Getenv(importMemoryEnv) == "" {
		t.Skip("the import memory harness runs with make import-memory (" + importMemoryEnv + "=1)")
	}
	limit := serviceMemoryMax(t)
	env := append(serviceGoEnv(t), "NDIRO_METRICS_ADDR=127.0.0.1:0")
	c := startChildEnv(t, t.TempDir(), env...)
	m := metricsLine.FindStringSubmatch(c.output.String())
	if m == nil {
		t.Fatal("no \"metrics listening\" line in the child's output")
	}
	metrics := m[1]
	admin := apptest.NewClient(t, c.base)
	admin.SignIn("admin@example.com")
	n := config.DefaultImportStagingMax
	owners := []*apptest.Client{admin}
	for i := 1; i < n; i++ {
		o := apptest.NewClient(t, c.base)
		o.SignInVia("/login?invite="+admin.CreateInvite(url.Values{"role": {"owner"}}), fmt.Sprintf("owner%d@example.com", i))
		owners = append(owners, o)
	}
	for _, z := range []struct {
		what, reason string
		zip          []byte
	}{
		{"a zip whose end reads two ways", "does not end with its end of central directory record", archivetest.TwoEnds(1_200_000)},
		{"a zip of 60,000 entries at one local header", "overlap", archivetest.Overlapping(60_000)},
	} {
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", c.cmd.Process.Pid), []byte("5"), 0); err != nil {
			t.Fatalf("reset the peak RSS: %v", err)
		}
		base, err := heapInUse(metrics)
		if err != nil {
			t.Fatal(err)
		}
		stop, peaks := make(chan struct{}), make(chan [2]int64)
		go func() {
			var heap, anon int64
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				if h, err := heapInUse(metrics); err == nil {
					heap = max(heap, h)
				}
				if st, err := readProcStatus(c.cmd.Process.Pid); err == nil {
					anon = max(anon, st["RssAnon"])
				}
				select {
				case <-stop:
					peaks <- [2]int64{heap, anon}
					return
				case <-tick.C:
				}
			}
		}()
		var wg sync.WaitGroup
		answers := make([]*apptest.Response, n)
		for i, o := range owners {
			wg.Go(func() {
				answers[i] = o.PostMultipart(account.ImportPath, nil, apptest.File{Field: account.ImportField, Name: "export.zip", Body: z.zip})
			})
		}
		wg.Wait()
		close(stop)
		peak := <-peaks
		st := procStatus(t, c.cmd.Process.Pid)
		for i, a := range answers {
			if msg := a.Text("main"); a.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(msg, z.reason) {
				t.Errorf("%s, owner %d: %d %.200q; want 422 saying %q", z.what, i, a.StatusCode, msg, z.reason)
			}
		}
		grew := peak[0] - base
		t.Logf("%s (%d MB), %d at once: peak RSS (VmHWM) %d MB, anonymous %d MB (MemoryMax %d MB); heap in use %d MB before, %+d MB at most (bound %d MB)",
			z.what, len(z.zip)>>20, n, st["VmHWM"]>>20, peak[1]>>20, limit>>20, base>>20, grew>>20, int64(n)*importHeapBound>>20)
		if st["VmHWM"] > limit {
			t.Errorf("%s: peak RSS %d MB, want within MemoryMax, %d MB", z.what, st["VmHWM"]>>20, limit>>20)
		}
		if grew > int64(n)*importHeapBound {
			t.Errorf("%s: heap in use grew by %d MB for %d uploads, want at most %d MB", z.what, grew>>20, n, int64(n)*importHeapBound>>20)
		}
	}
}
