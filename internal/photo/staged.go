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
)

// Staged archives: an export zip uploaded for import waits under the
// owner's pending prefix as part objects of its own,
// pending/{user}/import/{id}/000001, 000002, …, each StagePartSize bytes
// but the last, while the import reads it through ranged GETs (OpenStaged),
// so a restart can resume it and the account deletion's photos step
// removes it with the rest of the prefix (DeleteAll). Parts rather than one
// multipart object: an S3 that keeps every part of a multipart upload in
// memory until it completes (local mode's gofakes3) would hold the whole
// zip, gigabytes, twice; part objects cost one part's buffer in every mode.

// ImportPrefix returns "pending/{userID}/import/", under which userID's
// uploaded archives wait while they are imported.
func ImportPrefix(userID string) string { return PendingPrefix(userID) + "import/" }

// StagedPrefix returns the prefix of the parts of import id of userID:
// "pending/{userID}/import/{id}/". id is the server's (token.New).
func StagedPrefix(userID, id string) string { return ImportPrefix(userID) + id + "/" }

// StagedPart returns the key of part n (from 1) of the archive staged
// under prefix (StagedPrefix): prefix followed by n in six digits,
// "000001", so that the parts list in order.
func StagedPart(prefix string, n int) string { return fmt.Sprintf("%s%06d", prefix, n) }

// StagedTTL is how long a staged archive is kept: local mode's sweep
// (SweepPending) deletes older parts, and an import not finished by then
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

// StagePartSize is the size of each part object of a staged archive, in
// bytes (unless Store.SetStagePartSize changed it): the one buffer Stage
// holds.
const StagePartSize = 8 << 20

// maxStagedParts bounds the parts of one staged archive (about 78 GB of
// StagePartSize parts, past any NDIRO_IMPORT_MAX_BYTES that makes sense):
// StagedPart's six digits, and a check on the state OpenStaged is given.
const maxStagedParts = 10_000

// ErrStageTooLarge is returned by Stage for a body longer than its limit.
var ErrStageTooLarge = errors.New("photo: staged upload over its size limit")

// Staged is where Stage put an archive: Size bytes in part objects under
// Prefix (StagedPart(Prefix, 1) … StagedPart(Prefix, st.Parts())), each
// PartSize bytes but the last. An empty body is no part.
type Staged struct {
	Prefix   string
	Size     int64
	PartSize int64
}

// Parts returns how many part objects hold st: Size / PartSize rounded
// up (0 for an empty archive or a PartSize that is not positive).
func (st Staged) Parts() int {
	if st.Size <= 0 || st.PartSize <= 0 {
		return 0
	}
	return int((st.Size + st.PartSize - 1) / st.PartSize)
}

// Stage streams body into part objects under prefix (StagedPrefix, under
// ownerID's: ErrOutsidePrefix otherwise), one PutObject of StagePartSize
// bytes at a time through one buffer, and returns where they are. At most
// max bytes are read: a longer body is ErrStageTooLarge. On any failure
// (body's error, over the limit, the bucket's) the parts already put are
// deleted, detached from ctx (a request given up must not leave them),
// and the error returned; an error reading body is returned as it is
// (wrapped), for the caller to tell a client's from the bucket's.
func (s *Store) Stage(ctx context.Context, ownerID, prefix string, body io.Reader, max int64) (Staged, error) {
	st := Staged{Prefix: prefix, PartSize: s.partSize.Load()}
	if !strings.HasSuffix(prefix, "/") || !underPrefix(ownerID, prefix) {
		return Staged{}, ErrOutsidePrefix
	}
	buf := make([]byte, st.PartSize)
	src := &limitedReader{r: body, left: max}
	for {
		n, err := io.ReadFull(src, buf)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return Staged{}, s.unstage(ctx, ownerID, st, fmt.Errorf("photo: stage: %w", err))
		}
		if n == 0 {
			return st, nil
		}
		part := st.Parts() + 1
		if part > maxStagedParts {
			return Staged{}, s.unstage(ctx, ownerID, st, ErrStageTooLarge)
		}
		_, perr := s.s3.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(s.bucket), Key: aws.String(StagedPart(prefix, part)),
			Body: bytes.NewReader(buf[:n]), ContentLength: aws.Int64(int64(n)), ContentType: aws.String("application/octet-stream"),
		})
		if perr != nil {
			return Staged{}, s.unstage(ctx, ownerID, st, fmt.Errorf("photo: stage: part %d: %w", part, perr))
		}
		st.Size += int64(n)
		if n < len(buf) {
			return st, nil
		}
	}
}

// unstage deletes what is under st's prefix after err, detached from
// ctx (DeleteStaged: a part whose PutObject got no answer may be stored),
// and returns err with the deletion's error joined.
func (s *Store) unstage(ctx context.Context, ownerID string, st Staged, err error) error {
	return errors.Join(err, s.DeleteStaged(context.WithoutCancel(ctx), ownerID, st.Prefix))
}

