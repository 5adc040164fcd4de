package user_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/apptest"
	"ndiro/internal/user"
)

// ownerItem reads the email item of email straight from the table: its
// marked_user_id, and whether it exists.
func (w *storeWorld) ownerItem(t *testing.T, email string) (string, bool) {
	t.Helper()
	out, err := w.env.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(w.table),
		Key:            map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: user.OwnerEmailPrefix + email}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Item == nil {
		return "", false
	}
	v, _ := out.Item["marked_user_id"].(*types.AttributeValueMemberS)
	if v == nil {
		t.Fatalf("email item of %s has no marked_user_id: %v", email, out.Item)
	}
	return v.Value, true
}

func TestMarkAwaitingOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newStore(t)
	// An account whose email has capitals: the item's key is lower-cased.
	if err := w.s.Create(ctx, &user.User{ID: "local-ana", Email: "Ana.Lima@Example.com", Role: user.RoleOwner, Status: user.StatusActive}); err != nil {
		t.Fatal(err)
	}
	w.create(t, "other")
	if _, err := w.s.FindAwaitingOwner(ctx, "ana.lima@example.com"); !errors.Is(err, user.ErrNotFound) {
		t.Fatalf("FindAwaitingOwner before the mark = %v, want ErrNotFound: an unmarked account is never matched by email", err)
	}
	marked := w.clock.Now()
	if err := w.s.MarkAwaitingOwner(ctx, "local-ana", marked); err != nil {
		t.Fatal(err)
	}
	if id, ok := w.ownerItem(t, "ana.lima@example.com"); !ok || id != "local-ana" {
		t.Errorf("email item = %q, %v, want it to name local-ana", id, ok)
	}
	for _, email := range []string{"ana.lima@example.com", "ANA.LIMA@EXAMPLE.COM", "Ana.Lima@Example.com"} {
		got, err := w.s.FindAwaitingOwner(ctx, email)
		if err != nil || got.ID != "local-ana" || got.AwaitingOwner == nil || !got.AwaitingOwner.Equal(marked) {
			t.Errorf("FindAwaitingOwner(%q) = %+v, %v, want local-ana marked at %v", email, got, err, marked)
		}
	}
	if _, err := w.s.FindAwaitingOwner(ctx, "other@example.com"); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("FindAwaitingOwner of an unmarked account's email = %v, want ErrNotFound", err)
	}
	if _, err := w.s.FindAwaitingOwner(ctx, ""); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("FindAwaitingOwner(\"\") = %v, want ErrNotFound", err)
	}
	// A second mark keeps the first time.
	w.clock.Advance(time.Hour)
	if err := w.s.MarkAwaitingOwner(ctx, "local-ana", w.clock.Now()); err != nil {
		t.Fatal(err)
	}
	got, err := w.s.Get(ctx, "local-ana")
	if err != nil || got.AwaitingOwner == nil || !got.AwaitingOwner.Equal(marked) {
		t.Errorf("after a second mark awaiting_owner = %v, %v, want the first mark's %v", got.AwaitingOwner, err, marked)
	}
	list, err := w.s.ListAwaitingOwner(ctx)
	if err != nil || len(list) != 1 || list[0].ID != "local-ana" {
		t.Errorf("ListAwaitingOwner = %v, %v, want local-ana only", list, err)
	}

	// Clear: the row's mark and the item go; clearing again is no error.
	if err := w.s.ClearAwaitingOwner(ctx, "local-ana"); err != nil {
		t.Fatal(err)
	}
	if err := w.s.ClearAwaitingOwner(ctx, "local-ana"); err != nil {
		t.Errorf("a second clear = %v, want nil", err)
	}
	if err := w.s.ClearAwaitingOwner(ctx, "nobody"); err != nil {
		t.Errorf("clear of no such row = %v, want nil", err)
	}
	if _, ok := w.ownerItem(t, "ana.lima@example.com"); ok {
		t.Error("the email item is still there after the clear")
	}
	if got, err := w.s.Get(ctx, "local-ana"); err != nil || got.AwaitingOwner != nil {
		t.Errorf("after the clear awaiting_owner = %v, %v, want none", got.AwaitingOwner, err)
	}
	if _, err := w.s.FindAwaitingOwner(ctx, "ana.lima@example.com"); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("FindAwaitingOwner after the clear = %v, want ErrNotFound", err)
	}
	if list, err := w.s.ListAwaitingOwner(ctx); err != nil || len(list) != 0 {
		t.Errorf("ListAwaitingOwner after the clear = %v, %v, want none", list, err)
	}
	// Marked again after a clear: a new time.
	w.clock.Advance(time.Hour)
	if err := w.s.MarkAwaitingOwner(ctx, "local-ana", w.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if got, err := w.s.FindAwaitingOwner(ctx, "ana.lima@example.com"); err != nil || !got.AwaitingOwner.Equal(w.clock.Now()) {
		t.Errorf("marked again = %+v, %v, want marked at %v", got, err, w.clock.Now())
	}
}

func TestMarkRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newStore(t)
	now := w.clock.Now()
	if err := w.s.MarkAwaitingOwner(ctx, "nobody", now); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("mark of no such row = %v, want ErrNotFound", err)
	}
	if err := w.s.MarkAwaitingOwner(ctx, user.LeaseKey, now); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("mark of a reserved key = %v, want ErrNotFound", err)
	}
	w.create(t, "off")
	if err := w.s.SetDisabled(ctx, "off", true); err != nil {
		t.Fatal(err)
	}
	if err := w.s.MarkAwaitingOwner(ctx, "off", now); !errors.Is(err, user.ErrState) {
		t.Errorf("mark of a disabled account = %v, want ErrState", err)
	}
	w.create(t, "gone")
	if _, err := w.s.MarkDeleting(ctx, "gone", "photos", now); err != nil {
		t.Fatal(err)
	}
	if err := w.s.MarkAwaitingOwner(ctx, "gone", now); !errors.Is(err, user.ErrState) {
		t.Errorf("mark of an account being deleted = %v, want ErrState", err)
	}
	for _, email := range []string{"off@example.com", "gone@example.com"} {
		if _, ok := w.ownerItem(t, email); ok {
			t.Errorf("a refused mark left the email item of %s", email)
		}
	}
	if err := w.s.Create(ctx, &user.User{ID: "noemail", Role: user.RoleOwner, Status: user.StatusActive}); err != nil {
		t.Fatal(err)
	}
	if err := w.s.MarkAwaitingOwner(ctx, "noemail", now); err == nil {
		t.Error("mark of an account with no email = nil, want an error")
	}
}

// TestTwoMarksOneEmail: two accounts with one email (in two cases) cannot
// both wait for their owner; the first keeps its mark.
func TestTwoMarksOneEmail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newStore(t)
	for id, email := range map[string]string{"a": "bo@example.com", "b": "BO@example.com"} {
		if err := w.s.Create(ctx, &user.User{ID: id, Email: email, Role: user.RoleOwner, Status: user.StatusActive}); err != nil {
			t.Fatal(err)
		}
	}
	now := w.clock.Now()
	if err := w.s.MarkAwaitingOwner(ctx, "a", now); err != nil {
		t.Fatal(err)
	}
	if err := w.s.MarkAwaitingOwner(ctx, "b", now); !errors.Is(err, user.ErrEmailTaken) {
		t.Fatalf("second mark of one email = %v, want ErrEmailTaken", err)
	}
	if got, _ := w.s.Get(ctx, "b"); got.AwaitingOwner != nil {
		t.Error("the refused account was marked")
	}
	if got, err := w.s.FindAwaitingOwner(ctx, "bo@example.com"); err != nil || got.ID != "a" {
		t.Errorf("FindAwaitingOwner = %+v, %v, want a", got, err)
	}
	// Once a's mark is cleared, b can be marked.
	if err := w.s.ClearAwaitingOwner(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := w.s.MarkAwaitingOwner(ctx, "b", now); err != nil {
		t.Fatalf("mark after the other's clear = %v", err)
	}
	if got, err := w.s.FindAwaitingOwner(ctx, "bo@example.com"); err != nil || got.ID != "b" {
		t.Errorf("FindAwaitingOwner = %+v, %v, want b", got, err)
	}
}

