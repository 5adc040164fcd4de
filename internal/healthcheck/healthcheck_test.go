package healthcheck

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// server answers /healthz with status and records the paths asked.
func server(t *testing.T, status int) (port string, paths chan string) {
	t.Helper()
	paths = make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths <- r.URL.Path
		if status == http.StatusFound {
			http.Redirect(w, r, "/", status)
			return
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	_, port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	return port, paths
}

func TestRun(t *testing.T) {
	t.Parallel()
	ok, okPaths := server(t, http.StatusOK)
	down, _ := server(t, http.StatusServiceUnavailable)
	moved, _ := server(t, http.StatusFound)
	tests := []struct {
		name string
		addr string
		args []string
		want string // "" for success, else a part of the error
	}{
		{"answers 200", "127.0.0.1:" + ok, nil, ""},
		{"wildcard listener asked on loopback", "0.0.0.0:" + ok, nil, ""},
		{"no host asked on loopback", ":" + ok, nil, ""},
		{"container with a wildcard listener", "0.0.0.0:" + ok, []string{"-container"}, ""},
		{"container with --container", "0.0.0.0:" + ok, []string{"--container"}, ""},
		{"503", "127.0.0.1:" + down, nil, "/healthz answered 503"},
		{"a redirect is not followed", "127.0.0.1:" + moved, nil, "/healthz answered 302"},
		{"container on 127.0.0.1", "127.0.0.1:" + ok, []string{"-container"}, "NDIRO_ADDR listens on the container's loopback only (127.0.0.1:" + ok + ")"},
		{"container on 127.0.0.2", "127.0.0.2:" + ok, []string{"-container"}, "loopback only"},
		{"container on localhost", "localhost:" + ok, []string{"-container"}, "loopback only"},
		{"container on ::1", "[::1]:" + ok, []string{"-container"}, "loopback only"},
		{"unknown flag", "127.0.0.1:" + ok, []string{"-verbose"}, "flag provided but not defined: -verbose (the only flag is -container)"},
		{"stray argument", "127.0.0.1:" + ok, []string{"now"}, `unexpected argument "now"`},
		{"address without a port", "127.0.0.1", nil, `NDIRO_ADDR "127.0.0.1"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Run(context.Background(), tc.addr, tc.args)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Run(%q, %q) = %v, want nil", tc.addr, tc.args, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Run(%q, %q) = %v, want an error containing %q", tc.addr, tc.args, err, tc.want)
			}
		})
	}
	// Every answer that reached the server was for /healthz.
	close(okPaths)
	n := 0
	for p := range okPaths {
		n++
		if p != "/healthz" {
			t.Errorf("asked %q, want /healthz", p)
		}
	}
	if n != 5 {
		t.Errorf("the 200 server was asked %d times, want 5 (the loopback refusals ask nothing)", n)
	}
	if err := Run(context.Background(), "127.0.0.1:"+ok, []string{"-container"}); !errors.Is(err, ErrLoopback) {
		t.Errorf("Run with -container on loopback = %v, want ErrLoopback", err)
	}
}

// TestRunStalled: a server that accepts and never answers fails the check
// when its deadline passes, not later.
func TestRunStalled(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = Run(ctx, ln.Addr().String(), nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run against a stalled server = %v, want the deadline's error", err)
	}
}

// TestRunRefused: nothing listening is an error, at once.
func TestRunRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if err := Run(context.Background(), addr, nil); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Run with nothing listening = %v, want connection refused", err)
	}
}
