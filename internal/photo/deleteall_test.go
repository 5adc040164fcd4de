package photo_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"

	"ndiro/internal/apptest"
	"ndiro/internal/photo"
)

// TestDeleteAllAnyUserID: the provider's subject may hold '/' (OIDC allows
// any string); DeleteAll removes every object of such a user, and nothing
// of the users whose IDs look like a part or the escaped form of theirs
// (user "a" deleted first must leave the objects of "a/b").
func TestDeleteAllAnyUserID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, _ := apptest.Local(t)
	store := photo.NewStore(env.S3, "test-photos")
	ids := []string{"a/b", "a", "a%2Fb", "b"}
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
	if _, err := store.Get(ctx, "a/b", photo.Key("a/b", "2026-09-01", "123000-abcdef", photo.SizeThumb)); err != nil {
		t.Fatalf("Get of a photo of a/b: %v", err)
	}
	for _, id := range []string{"a", "a/b"} {
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
	if d := cmp.Diff(map[string]int{"a/b": 0, "a": 0, "a%2Fb": 3, "b": 3}, got); d != "" {
		t.Errorf("objects left per user (-want +got):\n%s", d)
	}
}
