package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"ndiro/internal/config"
)

// Kind is a class of call by how long it may take: Item, Query or
// Transfer (config.Storage says which operations each holds).
type Kind int

const (
	// Item is a call on one item or one object's metadata.
	Item Kind = iota
	// Query is a call on many items or keys.
	Query
	// Transfer is a call moving an object's bytes.
	Transfer
)

func (k Kind) String() string {
	switch k {
	case Item:
		return "item"
	case Transfer:
		return "transfer"
	}
	return "query"
}

// kinds names the operations that are not Query, the kind of every
// operation not listed (batches, transactions and anything new).
var kinds = map[string]Kind{
	"GetItem":       Item,
	"PutItem":       Item,
	"UpdateItem":    Item,
	"DeleteItem":    Item,
	"DescribeTable": Item,
	"HeadObject":    Item,
	"HeadBucket":    Item,
	"DeleteObject":  Item,
	"CreateBucket":  Item,
	"GetObject":     Transfer,
	"PutObject":     Transfer,
	"CopyObject":    Transfer,
	"UploadPart":    Transfer,
}

// KindOf returns the kind of the SDK operation op, e.g. "GetItem".
func KindOf(op string) Kind {
	if k, ok := kinds[op]; ok {
		return k
	}
	return Query
}

// ErrUnavailable is what a call that a backend did not answer in time,
// or answered only with retryable failures (connection refused or reset,
// 5xx, throttling) until its attempts ran out, is wrapped with: the
// storage is not answering. errors.Is sees it through an
// *UnavailableError.
var ErrUnavailable = errors.New("storage is not answering")

// UnavailableError is a call that ended with ErrUnavailable: which
// service, operation and kind, after how long, and the SDK's error.
type UnavailableError struct {
	Service   string // "DynamoDB" or "S3"
	Operation string // e.g. "Query"
	Kind      Kind
	// Took is how long the call ran, attempts and backoff included.
	Took time.Duration
	Err  error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("%s %s: no answer in %s: %v", e.Service, e.Operation, e.Took.Round(time.Millisecond), e.Err)
}

// Unwrap returns the SDK's error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is reports true for ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Service returns the name of the backend in err's chain that did not
// answer ("DynamoDB", "S3"), or "" if err is not ErrUnavailable.
func Service(err error) string {
	var u *UnavailableError
	if errors.As(err, &u) {
		return u.Service
	}
	return ""
}

// WarnEvery is how often a service and kind of call that keeps stalling
// is logged at most: one WARN line, then silence (counted) for a minute.
const WarnEvery = time.Minute

// Bounds applies a config.Storage to SDK clients. Its methods DynamoDB
// and S3 are client options. The zero value is not usable; use New.
type Bounds struct {
	limits config.Storage
	log    *slog.Logger
	now    func() time.Time

	mu sync.Mutex
	// warned is when each service and kind last logged a stall, and how
	// many stalls it has not logged since.
	warned map[warnKey]*warning
}

type warnKey struct {
	service string
	kind    Kind
}

type warning struct {
	at         time.Time
	suppressed int
}

// New returns the bounds of l, logging stalls to log. now is the clock
// of the WARN rate limit (time.Now outside tests).
func New(l config.Storage, log *slog.Logger, now func() time.Time) *Bounds {
	return &Bounds{limits: l, log: log, now: now, warned: map[warnKey]*warning{}}
}

// Budget returns how long one call of kind k may take.
func (b *Bounds) Budget(k Kind) time.Duration {
	switch k {
	case Item:
		return b.limits.Item
	case Transfer:
		return b.limits.Transfer
	}
	return b.limits.Query
}

// attemptTimeout is one attempt's share of a kind's budget.
func (b *Bounds) attemptTimeout(k Kind) time.Duration {
	return b.Budget(k) / time.Duration(max(b.limits.Attempts, 1))
}

// retryer is the SDK's standard retryer held to the limits: attempts,
// longest backoff, and its retry quota (a token bucket shared by the
// client's calls, which fails retries fast once a backend has been
// failing for a while and refills as calls succeed).
func (b *Bounds) retryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = max(b.limits.Attempts, 1)
		o.MaxBackoff = b.limits.MaxBackoff
	})
}

// DynamoDB is a dynamodb.Options function: the bounded retryer and the
// deadlines.
func (b *Bounds) DynamoDB(o *dynamodb.Options) {
	o.Retryer = b.retryer()
	o.APIOptions = append(o.APIOptions, b.install("DynamoDB"))
}

// S3 is an s3.Options function: the bounded retryer and the deadlines.
func (b *Bounds) S3(o *s3.Options) {
	o.Retryer = b.retryer()
	o.APIOptions = append(o.APIOptions, b.install("S3"))
}

// install adds the call deadline as the stack's first step, so it
// covers the retry loop, and the attempt deadline right inside the retry
// loop, so each attempt has its own.
func (b *Bounds) install(service string) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		if err := s.Initialize.Add(middleware.InitializeMiddlewareFunc("ndiroCallBudget",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				return b.call(ctx, service, in, next)
			}), middleware.Before); err != nil {
			return err
		}
		return s.Finalize.Insert(middleware.FinalizeMiddlewareFunc("ndiroAttemptTimeout", b.attempt), "Retry", middleware.After)
	}
}

