package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/photo"
	"ndiro/internal/version"
)

// runAsMain, set to "1" in a child process's environment, makes the test
// binary run ndiro's main instead of the tests: crash tests kill a real
// process without building a second binary.
const runAsMain = "NDIRO_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	photo.MaybeHEICWorker()
	if os.Getenv(runAsMain) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var openLine = regexp.MustCompile(`Open (http://127\.0\.0\.1:\d+)`)

// waitURL reads the start-up output until the address to open appears.
func waitURL(t *testing.T, out io.Reader) string {
	t.Helper()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := openLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case u := <-found:
		return u
	case <-time.After(60 * time.Second):
		t.Fatal("ndiro did not print its address within a minute")
		return ""
	}
}

func localEnv(dir string) map[string]string {
	return map[string]string{"NDIRO_ADDR": "127.0.0.1:0", "NDIRO_DATA_DIR": dir}
}

// startRun runs ndiro in-process and returns its URL and a stop function
// that cancels it and waits for a clean exit.
func startRun(t *testing.T, env map[string]string) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, nil, func(k string) string { return env[k] }, pw)
		pw.Close()
	}()
	u := waitURL(t, pr)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run returned %v after shutdown, want nil", err)
			}
		})
	}
	t.Cleanup(stop)
	return u, stop
}

// seed signs in the admin, creates an invite, signs a friend up with it and
// creates a second, open invite. It returns the open invite's token.
func seed(t *testing.T, base string) string {
	admin := apptest.NewClient(t, base)
	admin.SignIn("admin@example.com")
	used := admin.CreateInvite(url.Values{"role": {"owner"}})
	if resp := apptest.NewClient(t, base).SignInVia("/login?invite="+used, "friend@example.com"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("friend sign-up = %d", resp.StatusCode)
	}
	return admin.CreateInvite(url.Values{"role": {"owner"}, "email": {"later@example.com"}})
}

// check signs in as the friend (no invite needed: the users row survived)
// and checks the open invite is still listed and still usable.
func check(t *testing.T, base, open string) {
	t.Helper()
	friend := apptest.NewClient(t, base)
	if resp := friend.SignInVia("/login", "friend@example.com"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("friend sign-in after restart = %d %q, want 303 (users row lost?)", resp.StatusCode, resp.Text("h1"))
	}
	admin := apptest.NewClient(t, base)
	admin.SignIn("admin@example.com")
	if n := admin.Get("/admin/users").Doc().Find("tbody tr").Length(); n != 2 {
		t.Errorf("%d users after restart, want 2", n)
	}
	if resp := apptest.NewClient(t, base).Get("/invite/" + open); resp.StatusCode != http.StatusOK {
		t.Errorf("open invite after restart = %d, want 200", resp.StatusCode)
	}
}

func TestLocalModeSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, stop := startRun(t, localEnv(dir))
	if resp := apptest.NewClient(t, base).Get("/healthz"); resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz = %d", resp.StatusCode)
	}
	open := seed(t, base)
	stop()

	base, _ = startRun(t, localEnv(dir))
	check(t, base, open)
}

func TestBadConfigStopsStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		name string
	}{
		{map[string]string{"NDIRO_MODE": "cloud"}, "NDIRO_MODE"},
		{map[string]string{"NDIRO_ADDR": "nowhere"}, "NDIRO_ADDR"},
		{map[string]string{"NDIRO_PHOTO_CACHE_BYTES": "lots"}, "NDIRO_PHOTO_CACHE_BYTES"},
		{map[string]string{"NDIRO_MODE": "aws"}, "GOOGLE_CLIENT_ID"},
	} {
		err := run(context.Background(), nil, func(k string) string { return tc.env[k] }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("run with %v = %v, want an error naming %s", tc.env, err, tc.name)
		}
	}
}

