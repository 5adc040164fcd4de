package store_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"ndiro/internal/store"
	"ndiro/internal/store/disk"
)

// TestWrapSeesEveryCall: middleware runs around each call, the first
// outermost, sees what the call is, may refuse it before the engine is
// reached, and may wrap a blob's body.
func TestWrapSeesEveryCall(t *testing.T) {
	dir := t.TempDir()
	s, err := disk.Open(dir, disk.Options{Holder: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var seen []string
	record := func(tag string) store.Middleware {
		return func(ctx context.Context, op store.Op, call func(context.Context) error) error {
			seen = append(seen, tag+" "+op.Service+"."+op.Name+" "+op.Table+" "+op.Key+" "+op.Kind.String()+map[bool]string{true: " write", false: ""}[op.Write])
			return call(ctx)
		}
	}
	refused := errors.New("refused")
	gate := func(ctx context.Context, op store.Op, call func(context.Context) error) error {
		if op.Write && op.Key == "gated" {
			return refused
		}
		return call(ctx)
	}
	upper := func(ctx context.Context, op store.Op, call func(context.Context) error) error {
		if err := call(ctx); err != nil || op.Body == nil {
			return err
		}
		b, _ := io.ReadAll(*op.Body)
		*op.Body = io.NopCloser(strings.NewReader(strings.ToUpper(string(b))))
		return nil
	}
	items := store.WrapItems(s.Items, record("outer"), gate, record("inner"))
	blobs := store.WrapBlobs(s.Blobs, record("outer"), upper)
	tb := store.Table{Name: "users", PK: "id"}
	ctx := context.Background()
	if _, err := items.Put(ctx, tb, store.Item{"id": store.S("u1")}, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := items.Put(ctx, tb, store.Item{"id": store.S("gated")}, store.Cond{}); !errors.Is(err, refused) {
		t.Errorf("gated Put = %v, want the gate's refusal", err)
	}
	if _, found, _ := s.Items.Get(ctx, tb, store.Key{PK: "gated"}, store.Read{}); found {
		t.Error("the refused Put reached the engine")
	}
	if _, err := items.Query(ctx, store.Query{Table: tb, PK: "u1"}); err != nil {
		t.Fatal(err)
	}
	if err := blobs.Put(ctx, "users/u1/a", bytes.NewReader([]byte("abc")), 3, store.Meta{}); err != nil {
		t.Fatal(err)
	}
	rc, _, err := blobs.Get(ctx, "users/u1/a", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != "ABC" {
		t.Errorf("body through the middleware = %q, want it wrapped (ABC)", got)
	}
	want := []string{
		"outer items.Put users u1 item write", "inner items.Put users u1 item write",
		"outer items.Put users gated item write",
		"outer items.Query users u1 query", "inner items.Query users u1 query",
		"outer blobs.Put  users/u1/a transfer write", "outer blobs.Get  users/u1/a transfer",
	}
	if d := cmp.Diff(want, seen); d != "" {
		t.Errorf("calls seen (-want +got):\n%s", d)
	}
}
