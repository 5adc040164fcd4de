package localenv

import (
	"fmt"
	"net/http"
	"os"
	"testing"
)

// BenchmarkPersister measures what the persister adds to a conditional
// put and a read, in the process (no SDK, no network) and with the fsync
// a no-op, so that the figure is its own work: reading the before-images,
// queueing the after-images, waiting for durability. "emulator" sends the
// same requests straight to the emulator.
func BenchmarkPersister(b *testing.B) {
	env := startDir(b, b.TempDir(), func(o *Options) { o.syncFile = func(*os.File) error { return nil } })
	seq := 0
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{{"emulator", env.persist.emu}, {"persister", env.persist}} {
		b.Run(tc.name+"/put", func(b *testing.B) {
			for b.Loop() {
				seq++
				item := map[string]any{"user_id": map[string]string{"S": "u1"}, "sk": map[string]string{"S": fmt.Sprintf("2026-09-01#%08d", seq)},
					"notes": map[string]string{"S": "lentil soup"}, "kcal": map[string]string{"N": "512.5"}}
				if err := call(tc.h, "PutItem", map[string]any{"TableName": testTables.Meals.Name, "Item": item, "ConditionExpression": "attribute_not_exists(sk)"}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/get", func(b *testing.B) {
			key := map[string]any{"user_id": map[string]string{"S": "u1"}, "sk": map[string]string{"S": "2026-09-01#00000001"}}
			for b.Loop() {
				if err := call(tc.h, "GetItem", map[string]any{"TableName": testTables.Meals.Name, "Key": key}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
