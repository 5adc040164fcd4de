package user

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestGate(t *testing.T) {
	var g Gate
	release, err := g.Enter("u1")
	if err != nil {
		t.Fatal(err)
	}
	other, err := g.Enter("u2")
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- g.Close(context.Background(), "u1") }()

	// Close waits for the write in flight; new writes are refused at once.
	waitUntil(t, func() bool {
		r, err := g.Enter("u1")
		if err == nil {
			r() // before Close: a write that came and went
		}
		return errors.Is(err, ErrClosed)
	})
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v with a write still in flight", err)
	case <-time.After(20 * time.Millisecond):
	}
	release()
	release() // a second release is harmless
	if err := <-closed; err != nil {
		t.Fatalf("Close = %v after the write released, want nil", err)
	}
	// Other accounts are untouched, and closing again returns at once.
	if r, err := g.Enter("u2"); err != nil {
		t.Errorf("Enter(u2) = %v, want nil", err)
	} else {
		r()
	}
	other()
	if err := g.Close(context.Background(), "u1"); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := g.Enter("u1"); !errors.Is(err, ErrClosed) {
		t.Errorf("Enter after Close = %v, want ErrClosed", err)
	}
	// An open account with nothing in flight is not remembered.
	if _, ok := g.users["u2"]; ok {
		t.Error("idle open account u2 still held in memory")
	}
}

func TestGateForget(t *testing.T) {
	var g Gate
	if err := g.Close(context.Background(), "u1"); err != nil {
		t.Fatal(err)
	}
	g.Forget("u2") // unknown: nothing happens
	if _, err := g.Enter("u1"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Enter after Close = %v, want ErrClosed", err)
	}
	g.Forget("u1")
	release, err := g.Enter("u1")
	if err != nil {
		t.Fatalf("Enter after Forget = %v, want nil", err)
	}
	g.Forget("u1") // open, with a write in flight: nothing to reopen
	if _, ok := g.users["u1"]; !ok {
		t.Error("Forget dropped an open account with a write in flight")
	}
	release()
}

func TestGateCloseHonoursContext(t *testing.T) {
	var g Gate
	if _, err := g.Enter("u1"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := g.Close(ctx, "u1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close with a write stuck in flight = %v, want the context's error", err)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5 s")
		}
		time.Sleep(time.Millisecond)
	}
}
