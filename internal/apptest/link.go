package apptest

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"ndiro/internal/localenv"
)

// Link stands on the connections between the app and one of its
// backends (Options.Links), which a test can make stall or slow: a
// backend that accepts connections and never answers, or answers late,
// without touching the emulator behind it. It wraps each connection the
// app's client dials; no port is opened.
type Link struct {
	// Endpoint reaches the backend through the link, for the app's client.
	Endpoint localenv.Endpoint

	mu sync.Mutex
	// stalled is non-nil while the link stalls; Restore closes it.
	// answersOnly says it stalls only what the backend sends back.
	stalled     chan struct{}
	answersOnly bool
	delay       time.Duration
	closed      chan struct{}
}

// NewLink returns a link to the backend at to (its in-process Dial, or
// the network when to has none) and releases what it holds when t ends.
func NewLink(t testing.TB, to localenv.Endpoint) *Link {
	t.Helper()
	dial := to.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	l := &Link{closed: make(chan struct{})}
	l.Endpoint = localenv.Endpoint{URL: to.URL, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &linkConn{Conn: c, l: l, closed: make(chan struct{})}, nil
	}}
	t.Cleanup(l.close)
	return l
}

// Stall makes the link pass nothing on, in either direction, on new
// connections and on those already open, until Restore.
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

// pass waits as the link's state says before a chunk goes on: d while
// slow; while stalled (in this direction), until Restore, the link's end
// or the connection's close (done), and then reports false, for the
// chunk and its connection to be dropped. answer says the chunk comes
// from the backend.
func (l *Link) pass(answer bool, done <-chan struct{}) bool {
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
		case <-done:
		}
		return false
	}
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-l.closed:
			return false
		case <-done:
			return false
		}
	}
	return true
}

func (l *Link) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.closed:
	default:
		close(l.closed)
	}
}

// linkConn is one connection through a Link: what the app writes is a
// request chunk, what it reads an answer chunk, each passed on as the
// link allows.
type linkConn struct {
	net.Conn
	l      *Link
	closed chan struct{}
	once   sync.Once
}

// errDropped is what the app's side of a connection the link dropped
// reads and writes.
var errDropped = fmt.Errorf("apptest: link dropped the connection: %w", net.ErrClosed)

func (c *linkConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.l.pass(true, c.closed) {
		c.Close()
		return 0, errDropped
	}
	return n, err
}

func (c *linkConn) Write(p []byte) (int, error) {
	if !c.l.pass(false, c.closed) {
		c.Close()
		return 0, errDropped
	}
	return c.Conn.Write(p)
}

func (c *linkConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// Expose serves the backend at ep on a loopback port the test owns, for
// another process (ndiro run as a child, in AWS mode) to reach, and
// returns its http://127.0.0.1:port URL (ep's own URL if it has no
// Dial: a server on the network already). Each connection is copied both
// ways to one dialled through ep; everything closes when t ends.
func Expose(t testing.TB, ep localenv.Endpoint) string {
	t.Helper()
	if ep.Dial == nil {
		return ep.URL // on the network already
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	conns := map[net.Conn]struct{}{}
	track := func(c net.Conn, open bool) {
		mu.Lock()
		defer mu.Unlock()
		if open {
			conns[c] = struct{}{}
		} else {
			delete(conns, c)
			c.Close()
		}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := ep.Dial(context.Background(), "tcp", ln.Addr().String())
			if err != nil {
				c.Close()
				continue
			}
			track(c, true)
			track(up, true)
			for _, pair := range [][2]net.Conn{{c, up}, {up, c}} {
				go func() {
					io.Copy(pair[0], pair[1])
					track(pair[0], false)
					track(pair[1], false)
				}()
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}
