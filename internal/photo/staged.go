package photo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Staged archives: an export zip uploaded for import waits as one object
// under the owner's pending prefix while the import reads it, so a restart
// can resume it and the account deletion's photos step removes it with the
// rest of the prefix (DeleteAll).

// ImportPrefix returns "pending/{userID}/import/", under which userID's
// uploaded archives wait while they are imported.
func ImportPrefix(userID string) string { return PendingPrefix(userID) + "import/" }

// ImportKey returns the key of the archive of import id of userID:
// "pending/{userID}/import/{id}.zip". id is the server's (token.New).
func ImportKey(userID, id string) string { return ImportPrefix(userID) + id + ".zip" }

// StagedTTL is how long a staged archive is kept: local mode's sweep
// (SweepPending) deletes older ones, and an import not finished by then
// is given up. In AWS the bucket's lifecycle rule expires all of
// pending/ after a day (deploy/terraform): an import still running then
// finds its archive gone and ends, asking for the zip again; the meals
// it imported are skipped the second time.
const StagedTTL = 7 * 24 * time.Hour

// isImportKey reports whether key lies under some user's ImportPrefix.
func isImportKey(key string) bool {
	rest, ok := strings.CutPrefix(key, "pending/")
	if !ok {
		return false
	}
	_, rest, ok = strings.Cut(rest, "/")
	return ok && strings.HasPrefix(rest, "import/")
}

// StagePartSize is the size of each part of a staged upload, in bytes:
// the one buffer Stage holds. S3 takes at most 10,000 parts, so a staged
// object may be up to about 78 GB; every part but the last must be at
// least 5 MiB.
const StagePartSize = 8 << 20

// ErrStageTooLarge is returned by Stage for a body longer than its limit.
var ErrStageTooLarge = errors.New("photo: staged upload over its size limit")

// Stage streams body into the object key (under ownerID's prefix,
// ErrOutsidePrefix otherwise) and returns how many bytes it stored. At
// most max bytes are read: a longer body is ErrStageTooLarge, with
// nothing left in the bucket. Memory stays at one StagePartSize buffer
// whatever the body's length: a body that fits in one part is one
// PutObject, a longer one a multipart upload sent a part at a time
// (the SDK's upload manager would keep several parts in flight, and
// each part's body must be seekable over plain HTTP anyway). A failure
// aborts the multipart upload, so no parts are left behind; an error
// reading body is returned as it is (wrapped), for the caller to tell a
// client's from the bucket's.
func (s *Store) Stage(ctx context.Context, ownerID, key string, body io.Reader, max int64) (int64, error) {
	if !underPrefix(ownerID, key) {
		return 0, ErrOutsidePrefix
	}
	buf := make([]byte, StagePartSize)
	src := &limitedReader{r: body, left: max}
	n, err := io.ReadFull(src, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("photo: stage: %w", err)
	}
	if n < len(buf) {
		_, err := s.s3.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(s.bucket), Key: aws.String(key),
			Body: bytes.NewReader(buf[:n]), ContentLength: aws.Int64(int64(n)), ContentType: aws.String("application/zip"),
		})
		if err != nil {
			return 0, fmt.Errorf("photo: stage: %w", err)
		}
		return int64(n), nil
	}
	up, err := s.s3.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: aws.String(s.bucket), Key: aws.String(key), ContentType: aws.String("application/zip"),
	})
	if err != nil {
		return 0, fmt.Errorf("photo: stage: %w", err)
	}
	total, err := s.uploadParts(ctx, key, up.UploadId, buf, n, src)
	if err != nil {
		// Detached: a request given up must not leave its parts billed.
		_, aerr := s.s3.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{
			Bucket: aws.String(s.bucket), Key: aws.String(key), UploadId: up.UploadId,
		})
		return 0, errors.Join(err, aerr)
	}
	return total, nil
}

