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

	"ndiro/internal/apptest"
)

// memoryEnv, set to "1", runs TestUploadMemory (make memory).
const memoryEnv = "NDIRO_TEST_MEMORY"

// maxServerRSS is the bound on the server's peak RSS under the
// upload mix (issue "Hot paths at the limit").
const maxServerRSS = 256 << 20

// TestUploadMemory is the upload memory harness: ndiro in local mode as a
// child process, with deploy/ndiro.service's GOMEMLIMIT, gets 20 uploads
// of phone-portrait.jpg (12 MP) and 4 of a 7000×7000 16-bit RGBA PNG (a
// 422 KB file that would take 392 MB decoded) all at once. The phone
// photos are stored, the PNGs refused for the memory they would need, and
// the child's peak RSS (VmHWM) stays within 256 MB. Not part of make test:
// it decodes 20 full-size photos (make memory).
func TestUploadMemory(t *testing.T) {
	if os.Getenv(memoryEnv) != "1" {
		t.Skip("the upload memory harness runs with make memory (" + memoryEnv + "=1)")
	}
	env := serviceGoEnv(t)
	big := bigPNG(t)
	phone := apptest.Photo(t, "phone-portrait.jpg")

	c := startChildEnv(t, t.TempDir(), env...)
	client := apptest.NewClient(t, c.base)
	client.SignIn("admin@example.com")
	before := procStatus(t, c.cmd.Process.Pid)

	type result struct {
		name   string
		status int
		body   string
	}
	results := make(chan result, 24)
	var wg sync.WaitGroup
	send := func(name string, body []byte) {
		defer wg.Done()
		resp := client.PostMultipart("/meals", url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}},
			apptest.File{Field: "photo", Name: name, Body: body})
		results <- result{name, resp.StatusCode, resp.Text("#photo-err")}
	}
	for i := range 24 {
		wg.Add(1)
		if i%6 == 5 {
			go send("big.png", big)
		} else {
			go send("phone.jpg", phone)
		}
	}
	wg.Wait()
	close(results)
	stored, refused := 0, 0
	for r := range results {
		switch {
		case r.name == "phone.jpg" && r.status == http.StatusSeeOther:
			stored++
		case r.name == "big.png" && r.status == http.StatusUnprocessableEntity && strings.Contains(r.body, "16-bit colour with transparency"):
			refused++
		default:
			t.Errorf("%s: %d %q", r.name, r.status, r.body)
		}
	}
	after := procStatus(t, c.cmd.Process.Pid)
	t.Logf("%s; %d phone photos stored, %d PNGs refused; server RSS before %d MB, after %d MB, peak (VmHWM) %d MB",
		strings.Join(env, " "), stored, refused, before["VmRSS"]>>20, after["VmRSS"]>>20, after["VmHWM"]>>20)
	if stored != 20 || refused != 4 {
		t.Errorf("stored %d, refused %d; want 20 and 4", stored, refused)
	}
	if after["VmHWM"] > maxServerRSS {
		t.Errorf("peak RSS %d MB, want at most %d MB", after["VmHWM"]>>20, maxServerRSS>>20)
	}
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
