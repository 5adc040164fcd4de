package disk

import (
	"path/filepath"
	"testing"

	"ndiro/internal/store"
	"ndiro/internal/store/storetest"
)

func TestItemsConformance(t *testing.T) {
	storetest.RunItems(t, "", nil, func(t *testing.T, _ storetest.Tables) store.Items {
		db, err := OpenItems(filepath.Join(t.TempDir(), DBFile))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestBlobsConformance(t *testing.T) {
	storetest.RunBlobs(t, func(t *testing.T) store.Blobs {
		dir := t.TempDir()
		db, err := OpenItems(filepath.Join(dir, DBFile))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		b, err := OpenBlobs(filepath.Join(dir, "blobs"), db, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}
