package metrics

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"ndiro/internal/storage"
)

// DynamoDB is a dynamodb.Options function counting every call the
// client makes (ndiro_storage_…{service="DynamoDB"}). Apply it after
// storage.Bounds.DynamoDB, so that it sees a stalled call as the
// bounds report it (result "unavailable").
func (m *Metrics) DynamoDB(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, m.install("DynamoDB"))
}

// S3 is an s3.Options function counting every call the client makes
// (ndiro_storage_…{service="S3"}), applied after storage.Bounds.S3 as
// DynamoDB is.
func (m *Metrics) S3(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, m.install("S3"))
}

// install adds the counting step first in the stack, outside the call
// budget and the retry loop: one observation per call, its attempts read
// from the retry loop's metadata. A GetObject is observed when its body
// is read to the end, fails or is closed, so that a body the budget cuts
// off counts as the unavailable call it is.
func (m *Metrics) install(service string) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("ndiroMetrics",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				start := time.Now()
				out, md, err := next.HandleInitialize(ctx, in)
				op := awsmiddleware.GetOperationName(ctx)
				if get, ok := out.Result.(*s3.GetObjectOutput); ok && err == nil && get.Body != nil {
					get.Body = &observedBody{ReadCloser: get.Body, done: func(err error) {
						m.observeCall(service, op, time.Since(start), md, err)
					}}
					return out, md, nil
				}
				m.observeCall(service, op, time.Since(start), md, err)
				return out, md, err
			}), middleware.Before)
	}
}

// observedBody is a streamed body that reports, once, how its reading
// ended: nil at its end or when closed early, else the read's error.
type observedBody struct {
	io.ReadCloser
	once sync.Once
	done func(error)
}

func (b *observedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(func() {
			if err == io.EOF {
				b.done(nil)
			} else {
				b.done(err)
			}
		})
	}
	return n, err
}

func (b *observedBody) Close() error {
	b.once.Do(func() { b.done(nil) })
	return b.ReadCloser.Close()
}

// throttled tells a throttling refusal (the SDK's own list of codes).
var throttled = retry.IsErrorThrottles(retry.DefaultThrottles)

func (m *Metrics) observeCall(service, op string, took time.Duration, md middleware.Metadata, err error) {
	result := "ok"
	switch {
	case errors.Is(err, storage.ErrUnavailable):
		result = "unavailable"
	case err != nil:
		result = "error"
	}
	m.calls.WithLabelValues(service, op, result).Inc()
	m.callDurations.WithLabelValues(service, op).Observe(took.Seconds())
	attempts, ok := retry.GetAttemptResults(md)
	if !ok {
		return
	}
	if n := len(attempts.Results); n > 1 {
		m.retries.WithLabelValues(service, op).Add(float64(n - 1))
	}
	throttles := 0
	for _, a := range attempts.Results {
		if a.Err != nil && throttled.IsErrorThrottle(a.Err) == aws.TrueTernary {
			throttles++
		}
	}
	if throttles > 0 {
		m.throttles.WithLabelValues(service, op).Add(float64(throttles))
	}
}
