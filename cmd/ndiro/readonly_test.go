package main

import (
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/meal"
)

// readOnlyScript runs in a mount namespace of its own, as root: it makes
// every mount read-only (what docker run --read-only does to the
// container's filesystem), then mounts a small tmpfs on $SPOOL with the
// README's options (--tmpfs /tmp:noexec,nosuid,nodev) and binds $DATA
// writable (local mode's data directory, a volume),
// checks that $PROBE cannot be written, and becomes ndiro.
const readOnlyScript = `set -eu
mount --make-rprivate /
awk '{print $5}' /proc/self/mountinfo | while read -r m; do
  case "$m" in /proc|/proc/*|/sys|/sys/*|/dev|/dev/*) continue ;; esac
  mount -o remount,bind,ro "$m" 2>/dev/null || true
done
mount -t tmpfs -o size="$SPOOL_SIZE",mode=1777,noexec,nosuid,nodev ndiro-spool "$SPOOL"
mount --bind "$DATA" "$DATA"
mount -o remount,bind,rw "$DATA"
if touch "$PROBE" 2>/dev/null; then echo "readonly: $PROBE is writable" >&2; exit 97; fi
exec "$@"
`

// TestDeployReadOnlyRoot runs ndiro (local mode, as a child process) the
// way deploy/README.md's docker run runs it: every file system read-only
// but a small tmpfs as TMPDIR (and, for local mode, its data directory),
// the working directory read-only too. A photo upload works: the form's
// photo is spooled to TMPDIR (Go's mime/multipart writes parts past
// meal.FormMemory to os.TempDir), seen there while the upload is under
// way and gone once it is answered. An upload larger than the tmpfs is
// refused, not stored, and leaves the tmpfs empty: the tmpfs must hold the
// uploads in flight (deploy/README.md sizes it).
//
// It needs root and unshare(1) (it makes a mount namespace); it skips with
// a message where mounting is refused.
func TestDeployReadOnlyRoot(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ndiro")
	}
	t.Parallel()
	// A photo that is spooled (past meal.FormMemory) and fits the tmpfs,
	// and one that does not fit it.
	fits, tooBig := apptest.Photo(t, "progressive.jpg"), apptest.Photo(t, "phone-portrait.jpg")
	const spoolSize = 1 << 20
	if len(fits) <= meal.FormMemory || len(fits) >= spoolSize/2 || len(tooBig) <= spoolSize {
		t.Fatalf("fixtures of %d and %d bytes do not bracket the %d-byte tmpfs", len(fits), len(tooBig), spoolSize)
	}
	baseURL, spooled := startReadOnly(t, spoolSize)
	c := apptest.NewClient(t, baseURL)
	c.SignIn("admin@example.com")
	form := url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}}

	// The upload stops half-way through its photo; the spooled part is
	// in TMPDIR meanwhile.
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	half, resume := make(chan error, 1), make(chan struct{})
	go func() {
		write := func() error {
			for k, vs := range form {
				for _, v := range vs {
					if err := mw.WriteField(k, v); err != nil {
						return err
					}
				}
			}
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", `form-data; name="photo"; filename="progressive.jpg"`)
			h.Set("Content-Type", "image/jpeg")
			part, err := mw.CreatePart(h)
			if err != nil {
				return err
			}
			cut := meal.FormMemory + (len(fits)-meal.FormMemory)/2
			if _, err := part.Write(fits[:cut]); err != nil {
				return err
			}
			half <- nil
			<-resume
			if _, err := part.Write(fits[cut:]); err != nil {
				return err
			}
			return mw.Close()
		}
		err := write()
		pw.CloseWithError(err)
		if err != nil {
			half <- err
		}
	}()
	req, err := http.NewRequest(http.MethodPost, baseURL+"/meals", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Origin", baseURL)
	type answer struct {
		resp *http.Response
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := c.HTTP.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		answered <- answer{resp, err}
	}()
	if err := <-half; err != nil {
		t.Fatal(err)
	}
	// The spool file appears once the server has read past
	// meal.FormMemory of the part (polled for, until the upload is
	// answered or a minute passes).
	deadline := time.Now().Add(time.Minute)
	for len(spooled()) == 0 && len(answered) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if names := spooled(); len(names) != 1 || !strings.HasPrefix(names[0], "multipart-") {
		t.Errorf("TMPDIR during the upload holds %q, want one multipart-* spool file", names)
	}
	close(resume)
	a := <-answered
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("upload with a read-only root = %d, want 303", a.resp.StatusCode)
	}
	if names := spooled(); len(names) != 0 {
		t.Errorf("TMPDIR after the upload holds %q, want nothing", names)
	}
	checkOnePhoto(t, c)

	// Larger than the tmpfs: the form cannot be spooled, nothing is stored.
	resp := c.PostMultipart("/meals", form, apptest.File{Field: "photo", Name: "phone-portrait.jpg", Body: tooBig})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(resp.Text("main"), "The form could not be read") {
		t.Errorf("upload larger than TMPDIR = %d %q, want 400 The form could not be read", resp.StatusCode, resp.Text("main"))
	}
	if names := spooled(); len(names) != 0 {
		t.Errorf("TMPDIR after the refused upload holds %q, want nothing", names)
	}
	checkOnePhoto(t, c)
}