// DeleteStaged deletes every object under prefix (StagedPrefix, under
// ownerID's: ErrOutsidePrefix), whatever parts it holds: what Stage put
// and anything a failed Stage could not remove. It lists the prefix, so it
// needs no record of how many parts there were.
func (s *Store) DeleteStaged(ctx context.Context, ownerID, prefix string) error {
	if !strings.HasSuffix(prefix, "/") || !underPrefix(ownerID, prefix) {
		return ErrOutsidePrefix
	}
	var keys []string
	err := s.List(ctx, prefix, func(context.Context, int) error { return nil }, func(o ObjectInfo) error {
		keys = append(keys, o.Key)
		return nil
	})
	if err != nil {
		return fmt.Errorf("photo: delete staged: %w", err)
	}
	if err := s.Delete(ctx, ownerID, keys...); err != nil {
		return fmt.Errorf("photo: delete staged: %w", err)
	}
	return nil
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

// Ranged reads a staged archive's parts through ranged GetObject calls,
// as one io.ReaderAt over their concatenation: a zip needs random access
// (its central directory is at the end), and the archive may be
// gigabytes. Offset off lies in part off / PartSize (from 0), at off %
// PartSize inside it. Reads are served from a small LRU of blocks aligned
// to RangedBlock inside their part (a block never spans two parts; a
// read that does is served by one block of each), so the many small reads
// of a zip's directory and of a photo's entry cost one request a block.
// Its methods are safe for concurrent use; it holds at most
// RangedBlocks × RangedBlock bytes.
type Ranged struct {
	s   *Store
	ctx context.Context
	st  Staged

	mu     sync.Mutex
	blocks []rangedBlock // most recently used last
	gets   int
}

type rangedBlock struct {
	off  int64 // in the whole archive
	data []byte
}

// The block cache of Ranged: 16 blocks of 256 KiB, 4 MiB in all.
const (
	RangedBlock  = 256 << 10
	RangedBlocks = 16
)

// OpenStaged returns a Ranged over the archive st (Stage's result, as the
// import recorded it) under ownerID's prefix (ErrOutsidePrefix
// otherwise). It makes no request: st must be consistent (a positive
// PartSize, at most 10,000 parts; an error otherwise), and a
// part gone since is ErrNotFound (wrapped) from the read that needs it.
// Its reads run under ctx.
func (s *Store) OpenStaged(ctx context.Context, ownerID string, st Staged) (*Ranged, error) {
	if !strings.HasSuffix(st.Prefix, "/") || !underPrefix(ownerID, st.Prefix) {
		return nil, ErrOutsidePrefix
	}
	if st.Size < 0 || st.PartSize <= 0 || st.Parts() > maxStagedParts {
		return nil, fmt.Errorf("photo: open staged %s: %d bytes in parts of %d bytes is not an archive Stage writes", st.Prefix, st.Size, st.PartSize)
	}
	return &Ranged{s: s, ctx: ctx, st: st}, nil
}

// Size returns the archive's length in bytes.
func (r *Ranged) Size() int64 { return r.st.Size }

// Gets returns how many GetObject calls r has made.
func (r *Ranged) Gets() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gets
}

// ReadAt reads len(p) bytes at off, as io.ReaderAt: io.EOF when the
// archive ends first; a part gone is ErrNotFound (wrapped), the bucket's
// other errors as they come.
func (r *Ranged) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("photo: read %s: negative offset", r.st.Prefix)
	}
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		if pos >= r.st.Size {
			return n, io.EOF
		}
		part := pos / r.st.PartSize
		start := pos - pos%r.st.PartSize%RangedBlock
		b, err := r.block(part, start)
		if err != nil {
			return n, err
		}
		n += copy(p[n:], b[pos-start:])
	}
	return n, nil
}

// block returns the block starting at off (in the archive) of part (from
// 0), from the cache or one ranged GET inside the part.
func (r *Ranged) block(part, off int64) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, b := range r.blocks {
		if b.off == off {
			copy(r.blocks[i:], r.blocks[i+1:])
			r.blocks[len(r.blocks)-1] = b
			return b.data, nil
		}
	}
	partStart := part * r.st.PartSize
	end := min(off+RangedBlock, partStart+r.st.PartSize, r.st.Size) // exclusive
	key := StagedPart(r.st.Prefix, int(part)+1)
	r.gets++
	out, err := r.s.s3.GetObject(r.ctx, &s3.GetObjectInput{
		Bucket: aws.String(r.s.bucket), Key: aws.String(key),
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", off-partStart, end-partStart-1)),
	})
	if isNoSuchKey(err) {
		return nil, fmt.Errorf("photo: read %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("photo: read %s: %w", key, err)
	}
	defer out.Body.Close()
	need := int(end - off)
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
		return nil, fmt.Errorf("photo: read %s: %w", key, err)
	}
	r.blocks = append(r.blocks, rangedBlock{off: off, data: data})
	return data, nil
}
