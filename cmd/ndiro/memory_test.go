package main

import (
	"bufio"
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
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

	"ndiro/internal/apptest"
	"ndiro/internal/photo/phototest"
)

// memoryEnv, set to "1", runs TestUploadMemory (make memory).
const memoryEnv = "NDIRO_TEST_MEMORY"

// maxServerRSS is the bound on the server's peak RSS under the
// upload mix (issue "Hot paths at the limit"), held by the anonymous
// memory: what the process allocates, which GOMEMLIMIT (240 MiB in
// deploy/ndiro.service) bounds for the Go runtime.
const maxServerRSS = 256 << 20

// maxFileBacked bounds the file-backed part of the RSS on top of it: the
// executable's pages (about 30 MB) and the S3 emulator's memory-mapped
// file (handed back every 8 MB). The kernel can drop these at any time;
// once the decode budget is spent, the Go heap grows to GOMEMLIMIT and
// the whole RSS is GOMEMLIMIT plus these pages.
const maxFileBacked = 48 << 20

// minStored is how many of the 20 phone photos of the first burst must be
// stored: the others may be refused as busy (503) on a machine too loaded
// to decode them all within the wait, which takes nothing from what the
// burst measures.
const minStored = 10

// TestUploadMemory is the upload memory harness: ndiro in local mode as a
// child process, with deploy/ndiro.service's GOMEMLIMIT, gets three bursts
// of uploads, each sent all at once:
//   - 20 uploads of phone-portrait.jpg (12 MP) and 4 of a 7000×7000 16-bit
//     RGBA PNG (a 422 KB file that would take 392 MB decoded): the phone
//     photos are stored (at least minStored of them; the others may be
//     refused as busy), the PNGs refused for the memory they would need;
//   - 20, then 60 (from three owners, as one owner may send 30 at once)
//     small images of every accepted format inside megabytes of metadata
//     or padding (heavyUploads): each is stored (a HEIF, which no decoder
//     can read, is refused as damaged) while every reader holds only what
//     its format allows.
//
// During each burst the child's anonymous memory (sampled every 20 ms)
// must stay within maxServerRSS, and its peak RSS (VmHWM) within
// maxServerRSS + maxFileBacked. Not part of make test: it decodes 20
// full-size photos and sends 1.5 GB (make memory).
func TestUploadMemory(t *testing.T) {
	if os.Getenv(memoryEnv) != "1" {
		t.Skip("the upload memory harness runs with make memory (" + memoryEnv + "=1)")
	}
	env := serviceGoEnv(t)
	big := bigPNG(t)
	phone := apptest.Photo(t, "phone-portrait.jpg")

	// Uploads wait up to 90 s for their turn (the service: 30 s), so a
	// loaded machine slows the bursts down instead of refusing photos.
	c := startChildEnv(t, t.TempDir(), append(env, "NDIRO_UPLOAD_WAIT=90s")...)
	admin := apptest.NewClient(t, c.base)
	admin.SignIn("admin@example.com")
	before := procStatus(t, c.cmd.Process.Pid)

	var phase []upload
	for i := range 24 {
		if i%6 == 5 {
			phase = append(phase, upload{admin, "big.png", big, http.StatusUnprocessableEntity, "16-bit colour with transparency", false})
		} else {
			phase = append(phase, upload{admin, "phone.jpg", phone, http.StatusSeeOther, "", true})
		}
	}
	if stored := sendBurst(t, c, "20 phone photos and 4 large PNGs", phase)["phone.jpg"]; stored < minStored {
		t.Errorf("%d phone photos stored, want at least %d", stored, minStored)
	}

	heavy := heavyUploads(t)
	owners := make([]*apptest.Client, 4)
	for i := range owners {
		owners[i] = apptest.NewClient(t, c.base)
		owners[i].SignInVia("/login?invite="+admin.CreateInvite(url.Values{"role": {"owner"}}), fmt.Sprintf("owner%d@example.com", i))
	}
	for _, n := range []int{20, 60} {
		phase = phase[:0]
		for i := range n {
			u := heavy[i%len(heavy)]
			u.client = owners[0] // 20 at once: one owner; 60: the other three
			if n == 60 {
				u.client = owners[1+i/20]
			}
			phase = append(phase, u)
		}
		sendBurst(t, c, fmt.Sprintf("%d padded and metadata-heavy files", n), phase)
	}
	after := procStatus(t, c.cmd.Process.Pid)
	t.Logf("%s; server RSS before %d MB, after %d MB, peak (VmHWM) %d MB",
		strings.Join(env, " "), before["VmRSS"]>>20, after["VmRSS"]>>20, after["VmHWM"]>>20)
}

