package lease_test

import (
	"errors"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/lease"
	"ndiro/internal/user"
)

// TestDynamo: the lease item's conditional writes against the users
// table (minidyn, or dynalite in CI): the first write needs no item, the
// next the counter it read; a refused write reports the item as stored;
// Delete removes only the item it names.
func TestDynamo(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env, tables := apptest.Local(t)
	s := lease.Dynamo{DB: env.DynamoDB, Table: tables.Users.Name, PK: "user_id", Key: user.LeaseKey}
	if _, found, err := s.Read(ctx); err != nil || found {
		t.Fatalf("Read of no item = found %v, %v", found, err)
	}
	until := time.Date(2026, 9, 1, 12, 0, 30, 0, time.UTC)
	rec := lease.Record{Holder: "web-1 pid 42", Instance: "i1", Counter: 1, Until: until, TTL: 30 * time.Second}
	if err := s.Write(ctx, rec, 0); err != nil {
		t.Fatal(err)
	}
	other := lease.Record{Holder: "web-2 pid 7", Instance: "i2", Counter: 1, Until: until, TTL: time.Minute}
	var conflict *lease.ConflictError
	if err := s.Write(ctx, other, 0); !errors.As(err, &conflict) || !conflict.Found || conflict.Current != rec {
		t.Fatalf("second first write = %v, want a conflict carrying %+v", err, rec)
	}
	rec.Counter = 2
	if err := s.Write(ctx, rec, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, other, 1); !errors.As(err, &conflict) || conflict.Current.Counter != 2 {
		t.Fatalf("write at a stale counter = %v, want a conflict at counter 2", err)
	}
	if got, found, err := s.Read(ctx); err != nil || !found || got != rec {
		t.Fatalf("Read = %+v, %v, %v; want %+v", got, found, err, rec)
	}
	if err := s.Delete(ctx, 2, "i2"); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := s.Read(ctx); !found {
		t.Fatal("Delete of another instance's item removed it")
	}
	if err := s.Delete(ctx, 2, "i1"); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := s.Read(ctx); found {
		t.Fatal("Delete of the holder's item left it")
	}
	if err := s.Write(ctx, other, 2); !errors.As(err, &conflict) || conflict.Found {
		t.Fatalf("write on no item = %v, want a conflict without an item", err)
	}
	// The lease item is no user: lists and counts leave it out.
	if err := s.Write(ctx, rec, 0); err != nil {
		t.Fatal(err)
	}
	users := user.NewStore(env.DynamoDB, tables.Users.Name, time.Now)
	if list, err := users.List(ctx); err != nil || len(list) != 0 {
		t.Errorf("users.List with the lease item = %d users, %v; want none", len(list), err)
	}
}