// startReadOnly starts ndiro in local mode as a child process under
// readOnlyScript, with a tmpfs of spoolSize bytes as its TMPDIR; it
// returns the address to open and a func listing the tmpfs as ndiro sees
// it. It skips the test where mount namespaces are refused.
func startReadOnly(t *testing.T, spoolSize int) (baseURL string, spooled func() []string) {
	t.Helper()
	base := t.TempDir()
	probeMounts(t, base)
	data, spool, probe := filepath.Join(base, "data"), filepath.Join(base, "tmp"), filepath.Join(base, "probe")
	for _, d := range []string{data, spool} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", readOnlyScript, "readonly", os.Args[0])
	cmd.Dir = base
	cmd.Env = append(os.Environ(), runAsMain+"=1", "NDIRO_MODE=local", "NDIRO_ADDR=127.0.0.1:0", "ADMIN_EMAILS=",
		"NDIRO_DATA_DIR="+data, "TMPDIR="+spool, "SPOOL="+spool, "SPOOL_SIZE="+fmt.Sprint(spoolSize), "DATA="+data, "PROBE="+probe)
	var output, stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("ndiro output:\n%s\nerrors:\n%s", output.String(), stderr.String())
		}
	})
	baseURL = waitURL(t, io.TeeReader(out, &output))
	// What ndiro sees as its TMPDIR: the tmpfs in its mount namespace
	// (unshare and sh exec ndiro, so the pid is ndiro's).
	spoolSeen := filepath.Join("/proc", fmt.Sprint(cmd.Process.Pid), "root", spool)
	return baseURL, func() []string {
		entries, err := os.ReadDir(spoolSeen)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
}

// TestDeployReadOnlyRootHEIC: a HEIC photo decodes in the worker process
// with the root read-only and only the tmpfs writable (the decoder
// compiles its WebAssembly in memory, not on disk). make heic runs it.
func TestDeployReadOnlyRootHEIC(t *testing.T) {
	if os.Getenv("NDIRO_TEST_HEIC") != "1" {
		t.Skip("decodes HEIC: make heic (NDIRO_TEST_HEIC=1)")
	}
	heic := apptest.Photo(t, "photo.heic")
	baseURL, spooled := startReadOnly(t, 4*len(heic))
	c := apptest.NewClient(t, baseURL)
	c.SignIn("admin@example.com")
	form := url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}}
	if resp := c.PostMultipart("/meals", form, apptest.File{Field: "photo", Name: "photo.heic", Body: heic}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("HEIC upload with a read-only root = %d %q, want 303", resp.StatusCode, resp.Text("main"))
	}
	checkOnePhoto(t, c)
	if names := spooled(); len(names) != 0 {
		t.Errorf("TMPDIR after the upload holds %q, want nothing", names)
	}
}

// checkOnePhoto checks that the owner has exactly one meal, with its
// photo served.
func checkOnePhoto(t *testing.T, c *apptest.Client) {
	t.Helper()
	var export struct {
		Meals []struct{ Photo *struct{ URL string } }
	}
	if err := json.Unmarshal([]byte(c.Get("/account/export.json").Body), &export); err != nil {
		t.Fatal(err)
	}
	if len(export.Meals) != 1 || export.Meals[0].Photo == nil {
		t.Fatalf("export holds %+v, want one meal with a photo", export.Meals)
	}
	if resp := c.Get(export.Meals[0].Photo.URL); resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/jpeg" {
		t.Errorf("the photo = %d %s, want 200 image/jpeg", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// probeMounts skips the test unless this process may make a mount
// namespace and mount a tmpfs in it (root, unshare(1), no seccomp or
// container rule against it).
func probeMounts(t *testing.T, dir string) {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare(1) to emulate a read-only root: not run")
	}
	out, err := exec.Command("unshare", "--mount", "--propagation", "private", "mount", "-t", "tmpfs", "-o", "size=64k", "probe", dir).CombinedOutput()
	if err != nil {
		t.Skipf("cannot make a mount namespace here (%v: %s): the read-only root was not emulated", err, strings.TrimSpace(string(out)))
	}
}