// TestMarkInterrupted: a mark stopped between its two writes leaves an
// email item naming an unmarked row. That item matches nothing, and the
// next mark of the email (by another account) takes it over.
func TestMarkInterrupted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newStore(t)
	for id, email := range map[string]string{"a": "cy@example.com", "b": "cy@example.com"} {
		if err := w.s.Create(ctx, &user.User{ID: id, Email: email, Role: user.RoleOwner, Status: user.StatusActive}); err != nil {
			t.Fatal(err)
		}
	}
	// The row's write fails, and so does taking the item back.
	w.faults.FailOnce("UpdateItem", w.table, 0)
	w.faults.FailOnce("DeleteItem", w.table, 0)
	if err := w.s.MarkAwaitingOwner(ctx, "a", w.clock.Now()); !errors.Is(err, apptest.ErrInjected) {
		t.Fatalf("mark with the row's write failing = %v, want its error", err)
	}
	if id, ok := w.ownerItem(t, "cy@example.com"); !ok || id != "a" {
		t.Fatalf("email item = %q, %v: the test needs the interrupted mark's item", id, ok)
	}
	if _, err := w.s.FindAwaitingOwner(ctx, "cy@example.com"); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("FindAwaitingOwner of a half-written mark = %v, want ErrNotFound (a is not marked)", err)
	}
	if err := w.s.MarkAwaitingOwner(ctx, "b", w.clock.Now()); err != nil {
		t.Fatalf("mark of b over a's leftover item = %v", err)
	}
	if got, err := w.s.FindAwaitingOwner(ctx, "cy@example.com"); err != nil || got.ID != "b" {
		t.Errorf("FindAwaitingOwner = %+v, %v, want b", got, err)
	}
	// A refused mark that wrote the item takes it back.
	if err := w.s.Create(ctx, &user.User{ID: "c", Email: "dee@example.com", Role: user.RoleOwner, Status: user.StatusActive}); err != nil {
		t.Fatal(err)
	}
	w.faults.FailOnce("UpdateItem", w.table, 0)
	if err := w.s.MarkAwaitingOwner(ctx, "c", w.clock.Now()); !errors.Is(err, apptest.ErrInjected) {
		t.Fatalf("mark with the row's write failing = %v, want its error", err)
	}
	if _, ok := w.ownerItem(t, "dee@example.com"); ok {
		t.Error("a failed mark left its email item")
	}
	// A deleted marked account's leftover item is taken over too.
	if err := w.s.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := w.s.MarkAwaitingOwner(ctx, "a", w.clock.Now()); err != nil {
		t.Fatalf("mark of a over deleted b's item = %v", err)
	}
}

// TestMarkItemIsNoUser: the email item is left out of every list, count
// and the orphan check's IDs.
func TestMarkItemIsNoUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newStore(t)
	w.create(t, "a")
	w.create(t, "b")
	if err := w.s.MarkAwaitingOwner(ctx, "a", w.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.ownerItem(t, "a@example.com"); !ok {
		t.Fatal("no email item: the test checks nothing")
	}
	all, err := w.s.List(ctx)
	if err != nil || len(all) != 2 {
		t.Errorf("List = %v, %v, want a and b only", all, err)
	}
	pace := func(context.Context, int) error { return nil }
	ids, err := w.s.IDs(ctx, pace)
	if err != nil || len(ids) != 2 || !ids["a"] || !ids["b"] {
		t.Errorf("IDs = %v, %v, want a and b only", ids, err)
	}
	if c, err := w.s.Count(ctx, pace); err != nil || c.Total != 2 {
		t.Errorf("Count = %+v, %v, want 2 users", c, err)
	}
	if d, err := w.s.ListDeleting(ctx); err != nil || len(d) != 0 {
		t.Errorf("ListDeleting = %v, %v, want none", d, err)
	}
}
