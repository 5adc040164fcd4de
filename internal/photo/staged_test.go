package photo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

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

// stagedObjects lists the keys and sizes of the bucket's objects under
// prefix, in key order.
func stagedObjects(t *testing.T, client *s3.Client, prefix string) []string {
	t.Helper()
	var out []string
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String("test-photos"), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			out = append(out, fmt.Sprintf("%s %d", aws.ToString(o.Key), aws.ToInt64(o.Size)))
		}
	}
	return out
}

// TestStageAndRangedRead: a body of any length (empty, one part, exactly
// a part, several parts with a short last one, with the part size of
// production and one that is no multiple of RangedBlock) is stored as
// part objects 000001, 000002, … of the part size but the last, and
// Ranged reads it back whole, each block of each part fetched once for
// a read that walks it in small steps.
func TestStageAndRangedRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, _ := apptest.Local(t)
	for _, c := range []struct{ partSize, n int }{
		{photo.StagePartSize, 0}, {photo.StagePartSize, 1000}, {photo.StagePartSize, photo.StagePartSize},
		{photo.StagePartSize, 2*photo.StagePartSize + 12345},
		{2*photo.RangedBlock + 1000, 5*photo.RangedBlock + 7},
	} {
		store := photo.NewStore(env.S3, "test-photos")
		store.SetStagePartSize(int64(c.partSize))
		body := randomBytes(c.n)
		id := fmt.Sprintf("p%dn%d", c.partSize, c.n)
		prefix := photo.StagedPrefix("u1", id)
		st, err := store.Stage(ctx, "u1", prefix, bytes.NewReader(body), int64(c.n))
		wantParts := (c.n + c.partSize - 1) / c.partSize
		if err != nil || st != (photo.Staged{Prefix: prefix, Size: int64(c.n), PartSize: int64(c.partSize)}) || st.Parts() != wantParts {
			t.Fatalf("Stage(%d bytes, parts of %d) = %+v, %v; want %d parts", c.n, c.partSize, st, err, wantParts)
		}
		var want []string
		for k := 1; k <= wantParts; k++ {
			want = append(want, fmt.Sprintf("pending/u1/import/%s/%06d %d", id, k, min(c.partSize, c.n-(k-1)*c.partSize)))
		}
		if got := stagedObjects(t, env.S3, prefix); !slices.Equal(got, want) {
			t.Fatalf("objects staged for %d bytes in parts of %d = %v, want %v", c.n, c.partSize, got, want)
		}
		r, err := store.OpenStaged(ctx, "u1", st)
		if err != nil {
			t.Fatal(err)
		}
		if r.Size() != int64(c.n) {
			t.Fatalf("Size() = %d, want %d", r.Size(), c.n)
		}
		// Walked in 4 KB steps, the archive costs one GET a block of each part.
		back, err := io.ReadAll(io.NewSectionReader(r, 0, r.Size()))
		if err != nil || !bytes.Equal(back, body) {
			t.Fatalf("read back %d bytes, %v; want the %d staged", len(back), err, c.n)
		}
		blocks := 0
		for left := c.n; left > 0; left -= c.partSize {
			blocks += (min(left, c.partSize) + photo.RangedBlock - 1) / photo.RangedBlock
		}
		if r.Gets() != blocks {
			t.Errorf("%d bytes in parts of %d read in order took %d GETs, want %d (one a block)", c.n, c.partSize, r.Gets(), blocks)
		}
	}
}

