package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ndiro/internal/store"
)

// RunBlobs runs every blob case against the engine open returns (a fresh
// empty bucket each).
func RunBlobs(t *testing.T, open func(t *testing.T) store.Blobs) {
	cases := []struct {
		name string
		run  func(t *testing.T, b store.Blobs)
	}{
		{"RoundTrip", blobRoundTrip},
		{"Ranges", blobRanges},
		{"Copy", blobCopy},
		{"Delete", blobDelete},
		{"List", blobList},
		{"OddKeys", blobOddKeys},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, open(t))
		})
	}
}

func putBlob(t *testing.T, b store.Blobs, key string, body []byte, meta store.Meta) {
	t.Helper()
	if err := b.Put(ctx, key, bytes.NewReader(body), int64(len(body)), meta); err != nil {
		t.Fatalf("Put(%q) = %v", key, err)
	}
}

func read(t *testing.T, b store.Blobs, key string, off, n int64) ([]byte, store.Info) {
	t.Helper()
	r, info, err := b.Get(ctx, key, off, n)
	if err != nil {
		t.Fatalf("Get(%q, %d, %d) = %v", key, off, n, err)
	}
	defer r.Close()
	body, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return body, info
}

func blobRoundTrip(t *testing.T, b store.Blobs) {
	body := bytes.Repeat([]byte("jpeg"), 3000)
	meta := store.Meta{ContentType: "image/jpeg", User: map[string]string{"photo_v": "1733590000123456789"}}
	before := time.Now().Add(-time.Minute)
	putBlob(t, b, "users/u1/meals/2026-09-01/120000-aaaaaa.jpg", body, meta)
	got, info := read(t, b, "users/u1/meals/2026-09-01/120000-aaaaaa.jpg", 0, -1)
	if !bytes.Equal(got, body) {
		t.Errorf("Get returned %d bytes, want the %d put", len(got), len(body))
	}
	if d := cmp.Diff(meta, info.Meta); d != "" || info.Size != int64(len(body)) {
		t.Errorf("Get's info: size %d, meta (-want +got):\n%s", info.Size, d)
	}
	head, err := b.Head(ctx, "users/u1/meals/2026-09-01/120000-aaaaaa.jpg")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(meta, head.Meta); d != "" || head.Size != int64(len(body)) || head.Modified.Before(before) || head.Modified.After(time.Now().Add(time.Minute)) {
		t.Errorf("Head: size %d, modified %v, meta (-want +got):\n%s", head.Size, head.Modified, d)
	}
	// A second Put replaces the blob whole.
	putBlob(t, b, "users/u1/meals/2026-09-01/120000-aaaaaa.jpg", []byte("new"), store.Meta{ContentType: "image/webp"})
	if got, info := read(t, b, "users/u1/meals/2026-09-01/120000-aaaaaa.jpg", 0, -1); string(got) != "new" || info.Meta.ContentType != "image/webp" {
		t.Errorf("after a second Put: %q, %q", got, info.Meta.ContentType)
	}
	if _, err := b.Head(ctx, "users/u1/none.jpg"); !errors.Is(err, store.ErrNoBlob) {
		t.Errorf("Head of a missing blob = %v, want ErrNoBlob", err)
	}
	if _, _, err := b.Get(ctx, "users/u1/none.jpg", 0, -1); !errors.Is(err, store.ErrNoBlob) {
		t.Errorf("Get of a missing blob = %v, want ErrNoBlob", err)
	}
}

func blobRanges(t *testing.T, b store.Blobs) {
	body := make([]byte, 10_000)
	for i := range body {
		body[i] = byte(i % 251)
	}
	putBlob(t, b, "pending/u1/import/x/000001", body, store.Meta{})
	for _, c := range []struct{ off, n int64 }{{0, 100}, {4000, 3000}, {9990, 10}, {5000, -1}} {
		got, info := read(t, b, "pending/u1/import/x/000001", c.off, c.n)
		end := int64(len(body))
		if c.n >= 0 {
			end = c.off + c.n
		}
		if !bytes.Equal(got, body[c.off:end]) || info.Size != int64(len(body)) {
			t.Errorf("Get(off %d, n %d): %d bytes (size %d), want bytes %d..%d of %d", c.off, c.n, len(got), info.Size, c.off, end, len(body))
		}
	}
}

