package memnet_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"ndiro/internal/memnet"
)

// serve serves h on a new listener until the test ends and returns a
// client whose every request reaches it.
func serve(t *testing.T, h http.Handler) *http.Client {
	t.Helper()
	ln := memnet.Listen("backend.test:80")
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	tr := &http.Transport{DialContext: ln.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// wait fails the test unless ch closes within a minute (a safety net:
// the tests wait on events, this only bounds a hang).
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("%s did not happen within a minute", what)
	}
}

// TestResponseStreams: the client reads the first part of a response
// while the handler still holds the rest, so a body is never held whole
// between them.
func TestResponseStreams(t *testing.T) {
	t.Parallel()
	first := bytes.Repeat([]byte("a"), 1<<20)
	read := make(chan struct{})
	c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(first)
		w.(http.Flusher).Flush()
		select {
		case <-read: // the client has the first MiB
		case <-r.Context().Done():
			return
		}
		w.Write([]byte("rest"))
	}))
	resp, err := c.Get("http://backend.test/photo")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make([]byte, len(first))
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadFull(resp.Body, got)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the first MiB did not arrive while the handler held the rest: the body is held whole")
	}
	close(read)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "rest" {
		t.Errorf("rest of the body = %q, %v, want \"rest\"", rest, err)
	}
}

// TestRequestStreams: the handler reads the first part of a request body
// while the client has not written the rest yet.
func TestRequestStreams(t *testing.T) {
	t.Parallel()
	got := make(chan struct{})
	c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 8<<20)
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		close(got)
		rest, _ := io.ReadAll(r.Body)
		w.Write(rest)
	}))
	pr, pw := io.Pipe()
	go func() {
		pw.Write(make([]byte, 8<<20))
		select {
		case <-got: // the handler has the first 8 MiB
			pw.Write([]byte("end"))
			pw.Close()
		case <-time.After(time.Minute):
			pw.CloseWithError(errors.New("the handler did not get the first 8 MiB while the rest was unsent"))
		}
	}()
	resp, err := c.Post("http://backend.test/part", "application/octet-stream", pr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(b) != "end" {
		t.Errorf("upload = %d %q, want 200 \"end\"", resp.StatusCode, b)
	}
}

// TestCancelReachesHandler: a request the client gives up on ends the
// handler's context.
func TestCancelReachesHandler(t *testing.T) {
	t.Parallel()
	started, ended := make(chan struct{}), make(chan struct{})
	c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		close(ended)
	}))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://backend.test/slow", nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	wait(t, started, "the request reaching the handler")
	cancel()
	wait(t, ended, "the handler's context ending after the client cancelled")
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled request = %v, want context.Canceled", err)
	}
}

// TestClosedListener: after Close, Accept and Dial fail as a closed
// listener and a refused connection do; Addr keeps the name it was given.
func TestClosedListener(t *testing.T) {
	t.Parallel()
	ln := memnet.Listen("127.0.0.1:8080")
	if got := ln.Addr().String(); got != "127.0.0.1:8080" {
		t.Errorf("Addr() = %q, want the name given", got)
	}
	ln.Close()
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close = %v, want net.ErrClosed", err)
	}
	if _, err := ln.Dial(context.Background()); !errors.Is(err, memnet.ErrClosed) {
		t.Errorf("Dial after Close = %v, want ErrClosed", err)
	}
}