// TestRangedReadsAcrossParts: ReadAt over parts gives what bytes.Reader
// gives over the same bytes, count and error, for reads inside a part,
// across a block edge, across one and several part boundaries, starting
// and ending at exact boundaries, reaching the end, starting at it and
// past it (io.EOF), and for random reads; the part size is no multiple of
// RangedBlock, so blocks are cut short at each part's end.
func TestRangedReadsAcrossParts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, _ := apptest.Local(t)
	store := photo.NewStore(env.S3, "test-photos")
	const part = photo.RangedBlock + photo.RangedBlock/2 + 3 // 1.5 blocks and 3 bytes
	const size = 4*part + 1234
	store.SetStagePartSize(part)
	body := randomBytes(size)
	st, err := store.Stage(ctx, "u1", photo.StagedPrefix("u1", "cross"), bytes.NewReader(body), size)
	if err != nil || st.Parts() != 5 {
		t.Fatalf("Stage = %+v, %v; want 5 parts", st, err)
	}
	r, err := store.OpenStaged(ctx, "u1", st)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.NewReader(body)
	type read struct {
		off int64
		n   int
	}
	var reads []read
	for k := int64(0); k <= 5; k++ {
		edge := k * part // a part's start, and the end of the one before
		for _, d := range []int64{-7, -1, 0, 1} {
			for _, n := range []int{1, 2, 8, photo.RangedBlock, part, part + 1, 2*part + 5, 3 * part} {
				reads = append(reads, read{edge + d, n})
			}
		}
		// Inside the part, across its one block edge.
		reads = append(reads, read{edge + 100, 50}, read{edge + photo.RangedBlock - 3, 6}, read{edge + photo.RangedBlock, 10})
	}
	reads = append(reads, read{0, size}, read{0, size + 1}, read{size - 1, 1}, read{size - 1, 2}, read{size, 1}, read{size + 10, 4}, read{3, 0})
	rnd := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		reads = append(reads, read{rnd.Int64N(size + 100), rnd.IntN(3 * part)})
	}
	for _, rd := range reads {
		if rd.off < 0 {
			continue
		}
		got, exp := make([]byte, rd.n), make([]byte, rd.n)
		gn, gerr := r.ReadAt(got, rd.off)
		en, eerr := want.ReadAt(exp, rd.off)
		if gn != en || !errors.Is(gerr, eerr) || !bytes.Equal(got[:gn], exp[:en]) {
			t.Errorf("ReadAt(%d bytes at %d) = %d, %v; want %d, %v as bytes.Reader (same bytes: %t)",
				rd.n, rd.off, gn, gerr, en, eerr, bytes.Equal(got[:gn], exp[:en]))
		}
	}
	if _, err := r.ReadAt(make([]byte, 1), -1); err == nil {
		t.Error("ReadAt at -1 = nil error, want one")
	}
}

// TestRangedPartGone: a read that needs a part deleted since is
// ErrNotFound; the other parts still read.
func TestRangedPartGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, _ := apptest.Local(t)
	store := photo.NewStore(env.S3, "test-photos")
	store.SetStagePartSize(1000)
	body := randomBytes(3500)
	st, err := store.Stage(ctx, "u1", photo.StagedPrefix("u1", "gone"), bytes.NewReader(body), 3500)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, "u1", photo.StagedPart(st.Prefix, 2)); err != nil {
		t.Fatal(err)
	}
	r, err := store.OpenStaged(ctx, "u1", st)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 10)
	if _, err := r.ReadAt(p, 1500); !errors.Is(err, photo.ErrNotFound) {
		t.Errorf("ReadAt inside the deleted part 2 = %v, want ErrNotFound", err)
	}
	if n, err := r.ReadAt(p, 995); n != 5 || !errors.Is(err, photo.ErrNotFound) || !bytes.Equal(p[:5], body[995:1000]) {
		t.Errorf("ReadAt from part 1 into the deleted part 2 = %d, %v; want part 1's 5 bytes, ErrNotFound", n, err)
	}
	if n, err := r.ReadAt(p, 2500); n != 10 || err != nil || !bytes.Equal(p, body[2500:2510]) {
		t.Errorf("ReadAt inside part 3 = %d, %v; want its bytes", n, err)
	}
}

// TestOpenStagedRefuses: a state with no positive part size, a negative
// size or more than 10,000 parts, or a prefix outside the owner's, opens
// nothing.
func TestOpenStagedRefuses(t *testing.T) {
	t.Parallel()
	env, _ := apptest.Local(t)
	store := photo.NewStore(env.S3, "test-photos")
	prefix := photo.StagedPrefix("u1", "x")
	for _, st := range []photo.Staged{
		{Prefix: prefix, Size: 100, PartSize: 0},
		{Prefix: prefix, Size: 100, PartSize: -5},
		{Prefix: prefix, Size: -1, PartSize: 100},
		{Prefix: prefix, Size: 10_001, PartSize: 1},
	} {
		if _, err := store.OpenStaged(t.Context(), "u1", st); err == nil {
			t.Errorf("OpenStaged(%+v) = nil error, want a refusal", st)
		}
	}
	for _, p := range []string{photo.StagedPrefix("u2", "x"), "pending/u1/import/x", "users/u1/../u2/"} {
		if _, err := store.OpenStaged(t.Context(), "u1", photo.Staged{Prefix: p, Size: 1, PartSize: 1}); !errors.Is(err, photo.ErrOutsidePrefix) {
			t.Errorf("OpenStaged(%q) = %v, want ErrOutsidePrefix", p, err)
		}
	}
}

// failingReader returns n bytes of zeros, then err.
type failingReader struct {
	n   int
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, f.err
	}
	k := min(len(p), f.n)
	clear(p[:k])
	f.n -= k
	return k, nil
}