func blobCopy(t *testing.T, b store.Blobs) {
	meta := store.Meta{ContentType: "image/jpeg", User: map[string]string{"photo_v": "7"}}
	putBlob(t, b, "users/u1/a.jpg", []byte("photo"), meta)
	if err := b.Copy(ctx, "users/u1/a.jpg", "users/u1/b.jpg", nil); err != nil {
		t.Fatal(err)
	}
	if got, info := read(t, b, "users/u1/b.jpg", 0, -1); string(got) != "photo" || !cmp.Equal(meta, info.Meta) {
		t.Errorf("copy keeping the metadata: %q, %+v", got, info.Meta)
	}
	newMeta := store.Meta{ContentType: "image/jpeg", User: map[string]string{"photo_v": "8"}}
	if err := b.Copy(ctx, "users/u1/a.jpg", "users/u1/c.jpg", &newMeta); err != nil {
		t.Fatal(err)
	}
	if got, info := read(t, b, "users/u1/c.jpg", 0, -1); string(got) != "photo" || !cmp.Equal(newMeta, info.Meta) {
		t.Errorf("copy with new metadata: %q, %+v", got, info.Meta)
	}
	if err := b.Copy(ctx, "users/u1/none.jpg", "users/u1/d.jpg", nil); !errors.Is(err, store.ErrNoBlob) {
		t.Errorf("Copy of a missing blob = %v, want ErrNoBlob", err)
	}
}

func blobDelete(t *testing.T, b store.Blobs) {
	putBlob(t, b, "users/u1/a.jpg", []byte("a"), store.Meta{})
	putBlob(t, b, "users/u1/b.jpg", []byte("b"), store.Meta{})
	if err := b.Delete(ctx, "users/u1/a.jpg", "users/u1/never.jpg"); err != nil {
		t.Fatalf("Delete with a missing key = %v", err)
	}
	if _, err := b.Head(ctx, "users/u1/a.jpg"); !errors.Is(err, store.ErrNoBlob) {
		t.Errorf("Head after Delete = %v, want ErrNoBlob", err)
	}
	if _, err := b.Head(ctx, "users/u1/b.jpg"); err != nil {
		t.Errorf("Delete removed another blob: %v", err)
	}
}

func listAll(t *testing.T, b store.Blobs, prefix string, limit int) []string {
	t.Helper()
	var keys []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > 50 {
			t.Fatal("listing does not end")
		}
		infos, next, err := b.List(ctx, prefix, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(infos) > limit {
			t.Fatalf("a page of limit %d held %d", limit, len(infos))
		}
		for _, in := range infos {
			keys = append(keys, in.Key)
		}
		if next == "" {
			return keys
		}
		after = next
	}
}

func blobList(t *testing.T, b store.Blobs) {
	var want []string
	for _, k := range []string{
		"users/u1/meals/2026-09-01/a.jpg", "users/u1/meals/2026-09-01/a.thumb.jpg", "users/u1/meals/2026-09-01/b.jpg",
		"users/u1/meals/2026-09-30/a.jpg", "users/u1/z", "users/u1-other/x", "users/u10/meals/x.jpg", "users/u2/y", "pending/u1/t",
	} {
		putBlob(t, b, k, []byte(k), store.Meta{})
	}
	want = []string{"users/u1/meals/2026-09-01/a.jpg", "users/u1/meals/2026-09-01/a.thumb.jpg", "users/u1/meals/2026-09-01/b.jpg", "users/u1/meals/2026-09-30/a.jpg", "users/u1/z"}
	if d := cmp.Diff(want, listAll(t, b, "users/u1/", 2)); d != "" {
		t.Errorf("List users/u1/ by pages of 2 (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want[:3], listAll(t, b, "users/u1/meals/2026-09-01/", 1000)); d != "" {
		t.Errorf("List of one day (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"users/u1-other/x", "users/u1/meals/2026-09-01/a.jpg"}, listAll(t, b, "users/u1", 1000)[:2]); d != "" {
		t.Errorf("byte order: '-' before '/' (-want +got):\n%s", d)
	}
	infos, _, err := b.List(ctx, "users/u2/", "", 10)
	if err != nil || len(infos) != 1 || infos[0].Size != int64(len("users/u2/y")) || infos[0].Modified.IsZero() {
		t.Errorf("List info = %+v, %v; want the one blob with its size and modification time", infos, err)
	}
}

// blobOddKeys: a key's parts may hold any character (an OIDC subject),
// be long, or look like a path step; each is its own blob.
func blobOddKeys(t *testing.T, b store.Blobs) {
	long := strings.Repeat("x", 300)
	keys := []string{
		"users/google|123/a.jpg", "users/../etc/passwd", "users/./a", "users/a%2Fb/c", "users/a/b/c",
		"users/" + long + "1/a", "users/" + long + "2/a", "users/é ü/€.jpg", "users/.hidden/a",
	}
	for i, k := range keys {
		putBlob(t, b, k, []byte(fmt.Sprint(i)), store.Meta{})
	}
	for i, k := range keys {
		if got, _ := read(t, b, k, 0, -1); string(got) != fmt.Sprint(i) {
			t.Errorf("Get(%q) = %q, want %q", k, got, fmt.Sprint(i))
		}
	}
	if n := len(listAll(t, b, "users/", 3)); n != len(keys) {
		t.Errorf("listed %d blobs, want %d", n, len(keys))
	}
}