// uploadParts sends buf[:n], then the rest of src a part at a time
// through buf, and completes the upload id.
func (s *Store) uploadParts(ctx context.Context, key string, id *string, buf []byte, n int, src io.Reader) (int64, error) {
	var parts []types.CompletedPart
	total := int64(0)
	for num := int32(1); n > 0; num++ {
		out, err := s.s3.UploadPart(ctx, &s3.UploadPartInput{
			Bucket: aws.String(s.bucket), Key: aws.String(key), UploadId: id, PartNumber: aws.Int32(num),
			Body: bytes.NewReader(buf[:n]), ContentLength: aws.Int64(int64(n)),
		})
		if err != nil {
			return 0, fmt.Errorf("photo: stage: part %d: %w", num, err)
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(num)})
		total += int64(n)
		n, err = io.ReadFull(src, buf)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("photo: stage: %w", err)
		}
	}
	_, err := s.s3.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(s.bucket), Key: aws.String(key), UploadId: id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if err != nil {
		return 0, fmt.Errorf("photo: stage: complete: %w", err)
	}
	return total, nil
}

// limitedReader reads r until left runs out; one byte more is
// ErrStageTooLarge.
type limitedReader struct {
	r    io.Reader
	left int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, ErrStageTooLarge
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return 0, ErrStageTooLarge
	}
	return n, err
}

// Ranged reads one object through ranged GetObject calls, as an
// io.ReaderAt: a zip needs random access (its central directory is at
// the end), and the object may be gigabytes. Reads are served from a
// small LRU of RangedBlock-aligned blocks, so the many small reads of a
// zip's directory and of a photo's entry cost one request a block.
// Its methods are safe for concurrent use; it holds at most
// RangedBlocks × RangedBlock bytes.
type Ranged struct {
	s    *Store
	ctx  context.Context
	key  string
	size int64

	mu     sync.Mutex
	blocks []rangedBlock // most recently used last
	// Gets counts the GetObject calls made (tests and benchmarks).
	gets int
}

type rangedBlock struct {
	off  int64
	data []byte
}

// The block cache of Ranged: 16 blocks of 256 KiB, 4 MiB in all.
const (
	RangedBlock  = 256 << 10
	RangedBlocks = 16
)

// OpenRanged returns a Ranged over the object key (under ownerID's
// prefix: ErrOutsidePrefix), its size read with HeadObject, or
// ErrNotFound. Its reads run under ctx.
func (s *Store) OpenRanged(ctx context.Context, ownerID, key string) (*Ranged, error) {
	if !underPrefix(ownerID, key) {
		return nil, ErrOutsidePrefix
	}
	out, err := s.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	var nf *types.NotFound
	if errors.As(err, &nf) || isNoSuchKey(err) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("photo: open %s: %w", key, err)
	}
	return &Ranged{s: s, ctx: ctx, key: key, size: aws.ToInt64(out.ContentLength)}, nil
}

// Size returns the object's length in bytes.
func (r *Ranged) Size() int64 { return r.size }

// Gets returns how many GetObject calls r has made.
func (r *Ranged) Gets() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gets
}

// ReadAt reads len(p) bytes at off, as io.ReaderAt: io.EOF when the
// object ends first; the bucket's errors as they come.
func (r *Ranged) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("photo: read %s: negative offset", r.key)
	}
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		if pos >= r.size {
			return n, io.EOF
		}
		b, err := r.block(pos - pos%RangedBlock)
		if err != nil {
			return n, err
		}
		n += copy(p[n:], b[pos%RangedBlock:])
	}
	return n, nil
}

// block returns the block at off, from the cache or one ranged GET.
func (r *Ranged) block(off int64) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, b := range r.blocks {
		if b.off == off {
			copy(r.blocks[i:], r.blocks[i+1:])
			r.blocks[len(r.blocks)-1] = b
			return b.data, nil
		}
	}
	end := min(off+RangedBlock, r.size) - 1
	r.gets++
	out, err := r.s.s3.GetObject(r.ctx, &s3.GetObjectInput{
		Bucket: aws.String(r.s.bucket), Key: aws.String(r.key), Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, end)),
	})
	if isNoSuchKey(err) {
		return nil, fmt.Errorf("photo: read %s: %w", r.key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("photo: read %s: %w", r.key, err)
	}
	defer out.Body.Close()
	need := int(end - off + 1)
	var data []byte
	if len(r.blocks) >= RangedBlocks {
		data = r.blocks[0].data // the least recently used block's buffer
		r.blocks = append(r.blocks[:0], r.blocks[1:]...)
	}
	if cap(data) >= need {
		data = data[:need]
	} else {
		data = make([]byte, need)
	}
	if _, err := io.ReadFull(out.Body, data); err != nil {
		return nil, fmt.Errorf("photo: read %s: %w", r.key, err)
	}
	r.blocks = append(r.blocks, rangedBlock{off: off, data: data})
	return data, nil
}
