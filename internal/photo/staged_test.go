package photo_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"ndiro/internal/apptest"
	"ndiro/internal/photo"
)

// randomBytes returns n bytes from a fixed seed.
func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestStageAndRangedRead: a body of any length (empty, one part, several
// parts with a short last one) is stored whole, and Ranged reads any
// range of it back, each block of the object fetched once for a read that
// walks it in small steps.
func TestStageAndRangedRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, _ := apptest.Local(t)
	store := photo.NewStore(env.S3, "test-photos")
	for _, n := range []int{0, 1000, photo.StagePartSize, 2*photo.StagePartSize + 12345} {
		body := randomBytes(n)
		key := photo.ImportKey("u1", "abc")
		got, err := store.Stage(ctx, "u1", key, bytes.NewReader(body), int64(n))
		if err != nil || got != int64(n) {
			t.Fatalf("Stage(%d bytes) = %d, %v; want %d, nil", n, got, err, n)
		}
		r, err := store.OpenRanged(ctx, "u1", key)
		if err != nil {
			t.Fatal(err)
		}
		if r.Size() != int64(n) {
			t.Fatalf("Size() = %d, want %d", r.Size(), n)
		}
		back, err := io.ReadAll(io.NewSectionReader(r, 0, r.Size()))
		if err != nil || !bytes.Equal(back, body) {
			t.Fatalf("read back %d bytes, %v; want the %d staged", len(back), err, n)
		}
		if n == 0 {
			continue
		}
		// Walked in 4 KB steps, the object costs one GET a block.
		blocks := (n + photo.RangedBlock - 1) / photo.RangedBlock
		if r.Gets() != blocks {
			t.Errorf("%d-byte object read in order took %d GETs, want %d (one a block)", n, r.Gets(), blocks)
		}
		// A read across a block edge, and one past the end.
		if n > photo.RangedBlock+10 {
			p := make([]byte, 20)
			if k, err := r.ReadAt(p, photo.RangedBlock-10); err != nil || k != 20 || !bytes.Equal(p, body[photo.RangedBlock-10:photo.RangedBlock+10]) {
				t.Errorf("ReadAt across a block edge = %d, %v", k, err)
			}
		}
		p := make([]byte, 10)
		if k, err := r.ReadAt(p, int64(n-4)); k != 4 || !errors.Is(err, io.EOF) {
			t.Errorf("ReadAt 4 bytes before the end = %d, %v; want 4, io.EOF", k, err)
		}
	}
}

// TestStageRefusesOverLimit: a body one byte over the limit is
// ErrStageTooLarge, read no further than the limit and a part, and leaves
// no object and no unfinished multipart upload behind.
func TestStageRefusesOverLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, _ := apptest.Local(t)
	store := photo.NewStore(env.S3, "test-photos")
	for _, max := range []int64{1000, photo.StagePartSize + 5} {
		src := &countingReader{r: bytes.NewReader(randomBytes(int(max) + 1 + 3*photo.StagePartSize))}
		key := photo.ImportKey("u1", "big")
		_, err := store.Stage(ctx, "u1", key, src, max)
		if !errors.Is(err, photo.ErrStageTooLarge) {
			t.Fatalf("Stage over %d bytes = %v, want ErrStageTooLarge", max, err)
		}
		if src.n > max+photo.StagePartSize+1 {
			t.Errorf("Stage with limit %d read %d bytes, want at most the limit and a part", max, src.n)
		}
		out, err := env.S3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("test-photos"), Prefix: aws.String("pending/")})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Contents) != 0 {
			t.Errorf("objects left after a refused stage: %d", len(out.Contents))
		}
		// gofakes3 answers NoSuchUpload when there is none.
		ups, err := env.S3.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("test-photos")})
		var api smithy.APIError
		if errors.As(err, &api) && api.ErrorCode() == "NoSuchUpload" {
			ups, err = &s3.ListMultipartUploadsOutput{}, nil
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(ups.Uploads) != 0 {
			t.Errorf("multipart uploads left after a refused stage: %d", len(ups.Uploads))
		}
	}
	if _, err := store.Stage(ctx, "u1", photo.ImportKey("u2", "x"), bytes.NewReader(nil), 10); !errors.Is(err, photo.ErrOutsidePrefix) {
		t.Errorf("Stage under another user's prefix = %v, want ErrOutsidePrefix", err)
	}
}

// TestSweepKeepsStagedArchives: the sweep deletes an expired form upload
// but keeps a staged archive of the same age, until StagedTTL.
func TestSweepKeepsStagedArchives(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, _ := apptest.Local(t)
	store := photo.NewStore(env.S3, "test-photos")
	if _, err := store.Stage(ctx, "u1", photo.ImportKey("u1", "abc"), bytes.NewReader([]byte("zip")), 10); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, photo.PendingKey("u1", "0123abcd", photo.SizeDisplay), []byte("jpeg"), 1); err != nil {
		t.Fatal(err)
	}
	if n, err := store.SweepPending(ctx, time.Now().Add(photo.PendingTTL+time.Hour)); err != nil || n != 1 {
		t.Fatalf("SweepPending a day on = %d, %v; want the form upload alone deleted", n, err)
	}
	if _, err := store.OpenRanged(ctx, "u1", photo.ImportKey("u1", "abc")); err != nil {
		t.Fatalf("staged archive after the sweep: %v", err)
	}
	if n, err := store.SweepPending(ctx, time.Now().Add(photo.StagedTTL+time.Hour)); err != nil || n != 1 {
		t.Fatalf("SweepPending past StagedTTL = %d, %v; want the archive deleted", n, err)
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
