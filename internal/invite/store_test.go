package invite_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/invite"
	"ndiro/internal/user"
)

func newStore(t *testing.T) *invite.Store {
	t.Helper()
	env, tables := apptest.Local(t)
	return invite.NewStore(env.DynamoDB, tables.Invites.Name)
}

func TestClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	create := func(inv invite.Invite) string {
		t.Helper()
		inv.Role, inv.CreatedBy, inv.CreatedAt = user.RoleOwner, "admin", now
		if inv.ExpiresAt == 0 {
			inv.ExpiresAt = now.Add(24 * time.Hour).Unix()
		}
		got, err := s.Create(ctx, inv)
		if err != nil {
			t.Fatal(err)
		}
		return got.Token
	}

	open := create(invite.Invite{})
	inv, err := s.Claim(ctx, open, "u1", "a@example.com", now)
	if err != nil {
		t.Fatalf("first claim: %v", err)
	}
	if inv.ClaimedBy != "u1" || inv.ClaimedAt == nil || !inv.ClaimedAt.Equal(now) {
		t.Errorf("claimed invite = %+v, want claimed by u1 at %v", inv, now)
	}
	// The same person again (a retried sign-up) is a no-op.
	again, err := s.Claim(ctx, open, "u1", "a@example.com", now.Add(time.Minute))
	if err != nil {
		t.Fatalf("re-claim by the same user: %v", err)
	}
	if again.ClaimedAt == nil || !again.ClaimedAt.Equal(now) {
		t.Errorf("re-claim moved claimed_at to %v, want %v", again.ClaimedAt, now)
	}

	expired := create(invite.Invite{ExpiresAt: now.Add(-time.Second).Unix()})
	revoked := create(invite.Invite{})
	if err := s.Revoke(ctx, revoked, now); err != nil {
		t.Fatal(err)
	}
	forBob := create(invite.Invite{Email: "bob@example.com"})

	for _, tc := range []struct {
		name, tok, uid, email string
		want                  error
	}{
		{"claimed by another", open, "u2", "b@example.com", invite.ErrClaimed},
		{"expired", expired, "u2", "b@example.com", invite.ErrExpired},
		{"revoked", revoked, "u2", "b@example.com", invite.ErrRevoked},
		{"unknown", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "u2", "b@example.com", invite.ErrNotFound},
		{"malformed", "../x", "u2", "b@example.com", invite.ErrNotFound},
		{"wrong email", forBob, "u2", "eve@example.com", invite.ErrWrongEmail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Claim(ctx, tc.tok, tc.uid, tc.email, now)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Claim = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := s.Claim(ctx, forBob, "u3", "bob@example.com", now); err != nil {
		t.Errorf("claim by the invited email: %v", err)
	}
	if err := s.Revoke(ctx, open, now); !errors.Is(err, invite.ErrClaimed) {
		t.Errorf("Revoke(claimed) = %v, want ErrClaimed", err)
	}
}
