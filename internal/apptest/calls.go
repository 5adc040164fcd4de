package apptest

import (
	"context"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
)

// Calls counts DynamoDB operations by name ("GetItem", "Query", …) as the
// SDK issues them, once per call however many retries it makes.
type Calls struct {
	mu sync.Mutex
	n  map[string]int
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
			c.mu.Lock()
			if c.n == nil {
				c.n = map[string]int{}
			}
			c.n[awsmiddleware.GetOperationName(ctx)]++
			c.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// Reset sets every count to zero.
func (c *Calls) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n = map[string]int{}
}

// Counts returns a copy of the counts since the last Reset.
func (c *Calls) Counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}
