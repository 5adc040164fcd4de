package main

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ndiro/internal/apptest"
)

// TestHEICLatency is the HEIC latency harness (make heic): ndiro in local
// mode as a child process, with the service's GOMEMLIMIT and GOGC, gets
// four uploads of photo.heic at once, which queue for the one decoder
// worker, while four clients fetch a cached thumbnail over and over. The
// photo requests keep a p99 within 100 ms, every HEIC is stored, and the
// decode's memory is the worker's, a process of its own: the server's
// peak RSS stays within 256 MB while the worker's is far above its own.
func TestHEICLatency(t *testing.T) {
	if os.Getenv("NDIRO_TEST_HEIC") != "1" {
		t.Skip("decodes HEIC: make heic (NDIRO_TEST_HEIC=1)")
	}
	c := startChildEnv(t, t.TempDir(), serviceGoEnv(t)...)
	client := apptest.NewClient(t, c.base)
	client.SignIn("admin@example.com")
	form := url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}}
	if r := client.PostMultipart("/meals", form, apptest.File{Field: "photo", Name: "small.jpg", Body: apptest.Photo(t, "small.jpg")}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("upload small.jpg = %d", r.StatusCode)
	}
	thumb, _ := client.Get("/meals?month=2026-09").Doc().Find("li.meal img").Attr("src")
	if r := client.Get(thumb); r.StatusCode != http.StatusOK {
		t.Fatalf("thumbnail %q = %d", thumb, r.StatusCode)
	}

	heic := apptest.Photo(t, "photo.heic")
	var uploads sync.WaitGroup
	var stored atomic.Int32
	for range 4 {
		uploads.Add(1)
		go func() {
			defer uploads.Done()
			r := client.PostMultipart("/meals", form, apptest.File{Field: "photo", Name: "IMG.HEIC", Body: heic})
			if r.StatusCode == http.StatusSeeOther {
				stored.Add(1)
			} else {
				t.Errorf("HEIC upload = %d %q", r.StatusCode, r.Text("#photo-err"))
			}
		}()
	}
	done := make(chan struct{})
	var workerPeak int64
	go func() { // the worker's peak, read while it lives
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
				for _, pid := range childPIDs(c.cmd.Process.Pid) {
					st, _ := readProcStatus(pid) // nil once the worker is gone
					if hwm := st["VmHWM"]; hwm > atomic.LoadInt64(&workerPeak) {
						atomic.StoreInt64(&workerPeak, hwm)
					}
				}
			}
		}
	}()
	var mu sync.Mutex
	var lat []time.Duration
	var fetchers sync.WaitGroup
	start := time.Now()
	for range 4 {
		fetchers.Add(1)
		go func() {
			defer fetchers.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				t0 := time.Now()
				resp, err := client.HTTP.Get(c.base + thumb)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				d := time.Since(t0)
				if resp.StatusCode != http.StatusOK {
					t.Errorf("thumbnail = %d", resp.StatusCode)
					return
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	uploads.Wait()
	elapsed := time.Since(start)
	close(done)
	fetchers.Wait()
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	server := procStatus(t, c.cmd.Process.Pid)["VmHWM"]
	t.Logf("4 HEIC uploads in %v; %d thumbnail GETs: p50 %v, p99 %v, max %v; peak RSS: server %d MB, HEIC worker %d MB",
		elapsed.Round(time.Millisecond), len(lat), pct(0.50), pct(0.99), lat[len(lat)-1], server>>20, atomic.LoadInt64(&workerPeak)>>20)
	if stored.Load() != 4 {
		t.Errorf("%d of 4 HEIC uploads stored", stored.Load())
	}
	if p99 := pct(0.99); p99 > 100*time.Millisecond {
		t.Errorf("p99 of cached-photo GETs = %v, want at most 100 ms", p99)
	}
	if server > maxServerRSS {
		t.Errorf("server peak RSS %d MB, want at most %d MB", server>>20, maxServerRSS>>20)
	}
	if atomic.LoadInt64(&workerPeak) < 150<<20 {
		t.Errorf("worker peak RSS %d MB: the decodes did not happen in the worker", atomic.LoadInt64(&workerPeak)>>20)
	}
}

// childPIDs returns the child processes of pid (Linux /proc).
func childPIDs(pid int) []int {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	var out []int
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(s); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}
