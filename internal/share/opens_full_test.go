package share_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"ndiro/internal/apptest"
	"ndiro/internal/share"
	"ndiro/internal/storage"
)

// TestOpensWaitOutAFullDisk: while storage refuses writes, flushes keep
// the opens counted, however many flushes fail (more than OpensTries),
// and the lists still add them; once writes are taken again, they are
// written, once.
func TestOpensWaitOutAFullDisk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db, tables := newStore(t)
	sh := create(t, s, share.Share{Label: "x"})
	f := &apptest.Faults{}
	faulty := share.NewStore(dynamodb.New(db.Options(), f.DynamoOption()), tables.Shares.Name, time.Now)
	f.DiskFull("UpdateItem", tables.Shares.Name, 0)
	faulty.CountOpen(sh.Token, t0)
	faulty.CountOpen(sh.Token, t0.Add(time.Minute))
	for i := range share.OpensTries + 5 {
		if err := faulty.FlushOpens(ctx); !storage.IsFull(err) {
			t.Fatalf("flush %d on a full disk = %v, want storage full", i, err)
		}
	}
	faulty.CountOpen(sh.Token, t0.Add(2*time.Minute))
	if list, err := faulty.ListByOwner(ctx, sh.OwnerID); err != nil || len(list) != 1 || list[0].Opens != 3 {
		t.Errorf("the list on a full disk: %+v, %v; want 3 opens", list, err)
	}
	f.Clear()
	for range 2 { // the batch kept, then the open counted since
		if err := faulty.FlushOpens(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got, err := share.NewStore(db, tables.Shares.Name, time.Now).Get(ctx, sh.Token)
	if err != nil {
		t.Fatal(err)
	}
	if got.Opens != 3 || !got.FirstOpenedAt.Equal(t0) || !got.LastOpenedAt.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("after the disk has room: %d opens, first %v, last %v; want 3, %v, %v", got.Opens, got.FirstOpenedAt, got.LastOpenedAt, t0, t0.Add(2*time.Minute))
	}
	// Another failure still gives up after OpensTries.
	faulty.CountOpen(sh.Token, t0)
	f.Fail("UpdateItem", tables.Shares.Name, 0)
	var last error
	for range share.OpensTries {
		last = faulty.FlushOpens(ctx)
	}
	if !errors.Is(last, apptest.ErrInjected) {
		t.Errorf("last flush with UpdateItem failing = %v, want ErrInjected", last)
	}
	f.Clear()
	if err := faulty.FlushOpens(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := share.NewStore(db, tables.Shares.Name, time.Now).Get(ctx, sh.Token); got.Opens != 3 {
		t.Errorf("after %d failed flushes: %d opens, want the batch given up (3)", share.OpensTries, got.Opens)
	}
}