// upload is one file of a burst, who sends it and what must come back:
// the status and, for a refusal, words of the form's photo message; busy,
// if a 503 (too busy to read it in time) may come back instead.
type upload struct {
	client *apptest.Client
	name   string
	body   []byte
	status int
	msg    string
	busy   bool
}

// sendBurst sends every upload at once, checks each answer, and fails the
// test if during the burst the child's anonymous memory passed
// maxServerRSS or its peak RSS (VmHWM, reset before it) maxServerRSS +
// maxFileBacked. It returns how many of each file name came back as they
// must.
func sendBurst(t *testing.T, c *child, what string, uploads []upload) map[string]int {
	t.Helper()
	// Writing 5 to clear_refs resets the peak RSS to the current RSS
	// (Linux, proc(5)).
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", c.cmd.Process.Pid), []byte("5"), 0); err != nil {
		t.Fatalf("reset the peak RSS: %v", err)
	}
	type result struct {
		u      upload
		status int
		msg    string
	}
	// The peak of each part of the RSS, sampled: anonymous memory (what
	// the Go runtime manages, bounded by GOMEMLIMIT) and file-backed
	// pages (the executable, the S3 emulator's memory-mapped file).
	stop, sampled := make(chan struct{}), make(chan map[string]int64)
	go func() {
		peak := map[string]int64{}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if st, err := readProcStatus(c.cmd.Process.Pid); err == nil {
				for _, k := range []string{"RssAnon", "RssFile"} {
					peak[k] = max(peak[k], st[k])
				}
			}
			select {
			case <-stop:
				sampled <- peak
				return
			case <-tick.C:
			}
		}
	}()
	results := make(chan result, len(uploads))
	var wg sync.WaitGroup
	for _, u := range uploads {
		wg.Go(func() {
			resp := u.client.PostMultipart("/meals", url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}},
				apptest.File{Field: "photo", Name: u.name, Body: u.body})
			results <- result{u, resp.StatusCode, resp.Text("#photo-err")}
		})
	}
	wg.Wait()
	close(results)
	counts, busy := map[string]int{}, 0
	for r := range results {
		if r.u.busy && r.status == http.StatusServiceUnavailable {
			busy++
			continue
		}
		if r.status != r.u.status || !strings.Contains(r.msg, r.u.msg) {
			t.Errorf("%s: %s: %d %q, want %d %q", what, r.u.name, r.status, r.msg, r.u.status, r.u.msg)
			continue
		}
		counts[r.u.name]++
	}
	close(stop)
	peak := <-sampled
	st := procStatus(t, c.cmd.Process.Pid)
	t.Logf("%s: answered as expected %v, %d busy; server RSS now %d MB, peak (VmHWM) during the burst %d MB (sampled peaks: anonymous %d MB, file-backed %d MB)",
		what, counts, busy, st["VmRSS"]>>20, st["VmHWM"]>>20, peak["RssAnon"]>>20, peak["RssFile"]>>20)
	if peak["RssAnon"] > maxServerRSS {
		t.Errorf("%s: anonymous memory peaked at %d MB, want at most %d MB", what, peak["RssAnon"]>>20, maxServerRSS>>20)
	}
	if st["VmHWM"] > maxServerRSS+maxFileBacked {
		t.Errorf("%s: peak RSS %d MB, want at most %d MB", what, st["VmHWM"]>>20, (maxServerRSS+maxFileBacked)>>20)
	}
	return counts
}

