// Package readiness answers /readyz: whether this process can serve
// people now (DynamoDB and S3 answer, local storage takes writes, the
// process holds the one-writer lease), as against /healthz, which only
// says the process is alive. A load balancer or an orchestrator takes a
// process that is not ready out of rotation; a supervisor restarts one
// that is not alive.
package readiness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/smithy-go"
	"golang.org/x/sync/singleflight"

	"ndiro/internal/storage"
)

// CacheFor is how long a result of the backend checks is reused: a
// flood of probes costs one DynamoDB and one S3 call per CacheFor at
// most.
const CacheFor = 5 * time.Second

// backstop is how long past its Deadline a check is cut off if its
// client has not given up by itself.
const backstop = 500 * time.Millisecond

// Backend is one cheap call to a remote backend (DynamoDB's
// DescribeTable of one table, S3's HeadBucket).
type Backend struct {
	// Name is what the answer calls it: "DynamoDB", "S3".
	Name string
	// Check makes the call; nil error means the backend answered.
	Check func(context.Context) error
	// Deadline is how long Check may take before the backend counts as
	// not answering (the storage budget of its kind of call,
	// NDIRO_STORAGE_ITEM_TIMEOUT).
	Deadline time.Duration
}

// Local is a check of this process's own state, cheap enough to run on
// every probe: nil while it is fine.
type Local struct {
	// Name is what the answer calls it: "local storage", "lease".
	Name string
	// Check reports the problem; its message is shown in the answer, so
	// it must hold no secret. nil Check is always fine.
	Check func() error
}

// Checker runs the checks. Use New; safe for concurrent use.
type Checker struct {
	backends []Backend
	locals   []Local
	now      func() time.Time

	flight singleflight.Group
	mu     sync.Mutex
	last   []string // one line per backend, "" for fine
	at     time.Time
	valid  bool
}

// New returns a Checker of the backends (cached for CacheFor, on the
// clock now) and the local checks (run every time).
func New(backends []Backend, locals []Local, now func() time.Time) *Checker {
	return &Checker{backends: backends, locals: locals, now: now}
}

// Result is one answer: Lines say, per check in order, "Name: ok" or
// "Name: " and what is wrong; Ready is true when every check is fine.
type Result struct {
	Ready bool
	Lines []string
}

// Check returns the current result: the backends' from the last
// CacheFor, else from a fresh run of their checks (one run at a time,
// which every caller waiting shares; the run is bounded by each
// backend's Deadline, not by ctx, whose end only stops this caller's
// wait), and the local checks' now.
func (c *Checker) Check(ctx context.Context) Result {
	problems, err := c.backendProblems(ctx)
	if err != nil {
		return Result{Lines: []string{"the check was cancelled"}}
	}
	res := Result{Ready: true}
	for i, b := range c.backends {
		res.add(b.Name, problems[i])
	}
	for _, l := range c.locals {
		problem := ""
		if l.Check != nil {
			if err := l.Check(); err != nil {
				problem = localProblem(err)
			}
		}
		res.add(l.Name, problem)
	}
	return res
}

func (r *Result) add(name, problem string) {
	if problem == "" {
		r.Lines = append(r.Lines, name+": ok")
		return
	}
	r.Ready = false
	r.Lines = append(r.Lines, name+": "+problem)
}

// cached returns the last problems while they are younger than
// CacheFor.
func (c *Checker) cached() ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.valid && c.now().Sub(c.at) < CacheFor {
		return c.last, true
	}
	return nil, false
}

// backendProblems returns the cached problems, or runs the checks.
func (c *Checker) backendProblems(ctx context.Context) ([]string, error) {
	if p, ok := c.cached(); ok {
		return p, nil
	}
	ch := c.flight.DoChan("backends", func() (any, error) {
		// Looked at again inside the flight: a probe that found the
		// cache empty may reach DoChan only after an earlier flight has
		// filled it and ended, and must not start a second check.
		if p, ok := c.cached(); ok {
			return p, nil
		}
		p := c.runBackends()
		c.mu.Lock()
		c.last, c.at, c.valid = p, c.now(), true
		c.mu.Unlock()
		return p, nil
	})
	select {
	case r := <-ch:
		return r.Val.([]string), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// runBackends checks every backend at once, each within its deadline.
func (c *Checker) runBackends() []string {
	problems := make([]string, len(c.backends))
	var wg sync.WaitGroup
	for i, b := range c.backends {
		wg.Go(func() {
			// The backend's client bounds the call to the same budget
			// and says so (storage.ErrUnavailable); this is the backstop.
			ctx, cancel := context.WithTimeout(context.Background(), b.Deadline+backstop)
			defer cancel()
			start := time.Now()
			err := b.Check(ctx)
			if err != nil {
				problems[i] = backendProblem(err, b.Deadline, time.Since(start))
			}
		})
	}
	wg.Wait()
	return problems
}

// backendProblem words a failed backend call without its details, which
// may name endpoints or accounts: no answer in time, else the service's
// error code.
func backendProblem(err error, deadline, took time.Duration) string {
	if errors.Is(err, storage.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("not answering (no answer within %s)", deadline)
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		return "refused the check (" + api.ErrorCode() + ")"
	}
	return fmt.Sprintf("failed after %s", took.Round(time.Millisecond))
}

// localProblem words a failed local check: local storage's refusals by
// their kind (storage.Refused), anything else by its message.
func localProblem(err error) string {
	switch storage.Refused(err) {
	case storage.ErrFull:
		return "refusing writes: the disk is full"
	case storage.ErrFailed:
		return "refusing writes: the data files cannot be written"
	}
	return err.Error()
}

// ServeHTTP answers /readyz: 200 and "ready" when every check is fine,
// else 503 and "not ready", then one line per check, as text, never
// cached.
func (c *Checker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	res := c.Check(r.Context())
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	status, head := http.StatusOK, "ready"
	if !res.Ready {
		status, head = http.StatusServiceUnavailable, "not ready"
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, "%s\n%s\n", head, strings.Join(res.Lines, "\n"))
}
