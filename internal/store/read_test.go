package store_test

import (
	"context"
	"fmt"
	"testing"

	"ndiro/internal/store"
	"ndiro/internal/store/disk"
)

type row struct {
	User string `dynamodbav:"user_id"`
	SK   string `dynamodbav:"sk"`
	N    int    `dynamodbav:"n"`
}

// TestReadHelpers: QueryAll and ScanAll read every page and decode each
// item; QueryPaced pays for each page through pace, what the page
// before cost ahead and the rest after, pages of at most PacedPageItems.
func TestReadHelpers(t *testing.T) {
	s, err := disk.Open(t.TempDir(), disk.Options{Holder: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	tb := store.Table{Name: "meals", PK: "user_id", SK: "sk"}
	for i := range 250 {
		item, err := store.Encode(row{User: "u1", SK: fmt.Sprintf("%04d", i), N: i})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Items.Put(ctx, tb, item, store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := store.QueryAll[row](ctx, s.Items, store.Query{Table: tb, PK: "u1", Limit: 30})
	if err != nil || len(all) != 250 || all[249].N != 249 {
		t.Fatalf("QueryAll = %d rows (last %+v), %v; want 250 in order", len(all), all[len(all)-1], err)
	}
	scanned, err := store.ScanAll[row](ctx, s.Items, store.Scan{Table: tb, Limit: 40})
	if err != nil || len(scanned) != 250 {
		t.Fatalf("ScanAll = %d rows, %v; want 250", len(scanned), err)
	}
	var paid []int
	pages := 0
	err = store.QueryPaced(ctx, s.Items, store.Query{Table: tb, PK: "u1"}, func(_ context.Context, units int) error {
		paid = append(paid, units)
		return nil
	}, func(p store.Page) error {
		pages++
		if len(p.Items) > store.PacedPageItems {
			t.Errorf("a paced page held %d items", len(p.Items))
		}
		return nil
	})
	if err != nil || pages != 3 {
		t.Fatalf("QueryPaced = %d pages, %v; want 3 of at most %d", pages, err, store.PacedPageItems)
	}
	if len(paid) < 3 || paid[0] != 1 {
		t.Errorf("paid %v: want one unit ahead of the first page, then each page's cost", paid)
	}
}
