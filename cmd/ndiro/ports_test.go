package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
)

// TestListensOnItsPortsOnly: ndiro in local and in server mode, run as a
// process of its own, holds no listening socket but its app's and its
// metrics' (read from /proc): the embedded DynamoDB and S3, which check
// no credential, and local mode's stand-in sign-in are reached inside
// the process. In local mode a browser then signs in through the
// stand-in, which the app serves on its own port, and sees the diary.
func TestListensOnItsPortsOnly(t *testing.T) {
	t.Parallel()
	m := provider(t) // server mode's provider, in this process, on a port of the test's
	var server []string
	for k, v := range serverEnv(t.TempDir(), m) {
		server = append(server, k+"="+v)
	}
	for _, tc := range []struct {
		mode string
		env  []string
	}{
		{"local", []string{"NDIRO_MODE=local", "NDIRO_DATA_DIR=" + t.TempDir(), "ADMIN_EMAILS=admin@example.com"}},
		{"server", server},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			p := startProcess(t, append(tc.env, "NDIRO_ADDR=127.0.0.1:0", "NDIRO_METRICS_ADDR=127.0.0.1:0"))
			got, err := apptest.Listening(p.cmd.Process.Pid)
			if err != nil {
				t.Fatalf("listening sockets of ndiro: %v", err)
			}
			slices.Sort(got)
			want := []string{p.app, p.metrics}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s mode listens on %v, want its app's and metrics' addresses only: %v", tc.mode, got, want)
			}
			if tc.mode != "local" {
				return
			}
			base := "http://" + p.app
			c := apptest.NewClient(t, base)
			authURL := c.StartSignIn("/login")
			if got := authURL.Scheme + "://" + authURL.Host + authURL.Path; got != base+localenv.SignInPath+"/authorize" {
				t.Errorf("sign-in went to %s, want the app's own %s/authorize", got, localenv.SignInPath)
			}
			form := c.Get(authURL.String())
			if form.StatusCode != http.StatusOK || form.Doc().Find(`input[name="email"]`).Length() != 1 {
				t.Fatalf("the stand-in's sign-in page = %d, want 200 with an email field; body: %s", form.StatusCode, form.Body)
			}
			if resp := c.Get(c.Authorize(authURL, "admin@example.com")); resp.StatusCode != http.StatusSeeOther || resp.Location() != "/meals" {
				t.Fatalf("callback = %d %q, want 303 to /meals; body: %s", resp.StatusCode, resp.Location(), resp.Body)
			}
			diary := c.Get("/meals")
			if diary.StatusCode != http.StatusOK || diary.Header.Get("X-Ndiro-User") == "" {
				t.Errorf("the diary after signing in = %d (user %q), want 200 for the signed-in owner", diary.StatusCode, diary.Header.Get("X-Ndiro-User"))
			}
			if got := c.Get("/account").Text("main p strong"); got != "admin@example.com" {
				t.Errorf("signed in as admin@example.com, the account page says %q", got)
			}
		})
	}
}

// process is ndiro running as a child process (the test binary itself,
// re-executed with runAsMain set) with the addresses its app and its
// metrics listen on, as it logged them.
type process struct {
	cmd          *exec.Cmd
	app, metrics string
}

// textAddr reads the address from a text log line of local mode.
var textAddr = regexp.MustCompile(`msg="?(metrics listening|listening)"? addr=(\S+)`)

// startProcess starts ndiro with env added to the test's environment and
// waits for it to log where it listens; it is killed when the test ends.
func startProcess(t *testing.T, env []string) *process {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), runAsMain+"=1"), env...)
	var output lockedBuffer
	cmd.Stderr = &output
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
			s := output.String()
			t.Logf("ndiro (pid %d) output, last 3000 bytes:\n%s", cmd.Process.Pid, s[max(0, len(s)-3000):])
		}
	})
	p := &process{cmd: cmd}
	found := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(io.TeeReader(out, &output))
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				if m := textAddr.FindStringSubmatch(sc.Text()); m != nil {
					line.Msg, line.Addr = m[1], m[2]
				}
			}
			switch line.Msg {
			case "metrics listening":
				p.metrics = line.Addr
			case "listening": // logged last, once serving
				p.app = line.Addr
				close(found)
				io.Copy(io.Discard, io.TeeReader(out, &output))
				return
			}
		}
	}()
	select {
	case <-found:
	case <-time.After(time.Minute):
		t.Fatal("ndiro did not log where it listens within a minute")
	}
	if p.metrics == "" {
		t.Fatal("ndiro logged no metrics address before serving")
	}
	return p
}
