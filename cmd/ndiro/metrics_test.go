package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"ndiro/internal/apptest"
)

var metricsLine = regexp.MustCompile(`msg="metrics listening" addr=(127\.0\.0\.1:\d+)`)

// TestMetricsListener runs ndiro with NDIRO_METRICS_ADDR (and, the
// second time, NDIRO_PPROF=1): /metrics is served there, with the
// storage calls start-up made and the requests since; the profiles only
// with NDIRO_PPROF; the public listener serves neither.
func TestMetricsListener(t *testing.T) {
	t.Parallel()
	for _, pprof := range []bool{false, true} {
		env := localEnv(t.TempDir())
		env["NDIRO_METRICS_ADDR"] = "127.0.0.1:0"
		if pprof {
			env["NDIRO_PPROF"] = "1"
		}
		ctx, cancel := context.WithCancel(context.Background())
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, nil, func(k string) string { return env[k] }, pw)
			pw.Close()
		}()
		addrs := make(chan [2]string, 1)
		go func() {
			var metrics string
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				if m := metricsLine.FindStringSubmatch(sc.Text()); m != nil {
					metrics = m[1]
				}
				if m := openLine.FindStringSubmatch(sc.Text()); m != nil {
					addrs <- [2]string{m[1], metrics}
					break
				}
			}
			io.Copy(io.Discard, pr)
		}()
		var base, metrics string
		select {
		case a := <-addrs:
			base, metrics = a[0], a[1]
		case <-time.After(time.Minute):
			t.Fatal("ndiro did not print its address within a minute")
		}
		if metrics == "" {
			t.Fatal("no \"metrics listening\" line before the banner")
		}
		pub := apptest.NewClient(t, base)
		if r := pub.Get("/meals"); r.StatusCode != http.StatusSeeOther {
			t.Errorf("GET /meals signed out = %d, want 303", r.StatusCode)
		}
		for _, p := range []string{"/metrics", "/debug/pprof/"} {
			if r := pub.Get(p); r.StatusCode != http.StatusNotFound {
				t.Errorf("public listener GET %s = %d, want 404", p, r.StatusCode)
			}
		}
		body := get(t, "http://"+metrics+"/metrics", http.StatusOK)
		for _, want := range []string{
			`ndiro_http_requests_total{method="GET",route="/meals",status="3xx"} 1`,
			`ndiro_build_info{`,
			`ndiro_storage_calls_total{operation="CreateTable",result="ok",service="DynamoDB"}`,
			`ndiro_journal_fsync_duration_seconds_count`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("pprof=%v: /metrics lacks %s", pprof, want)
			}
		}
		wantPprof := http.StatusNotFound
		if pprof {
			wantPprof = http.StatusOK
		}
		get(t, "http://"+metrics+"/debug/pprof/", wantPprof)
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run returned %v after shutdown, want nil", err)
		}
	}
}

// get fetches u and checks its status; it returns the body.
func get(t *testing.T, u string, want int) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Errorf("GET %s = %d, want %d", u, resp.StatusCode, want)
	}
	return string(b)
}
