package user_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/user"
)

// BenchmarkFindAccountHit is the photo guard's lookup of a signed-in
// session whose token and users row are cached (Sessions.FindAccount on
// a hit): one clock reading, two cache lookups under their locks, no
// allocation.
func BenchmarkFindAccountHit(b *testing.B) {
	env, tables := apptest.Local(b)
	s := user.NewStore(env.DynamoDB, tables.Users.Name, time.Now)
	ctx := context.Background()
	if err := s.Create(ctx, &user.User{ID: "u1", Email: "a@example.com", Role: user.RoleOwner, Status: user.StatusActive}); err != nil {
		b.Fatal(err)
	}
	ss := user.NewSessions(s, user.SessionDeps{UserIDOf: testUserID, Log: slog.New(slog.DiscardHandler)})
	signIn := user.SignIn(ctx, user.Device{Browser: "Firefox", Platform: "Windows"})
	if err := ss.CommitCtx(signIn, "tok", testData("u1"), time.Now().Add(time.Hour)); err != nil {
		b.Fatal(err)
	}
	ss.FindAccount(ctx, "tok")
	b.ReportAllocs()
	for b.Loop() {
		if _, acct, found, err := ss.FindAccount(ctx, "tok"); !found || !acct.Active || err != nil {
			b.Fatal(acct, found, err)
		}
	}
}
