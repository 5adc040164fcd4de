package photo_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"

	"ndiro/internal/apptest"
	"ndiro/internal/photo"
)

// TestDeleteAllAnyUserID: the provider's subject may hold '/' or ".."
// (OIDC allows any string); DeleteAll removes every object of such a
// user, and nothing
// of the users whose IDs look like a part or the escaped form of theirs
// (user "a" deleted first must leave the objects of "a/b").
func TestDeleteAllAnyUserID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, _ := apptest.Local(t)
	store := photo.NewStore(env.S3, "test-photos")
	ids := []string{"a/b", "a", "a%2Fb", "b", "..", "a..b"}
	for _, id := range ids {
		for _, key := range []string{
			photo.Key(id, "2026-09-01", "123000-abcdef", photo.SizeDisplay),
			photo.Key(id, "2026-09-01", "123000-abcdef", photo.SizeThumb),
			photo.PendingKey(id, "0123abcd", photo.SizeDisplay),
		} {
			if err := store.Put(ctx, key, []byte("jpeg"), 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, id := range []string{"a/b", "..", "a..b"} {
		if _, err := store.Get(ctx, id, photo.Key(id, "2026-09-01", "123000-abcdef", photo.SizeThumb)); err != nil {
			t.Fatalf("Get of a photo of %q: %v", id, err)
		}
	}
	for _, id := range []string{"a", "a/b", "..", "a..b"} {
		if n, err := store.DeleteAll(ctx, id); err != nil || n != 3 {
			t.Fatalf("DeleteAll(%q) = %d, %v; want its 3 objects deleted", id, n, err)
		}
	}
	count := func(id string) int {
		n := 0
		for _, prefix := range []string{photo.UserPrefix(id), photo.PendingPrefix(id)} {
			out, err := env.S3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("test-photos"), Prefix: aws.String(prefix)})
			if err != nil {
				t.Fatal(err)
			}
			n += len(out.Contents)
		}
		return n
	}
	got := map[string]int{}
	for _, id := range ids {
		got[id] = count(id)
	}
	if d := cmp.Diff(map[string]int{"a/b": 0, "a": 0, "a%2Fb": 3, "b": 3, "..": 0, "a..b": 0}, got); d != "" {
		t.Errorf("objects left per user (-want +got):\n%s", d)
	}
}

// TestSweepPendingSkipsForeignKeys: a key under pending/ that no user ID
// makes (written outside ndiro) is left alone, and does not stop the sweep
// of the expired uploads beside it.
func TestSweepPendingSkipsForeignKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, _ := apptest.Local(t)
	store := photo.NewStore(env.S3, "test-photos")
	foreign := "pending/a%b/0123abcd.jpg"
	ours := photo.PendingKey("u1", "0123abcd", photo.SizeDisplay)
	for _, key := range []string{foreign, ours} {
		if err := store.Put(ctx, key, []byte("jpeg"), 1); err != nil {
			t.Fatal(err)
		}
	}
	n, err := store.SweepPending(ctx, time.Now().Add(photo.PendingTTL+time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("SweepPending = %d, %v; want 1 deleted", n, err)
	}
	out, err := env.S3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("test-photos"), Prefix: aws.String("pending/")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Contents) != 1 || aws.ToString(out.Contents[0].Key) != foreign {
		t.Errorf("left under pending/: %d objects, want only %s", len(out.Contents), foreign)
	}
}

// TestPendingAnyUserID: a kept upload of a user whose ID holds '/' or
// ".." is found again, as any other.
func TestPendingAnyUserID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, _ := apptest.Local(t)
	store := photo.NewStore(env.S3, "test-photos")
	for _, id := range []string{"a/b", "..", `a\b`} {
		tok, err := store.KeepPending(ctx, id, &photo.Processed{Display: []byte("d"), Thumb: []byte("t"), Width: 4, Height: 3, ThumbWidth: 2, ThumbHeight: 1}, "")
		if err != nil {
			t.Fatalf("KeepPending(%q): %v", id, err)
		}
		p, err := store.LookPending(ctx, id, tok, time.Now())
		if err != nil || p.Width != 4 || p.ThumbHeight != 1 {
			t.Errorf("LookPending(%q) = %+v, %v; want the kept sizes", id, p, err)
		}
	}
}