// call runs one call within its kind's budget and turns a stall or
// exhausted retries into an *UnavailableError. A caller's own context
// ending (the person went away) is passed through as it is.
func (b *Bounds) call(ctx context.Context, service string, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	op := awsmiddleware.GetOperationName(ctx)
	kind := KindOf(op)
	start := time.Now()
	budgetEnd := start.Add(b.Budget(kind))
	cctx, cancel := context.WithDeadline(ctx, budgetEnd)
	out, md, err := next.HandleInitialize(cctx, in)
	if err == nil {
		if body, ok := streamed(out.Result); ok {
			// The deadline runs on while the body is read; a read it
			// cuts off is this call not answering.
			*body = &callBody{ReadCloser: *body, cancel: cancel, fail: func(err error) error {
				if callerEnded(ctx, budgetEnd) || !unanswered(cctx, err) {
					return err
				}
				return b.unavailable(service, op, kind, start, err)
			}}
			return out, md, nil
		}
		cancel()
		return out, md, nil
	}
	cancel()
	if callerEnded(ctx, budgetEnd) || !unanswered(cctx, err) {
		return out, md, err
	}
	return out, md, b.unavailable(service, op, kind, start, err)
}

// callerEnded tells whether the caller's own context, not the call's
// budget (ending at budgetEnd), ended the call: the caller went away, or
// its deadline came before the budget's. A caller's deadline later than
// the budget's that has also passed by the time the call returns (its
// goroutine woke late on a busy machine, or the caller's margin over
// the budget is short, as readiness's backstop is) leaves the call the
// backend's not answering.
func callerEnded(ctx context.Context, budgetEnd time.Time) bool {
	err := ctx.Err()
	if err == nil {
		return false
	}
	if d, ok := ctx.Deadline(); ok && errors.Is(err, context.DeadlineExceeded) && d.After(budgetEnd) {
		return false
	}
	return true
}

// unavailable is the *UnavailableError of a call that started at start,
// logged (warn).
func (b *Bounds) unavailable(service, op string, kind Kind, start time.Time, err error) error {
	u := &UnavailableError{Service: service, Operation: op, Kind: kind, Took: time.Since(start), Err: err}
	b.warn(u)
	return u
}

// attempt gives one attempt its share of the budget. An attempt cut off
// by it fails with a retryable error (the SDK takes a cancelled context
// for the caller's and would not retry), so the next attempt starts on a
// fresh connection.
func (b *Bounds) attempt(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
	d := b.attemptTimeout(KindOf(awsmiddleware.GetOperationName(ctx)))
	actx, cancel := context.WithTimeout(ctx, d)
	out, md, err := next.HandleFinalize(actx, in)
	cut := func(err error) error {
		if ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
			return &attemptTimeout{after: d, err: err}
		}
		return err
	}
	if err == nil {
		if body, ok := streamed(out.Result); ok {
			*body = &callBody{ReadCloser: *body, cancel: cancel, fail: cut}
			return out, md, nil
		}
		cancel()
		return out, md, nil
	}
	cancel()
	return out, md, cut(err)
}

// unanswered reports whether err, from a call run under cctx, means the
// backend did not answer: the budget ran out, or every attempt failed in
// a way the SDK retries (or the retry quota was spent on such failures).
func unanswered(cctx context.Context, err error) bool {
	if errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return true
	}
	var a *attemptTimeout
	if errors.As(err, &a) {
		return true
	}
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}

// attemptTimeout is an attempt cut off by its share of the budget.
type attemptTimeout struct {
	after time.Duration
	err   error
}

func (e *attemptTimeout) Error() string {
	return fmt.Sprintf("attempt timed out after %s: %v", e.after, e.err)
}

func (e *attemptTimeout) Unwrap() error { return e.err }

// RetryableError tells the SDK's retryer to try again.
func (e *attemptTimeout) RetryableError() bool { return true }

// CanceledError tells the SDK's retryer that this is not the caller's
// cancellation, which it never retries; it finds this method before the
// cancelled context's error inside.
func (e *attemptTimeout) CanceledError() bool { return false }

// streamed returns the body of a result that is read after the call
// returns (GetObject's), to be wrapped in a callBody.
func streamed(result any) (*io.ReadCloser, bool) {
	out, ok := result.(*s3.GetObjectOutput)
	if !ok || out.Body == nil {
		return nil, false
	}
	return &out.Body, true
}

// callBody is a streamed body read under its call's deadline: Close ends
// the call's context, and fail rewords a read error the deadline caused.
type callBody struct {
	io.ReadCloser
	cancel context.CancelFunc
	fail   func(error) error
}

func (c *callBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = c.fail(err)
	}
	return n, err
}

func (c *callBody) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// warn logs u at WARN unless its service and kind logged within
// WarnEvery; the next line says how many it left out.
func (b *Bounds) warn(u *UnavailableError) {
	now := b.now()
	key := warnKey{u.Service, u.Kind}
	b.mu.Lock()
	w := b.warned[key]
	if w != nil && now.Sub(w.at) < WarnEvery {
		w.suppressed++
		b.mu.Unlock()
		return
	}
	suppressed := 0
	if w != nil {
		suppressed = w.suppressed
	}
	b.warned[key] = &warning{at: now}
	b.mu.Unlock()
	b.log.Warn("storage not answering", "service", u.Service, "kind", u.Kind.String(), "operation", u.Operation,
		"budget", b.Budget(u.Kind).String(), "took", u.Took.Round(time.Millisecond).String(),
		"not_logged_since", suppressed, "err", u.Err)
}
