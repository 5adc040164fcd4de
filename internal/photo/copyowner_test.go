package photo_test

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"ndiro/internal/apptest"
	"ndiro/internal/photo"
)

// TestCopyOwner: every object under one user's prefix, sized copies
// included, is copied to another user's with its bytes and version, and
// nothing of a user whose ID the first one's is a prefix of, nor any
// pending upload. A second run copies the same again.
func TestCopyOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, _ := apptest.Local(t)
	store := photo.NewStore(env.S3, "test-photos")
	sizes := []photo.Size{photo.SizeDisplay, photo.SizeThumb, "t160.webp", "d1080.jpg"}
	for _, id := range []string{"a/b", "a", "a/bc"} {
		for i, size := range sizes {
			if err := store.Put(ctx, photo.Key(id, "2026-09-01", "123000-abcdef", size), []byte(id+string(size)), photo.Version(1000+i)); err != nil {
				t.Fatal(err)
			}
		}
		// More than one listing page's worth would need 1,000 objects;
		// a handful of meals shows the copy goes past the first.
		for m := range 12 {
			if err := store.Put(ctx, photo.Key(id, "2026-08-01", "0800"+strconv.Itoa(10+m)+"-abcdef", photo.SizeDisplay), []byte("x"), 7); err != nil {
				t.Fatal(err)
			}
		}
		if err := store.Put(ctx, photo.PendingKey(id, "0123abcd", photo.SizeDisplay), []byte("pending"), 1); err != nil {
			t.Fatal(err)
		}
	}
	for run := range 2 {
		n, err := store.CopyOwner(ctx, "a/b", "google-9")
		if err != nil || n != len(sizes)+12 {
			t.Fatalf("run %d: CopyOwner = %d, %v; want %d objects", run, n, err, len(sizes)+12)
		}
	}
	for i, size := range sizes {
		obj, err := store.Get(ctx, "google-9", photo.Key("google-9", "2026-09-01", "123000-abcdef", size))
		if err != nil {
			t.Fatalf("copy of %s: %v", size, err)
		}
		if string(obj.Body) != "a/b"+string(size) || obj.Version != photo.Version(1000+i) {
			t.Errorf("copy of %s = %q version %d, want %q version %d", size, obj.Body, obj.Version, "a/b"+string(size), 1000+i)
		}
	}
	var keys []string
	err := store.List(ctx, "", func(context.Context, int) error { return nil }, func(o photo.ObjectInfo) error {
		if owner, _ := photo.OwnerOfKey(o.Key); owner == "google-9" {
			keys = append(keys, o.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(sizes)+12 || slices.ContainsFunc(keys, func(k string) bool { return k[:len("pending/")] == "pending/" }) {
		t.Errorf("the new owner holds %d objects %v, want the %d under users/ only", len(keys), keys, len(sizes)+12)
	}
	for _, bad := range [][2]string{{"", "x"}, {"x", ""}, {"x", "x"}} {
		if _, err := store.CopyOwner(ctx, bad[0], bad[1]); err == nil {
			t.Errorf("CopyOwner(%q, %q) = nil, want an error", bad[0], bad[1])
		}
	}
}