// TestAWSModeStartupChecks runs AWS mode against the emulators through
// AWS_ENDPOINT_URL_*: missing tables, then a missing bucket, each stop
// start-up with a line naming the resource.
func TestAWSModeStartupChecks(t *testing.T) {
	env, tables := apptest.Local(t)
	dynamoURL, s3URL := apptest.Expose(t, env.DynamoEndpoint), apptest.Expose(t, env.S3Endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", dynamoURL)
	t.Setenv("AWS_ENDPOINT_URL_S3", s3URL)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	aws := map[string]string{
		"NDIRO_MODE": "aws", "AWS_REGION": "us-east-1", "NDIRO_ADDR": "127.0.0.1:0",
		"GOOGLE_CLIENT_ID": "id", "GOOGLE_CLIENT_SECRET": "secret",
		"NDIRO_BASE_URL": "https://ndiro.example.org", "ADMIN_EMAILS": "admin@example.org",
		"AWS_ENDPOINT_URL_S3": s3URL, "AWS_ENDPOINT_URL_DYNAMODB": dynamoURL,
	}
	start := func(kv ...string) error {
		e := map[string]string{}
		for k, v := range aws {
			e[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			e[kv[i]] = kv[i+1]
		}
		return run(context.Background(), nil, func(k string) string { return e[k] }, io.Discard)
	}

	// A backend that accepts connections and never answers stops start-up
	// within its budget, named; the other backend is not the culprit.
	stalled := stalledListener(t)
	prefix := strings.TrimSuffix(tables.Users.Name, "users")
	for _, tc := range []struct{ backend, env, endpoint, want, notWant string }{
		{"DynamoDB", "AWS_ENDPOINT_URL_DYNAMODB", dynamoURL, "start-up check failed: DynamoDB did not answer", "S3 did not answer"},
		{"S3", "AWS_ENDPOINT_URL_S3", s3URL, "start-up check failed: S3 did not answer", "DynamoDB did not answer"},
	} {
		// The SDK reads the endpoint from the process environment.
		os.Setenv(tc.env, stalled)
		began := time.Now()
		err := start("NDIRO_TABLE_PREFIX", prefix, "NDIRO_BUCKET", "test-photos", tc.env, stalled,
			"NDIRO_STORAGE_ITEM_TIMEOUT", "300ms")
		os.Setenv(tc.env, tc.endpoint)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.notWant) {
			t.Errorf("start with %s stalled = %v, want %q", tc.backend, err, tc.want)
		}
		if took := time.Since(began); took > 10*time.Second {
			t.Errorf("start with %s stalled took %v to fail, want about its 300ms budget", tc.backend, took)
		}
	}

	err := start("NDIRO_TABLE_PREFIX", "missing-", "NDIRO_BUCKET", "test-photos")
	if err == nil || !strings.Contains(err.Error(), "dynamodb table missing-meals: does not exist") {
		t.Errorf("start with missing tables = %v, want a line naming missing-meals", err)
	}
	err = start("NDIRO_TABLE_PREFIX", prefix, "NDIRO_BUCKET", "no-such-bucket")
	if err == nil || !strings.Contains(err.Error(), "s3 bucket no-such-bucket: not found") {
		t.Errorf("start with a missing bucket = %v, want a line naming no-such-bucket", err)
	}
}

// stalledListener returns the http:// URL of a listener that accepts
// connections and never answers, open until the test ends.
func stalledListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

func TestUnknownCommand(t *testing.T) {
	err := run(context.Background(), []string{"ndiro", "serve-please"}, func(string) string { return "" }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Errorf("run(serve-please) = %v, want unknown command", err)
	}
	if err := run(context.Background(), []string{"ndiro", "healthcheck"}, func(k string) string {
		return map[string]string{"NDIRO_ADDR": "127.0.0.1:1"}[k]
	}, io.Discard); err == nil {
		t.Error("healthcheck against nothing = nil, want an error")
	}
}

// TestVersionCommand: "ndiro version" and "--version" print the build's
// version and Go version, and read no configuration (a setting that
// would not load does not stop them).
func TestVersionCommand(t *testing.T) {
	bad := func(k string) string { return map[string]string{"NDIRO_MODE": "nonsense"}[k] }
	for _, arg := range []string{"version", "--version"} {
		var out strings.Builder
		if err := run(context.Background(), []string{"ndiro", arg}, bad, &out); err != nil {
			t.Fatalf("run(%s) = %v, want nil", arg, err)
		}
		first, _, _ := strings.Cut(out.String(), "\n")
		if want := "ndiro " + version.String(); first != want {
			t.Errorf("run(%s) first line = %q, want %q", arg, first, want)
		}
		if !strings.Contains(out.String(), runtime.Version()) {
			t.Errorf("run(%s) = %q, want the Go version %s in it", arg, out.String(), runtime.Version())
		}
	}
}
