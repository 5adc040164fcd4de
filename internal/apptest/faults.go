package apptest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"ndiro/internal/storage"
)

// ErrInjected is the error a Faults rule makes an SDK call return.
var ErrInjected = errors.New("apptest: injected failure")

// Faults makes chosen DynamoDB and S3 calls fail, hold or lose keys, for
// tests of failure paths through the real SDK and emulators. Rules match an
// operation ("BatchWriteItem", "ListObjectsV2") and, if given, a table or
// bucket name. The zero value injects nothing.
type Faults struct {
	mu    sync.Mutex
	rules []*rule
}

type rule struct {
	op, target string
	after      int // calls let through before the rule acts
	seen       int
	fail       bool
	once       bool          // act on one call, then go
	lose       bool          // let the call through, then fail it
	hold       chan struct{} // closed by the release func
	held       chan struct{} // closed when the first call is held
	dropKey    string        // DeleteObjects: refuse keys containing this
	err        error         // what a failing call returns; nil: ErrInjected
	acted      int           // calls the rule acted on
}

// Fail makes calls of op (on the table or bucket target, "" for any) fail
// with ErrInjected, after the first after calls succeed, until Clear.
func (f *Faults) Fail(op, target string, after int) {
	f.add(&rule{op: op, target: target, after: after, fail: true})
}

// DiskFull makes calls of op (on the table or bucket target, "" for any)
// fail as local storage refuses writes on a full disk, with the API error
// of code storage.FullCode (storage.IsFull), after the first after calls
// succeed, until Clear.
func (f *Faults) DiskFull(op, target string, after int) {
	f.add(&rule{op: op, target: target, after: after, fail: true,
		err: &smithy.GenericAPIError{Code: storage.FullCode, Message: "local storage refused the write (injected): no space left on device"}})
}

// FailOnce makes one call of op on target fail with ErrInjected, the one
// after the first after calls; the calls after it succeed.
func (f *Faults) FailOnce(op, target string, after int) {
	f.add(&rule{op: op, target: target, after: after, fail: true, once: true})
}

// LoseAnswerOnce lets the next request of op on target through and then
// loses its answer: the attempt fails with a connection reset, inside the
// SDK's retry loop, so the SDK sends the request again itself (unless the
// call turned its retries off), as it does for a write whose answer the
// network dropped after DynamoDB applied it.
func (f *Faults) LoseAnswerOnce(op, target string) {
	f.add(&rule{op: op, target: target, lose: true, once: true})
}

// errConnectionReset is the lost answer of LoseAnswerOnce; the SDK's
// retryer takes a connection reset for a retryable error.
var errConnectionReset = errors.New("read tcp 127.0.0.1: connection reset by peer")

// Hold makes the next call of op on target wait until release is called;
// held is closed once a call is waiting.
func (f *Faults) Hold(op, target string) (held <-chan struct{}, release func()) {
	r := &rule{op: op, target: target, hold: make(chan struct{}), held: make(chan struct{})}
	f.add(r)
	var once sync.Once
	return r.held, func() { once.Do(func() { close(r.hold) }) }
}

// RefuseKey makes DeleteObjects keep every key containing part and report
// it as a per-key error inside a 200 answer, as S3 does for a key it could
// not delete (AccessDenied).
func (f *Faults) RefuseKey(part string) {
	f.add(&rule{op: "DeleteObjects", dropKey: part})
}

// Acted returns how many calls the rules on op and target (as given to
// Fail, DiskFull, …) have acted on so far: failed, held or cut.
func (f *Faults) Acted(op, target string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.rules {
		if r.op == op && r.target == target {
			n += r.acted
		}
	}
	return n
}

// Clear removes every rule; held calls are not released.
func (f *Faults) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
}

func (f *Faults) add(r *rule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, r)
}

// DynamoOption installs the faults on a DynamoDB client.
func (f *Faults) DynamoOption() func(*dynamodb.Options) {
	return func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, f.install) }
}

// S3Option installs the faults on an S3 client.
func (f *Faults) S3Option() func(*s3.Options) {
	return func(o *s3.Options) { o.APIOptions = append(o.APIOptions, f.install) }
}

