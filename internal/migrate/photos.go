package migrate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"golang.org/x/sync/errgroup"

	"ndiro/internal/photo"
)

// metaSHA256 is the object metadata key (x-amz-meta-sha256) a copied
// object carries: the SHA-256 (hex) of its bytes, so a later run knows
// an object it copied by one HeadObject.
const metaSHA256 = "sha256"

// maxObjectBytes bounds one photo object read into memory: far above
// the largest copy the pipeline stores (a 2048 px JPEG or WebP).
const maxObjectBytes = 64 << 20

// photos copies every object under the account's prefix
// (photo.UserPrefix; pending uploads live under another), ObjectWorkers
// at a time.
func (r *run) photos(ctx context.Context, a *Account) error {
	keys, err := listKeys(ctx, r.src, photo.UserPrefix(a.ID))
	if err != nil {
		return err
	}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.o.ObjectWorkers)
	for _, k := range keys {
		g.Go(func() error {
			out, err := r.copyObject(gctx, k)
			if err != nil {
				return err
			}
			mu.Lock()
			a.Photos.add(out)
			mu.Unlock()
			return nil
		})
	}
	return g.Wait()
}

// copyObject copies the source object key to the target unless the
// target has an object there: with the same bytes (by the SHA-256 a
// copy carries, or read back if it carries none) it is the same,
// otherwise a conflict, left as it is. The copy keeps the content type
// and metadata (photo-v) and adds the SHA-256.
func (r *run) copyObject(ctx context.Context, key string) (outcome, error) {
	body, ctype, meta, err := getObject(ctx, r.src, key)
	if err != nil {
		return 0, err
	}
	sum := sha(body)
	head, err := r.dst.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(r.dst.Bucket), Key: aws.String(key)})
	switch {
	case err == nil:
		if aws.ToInt64(head.ContentLength) != int64(len(body)) {
			return conflict, nil
		}
		if got := metaValue(head.Metadata, metaSHA256); got != "" {
			return sameIf(got == sum), nil
		}
		there, _, _, err := getObject(ctx, r.dst, key)
		if err != nil {
			return 0, err
		}
		return sameIf(sha(there) == sum), nil
	case !notFound(err):
		return 0, fmt.Errorf("migrate: head %s in the target: %w", key, err)
	}
	if r.o.DryRun {
		return copied, nil
	}
	m := map[string]string{metaSHA256: sum}
	for k, v := range meta {
		if !strings.EqualFold(k, metaSHA256) {
			m[strings.ToLower(k)] = v
		}
	}
	in := &s3.PutObjectInput{
		Bucket:        aws.String(r.dst.Bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
		Metadata:      m,
	}
	if ctype != "" {
		in.ContentType = aws.String(ctype)
	}
	if _, err := r.dst.S3.PutObject(ctx, in); err != nil {
		return 0, fmt.Errorf("migrate: put %s into the target: %w", key, err)
	}
	return copied, nil
}

func sameIf(ok bool) outcome {
	if ok {
		return same
	}
	return conflict
}

// sha is the SHA-256 of b in hex.
func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// getObject reads the object key of side whole (at most maxObjectBytes).
func getObject(ctx context.Context, side Side, key string) (body []byte, ctype string, meta map[string]string, err error) {
	out, err := side.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(side.Bucket), Key: aws.String(key)})
	if err != nil {
		return nil, "", nil, fmt.Errorf("migrate: get %s from %s: %w", key, side.Bucket, err)
	}
	defer out.Body.Close()
	body, err = io.ReadAll(io.LimitReader(out.Body, maxObjectBytes+1))
	if err != nil {
		return nil, "", nil, fmt.Errorf("migrate: read %s from %s: %w", key, side.Bucket, err)
	}
	if len(body) > maxObjectBytes {
		return nil, "", nil, fmt.Errorf("migrate: %s in %s is over %d bytes: no photo ndiro stores is", key, side.Bucket, maxObjectBytes)
	}
	return body, aws.ToString(out.ContentType), out.Metadata, nil
}

// listKeys returns the keys of every object of side under prefix.
func listKeys(ctx context.Context, side Side, prefix string) ([]string, error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(side.S3, &s3.ListObjectsV2Input{Bucket: aws.String(side.Bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("migrate: list %s in %s: %w", prefix, side.Bucket, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys, nil
}

// metaValue looks a user-metadata key up case-insensitively (S3 returns
// them lower-cased, some compatible servers canonicalised).
func metaValue(m map[string]string, key string) string {
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return ""
}

// notFound reports whether err is S3's answer for a missing object.
func notFound(err error) bool {
	var nf *types.NotFound
	var nsk *types.NoSuchKey
	var api smithy.APIError
	return errors.As(err, &nf) || errors.As(err, &nsk) ||
		(errors.As(err, &api) && (api.ErrorCode() == "NotFound" || api.ErrorCode() == "NoSuchKey"))
}
