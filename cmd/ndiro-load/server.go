package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// server is the ndiro child process under load.
type server struct {
	cmd     *exec.Cmd
	dataDir string
	base    string // http://127.0.0.1:port
	exited  chan struct{}
	// errors counts the child's log lines at level ERROR; firstErrors
	// keeps the first few (logs hold no tokens, cookies or emails).
	errors      atomic.Int64
	mu          sync.Mutex
	firstErrors []string
}

// startServer starts bin in local mode on a free loopback port with a
// fresh data directory and the photo cache budget cacheBytes, and waits
// until it says where it listens. No setting comes from this process's
// environment but PATH and HOME, so nothing can point it elsewhere.
func startServer(ctx context.Context, bin string, cacheBytes int64) (*server, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("the ndiro binary %s: %w (make load builds it)", bin, err)
	}
	dir, err := os.MkdirTemp("", "ndiro-load-")
	if err != nil {
		return nil, err
	}
	s := &server{dataDir: dir, exited: make(chan struct{})}
	s.cmd = exec.Command(bin)
	s.cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"NDIRO_MODE=local", "NDIRO_ADDR=127.0.0.1:0", "NDIRO_DATA_DIR=" + dir,
		"NDIRO_PHOTO_CACHE_BYTES=" + strconv.FormatInt(cacheBytes, 10),
		"ADMIN_EMAILS=" + adminEmail,
	}
	s.cmd.Stderr = os.Stderr
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	found := make(chan string, 1)
	go func() {
		// Read every line, so the child never blocks on a full pipe; the
		// first "Open http://…" line says where it listens.
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if i := strings.Index(line, "Open http://"); i >= 0 {
				select {
				case found <- strings.TrimSpace(line[i+len("Open "):]):
				default:
				}
			}
			if strings.Contains(line, "level=ERROR") {
				if s.errors.Add(1) <= 5 {
					s.mu.Lock()
					s.firstErrors = append(s.firstErrors, line)
					s.mu.Unlock()
				}
			}
		}
	}()
	select {
	case base := <-found:
		u, err := url.Parse(base)
		if err != nil || u.Hostname() != "127.0.0.1" {
			s.stop()
			return nil, fmt.Errorf("the server listens at %q, want a loopback address", base)
		}
		s.base = base
		return s, nil
	case <-s.exited:
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%s exited before listening", bin)
	case <-time.After(30 * time.Second):
		s.stop()
		return nil, fmt.Errorf("%s did not say where it listens within 30 s", bin)
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	}
}

// pid is the child's process ID.
func (s *server) pid() int { return s.cmd.Process.Pid }

// rss is the child's memory from /proc, in bytes: peak (VmHWM), now
// (VmRSS), and of now what is anonymous memory (RssAnon: the Go heap and
// stacks) and file pages (RssFile: the binary, and the S3 emulator's
// memory-mapped bolt file).
type rss struct{ peak, now, anon, file int64 }

// memory reads the child's VmHWM and VmRSS.
func (s *server) memory() (rss, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid()))
	if err != nil {
		return rss{}, fmt.Errorf("server memory (needs Linux /proc): %w", err)
	}
	var m rss
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmHWM":
			m.peak = kb << 10
		case "VmRSS":
			m.now = kb << 10
		case "RssAnon":
			m.anon = kb << 10
		case "RssFile":
			m.file = kb << 10
		}
	}
	if m.peak == 0 {
		return rss{}, fmt.Errorf("no VmHWM in /proc/%d/status", s.pid())
	}
	return m, nil
}

// watch samples the child's memory every 250 ms until ctx ends and
// returns the highest anonymous and file-backed RSS it saw (VmHWM keeps
// only their sum).
func (s *server) watch(ctx context.Context) func() rss {
	var mu sync.Mutex
	var top rss
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			if m, err := s.memory(); err == nil {
				mu.Lock()
				top.anon, top.file = max(top.anon, m.anon), max(top.file, m.file)
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() rss {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return top
	}
}

// errorLines returns how many ERROR lines the child has logged, and the
// first five.
func (s *server) errorLines() (int64, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errors.Load(), append([]string(nil), s.firstErrors...)
}

// stop ends the child (SIGTERM, then SIGKILL after 20 s) and removes its
// data directory.
func (s *server) stop() {
	defer os.RemoveAll(s.dataDir)
	select {
	case <-s.exited:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
}

// loopbackOnly is a dialer that refuses any address but 127.0.0.1 and
// ::1: this program never sends a request anywhere else.
func loopbackOnly(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("refusing to connect to %s: loopback only", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}
