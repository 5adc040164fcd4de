package share

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"ndiro/internal/storage"
)

// OpensEvery is how often Store.RunOpens writes the opens counted in
// memory: at most one UpdateItem per share per OpensEvery, however often
// its link is opened, and the recipient's page never waits for a write.
// While writes succeed, a crash of the process loses at most this long of
// counts.
const OpensEvery = 2 * time.Second

// OpensTries is how many flushes try to write one batch of opens before
// it is dropped (logged by RunOpens's onErr): a write that keeps failing
// must not keep its counts, and a log line, growing forever. A write
// storage refused (a full disk, storage.Refused) is not a try: the batch
// waits, as it was, until writes are taken again (memory stays bounded:
// one batch out and one pending per share).
const OpensTries = 30

// opens are recipient visits counted in memory and not yet written. A
// share's visits wait in pending until its batch out (being written, or
// failed and kept to be sent again as it was) is written, so a share's
// batches are written one at a time, in order. flushMu keeps flushes one
// at a time.
type opens struct {
	mu      sync.Mutex
	pending map[string]*openBatch // by token: counted since the last batch went out
	out     map[string]*openBatch // by token: taken by a flush, not yet written
	run     string                // this process's batch ID prefix
	seq     uint64
	flushMu sync.Mutex
}

// openBatch is n visits of one share between first and last. id, given
// when a flush takes it, makes its write idempotent (RecordOpen).
type openBatch struct {
	id          string
	n           int64
	first, last time.Time
	tries       int
}

func (b *openBatch) add(at time.Time) {
	b.n++
	b.first, b.last = minTime(b.first, at), maxTime(b.last, at)
}

// CountOpen counts one recipient visit of the share tok at at, in memory:
// FlushOpens (every OpensEvery under RunOpens, and at Close) writes it,
// and the owner's and admin's lists add what is not written yet.
func (s *Store) CountOpen(tok string, at time.Time) {
	o := &s.opens
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.pending == nil {
		o.pending = map[string]*openBatch{}
	}
	if b := o.pending[tok]; b != nil {
		b.add(at)
		return
	}
	o.pending[tok] = &openBatch{n: 1, first: at, last: at}
}

// FlushOpens writes the opens counted so far, one RecordOpen per share. A
// share gone meanwhile (revoked, its account deleted) loses its count. A
// failed write keeps its batch, to be sent again as it was by the next
// flush, up to OpensTries times (a write storage refused as often as it
// takes); the errors are returned joined, with the batches given up.
func (s *Store) FlushOpens(ctx context.Context) error {
	o := &s.opens
	o.flushMu.Lock()
	defer o.flushMu.Unlock()
	o.mu.Lock()
	if o.out == nil {
		o.out = map[string]*openBatch{}
	}
	if o.run == "" {
		var r [8]byte
		_, _ = rand.Read(r[:])
		o.run = hex.EncodeToString(r[:])
	}
	for tok, b := range o.pending {
		if o.out[tok] == nil {
			o.seq++
			b.id = o.run + "-" + strconv.FormatUint(o.seq, 10)
			o.out[tok] = b
			delete(o.pending, tok)
		}
	}
	work := make(map[string]*openBatch, len(o.out))
	for tok, b := range o.out {
		work[tok] = b
	}
	o.mu.Unlock()

	var errs []error
	for tok, b := range work {
		err := s.RecordOpen(ctx, tok, b.id, b.n, b.first, b.last)
		o.mu.Lock()
		switch {
		case err == nil, errors.Is(err, ErrNotFound):
			delete(o.out, tok)
		default:
			if storage.Refused(err) == nil {
				b.tries++
			}
			if b.tries >= OpensTries {
				delete(o.out, tok)
				err = fmt.Errorf("%d opens given up after %d tries: %w", b.n, b.tries, err)
			}
			errs = append(errs, err)
		}
		o.mu.Unlock()
	}
	if len(errs) > 0 {
		return fmt.Errorf("share: flush opens: %w", errors.Join(errs...))
	}
	return nil
}

// withUnwritten adds to each share of all the opens counted and not yet
// written: its pending visits, and its batch out unless the row already
// names that batch (written, the answer not yet back).
func (s *Store) withUnwritten(all []Share) {
	o := &s.opens
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range all {
		sh := &all[i]
		if b := o.out[sh.Token]; b != nil && b.id != sh.OpenBatch {
			sh.addOpens(b)
		}
		if b := o.pending[sh.Token]; b != nil {
			sh.addOpens(b)
		}
	}
}

// addOpens adds b's visits to s's count, first and last open.
func (s *Share) addOpens(b *openBatch) {
	s.Opens += b.n
	if s.FirstOpenedAt == nil || b.first.Before(*s.FirstOpenedAt) {
		first := b.first
		s.FirstOpenedAt = &first
	}
	if s.LastOpenedAt == nil || b.last.After(*s.LastOpenedAt) {
		last := b.last
		s.LastOpenedAt = &last
	}
}

// RunOpens flushes the counted opens every OpensEvery until ctx ends, then
// once more (with a fresh context of up to 5 s), and returns. Failures are
// reported to onErr, storage refusing writes once until a flush succeeds
// again; their batches are tried again at the next tick.
func (s *Store) RunOpens(ctx context.Context, onErr func(error)) {
	t := time.NewTicker(OpensEvery)
	defer t.Stop()
	refused := false // storage refusing writes, reported already
	for {
		select {
		case <-t.C:
			err := s.FlushOpens(ctx)
			switch {
			case err == nil:
				refused = false
			case ctx.Err() != nil:
			case storage.Refused(err) != nil && refused:
			default:
				refused = storage.Refused(err) != nil
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
