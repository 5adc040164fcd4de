package lease

import (
	"context"
	"strings"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
)

// writePrefixes start the name of every DynamoDB and S3 operation that
// changes stored data: PutItem, UpdateItem, DeleteItem, BatchWriteItem,
// TransactWriteItems; PutObject, CopyObject, DeleteObject(s),
// CreateMultipartUpload, UploadPart, CompleteMultipartUpload,
// AbortMultipartUpload, RestoreObject. Reads (Get, Query, Scan, Head,
// List, Describe, BatchGetItem, TransactGetItems) pass.
var writePrefixes = []string{"Put", "Update", "Delete", "BatchWrite", "TransactWrite", "Copy", "Create", "Complete", "Abort", "Upload", "Restore"}

// IsWrite reports whether op, an SDK operation name, changes stored data.
func IsWrite(op string) bool {
	for _, p := range writePrefixes {
		if strings.HasPrefix(op, p) {
			return true
		}
	}
	return false
}

// DynamoDB adds the write gate to a DynamoDB client's options: every
// write operation fails with Err's error, before it is sent and without
// retries, while this process may not write. The lease's own client must
// not have it.
func (l *Lease) DynamoDB(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, l.gate) }

// S3 adds the write gate to an S3 client's options, as DynamoDB does.
func (l *Lease) S3(o *s3.Options) { o.APIOptions = append(o.APIOptions, l.gate) }

func (l *Lease) gate(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("ndiroWriterLease",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if IsWrite(awsmiddleware.GetOperationName(ctx)) {
				if err := l.Err(); err != nil {
					return middleware.InitializeOutput{}, middleware.Metadata{}, err
				}
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After) // after the operation name is registered
}
