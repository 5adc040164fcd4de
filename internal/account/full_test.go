package account_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ndiro/internal/account"
)

// TestDeletionWaitsOutAFullDisk refuses the meals step's second batch as
// a full disk does, many more times than a run has attempts: the run
// neither gives up nor records a failure, the row staying at the step it
// reached; once writes are taken again it finishes by itself.
func TestDeletionWaitsOutAFullDisk(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.faults.DiskFull("BatchWriteItem", w.app.Tables.Meals.Name, 1)
	resp := w.victim.PostForm("/account/delete", map[string][]string{"email": {victimEmail}})
	if resp.StatusCode != 303 {
		t.Fatalf("POST /account/delete = %d", resp.StatusCode)
	}
	// The two attempts a run has (SetRetry in newWorld), and four more.
	refused := func() int { return w.faults.Acted("BatchWriteItem", w.app.Tables.Meals.Name) }
	for deadline := time.Now().Add(30 * time.Second); refused() < 6; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: %d batches refused, want 6", refused())
		}
		if !w.app.Deletions.Running(w.id) {
			t.Fatalf("the run ended after %d batches refused, while storage refused writes", refused())
		}
	}
	u, err := w.app.Users.Get(context.Background(), w.id)
	if err != nil {
		t.Fatal(err)
	}
	if u.DeletionStep != string(account.StepMeals) || u.DeletionError != "" {
		t.Errorf("users row while the disk is full: step %q, error %q; want %s with no error", u.DeletionStep, u.DeletionError, account.StepMeals)
	}
	w.faults.Clear()
	w.wait(t)
	if d := cmp.Diff(map[string]int{"meals": 0, "objects": 0, "shares": 0, "invites": 0}, w.holdings(t, w.id)); d != "" {
		t.Errorf("after the disk has room (-want +got):\n%s", d)
	}
}
