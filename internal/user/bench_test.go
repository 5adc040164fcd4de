package user_test

import (
	"context"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/user"
)

// BenchmarkActiveHit is the photo guard's read of a cached users row
// (Store.Active on a hit): a lock, a map lookup and a clock read, no
// allocation.
func BenchmarkActiveHit(b *testing.B) {
	env, tables := apptest.Local(b)
	s := user.NewStore(env.DynamoDB, tables.Users.Name, time.Now)
	ctx := context.Background()
	if err := s.Create(ctx, &user.User{ID: "u1", Email: "a@example.com", Role: user.RoleOwner}); err != nil {
		b.Fatal(err)
	}
	s.Active(ctx, "u1")
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := s.Active(ctx, "u1"); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
