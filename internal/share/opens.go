package share

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// OpensEvery is how often Store.RunOpens writes the opens counted in
// memory: at most one UpdateItem per share per OpensEvery, however often
// its link is opened, and the recipient's page never waits for a write.
// A crash of the process loses at most this long of counts.
const OpensEvery = 2 * time.Second

// opens are recipient visits counted in memory and not yet written, by
// token. flush writes them one share at a time; flushMu keeps flushes in
// order, so a later batch's last_opened_at is written after an earlier's.
type opens struct {
	mu      sync.Mutex
	pending map[string]*openBatch
	flushMu sync.Mutex
}

// openBatch is n visits of one share between first and last.
type openBatch struct {
	n           int64
	first, last time.Time
}

// CountOpen counts one recipient visit of the share tok at at, in memory:
// FlushOpens (every OpensEvery under RunOpens, before the owner's and the
// admin's lists, and at Close) writes it.
func (s *Store) CountOpen(tok string, at time.Time) {
	s.opens.mu.Lock()
	defer s.opens.mu.Unlock()
	if s.opens.pending == nil {
		s.opens.pending = map[string]*openBatch{}
	}
	b := s.opens.pending[tok]
	if b == nil {
		s.opens.pending[tok] = &openBatch{n: 1, first: at, last: at}
		return
	}
	b.n++
	b.first, b.last = minTime(b.first, at), maxTime(b.last, at)
}

// FlushOpens writes the opens counted so far, one RecordOpen per share. A
// share gone meanwhile (revoked, its account deleted) loses its count; a
// failed write keeps it for the next flush, and the first such error is
// returned.
func (s *Store) FlushOpens(ctx context.Context) error {
	s.opens.flushMu.Lock()
	defer s.opens.flushMu.Unlock()
	s.opens.mu.Lock()
	batch := s.opens.pending
	s.opens.pending = nil
	s.opens.mu.Unlock()
	var first error
	for tok, b := range batch {
		err := s.RecordOpen(ctx, tok, b.n, b.first, b.last)
		switch {
		case err == nil, errors.Is(err, ErrNotFound):
		default:
			s.putBack(tok, b)
			if first == nil {
				first = err
			}
		}
	}
	if first != nil {
		return fmt.Errorf("share: flush opens: %w", first)
	}
	return nil
}

// putBack returns an unwritten batch to the pending counts.
func (s *Store) putBack(tok string, b *openBatch) {
	s.opens.mu.Lock()
	defer s.opens.mu.Unlock()
	if s.opens.pending == nil {
		s.opens.pending = map[string]*openBatch{}
	}
	if p := s.opens.pending[tok]; p != nil {
		p.n += b.n
		p.first, p.last = minTime(p.first, b.first), maxTime(p.last, b.last)
		return
	}
	s.opens.pending[tok] = b
}

// RunOpens flushes the counted opens every OpensEvery until ctx ends, then
// once more (with a fresh context of up to 5 s), and returns. Failures are
// reported to onErr and retried at the next tick.
func (s *Store) RunOpens(ctx context.Context, onErr func(error)) {
	t := time.NewTicker(OpensEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if err := s.FlushOpens(ctx); err != nil && ctx.Err() == nil {
				onErr(err)
			}
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := s.FlushOpens(fctx); err != nil {
				onErr(err)
			}
			return
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
