package apptest

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// Link is a TCP proxy on loopback between the app and one of its
// backends (Options.Links), which a test can make stall or slow: a
// backend that accepts connections and never answers, or answers late,
// without touching the emulator behind it.
type Link struct {
	// URL is the proxy's http://127.0.0.1:port, which the app's client uses.
	URL    string
	target string
	ln     net.Listener

	mu sync.Mutex
	// stalled is non-nil while the link stalls; Restore closes it.
	// answersOnly says it stalls only what the backend sends back.
	stalled     chan struct{}
	answersOnly bool
	delay       time.Duration
	conns       map[net.Conn]struct{}
	closed      chan struct{}
}

// NewLink starts a proxy to endpoint (an http:// URL) and stops it when t
// ends.
func NewLink(t testing.TB, endpoint string) *Link {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &Link{
		URL: "http://" + ln.Addr().String(), target: strings.TrimPrefix(endpoint, "http://"), ln: ln,
		conns: map[net.Conn]struct{}{}, closed: make(chan struct{}),
	}
	go l.serve()
	t.Cleanup(l.close)
	return l
}

// Stall makes the link accept connections and pass nothing on, in either
// direction, on new connections and on those already open, until
// Restore.
func (l *Link) Stall() { l.stall(false) }

// StallAnswers passes requests on to the backend but none of its answers
// back, until Restore: writes that are applied and whose answers are
// lost.
func (l *Link) StallAnswers() { l.stall(true) }

func (l *Link) stall(answersOnly bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stalled == nil {
		l.stalled = make(chan struct{})
	}
	l.answersOnly = answersOnly
}

// Slow makes the link hold every chunk it passes on for d (0 for none),
// until Restore.
func (l *Link) Slow(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.delay = d
}

// Restore passes everything on again at once. Connections that stalled
// are closed, and what they held is dropped: a request the app gave up
// on never reaches the backend late.
func (l *Link) Restore() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stalled != nil {
		close(l.stalled)
		l.stalled = nil
	}
	l.answersOnly, l.delay = false, 0
}

func (l *Link) serve() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", l.target)
		if err != nil {
			c.Close()
			continue
		}
		l.mu.Lock()
		l.conns[c], l.conns[up] = struct{}{}, struct{}{}
		l.mu.Unlock()
		go l.pipe(up, c, false)
		go l.pipe(c, up, true)
	}
}

// pipe copies src to dst, chunk by chunk, as the link's state allows;
// answers says src is the backend.
func (l *Link) pipe(dst, src net.Conn, answers bool) {
	defer l.drop(dst, src)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !l.pass(answers) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// pass waits as the link's state says before a chunk goes on: d while
// slow; while stalled (in this direction), until Restore or close, and
// then reports false, for the chunk and its connection to be dropped.
func (l *Link) pass(answer bool) bool {
	l.mu.Lock()
	stalled, d := l.stalled, l.delay
	if l.answersOnly && !answer {
		stalled = nil
	}
	l.mu.Unlock()
	if stalled != nil {
		select {
		case <-stalled:
		case <-l.closed:
		}
		return false
	}
	if d > 0 {
		select {
		case <-time.After(d):
		case <-l.closed:
			return false
		}
	}
	return true
}

func (l *Link) drop(conns ...net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range conns {
		c.Close()
		delete(l.conns, c)
	}
}

func (l *Link) close() {
	l.ln.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.closed:
	default:
		close(l.closed)
	}
	for c := range l.conns {
		c.Close()
	}
}
