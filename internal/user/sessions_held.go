package user

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// held is what Sessions keeps in memory while storage refuses its writes
// (a full disk, no writer lease): sign-ins whose session could not be
// stored, and ends whose write was refused. Both hold in this process at
// once (a held sign-in is found, a held end is not) and are written when
// storage takes writes again (retryHeld). A restart before then loses
// them: a held sign-in has to sign in again, and a held end's session
// comes back, for whoever kept its cookie (the browser deleted it).
type held struct {
	// n counts starts and ends, read without the lock on every lookup.
	n       atomic.Int32
	mu      sync.Mutex
	starts  map[string]heldStart // by token
	ends    map[string]string    // session ID → user ID
	retryAt time.Time
}

// heldStart is a sign-in storage refused to keep.
type heldStart struct {
	id, uid string
	e       Session
}

// holdStart keeps token's sign-in e of uid in memory; false if maxHeld
// are held already.
func (s *Sessions) holdStart(token, uid string, e Session) bool {
	h := &s.held
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.starts) >= maxHeld {
		return false
	}
	if _, ok := h.starts[token]; !ok {
		h.n.Add(1)
	}
	h.starts[token] = heldStart{id: SessionID(token), uid: uid, e: e}
	return true
}

// holdEnd keeps the end of session id of uid in memory; false if maxHeld
// are held already.
func (s *Sessions) holdEnd(id, uid string) bool {
	h := &s.held
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.ends) >= maxHeld {
		return false
	}
	if _, ok := h.ends[id]; !ok {
		h.n.Add(1)
	}
	h.ends[id] = uid
	return true
}

// heldStart returns token's held sign-in.
func (s *Sessions) heldStart(token string) (heldStart, bool) {
	h := &s.held
	h.mu.Lock()
	defer h.mu.Unlock()
	hs, ok := h.starts[token]
	return hs, ok
}

// heldEnd reports whether session id's end is held.
func (s *Sessions) heldEnd(id string) bool {
	h := &s.held
	if h.n.Load() == 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.ends[id]
	return ok
}

// dropHeldStart forgets token's held sign-in (its logout) and reports
// whether there was one.
func (s *Sessions) dropHeldStart(token string) bool {
	h := &s.held
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.starts[token]; !ok {
		return false
	}
	delete(h.starts, token)
	h.n.Add(-1)
	return true
}

// dropHeldID forgets the held sign-in of uid with session ID id and
// reports whether there was one.
func (s *Sessions) dropHeldID(uid, id string) bool {
	h := &s.held
	h.mu.Lock()
	defer h.mu.Unlock()
	for tok, hs := range h.starts {
		if hs.uid == uid && hs.id == id {
			delete(h.starts, tok)
			h.n.Add(-1)
			return true
		}
	}
	return false
}

// dropHeldOf forgets every held sign-in of uid and returns how many.
func (s *Sessions) dropHeldOf(uid string) int {
	h := &s.held
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for tok, hs := range h.starts {
		if hs.uid == uid {
			delete(h.starts, tok)
			h.n.Add(-1)
			n++
		}
	}
	return n
}

// heldOf lists uid's live held sign-ins.
func (s *Sessions) heldOf(uid string) []SignedIn {
	h := &s.held
	if h.n.Load() == 0 {
		return nil
	}
	now := s.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	var list []SignedIn
	for _, hs := range h.starts {
		if hs.uid == uid && now.Before(hs.e.Expires) {
			list = append(list, SignedIn{ID: hs.id, Device: hs.e.Device, Created: hs.e.Created, Seen: hs.e.Seen})
		}
	}
	return list
}

// retryHeld writes what is held, at most every retryEvery: each sign-in
// and end written is forgotten; a sign-in its account no longer allows
// (disabled, deleted) is dropped. It stops at the first write storage
// still refuses.
func (s *Sessions) retryHeld(ctx context.Context) {
	h := &s.held
	if h.n.Load() == 0 {
		return
	}
	now := s.now()
	h.mu.Lock()
	if now.Before(h.retryAt) {
		h.mu.Unlock()
		return
	}
	h.retryAt = now.Add(retryEvery)
	starts := make(map[string]heldStart, len(h.starts))
	for k, v := range h.starts {
		starts[k] = v
	}
	ends := make(map[string]string, len(h.ends))
	for k, v := range h.ends {
		ends[k] = v
	}
	h.mu.Unlock()
	for tok, hs := range starts {
		switch err := s.start(ctx, tok, hs.uid, hs.e); {
		case err == nil:
			s.log.Info("session held in memory written", "user_id", hs.uid)
		case errors.Is(err, ErrState), errors.Is(err, ErrNotFound):
			s.log.Info("session held in memory dropped: the account cannot sign in", "user_id", hs.uid, "err", err)
		default:
			return // refused or failed again: the next try is retryEvery away
		}
		s.dropHeldStart(tok)
	}
	for id, uid := range ends {
		if err := s.end(ctx, uid, id); err != nil {
			return
		}
		h.mu.Lock()
		if _, ok := h.ends[id]; ok {
			delete(h.ends, id)
			h.n.Add(-1)
		}
		h.mu.Unlock()
		s.log.Info("session end written", "user_id", uid)
	}
}
