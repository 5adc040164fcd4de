package apptest

import (
	"context"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
)

// Calls counts SDK operations by name ("GetItem", "Query", …) as the SDK
// issues them, once per call however many retries it makes, and sums the
// items each Query and Scan read (ScannedCount): a Query that fetches a
// whole partition and filters it in Go costs one call but reads every item,
// and only the scanned count shows it.
type Calls struct {
	mu      sync.Mutex
	n       map[string]int
	scanned map[string]int
}

// Option returns the DynamoDB client option that installs the counter.
func (c *Calls) Option() func(*dynamodb.Options) {
	return func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, c.count) }
}

// S3Option returns the S3 client option that installs the counter.
func (c *Calls) S3Option() func(*s3.Options) {
	return func(o *s3.Options) { o.APIOptions = append(o.APIOptions, c.count) }
}

func (c *Calls) count(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("ndiroCallCounter",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			op := awsmiddleware.GetOperationName(ctx)
			c.mu.Lock()
			if c.n == nil {
				c.n, c.scanned = map[string]int{}, map[string]int{}
			}
			c.n[op]++
			c.mu.Unlock()
			out, md, err := next.HandleInitialize(ctx, in)
			// minidyn reports Count but no ScannedCount; DynamoDB and
			// dynalite report both, ScannedCount ≥ Count.
			var scanned int32
			switch r := out.Result.(type) {
			case *dynamodb.QueryOutput:
				scanned = max(r.ScannedCount, r.Count)
			case *dynamodb.ScanOutput:
				scanned = max(r.ScannedCount, r.Count)
			}
			if scanned > 0 {
				c.mu.Lock()
				c.scanned[op] += int(scanned)
				c.mu.Unlock()
			}
			return out, md, err
		}), middleware.After)
}

// Reset sets every count to zero.
func (c *Calls) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n, c.scanned = map[string]int{}, map[string]int{}
}

// Counts returns a copy of the call counts since the last Reset.
func (c *Calls) Counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return copyMap(c.n)
}

// Scanned returns, per operation ("Query", "Scan"), the items DynamoDB
// read since the last Reset: the sum of every page's ScannedCount (its
// Count on emulators that report no ScannedCount).
func (c *Calls) Scanned() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return copyMap(c.scanned)
}

func copyMap(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
