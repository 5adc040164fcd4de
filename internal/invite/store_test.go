package invite_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/go-cmp/cmp"

	"ndiro/internal/apptest"
	"ndiro/internal/dynamo"
	"ndiro/internal/invite"
	"ndiro/internal/localenv"
	"ndiro/internal/store/cloud"
	"ndiro/internal/token"
	"ndiro/internal/user"
)

func newStore(t *testing.T) *invite.Store {
	t.Helper()
	env, tables := apptest.Local(t)
	return invite.NewStore(cloud.NewItems(env.DynamoDB), tables.Invites.Seam())
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
	s := invite.NewStore(cloud.NewItems(env.DynamoDB), tables.Invites.Seam())
	// The invite is written through a client without the barrier.
	inv, err := invite.NewStore(cloud.NewItems(localenv.NewDynamoClient(env.DynamoEndpoint)), tables.Invites.Seam()).Create(ctx, invite.Invite{
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
	s := invite.NewStore(cloud.NewItems(env.DynamoDB), tables.Invites.Seam())
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

// fixture creates invites on s at now.
type fixture struct {
	t   *testing.T
	s   *invite.Store
	now time.Time
}

func (f fixture) create(by string, inv invite.Invite) string {
	f.t.Helper()
	inv.Role, inv.CreatedBy = user.RoleOwner, by
	if inv.CreatedAt.IsZero() {
		inv.CreatedAt = f.now
	}
	if inv.ExpiresAt == 0 {
		inv.ExpiresAt = f.now.Add(24 * time.Hour).Unix()
	}
	got, err := f.s.Create(context.Background(), inv)
	if err != nil {
		f.t.Fatal(err)
	}
	return got.Token
}

func (f fixture) claim(tok, by string) {
	f.t.Helper()
	if _, err := f.s.Claim(context.Background(), tok, by, by+"@example.com", f.now); err != nil {
		f.t.Fatal(err)
	}
}

func TestCreateGetList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	faults := &apptest.Faults{}
	env, tables := apptest.Local(t, faults.DynamoOption())
	s := invite.NewStore(cloud.NewItems(env.DynamoDB), tables.Invites.Seam())
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	f := fixture{t, s, now}
	older := f.create("admin", invite.Invite{Email: "ana@example.com", CreatedAt: now.Add(-time.Hour)})
	newer := f.create("admin", invite.Invite{})
	got, err := s.Get(ctx, older)
	if err != nil {
		t.Fatal(err)
	}
	want := &invite.Invite{Token: older, Email: "ana@example.com", Role: user.RoleOwner, CreatedBy: "admin", CreatedAt: now.Add(-time.Hour), ExpiresAt: now.Add(24 * time.Hour).Unix()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Get after Create (-want +got):\n%s", diff)
	}
	if got.StateAt(now) != invite.StateOpen || !got.Expires().Equal(now.Add(24*time.Hour)) {
		t.Errorf("state %s, expires %v, want open until %v", got.StateAt(now), got.Expires(), now.Add(24*time.Hour))
	}
	all, err := s.List(ctx)
	if err != nil || len(all) != 2 || all[0].Token != newer || all[1].Token != older {
		t.Errorf("List = %d invites, %v, want the newer first", len(all), err)
	}
	if _, err := s.Get(ctx, "../x"); !errors.Is(err, invite.ErrNotFound) {
		t.Errorf("Get of a malformed token = %v, want ErrNotFound", err)
	}
	faults.FailOnce("PutItem", tables.Invites.Name, 0)
	if _, err := s.Create(ctx, invite.Invite{Role: user.RoleOwner}); !errors.Is(err, apptest.ErrInjected) {
		t.Errorf("Create with the write failing = %v, want its error", err)
	}
	faults.FailOnce("UpdateItem", tables.Invites.Name, 0)
	if _, err := s.Claim(ctx, newer, "u1", "u1@example.com", now); !errors.Is(err, apptest.ErrInjected) || invite.Refused(err) {
		t.Errorf("Claim with the write failing = %v, want its error, no refusal", err)
	}
	faults.FailOnce("UpdateItem", tables.Invites.Name, 0)
	if err := s.Revoke(ctx, newer, now); !errors.Is(err, apptest.ErrInjected) || invite.Refused(err) {
		t.Errorf("Revoke with the write failing = %v, want its error, no refusal", err)
	}
	faults.FailOnce("Scan", tables.Invites.Name, 0)
	if _, err := s.List(ctx); !errors.Is(err, apptest.ErrInjected) {
		t.Errorf("List with the scan failing = %v, want its error", err)
	}
	for _, err := range []error{invite.ErrNotFound, invite.ErrExpired, invite.ErrClaimed, invite.ErrRevoked, invite.ErrWrongEmail} {
		if !invite.Refused(fmt.Errorf("invite: claim: %w", err)) {
			t.Errorf("Refused(%v) = false", err)
		}
	}
	if invite.Refused(apptest.ErrInjected) || invite.Refused(nil) {
		t.Error("Refused of a failure or nil = true")
	}
}

// TestRefusalNamesTheState: a refused claim or revoke names what the
// invite is, from the item the refusal carries or a read of it; an item
// that does not decode is an error, not a sentinel.
func TestRefusalNamesTheState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, tables := apptest.Local(t)
	s := invite.NewStore(cloud.NewItems(env.DynamoDB), tables.Invites.Seam())
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	f := fixture{t, s, now}
	claimed := f.create("admin", invite.Invite{})
	f.claim(claimed, "u1")
	if err := s.Revoke(ctx, claimed, now); !errors.Is(err, invite.ErrClaimed) {
		t.Errorf("Revoke of a claimed invite = %v, want ErrClaimed", err)
	}
	if err := s.Revoke(ctx, token.New(), now); !errors.Is(err, invite.ErrNotFound) {
		t.Errorf("Revoke of no such invite = %v, want ErrNotFound", err)
	}
	if err := s.Revoke(ctx, "../x", now); !errors.Is(err, invite.ErrNotFound) {
		t.Errorf("Revoke of a malformed token = %v, want ErrNotFound", err)
	}
	// The claimer again, after the expiry: a no-op that succeeds.
	if inv, err := s.Claim(ctx, claimed, "u1", "u1@example.com", now.Add(48*time.Hour)); err != nil || inv.ClaimedBy != "u1" {
		t.Errorf("re-claim by the claimer after the expiry = %+v, %v, want it claimed by u1", inv, err)
	}
	broken := f.create("admin", invite.Invite{})
	_, err := env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(tables.Invites.Name),
		Key:                       map[string]types.AttributeValue{"invite_token": &types.AttributeValueMemberS{Value: broken}},
		UpdateExpression:          aws.String("SET expires_at = :x"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":x": &types.AttributeValueMemberBOOL{Value: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, broken, "u2", "u2@example.com", now); err == nil || invite.Refused(err) {
		t.Errorf("Claim refused over an invite that does not decode = %v, want a decode error, no sentinel", err)
	}
}

func TestFindClaimed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	f := fixture{t, s, now}
	for range 3 {
		f.create("admin", invite.Invite{})
	}
	mine := f.create("admin", invite.Invite{})
	f.claim(mine, "u1")
	f.claim(f.create("admin", invite.Invite{}), "u2")
	got, err := s.FindClaimed(ctx, "u1")
	if err != nil || got.Token != mine || got.ClaimedBy != "u1" {
		t.Errorf("FindClaimed(u1) = %+v, %v, want u1's invite", got, err)
	}
	for _, id := range []string{"u3", ""} {
		if _, err := s.FindClaimed(ctx, id); !errors.Is(err, invite.ErrNotFound) {
			t.Errorf("FindClaimed(%q) = %v, want ErrNotFound", id, err)
		}
	}
}

// claimBefore is a client option that, before the first DeleteItem of
// tok, claims tok for "c" through another client: the delete then meets
// an invite claimed a moment ago by someone else.
func claimBefore(tok *string, other func() *invite.Store, now time.Time) func(*dynamodb.Options) {
	var once sync.Once
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("claimBefore",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					if del, ok := in.Parameters.(*dynamodb.DeleteItemInput); ok {
						if k, _ := del.Key["invite_token"].(*types.AttributeValueMemberS); k != nil && k.Value == *tok {
							once.Do(func() {
								if _, err := other().Claim(ctx, *tok, "c", "c@example.com", now); err != nil {
									panic(err)
								}
							})
						}
					}
					return next.HandleInitialize(ctx, in)
				}), middleware.Before)
		})
	}
}

func TestDeleteFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	var raced string
	var env *localenv.Env
	var tables dynamo.Tables
	env, tables = apptest.Local(t, claimBefore(&raced, func() *invite.Store {
		return invite.NewStore(cloud.NewItems(localenv.NewDynamoClient(env.DynamoEndpoint)), tables.Invites.Seam())
	}, now))
	s := invite.NewStore(cloud.NewItems(env.DynamoDB), tables.Invites.Seam())
	f := fixture{t, s, now}
	open := f.create("a", invite.Invite{})
	expired := f.create("a", invite.Invite{ExpiresAt: now.Add(-time.Hour).Unix()})
	revoked := f.create("a", invite.Invite{})
	if err := s.Revoke(ctx, revoked, now); err != nil {
		t.Fatal(err)
	}
	othersSignUp := f.create("a", invite.Invite{})
	f.claim(othersSignUp, "b")
	ownSignUp := f.create("root", invite.Invite{})
	f.claim(ownSignUp, "a")
	notTheirs := f.create("root", invite.Invite{})
	raced = f.create("a", invite.Invite{}) // claimed by c as its delete is sent

	n, err := s.DeleteFor(ctx, "a")
	if err != nil || n != 4 {
		t.Fatalf("DeleteFor(a) = %d, %v, want 4", n, err)
	}
	for tok, kept := range map[string]bool{open: false, expired: false, revoked: false, ownSignUp: false, othersSignUp: true, notTheirs: true, raced: true} {
		_, err := s.Get(ctx, tok)
		if gone := errors.Is(err, invite.ErrNotFound); gone == kept {
			t.Errorf("invite %s after DeleteFor(a): gone %v, want kept %v", tok[:6], gone, kept)
		}
	}
	if inv, _ := s.Get(ctx, raced); inv == nil || inv.ClaimedBy != "c" {
		t.Errorf("the invite claimed during the deletion = %+v, want kept, claimed by c", inv)
	}
	if n, err := s.DeleteFor(ctx, "a"); err != nil || n != 0 {
		t.Errorf("DeleteFor(a) again = %d, %v, want 0", n, err)
	}
	if _, err := s.DeleteFor(ctx, ""); err == nil {
		t.Error("DeleteFor of an empty user ID = nil error")
	}
}

func TestDeleteForFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	faults := &apptest.Faults{}
	env, tables := apptest.Local(t, faults.DynamoOption())
	s := invite.NewStore(cloud.NewItems(env.DynamoDB), tables.Invites.Seam())
	f := fixture{t, s, time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)}
	f.create("a", invite.Invite{})
	f.create("a", invite.Invite{})
	faults.FailOnce("DeleteItem", tables.Invites.Name, 1)
	if n, err := s.DeleteFor(ctx, "a"); !errors.Is(err, apptest.ErrInjected) || n != 1 {
		t.Errorf("DeleteFor with the second delete failing = %d, %v, want 1 and the error", n, err)
	}
	faults.FailOnce("Scan", tables.Invites.Name, 0)
	if _, err := s.DeleteFor(ctx, "a"); !errors.Is(err, apptest.ErrInjected) {
		t.Errorf("DeleteFor with the scan failing = %v, want the error", err)
	}
	if n, err := s.DeleteFor(ctx, "a"); err != nil || n != 1 {
		t.Errorf("DeleteFor re-run = %d, %v, want the one left", n, err)
	}
}

func TestCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	f := fixture{t, s, now}
	for range 3 {
		f.create("admin", invite.Invite{})
	}
	f.claim(f.create("admin", invite.Invite{}), "u1")
	f.claim(f.create("admin", invite.Invite{ExpiresAt: now.Add(time.Minute).Unix()}), "u2") // claimed, then past expiry: still claimed
	if err := s.Revoke(ctx, f.create("admin", invite.Invite{}), now); err != nil {
		t.Fatal(err)
	}
	f.create("admin", invite.Invite{ExpiresAt: now.Add(-time.Second).Unix()})
	f.create("admin", invite.Invite{ExpiresAt: now.Add(time.Hour).Unix()}) // expired by the count's time
	later := now.Add(2 * time.Hour)
	got, err := s.Count(ctx, func(context.Context, int) error { return nil }, later)
	if want := (invite.Counts{Open: 3, Claimed: 2, Revoked: 1, Expired: 2}); err != nil || got != want {
		t.Errorf("Count = %+v, %v, want %+v", got, err, want)
	}
	stop := errors.New("stop")
	if _, err := s.Count(ctx, func(context.Context, int) error { return stop }, later); !errors.Is(err, stop) {
		t.Errorf("Count with the pacer refusing = %v, want its error", err)
	}
}
