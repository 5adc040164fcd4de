package cloud

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"ndiro/internal/store"
)

// Blobs is the blob engine: store.Blobs in one S3 bucket.
type Blobs struct {
	s3     *s3.Client
	bucket string
}

var _ store.Blobs = (*Blobs)(nil)

// NewBlobs returns the engine on bucket.
func NewBlobs(client *s3.Client, bucket string) *Blobs { return &Blobs{s3: client, bucket: bucket} }

// Put implements store.Blobs. A body that cannot seek is read into
// memory first: S3 needs a seekable body over plain http, and ndiro's
// blobs (photos, 8 MiB import parts) are passed as buffers already.
func (b *Blobs) Put(ctx context.Context, key string, body io.Reader, size int64, meta store.Meta) error {
	if _, ok := body.(io.ReadSeeker); !ok {
		buf, err := io.ReadAll(io.LimitReader(body, size+1))
		if err != nil {
			return fmt.Errorf("cloud: put %s: %w", key, err)
		}
		body = bytes.NewReader(buf)
	}
	_, err := b.s3.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(b.bucket), Key: aws.String(key), Body: body, ContentLength: aws.Int64(size),
		ContentType: contentType(meta), Metadata: meta.User,
	})
	if err != nil {
		return fmt.Errorf("cloud: put %s: %w", key, err)
	}
	return nil
}

func contentType(m store.Meta) *string {
	if m.ContentType == "" {
		return nil
	}
	return aws.String(m.ContentType)
}

// Get implements store.Blobs.
func (b *Blobs) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, store.Info, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key)}
	switch {
	case n == 0:
		return io.NopCloser(strings.NewReader("")), store.Info{}, nil
	case n > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	case off > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", off))
	}
	out, err := b.s3.GetObject(ctx, in)
	if err != nil {
		return nil, store.Info{}, notFound(err, "get", key)
	}
	info := store.Info{Key: key, Size: aws.ToInt64(out.ContentLength), Meta: store.Meta{ContentType: aws.ToString(out.ContentType), User: out.Metadata}, Modified: aws.ToTime(out.LastModified)}
	if in.Range != nil {
		// "bytes 0-99/1234": the object's size follows the slash.
		cr := aws.ToString(out.ContentRange)
		if _, err := fmt.Sscanf(cr[strings.LastIndexByte(cr, '/')+1:], "%d", &info.Size); err != nil {
			out.Body.Close()
			return nil, store.Info{}, fmt.Errorf("cloud: get %s: Content-Range %q", key, cr)
		}
	}
	return out.Body, info, nil
}

// Head implements store.Blobs.
func (b *Blobs) Head(ctx context.Context, key string) (store.Info, error) {
	out, err := b.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key)})
	if err != nil {
		return store.Info{}, notFound(err, "head", key)
	}
	return store.Info{Key: key, Size: aws.ToInt64(out.ContentLength), Meta: store.Meta{ContentType: aws.ToString(out.ContentType), User: out.Metadata}, Modified: aws.ToTime(out.LastModified)}, nil
}

// Copy implements store.Blobs: server-side, the bytes never pass
// through this process.
func (b *Blobs) Copy(ctx context.Context, src, dst string, meta *store.Meta) error {
	in := &s3.CopyObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(dst), CopySource: aws.String(copySource(b.bucket, src))}
	if meta != nil {
		in.MetadataDirective = types.MetadataDirectiveReplace
		in.ContentType, in.Metadata = contentType(*meta), meta.User
	}
	if _, err := b.s3.CopyObject(ctx, in); err != nil {
		return notFound(err, "copy", src)
	}
	return nil
}

// copySource is CopyObject's x-amz-copy-source: "bucket/key" with each
// path segment of the key escaped and its slashes kept.
func copySource(bucket, key string) string {
	segs := strings.Split(key, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return bucket + "/" + strings.Join(segs, "/")
}

// notFound is store.ErrNoBlob for S3's "no such key" (HeadObject says
// it as a bare 404, CopyObject as a plain API error), else err.
func notFound(err error, verb, key string) error {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	var api smithy.APIError
	if errors.As(err, &nsk) || errors.As(err, &nf) || (errors.As(err, &api) && api.ErrorCode() == "NoSuchKey") {
		return fmt.Errorf("cloud: %s %s: %w", verb, key, store.ErrNoBlob)
	}
	return fmt.Errorf("cloud: %s %s: %w", verb, key, err)
}

// maxDeleteKeys is how many keys one DeleteObjects request may name.
const maxDeleteKeys = 1000

// Delete implements store.Blobs: DeleteObjects, 1000 keys a call. A key
// S3 refuses (reported inside a 200) is an error naming it.
func (b *Blobs) Delete(ctx context.Context, keys ...string) error {
	for start := 0; start < len(keys); start += maxDeleteKeys {
		batch := keys[start:min(start+maxDeleteKeys, len(keys))]
		ids := make([]types.ObjectIdentifier, len(batch))
		for i, k := range batch {
			ids[i] = types.ObjectIdentifier{Key: aws.String(k)}
		}
		out, err := b.s3.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(b.bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return fmt.Errorf("cloud: delete %d blobs: %w", len(batch), err)
		}
		for _, e := range out.Errors {
			if aws.ToString(e.Code) != "NoSuchKey" {
				return fmt.Errorf("cloud: delete %s: %s: %s", aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
			}
		}
	}
	return nil
}

// List implements store.Blobs: one ListObjectsV2 page.
func (b *Blobs) List(ctx context.Context, prefix, after string, limit int) ([]store.Info, string, error) {
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	in := &s3.ListObjectsV2Input{Bucket: aws.String(b.bucket), Prefix: aws.String(prefix), MaxKeys: aws.Int32(int32(limit))}
	if after != "" {
		in.StartAfter = aws.String(after)
	}
	out, err := b.s3.ListObjectsV2(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("cloud: list %s: %w", prefix, err)
	}
	infos := make([]store.Info, len(out.Contents))
	for i, o := range out.Contents {
		infos[i] = store.Info{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), Modified: aws.ToTime(o.LastModified)}
	}
	next := ""
	if aws.ToBool(out.IsTruncated) && len(infos) > 0 {
		next = infos[len(infos)-1].Key
	}
	return infos, next, nil
}
