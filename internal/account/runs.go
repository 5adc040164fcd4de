package account

import (
	"context"
	"sync"
)

// runs keeps at most one background run per account ID: the Deleter's
// and the Importer's (keyed by the account) and the Mover's (keyed by the
// new subject). start refuses an ID whose run is going, and every ID once
// close has been called; end cancels one run and waits for it; close
// cancels the runs' context (stop) and waits for them all.
type runs struct {
	// stop is the runs' parent context; close cancels it.
	stop   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	running map[string]*oneRun
}

// oneRun is a run going: cancel ends its context, done is closed when it
// has returned.
type oneRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func newRuns() *runs {
	stop, cancel := context.WithCancel(context.Background())
	return &runs{stop: stop, cancel: cancel, running: map[string]*oneRun{}}
}

// start runs run in its own goroutine as the run of id, under a context
// of its own that end(id) or close cancels, and reports true; false,
// running nothing, if a run of id is going or close was called.
func (r *runs) start(id string, run func(ctx context.Context)) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.running[id]; ok || r.closed {
		return false
	}
	ctx, cancel := context.WithCancel(r.stop)
	one := &oneRun{cancel: cancel, done: make(chan struct{})}
	r.running[id] = one
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() {
			cancel()
			r.mu.Lock()
			delete(r.running, id)
			r.mu.Unlock()
			close(one.done)
		}()
		run(ctx)
	}()
	return true
}

// end cancels the run of id, if one is going, and waits until it has
// returned or ctx ends (ctx.Err()).
func (r *runs) end(ctx context.Context, id string) error {
	r.mu.Lock()
	one, ok := r.running[id]
	r.mu.Unlock()
	if !ok {
		return nil
	}
	one.cancel()
	select {
	case <-one.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
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
	one, ok := r.running[id]
	r.mu.Unlock()
	if !ok {
		return nil
	}
	select {
	case <-one.done:
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