// heavyUploads are the padded and metadata-heavy files (phototest), one
// of each kind, each under the form's 25 MB.
func heavyUploads(t *testing.T) []upload {
	t.Helper()
	small := apptest.Photo(t, "small.jpg")
	webp := apptest.Photo(t, "photo.webp")
	stored := func(name string, b []byte) upload { return upload{name: name, body: b, status: http.StatusSeeOther} }
	out := []upload{
		// No EXIF, then 24 MB without a 0xFF byte.
		stored("padded.jpg", phototest.PaddedJPEG(small, 24<<20)),
		// A 64 KB EXIF segment and a 16 MB ICC profile in 255 segments.
		stored("segments.jpg", phototest.MetadataJPEG(small, 255)),
		// 8 MB tEXt and zTXt chunks, an iCCP profile inflating to 64 MB,
		// the image data in 20,000 IDAT chunks.
		stored("chunks.png", phototest.HeavyPNG(800, 600, phototest.PNGParts{Text: 8 << 20, ZText: 8 << 20, ICCInflated: 64 << 20, IDATs: 20_000})),
		// 8 MB ICCP and EXIF chunks, 6 MB more in the VP8 chunk.
		stored("chunks.webp", phototest.HeavyWebP(webp, 8<<20, 8<<20, 6<<20)),
		// 200,000 boxes, a 16 MB box, a 512 KB meta box, a 3 MB Exif item.
		{name: "boxes.heic", body: phototest.HeavyHEIF(phototest.HEIFParts{FreeBoxes: 200_000, Free: 16 << 20, Exif: 3 << 20, MetaPadding: 512 << 10}),
			status: http.StatusUnprocessableEntity, msg: "damaged"},
	}
	for _, u := range out {
		t.Logf("%s: %d bytes", u.name, len(u.body))
	}
	return out
}

// startChildEnv is startChild with extra environment variables.
func startChildEnv(t *testing.T, dir string, env ...string) *child {
	t.Helper()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v) // startChild passes the test's environment on
	}
	return startChild(t, dir)
}

var goEnvLine = regexp.MustCompile(`(?m)^Environment=(GO[A-Z]+=\S+)$`)

// serviceGoEnv reads the Go runtime settings (GOMEMLIMIT, GOGC) the
// server runs with from deploy/ndiro.service, so the harness runs with
// what production runs with.
func serviceGoEnv(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "ndiro.service"))
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, m := range goEnvLine.FindAllSubmatch(b, -1) {
		env = append(env, string(m[1]))
	}
	if !strings.Contains(strings.Join(env, " "), "GOMEMLIMIT=") {
		t.Fatal("deploy/ndiro.service sets no Environment=GOMEMLIMIT=")
	}
	return env
}

// bigPNG writes, once per run, a 7000×7000 16-bit RGBA PNG: a soft
// gradient, half transparent, about 422 KB.
func bigPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewNRGBA64(image.Rect(0, 0, 7000, 7000))
	for y := range 7000 {
		c := color.NRGBA64{R: uint16(y * 9), G: 0x8000, B: 0x4000, A: 0x8000}
		for x := range 7000 {
			img.SetNRGBA64(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "big-16bit.png")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d bytes", filepath.Base(path), buf.Len())
	return buf.Bytes()
}

// procStatus reads the byte counts (VmRSS, VmHWM, …) of /proc/pid/status.
func procStatus(t *testing.T, pid int) map[string]int64 {
	t.Helper()
	st, err := readProcStatus(pid)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// readProcStatus is procStatus for goroutines other than the test's.
func readProcStatus(pid int) (map[string]int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(v)
		if !ok || len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err == nil {
			out[k] = n << 10
		}
	}
	return out, sc.Err()
}
