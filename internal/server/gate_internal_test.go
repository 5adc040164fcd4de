package server

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"ndiro/internal/lease"
	"ndiro/internal/storage"
)

// noStore is a lease store that was never written: a lease on it holds
// nothing.
type noStore struct{}

func (noStore) Read(context.Context) (lease.Record, bool, error) { return lease.Record{}, false, nil }
func (noStore) Write(context.Context, lease.Record, int64) error { return nil }
func (noStore) Delete(context.Context, int64, string) error      { return nil }

// TestWriteHealthJoinsStorageAndLease: unsafe requests are refused while
// local storage refuses writes or the writer lease is not held (AWS mode
// has the lease only, local mode local storage only), and /readyz checks
// each only where there is one.
func TestWriteHealthJoinsStorageAndLease(t *testing.T) {
	l, err := lease.New(noStore{}, lease.Options{TTL: time.Minute, Renew: 10 * time.Second, Guard: 20 * time.Second, Holder: "test"})
	if err != nil {
		t.Fatal(err)
	}
	full := func() error { return storage.ErrFull }
	for _, tc := range []struct {
		name   string
		b      Backends
		want   error
		checks []string
	}{
		{"aws: lease not held", Backends{Lease: l}, storage.ErrNotWriter, []string{"lease"}},
		{"local: disk full", Backends{WriteHealth: full}, storage.ErrFull, []string{"local storage"}},
		{"both", Backends{WriteHealth: full, Lease: l}, storage.ErrFull, []string{"local storage", "lease"}},
	} {
		err := tc.b.writeHealth()()
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: writeHealth() = %v, want %v", tc.name, err, tc.want)
		}
		var names []string
		for _, c := range tc.b.readinessLocals() {
			names = append(names, c.Name)
		}
		if !slices.Equal(names, tc.checks) {
			t.Errorf("%s: readiness checks %q, want %q", tc.name, names, tc.checks)
		}
	}
	if (Backends{}).writeHealth() != nil || len((Backends{}).readinessLocals()) != 0 {
		t.Error("without local storage or a lease, writes must not be gated nor checked")
	}
}
