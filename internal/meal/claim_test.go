package meal_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"ndiro/internal/meal"
)

// TestClaimStore: of attempts claiming one key at once, exactly one wins
// and the others get its claim; of attempts taking over a stale claim at
// once, likewise; a finished claim is not released, and a released one
// can be claimed again.
func TestClaimStore(t *testing.T) {
	t.Parallel()
	s, _, _ := newStore(t)
	ctx := context.Background()
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	const key = "store-key-0123456789"

	race := func(try func(c *meal.Claim) (*meal.Claim, error)) (winners []*meal.Claim, others []*meal.Claim) {
		const n = 8
		var (
			mu sync.Mutex
			wg sync.WaitGroup
		)
		start := make(chan struct{})
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := meal.NewClaim("u1", key, "2026-09-01#120000-aaaaaa", "", now)
				<-start
				other, err := try(c)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					winners = append(winners, c)
				case errors.Is(err, meal.ErrClaimed):
					others = append(others, other)
				default:
					t.Errorf("claim: %v", err)
				}
			}()
		}
		close(start)
		wg.Wait()
		return winners, others
	}

	winners, others := race(func(c *meal.Claim) (*meal.Claim, error) { return s.Claim(ctx, c) })
	if len(winners) != 1 || len(others) != 7 {
		t.Fatalf("concurrent claims: %d won, %d refused; want 1 and 7", len(winners), len(others))
	}
	for _, o := range others {
		if o == nil || o.Holder != winners[0].Holder {
			t.Errorf("refused claim saw %+v, want the winner's holder %s", o, winners[0].Holder)
		}
	}
	first := winners[0]
	if first.Stale(now.Add(meal.ClaimLease)) || !first.Stale(now.Add(meal.ClaimLease+time.Second)) {
		t.Errorf("Stale at the lease / past it = %v / %v, want false / true",
			first.Stale(now.Add(meal.ClaimLease)), first.Stale(now.Add(meal.ClaimLease+time.Second)))
	}

	winners, others = race(func(c *meal.Claim) (*meal.Claim, error) { return s.TakeOver(ctx, first, c) })
	if len(winners) != 1 || len(others) != 7 {
		t.Fatalf("concurrent take-overs: %d won, %d refused; want 1 and 7", len(winners), len(others))
	}
	second := winners[0]
	// The first holder can neither finish nor release what it lost.
	if err := s.ReleaseClaim(ctx, first); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetClaim(ctx, "u1", key); err != nil || got.Holder != second.Holder {
		t.Fatalf("after the old holder's release: %+v, %v; want the new holder's claim", got, err)
	}
	if err := s.FinishClaim(ctx, second); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseClaim(ctx, second); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetClaim(ctx, "u1", key)
	if err != nil || !got.Done || got.ExpiresAt != now.Add(meal.ClaimTTL).Unix() {
		t.Fatalf("finished claim = %+v, %v: want done, kept, expiring after ClaimTTL", got, err)
	}
	if got.Stale(now.Add(time.Hour)) {
		t.Error("a done claim is stale; want never")
	}

	// Released before its meal: claimable again.
	other := meal.NewClaim("u1", "another-key-0123456789", "2026-09-01#120000-bbbbbb", "", now)
	if _, err := s.Claim(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseClaim(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetClaim(ctx, "u1", "another-key-0123456789"); !errors.Is(err, meal.ErrNotFound) {
		t.Errorf("released claim: %v, want ErrNotFound", err)
	}
	if _, err := s.Claim(ctx, meal.NewClaim("u1", "another-key-0123456789", "2026-09-01#120000-cccccc", "", now)); err != nil {
		t.Errorf("claim after release: %v", err)
	}
}