// TestStageFailureLeavesNothing: a body one byte over the limit is
// ErrStageTooLarge, read no further than the limit and a part; a body
// that fails, and a bucket that fails a part's PutObject, end Stage with
// their error; each leaves no part behind.
func TestStageFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	faults := &apptest.Faults{}
	env, _ := apptest.LocalWith(t, nil, []func(*s3.Options){faults.S3Option()})
	store := photo.NewStore(env.S3, "test-photos")
	store.SetStagePartSize(1000)
	prefix := photo.StagedPrefix("u1", "big")
	left := func(what string) {
		t.Helper()
		if keys := stagedObjects(t, env.S3, "pending/"); len(keys) != 0 {
			t.Errorf("objects left after %s: %v", what, keys)
		}
	}
	for _, max := range []int64{999, 1000, 3500} {
		src := &countingReader{r: bytes.NewReader(randomBytes(int(max) + 1 + 3000))}
		if _, err := store.Stage(ctx, "u1", prefix, src, max); !errors.Is(err, photo.ErrStageTooLarge) {
			t.Fatalf("Stage over %d bytes = %v, want ErrStageTooLarge", max, err)
		}
		if src.n > max+1000+1 {
			t.Errorf("Stage with limit %d read %d bytes, want at most the limit and a part", max, src.n)
		}
		left(fmt.Sprintf("a body over %d bytes", max))
	}
	cut := errors.New("client went away")
	if _, err := store.Stage(ctx, "u1", prefix, &failingReader{n: 2500, err: cut}, 10_000); !errors.Is(err, cut) {
		t.Errorf("Stage of a body failing after 2500 bytes = %v, want its error", err)
	}
	left("a body that failed")
	faults.Fail("PutObject", "test-photos", 2)
	if _, err := store.Stage(ctx, "u1", prefix, bytes.NewReader(randomBytes(5000)), 10_000); !errors.Is(err, apptest.ErrInjected) {
		t.Errorf("Stage with part 3's PutObject failing = %v, want ErrInjected", err)
	}
	faults.Clear()
	left("a part the bucket failed")
	if _, err := store.Stage(ctx, "u1", photo.StagedPrefix("u2", "x"), bytes.NewReader(nil), 10); !errors.Is(err, photo.ErrOutsidePrefix) {
		t.Errorf("Stage under another user's prefix = %v, want ErrOutsidePrefix", err)
	}
}

// TestDeleteStaged removes every object under the prefix, parts and
// strays alike, and nothing of another import's.
func TestDeleteStaged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, _ := apptest.Local(t)
	store := photo.NewStore(env.S3, "test-photos")
	store.SetStagePartSize(100)
	a, b := photo.StagedPrefix("u1", "a"), photo.StagedPrefix("u1", "ab")
	for _, p := range []string{a, b} {
		if _, err := store.Stage(ctx, "u1", p, bytes.NewReader(randomBytes(250)), 1000); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := env.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("test-photos"), Key: aws.String(photo.StagedPart(a, 4)), Body: bytes.NewReader([]byte("x"))}); err != nil {
		t.Fatal(err)
	}
	if err := store.DeleteStaged(ctx, "u1", a); err != nil {
		t.Fatal(err)
	}
	if got := stagedObjects(t, env.S3, "pending/"); len(got) != 3 || got[0] != photo.StagedPart(b, 1)+" 100" {
		t.Errorf("objects after DeleteStaged(%s) = %v; want %s's 3 parts alone", a, got, b)
	}
	if err := store.DeleteStaged(ctx, "u1", photo.StagedPrefix("u2", "a")); !errors.Is(err, photo.ErrOutsidePrefix) {
		t.Errorf("DeleteStaged of another user's prefix = %v, want ErrOutsidePrefix", err)
	}
}

// TestSweepKeepsStagedArchives: the sweep deletes an expired form upload
// but keeps the parts of a staged archive of the same age, until
// StagedTTL, then deletes every part.
func TestSweepKeepsStagedArchives(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, _ := apptest.Local(t)
	store := photo.NewStore(env.S3, "test-photos")
	store.SetStagePartSize(2)
	st, err := store.Stage(ctx, "u1", photo.StagedPrefix("u1", "abc"), bytes.NewReader([]byte("zip")), 10)
	if err != nil || st.Parts() != 2 {
		t.Fatalf("Stage = %+v, %v; want 2 parts", st, err)
	}
	if err := store.Put(ctx, photo.PendingKey("u1", "0123abcd", photo.SizeDisplay), []byte("jpeg"), 1); err != nil {
		t.Fatal(err)
	}
	if n, err := store.SweepPending(ctx, time.Now().Add(photo.PendingTTL+time.Hour)); err != nil || n != 1 {
		t.Fatalf("SweepPending a day on = %d, %v; want the form upload alone deleted", n, err)
	}
	if got := stagedObjects(t, env.S3, st.Prefix); len(got) != 2 {
		t.Fatalf("staged parts after the sweep: %v; want both", got)
	}
	if n, err := store.SweepPending(ctx, time.Now().Add(photo.StagedTTL+time.Hour)); err != nil || n != 2 {
		t.Fatalf("SweepPending past StagedTTL = %d, %v; want both parts deleted", n, err)
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
