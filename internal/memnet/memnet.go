// Package memnet is a listener in the process's memory: a real
// http.Server serves it and an http.Transport dials it, with no socket
// in between, so a server only this process may reach (local mode's
// embedded storage and sign-in stand-in) has no port anyone else on the
// machine could connect to. Each connection is a net.Pipe: bytes pass
// as the reader takes them, so bodies stream (nothing is held whole),
// and closing one end (a transport cancelling a request) ends the
// server's reads, which cancels the handler's request context.
package memnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
)

// ErrClosed is returned by Dial on a closed Listener, as a refused
// connection would be.
var ErrClosed = errors.New("memnet: listener closed")

// Listener is a net.Listener whose connections come from its own Dial.
// Its zero value is not usable; make one with Listen.
type Listener struct {
	addr  Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// Listen returns a listener whose Addr reports name (an http.Server
// and its clients see it as the server's address, e.g.
// "127.0.0.1:8080" for a server that answers as part of the app there).
func Listen(name string) *Listener {
	return &Listener{addr: Addr(name), conns: make(chan net.Conn), done: make(chan struct{})}
}

// Accept waits for the next Dial and returns the server's end of its
// connection; after Close it returns an error wrapping net.ErrClosed.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, fmt.Errorf("memnet: accept on %s: %w", l.addr, net.ErrClosed)
	}
}

// Close stops Accept and Dial; connections already made stay open.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr returns the name given to Listen.
func (l *Listener) Addr() net.Addr { return l.addr }

// Dial connects to l: it waits until Accept takes the connection (or ctx
// ends, or l closes: ErrClosed) and returns the client's end.
func (l *Listener) Dial(ctx context.Context) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		client.Close()
		server.Close()
		return nil, ErrClosed
	case <-ctx.Done():
		client.Close()
		server.Close()
		return nil, ctx.Err()
	}
}

// DialContext is Dial with the signature of http.Transport.DialContext:
// network and address are ignored, every dial reaches l.
func (l *Listener) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	return l.Dial(ctx)
}

// Addr is a Listener's address: the name given to Listen, on network
// "memnet".
type Addr string

// Network returns "memnet".
func (Addr) Network() string { return "memnet" }

// String returns the name.
func (a Addr) String() string { return string(a) }
