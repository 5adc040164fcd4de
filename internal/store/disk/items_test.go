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
