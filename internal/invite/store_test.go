package invite_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"ndiro/internal/apptest"
	"ndiro/internal/invite"
	"ndiro/internal/localenv"
	"ndiro/internal/token"
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

// writeBarrier is a DynamoDB client option that holds every write
// (UpdateItem, PutItem, DeleteItem) until n writes are waiting, then lets
// them all go at once. Racing claimants then read before any of them
// writes, every run: a read-then-write claim would let each of them win.
func writeBarrier(n int) func(*dynamodb.Options) {
	var mu sync.Mutex
	waiting := 0
	release := make(chan struct{})
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("writeBarrier",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					switch awsmiddleware.GetOperationName(ctx) {
					case "UpdateItem", "PutItem", "DeleteItem":
						mu.Lock()
						waiting++
						if waiting == n {
							close(release)
						}
						mu.Unlock()
						select {
						case <-release:
						case <-time.After(10 * time.Second): // fewer writers than expected: do not hang
						}
					}
					return next.HandleFinalize(ctx, in)
				}), middleware.Before)
		})
	}
}

// TestClaimRace races claimants whose writes are held at a barrier until
// all have read: exactly one may win, the others get ErrClaimed.
func TestClaimRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 5
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	env, tables := apptest.Local(t, writeBarrier(n))
	s := invite.NewStore(env.DynamoDB, tables.Invites.Name)
	// The invite is written through a client without the barrier.
	inv, err := invite.NewStore(localenv.NewDynamoClient(env.DynamoEndpoint), tables.Invites.Name).Create(ctx, invite.Invite{
		Role: user.RoleOwner, CreatedBy: "admin", CreatedAt: now, ExpiresAt: now.Add(time.Hour).Unix(),
	})
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Claim(ctx, inv.Token, fmt.Sprintf("u%d", i), fmt.Sprintf("u%d@example.com", i), now)
		}()
	}
	wg.Wait()
	wins := 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, invite.ErrClaimed):
			t.Errorf("claimant %d: %v, want nil or ErrClaimed", i, err)
		}
	}
	if wins != 1 {
		t.Errorf("%d of %d racing claimants won, want exactly 1", wins, n)
	}
}

// TestRefusalReadFails: when a refused write has to read the invite to say
// why and that read fails, the read's error comes back, not a sentinel that
// would tell the caller something untrue.
func TestRefusalReadFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	faults := &apptest.Faults{}
	env, tables := apptest.Local(t, faults.DynamoOption())
	s := invite.NewStore(env.DynamoDB, tables.Invites.Name)
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	missing := token.New() // no such invite: the refusal carries no item
	faults.Fail("GetItem", tables.Invites.Name, 0)
	sentinels := []error{invite.ErrNotFound, invite.ErrClaimed, invite.ErrRevoked, invite.ErrExpired, invite.ErrWrongEmail}
	for name, err := range map[string]error{
		"Claim":  func() error { _, err := s.Claim(ctx, missing, "u1", "a@example.com", now); return err }(),
		"Revoke": s.Revoke(ctx, missing, now),
	} {
		if !errors.Is(err, apptest.ErrInjected) {
			t.Errorf("%s with the read failing = %v, want the read's error", name, err)
		}
		for _, se := range sentinels {
			if errors.Is(err, se) {
				t.Errorf("%s with the read failing = %v, a sentinel", name, err)
			}
		}
	}
	faults.Clear()
	if _, err := s.Claim(ctx, missing, "u1", "a@example.com", now); !errors.Is(err, invite.ErrNotFound) {
		t.Errorf("Claim of no such invite = %v, want ErrNotFound", err)
	}
	if err := s.Revoke(ctx, missing, now); !errors.Is(err, invite.ErrNotFound) {
		t.Errorf("Revoke of no such invite = %v, want ErrNotFound", err)
	}
}
