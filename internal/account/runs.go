package account

import (
	"context"
	"sync"
)

// runs keeps at most one background run per account ID: the Deleter's
// (keyed by the account) and the Mover's (keyed by the new subject).
// start refuses an ID whose run is going, and every ID once close has
// been called; close cancels the runs' context (stop) and waits for them.
type runs struct {
	// stop is the runs' parent context; close cancels it.
	stop   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	running map[string]chan struct{} // closed when the run ends
}

func newRuns() *runs {
	stop, cancel := context.WithCancel(context.Background())
	return &runs{stop: stop, cancel: cancel, running: map[string]chan struct{}{}}
}

// start runs run in its own goroutine as the run of id, and reports true;
// false, running nothing, if a run of id is going or close was called.
func (r *runs) start(id string, run func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.running[id]; ok || r.closed {
		return false
	}
	done := make(chan struct{})
	r.running[id] = done
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() {
			r.mu.Lock()
			delete(r.running, id)
			r.mu.Unlock()
			close(done)
		}()
		run()
	}()
	return true
}

// active reports whether the run of id is going now.
func (r *runs) active(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.running[id]
	return ok
}

// count is how many runs are going now.
func (r *runs) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.running)
}

// wait blocks until no run of id is going, or ctx ends (ctx.Err()).
func (r *runs) wait(ctx context.Context, id string) error {
	r.mu.Lock()
	done, ok := r.running[id]
	r.mu.Unlock()
	if !ok {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close starts no more runs, cancels stop and waits for the runs going
// to return, or for ctx to end (ctx.Err()).
func (r *runs) close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
