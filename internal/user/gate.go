package user

import (
	"context"
	"errors"
	"sync"
)

// ErrClosed is returned by Gate.Enter for an account whose deletion has
// started: it accepts no more writes.
var ErrClosed = errors.New("user: account is being deleted")

// Gate orders each account's writes against its deletion (DESIGN.md,
// account deletion): every write for a user holds the gate while it runs
// (Enter … release), and Close, the first step of a deletion, refuses new
// writes and waits for those in flight. So an upload that began before the
// account was marked finishes before its objects are listed for deletion,
// and none begins after; Forget, once the users row is gone, opens it for a
// new account with the same ID. One process makes every write, so an in-process
// gate is exact. The zero value is ready to use.
type Gate struct {
	mu    sync.Mutex
	users map[string]*gateState
}

type gateState struct {
	inflight int
	closed   bool
	idle     chan struct{} // closed when inflight drops to 0 after Close
}

// Enter admits one write for userID, or returns ErrClosed once Close has
// been called for it. Call release exactly once when the write is done.
func (g *Gate) Enter(userID string) (release func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.users == nil {
		g.users = map[string]*gateState{}
	}
	st := g.users[userID]
	if st == nil {
		st = &gateState{}
		g.users[userID] = st
	}
	if st.closed {
		return nil, ErrClosed
	}
	st.inflight++
	var once sync.Once
	return func() { once.Do(func() { g.leave(userID, st) }) }, nil
}

func (g *Gate) leave(userID string, st *gateState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st.inflight--
	switch {
	case st.inflight > 0:
	case st.closed:
		close(st.idle)
	default:
		delete(g.users, userID) // nothing to remember for an open, idle account
	}
}

// Close refuses every later Enter for userID (until Forget) and waits until the writes
// already admitted have released the gate, or ctx ends (its error is then
// returned; the gate stays closed). Closing a closed gate waits again.
func (g *Gate) Close(ctx context.Context, userID string) error {
	g.mu.Lock()
	if g.users == nil {
		g.users = map[string]*gateState{}
	}
	st := g.users[userID]
	if st == nil {
		st = &gateState{}
		g.users[userID] = st
	}
	if !st.closed {
		st.closed = true
		st.idle = make(chan struct{})
		if st.inflight == 0 {
			close(st.idle)
		}
	}
	idle := st.idle
	g.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Forget reopens the gate for userID once their account is gone: the
// deletion's last step removed the users row, so the ID may belong to a new
// account (the same person invited again), whose writes must be admitted.
// Call it only after the users row is deleted; no write can then be in
// flight, since the closed gate admitted none and Close waited for the rest.
// Forgetting an open or unknown ID does nothing.
func (g *Gate) Forget(userID string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if st := g.users[userID]; st != nil && st.closed {
		delete(g.users, userID)
	}
}
