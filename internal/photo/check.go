package photo

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"ndiro/internal/storage"
)

// CheckBucket makes sure the photo bucket exists and this process may use
// it (HeadBucket, which needs s3:ListBucket). AWS mode runs it at start; the
// error names the bucket and what to check, or wraps storage.ErrUnavailable
// if S3 did not answer.
func CheckBucket(ctx context.Context, client *s3.Client, bucket string) error {
	_, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	if errors.Is(err, storage.ErrUnavailable) {
		return fmt.Errorf("s3 bucket %s: %w", bucket, err)
	}
	if err != nil {
		return fmt.Errorf("s3 bucket %s: not found or not allowed (create it with deploy/terraform, check NDIRO_BUCKET and the IAM policy): %v", bucket, err)
	}
	return nil
}