func (f *Faults) install(stack *middleware.Stack) error {
	// Lost answers act on one attempt, inside the retry loop: after the
	// request was sent and answered.
	err := stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("ndiroLoseAnswer",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			if err == nil && f.loses(awsmiddleware.GetOperationName(ctx), f.targetOf(ctx)) {
				return middleware.DeserializeOutput{}, md, errConnectionReset
			}
			return out, md, err
		}), middleware.Before)
	if err != nil {
		return err
	}
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("ndiroFaults",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			op := awsmiddleware.GetOperationName(ctx)
			target := targetOf(in.Parameters)
			ctx = middleware.WithStackValue(ctx, targetKey{}, target)
			var dropped []string
			for _, r := range f.match(op, target) {
				switch {
				case r.hold != nil:
					close(r.held)
					select {
					case <-r.hold:
					case <-ctx.Done():
						return middleware.InitializeOutput{}, middleware.Metadata{}, ctx.Err()
					}
				case r.fail && r.err != nil:
					return middleware.InitializeOutput{}, middleware.Metadata{}, fmt.Errorf("%s %s: %w", op, target, r.err)
				case r.fail:
					return middleware.InitializeOutput{}, middleware.Metadata{}, fmt.Errorf("%s %s: %w", op, target, ErrInjected)
				case r.dropKey != "":
					dropped = append(dropped, dropKeys(in.Parameters, r.dropKey)...)
				}
			}
			if del, ok := in.Parameters.(*s3.DeleteObjectsInput); ok && len(dropped) > 0 && len(del.Delete.Objects) == 0 {
				// Every key refused: S3 would answer 200 with only errors.
				out := &s3.DeleteObjectsOutput{}
				for _, k := range dropped {
					out.Errors = append(out.Errors, s3types.Error{Key: aws.String(k), Code: aws.String("AccessDenied"), Message: aws.String("Access Denied")})
				}
				return middleware.InitializeOutput{Result: out}, middleware.Metadata{}, nil
			}
			out, md, err := next.HandleInitialize(ctx, in)
			if d, ok := out.Result.(*s3.DeleteObjectsOutput); ok && err == nil {
				for _, k := range dropped {
					d.Errors = append(d.Errors, s3types.Error{Key: aws.String(k), Code: aws.String("AccessDenied"), Message: aws.String("Access Denied")})
				}
			}
			return out, md, err
		}), middleware.Before)
}

// targetKey carries a call's table or bucket from the Initialize step,
// where the input is at hand, to the Deserialize step.
type targetKey struct{}

func (f *Faults) targetOf(ctx context.Context) string {
	t, _ := middleware.GetStackValue(ctx, targetKey{}).(string)
	return t
}

// loses reports whether a LoseAnswerOnce rule takes this attempt's answer,
// removing the rule if so.
func (f *Faults) loses(op, target string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, r := range f.rules {
		if r.lose && r.op == op && (r.target == "" || r.target == target) {
			f.rules = append(f.rules[:i], f.rules[i+1:]...)
			return true
		}
	}
	return false
}

// match returns the rules that act on this call, counting it.
func (f *Faults) match(op, target string) []*rule {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*rule
	for i := 0; i < len(f.rules); i++ {
		r := f.rules[i]
		if r.lose || r.op != op || (r.target != "" && r.target != target) {
			continue
		}
		r.seen++
		if r.seen <= r.after {
			continue
		}
		if r.hold != nil || r.once { // a hold acts once
			f.rules = append(f.rules[:i], f.rules[i+1:]...)
			i--
		}
		r.acted++
		out = append(out, r)
	}
	return out
}

// targetOf names the table or bucket an SDK input addresses.
func targetOf(params any) string {
	switch in := params.(type) {
	case *dynamodb.BatchWriteItemInput:
		for t := range in.RequestItems {
			return t
		}
	case *dynamodb.GetItemInput:
		return aws.ToString(in.TableName)
	case *dynamodb.PutItemInput:
		return aws.ToString(in.TableName)
	case *dynamodb.UpdateItemInput:
		return aws.ToString(in.TableName)
	case *dynamodb.DeleteItemInput:
		return aws.ToString(in.TableName)
	case *dynamodb.QueryInput:
		return aws.ToString(in.TableName)
	case *dynamodb.ScanInput:
		return aws.ToString(in.TableName)
	case *s3.GetObjectInput:
		return aws.ToString(in.Bucket)
	case *s3.PutObjectInput:
		return aws.ToString(in.Bucket)
	case *s3.DeleteObjectsInput:
		return aws.ToString(in.Bucket)
	case *s3.ListObjectsV2Input:
		return aws.ToString(in.Bucket)
	case *s3.CopyObjectInput:
		return aws.ToString(in.Bucket)
	}
	return ""
}

// dropKeys removes from a DeleteObjects input the keys containing part and
// returns them.
func dropKeys(params any, part string) []string {
	in, ok := params.(*s3.DeleteObjectsInput)
	if !ok || in.Delete == nil {
		return nil
	}
	var kept []s3types.ObjectIdentifier
	var dropped []string
	for _, o := range in.Delete.Objects {
		if strings.Contains(aws.ToString(o.Key), part) {
			dropped = append(dropped, aws.ToString(o.Key))
			continue
		}
		kept = append(kept, o)
	}
	in.Delete.Objects = kept
	return dropped
}
