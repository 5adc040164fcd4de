package photo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// CheckBucket makes sure the photo bucket exists and this process may use
// it (HeadBucket, which needs s3:ListBucket). AWS mode runs it at start; the
// error names the bucket and what to check.
func CheckBucket(ctx context.Context, client *s3.Client, bucket string) error {
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return fmt.Errorf("s3 bucket %s: not found or not allowed (create it with deploy/terraform, check NDIRO_BUCKET and the IAM policy): %v", bucket, err)
	}
	return nil
}
