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
	if err := w.s.MarkAwaitingOwner(ctx, "local-ana", marked, apptest.AdminMark(marked)); err != nil {
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
	if err := w.s.MarkAwaitingOwner(ctx, "local-ana", w.clock.Now(), apptest.AdminMark(w.clock.Now())); err != nil {
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
	if err := w.s.MarkAwaitingOwner(ctx, "local-ana", w.clock.Now(), apptest.AdminMark(w.clock.Now())); err != nil {
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
	if err := w.s.MarkAwaitingOwner(ctx, "nobody", now, apptest.AdminMark(now)); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("mark of no such row = %v, want ErrNotFound", err)
	}
	if err := w.s.MarkAwaitingOwner(ctx, user.LeaseKey, now, apptest.AdminMark(now)); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("mark of a reserved key = %v, want ErrNotFound", err)
	}
	w.create(t, "off")
	if err := w.s.SetDisabled(ctx, "off", true); err != nil {
		t.Fatal(err)
	}
	if err := w.s.MarkAwaitingOwner(ctx, "off", now, apptest.AdminMark(now)); !errors.Is(err, user.ErrState) {
		t.Errorf("mark of a disabled account = %v, want ErrState", err)
	}
	w.create(t, "gone")
	if _, err := w.s.MarkDeleting(ctx, "gone", "photos", now); err != nil {
		t.Fatal(err)
	}
	if err := w.s.MarkAwaitingOwner(ctx, "gone", now, apptest.AdminMark(now)); !errors.Is(err, user.ErrState) {
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
	if err := w.s.MarkAwaitingOwner(ctx, "noemail", now, apptest.AdminMark(now)); err == nil {
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
	if err := w.s.MarkAwaitingOwner(ctx, "a", now, apptest.AdminMark(now)); err != nil {
		t.Fatal(err)
	}
	if err := w.s.MarkAwaitingOwner(ctx, "b", now, apptest.AdminMark(now)); !errors.Is(err, user.ErrEmailTaken) {
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
	if err := w.s.MarkAwaitingOwner(ctx, "b", now, apptest.AdminMark(now)); err != nil {
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
	if err := w.s.MarkAwaitingOwner(ctx, "a", w.clock.Now(), apptest.AdminMark(w.clock.Now())); !errors.Is(err, apptest.ErrInjected) {
		t.Fatalf("mark with the row's write failing = %v, want its error", err)
	}
	if id, ok := w.ownerItem(t, "cy@example.com"); !ok || id != "a" {
		t.Fatalf("email item = %q, %v: the test needs the interrupted mark's item", id, ok)
	}
	if _, err := w.s.FindAwaitingOwner(ctx, "cy@example.com"); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("FindAwaitingOwner of a half-written mark = %v, want ErrNotFound (a is not marked)", err)
	}
	if err := w.s.MarkAwaitingOwner(ctx, "b", w.clock.Now(), apptest.AdminMark(w.clock.Now())); err != nil {
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
	if err := w.s.MarkAwaitingOwner(ctx, "c", w.clock.Now(), apptest.AdminMark(w.clock.Now())); !errors.Is(err, apptest.ErrInjected) {
		t.Fatalf("mark with the row's write failing = %v, want its error", err)
	}
	if _, ok := w.ownerItem(t, "dee@example.com"); ok {
		t.Error("a failed mark left its email item")
	}
	// A deleted marked account's leftover item is taken over too.
	if err := w.s.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := w.s.MarkAwaitingOwner(ctx, "a", w.clock.Now(), apptest.AdminMark(w.clock.Now())); err != nil {
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
	if err := w.s.MarkAwaitingOwner(ctx, "a", w.clock.Now(), apptest.AdminMark(w.clock.Now())); err != nil {
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

// legacyMark marks id as a mark made before marks recorded who made
// them, until when and for which issuer: awaiting_owner and the email
// item only, written around the store (the clock then moves on by
// CacheTTL).
func (w *storeWorld) legacyMark(t *testing.T, id, email string) {
	t.Helper()
	ctx := context.Background()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	if _, err := w.env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(w.table),
		Key:                       map[string]types.AttributeValue{"user_id": s(id)},
		UpdateExpression:          aws.String("SET awaiting_owner = :t"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": s(w.clock.Now().UTC().Format(time.RFC3339))},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(w.table), Item: map[string]types.AttributeValue{
		"user_id": s(user.OwnerEmailPrefix + email), "marked_user_id": s(id),
	}}); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(user.CacheTTL)
}

// TestMarkRecordsMaker: a mark records who made it, its expiry (UTC,
// whole seconds) and the issuer of the row's own subject: the row's when
// it records one, else the one the marker gives. A mark without a maker,
// with an expiry not after now, or for a row whose issuer nobody knows
// is refused, and writes nothing.
func TestMarkRecordsMaker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newStore(t)
	now := w.clock.Now()
	expires := now.Add(30*24*time.Hour + 1500*time.Millisecond).In(time.FixedZone("CEST", 2*3600))
	if err := w.s.Create(ctx, &user.User{ID: "own", Email: "own@example.com", Role: user.RoleOwner, Issuer: "https://accounts.google.com"}); err != nil {
		t.Fatal(err)
	}
	w.create(t, "bare")
	given := user.OwnerMark{By: "admin-7", Expires: expires, Issuer: "https://given.example"}
	for id, wantIssuer := range map[string]string{"own": "https://accounts.google.com", "bare": "https://given.example"} {
		if err := w.s.MarkAwaitingOwner(ctx, id, now, given); err != nil {
			t.Fatal(err)
		}
		got, err := w.s.Get(ctx, id)
		want := &user.OwnerMark{By: "admin-7", Expires: now.Add(30 * 24 * time.Hour).Add(time.Second).Truncate(time.Second).UTC(), Issuer: wantIssuer}
		if err != nil || got.OwnerMark == nil || *got.OwnerMark != *want || got.AwaitingOwner == nil || !got.AwaitingOwner.Equal(now) {
			t.Errorf("%s marked: %+v at %v (%v), want %+v at %v", id, got.OwnerMark, got.AwaitingOwner, err, want, now)
		}
	}

	w.create(t, "refused")
	for _, tc := range []struct {
		name string
		m    user.OwnerMark
	}{
		{"no maker", user.OwnerMark{Expires: now.Add(time.Hour), Issuer: "https://given.example"}},
		{"expiry now", user.OwnerMark{By: "admin-7", Expires: now, Issuer: "https://given.example"}},
		{"no issuer known", user.OwnerMark{By: "admin-7", Expires: now.Add(time.Hour)}},
	} {
		if err := w.s.MarkAwaitingOwner(ctx, "refused", now, tc.m); err == nil {
			t.Errorf("mark with %s = nil, want an error", tc.name)
		}
	}
	if got, _ := w.s.Get(ctx, "refused"); got.AwaitingOwner != nil || got.OwnerMark != nil {
		t.Errorf("refused marks left %v, %+v", got.AwaitingOwner, got.OwnerMark)
	}
	if _, ok := w.ownerItem(t, "refused@example.com"); ok {
		t.Error("refused marks left the email item")
	}
}

// TestClaimMoveCondition: the claim's own conditional write holds the
// claim rule at the time of the write, whatever the caller read: a
// subject of the mark's issuer, a mark past its expiry, or one that
// records nothing is refused with ErrClaimed and changes nothing; a
// subject of another issuer before the expiry claims it.
func TestClaimMoveCondition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newStore(t)
	now := w.clock.Now()
	w.create(t, "old")
	mark := user.OwnerMark{By: "admin-7", Expires: now.Add(time.Hour), Issuer: "https://old.example"}
	if err := w.s.MarkAwaitingOwner(ctx, "old", now, mark); err != nil {
		t.Fatal(err)
	}
	w.create(t, "legacy")
	w.legacyMark(t, "legacy", "legacy@example.com")
	for _, tc := range []struct {
		name, id, issuer string
		at               time.Time
	}{
		{"the mark's own issuer", "old", "https://old.example", now},
		{"at the expiry", "old", "https://new.example", now.Add(time.Hour)},
		{"past the expiry", "old", "https://new.example", now.Add(2 * time.Hour)},
		{"a mark recording nothing", "legacy", "https://new.example", now},
	} {
		if _, err := w.s.ClaimMove(ctx, tc.id, "new-sub", tc.issuer, tc.at); !errors.Is(err, user.ErrClaimed) {
			t.Errorf("claim with %s = %v, want ErrClaimed", tc.name, err)
		}
		if got, _ := w.s.Get(ctx, tc.id); got.MovedTo != "" || !got.Active() {
			t.Errorf("refused claim with %s left moved_to %q, status %q", tc.name, got.MovedTo, got.Status)
		}
	}
	got, err := w.s.ClaimMove(ctx, "old", "new-sub", "https://new.example", now.Add(time.Hour-time.Second))
	if err != nil || got.MovedTo != "new-sub" || !got.Moving() {
		t.Errorf("claim from another issuer before the expiry = %+v, %v, want it claimed for new-sub", got, err)
	}
}

// TestExtendAwaitingOwner: an admin's extension moves the expiry, even
// of a mark that expired, which can then be claimed again; an account
// not marked, marked by an earlier version or gone is refused.
func TestExtendAwaitingOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newStore(t)
	now := w.clock.Now()
	w.create(t, "old")
	if err := w.s.MarkAwaitingOwner(ctx, "old", now, user.OwnerMark{By: "admin-7", Expires: now.Add(time.Hour), Issuer: "https://old.example"}); err != nil {
		t.Fatal(err)
	}
	later := now.Add(3 * time.Hour)
	if _, err := w.s.ClaimMove(ctx, "old", "new-sub", "https://new.example", later); !errors.Is(err, user.ErrClaimed) {
		t.Fatalf("claim of an expired mark = %v, want ErrClaimed", err)
	}
	until := later.Add(30 * 24 * time.Hour)
	if err := w.s.ExtendAwaitingOwner(ctx, "old", until); err != nil {
		t.Fatal(err)
	}
	got, err := w.s.Get(ctx, "old")
	if err != nil || got.OwnerMark == nil || !got.OwnerMark.Expires.Equal(until.Truncate(time.Second)) || got.OwnerMark.By != "admin-7" || got.OwnerMark.Issuer != "https://old.example" {
		t.Errorf("extended mark = %+v, %v, want by admin-7 from https://old.example until %v", got.OwnerMark, err, until)
	}
	if !got.ClaimableBy("https://new.example", later) {
		t.Error("the extended mark is not claimable")
	}
	if _, err := w.s.ClaimMove(ctx, "old", "new-sub", "https://new.example", later); err != nil {
		t.Errorf("claim of the extended mark = %v, want it claimed", err)
	}
	w.create(t, "plain")
	w.create(t, "legacy")
	w.legacyMark(t, "legacy", "legacy@example.com")
	for id, want := range map[string]error{"plain": user.ErrState, "legacy": user.ErrState, "old": user.ErrState, "nobody": user.ErrNotFound} {
		if err := w.s.ExtendAwaitingOwner(ctx, id, until); !errors.Is(err, want) {
			t.Errorf("extend of %s = %v, want %v", id, err, want)
		}
	}
}

// TestClearMigrateMark: the sign-in of the row's own subject ends a mark
// ndiro migrate made, or one that does not say who made it, row and
// email item; an admin's mark, and a mark already claimed, stay whole.
func TestClearMigrateMark(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newStore(t)
	now := w.clock.Now()
	byMigrate := user.OwnerMark{By: user.MarkedByMigrate, Expires: now.Add(time.Hour), Issuer: "https://old.example"}
	byAdmin := user.OwnerMark{By: "admin-7", Expires: now.Add(time.Hour), Issuer: "https://old.example"}
	for id, m := range map[string]user.OwnerMark{"migrated": byMigrate, "admins": byAdmin, "claimed": byMigrate} {
		w.create(t, id)
		if err := w.s.MarkAwaitingOwner(ctx, id, now, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.s.ClaimMove(ctx, "claimed", "new-sub", "https://new.example", now); err != nil {
		t.Fatal(err)
	}
	w.create(t, "legacy")
	w.legacyMark(t, "legacy", "legacy@example.com")
	for id, cleared := range map[string]bool{"migrated": true, "legacy": true, "admins": false, "claimed": false} {
		if err := w.s.ClearMigrateMark(ctx, id); err != nil {
			t.Errorf("ClearMigrateMark(%s) = %v", id, err)
		}
		got, err := w.s.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if marked := got.AwaitingOwner != nil; marked == cleared {
			t.Errorf("after ClearMigrateMark(%s) marked = %v (%+v), want %v", id, marked, got.OwnerMark, !cleared)
		}
		if got.OwnerMark != nil && cleared {
			t.Errorf("after ClearMigrateMark(%s) owner_mark = %+v, want none", id, got.OwnerMark)
		}
		if named, ok := w.ownerItem(t, id+"@example.com"); ok == cleared || (ok && named != id) {
			t.Errorf("after ClearMigrateMark(%s) email item = %q, %v; want it there %v", id, named, ok, !cleared)
		}
	}
	if _, err := w.s.FindAwaitingOwner(ctx, "migrated@example.com"); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("FindAwaitingOwner after the clear = %v, want ErrNotFound", err)
	}
	if err := w.s.ClearMigrateMark(ctx, "nobody"); err != nil {
		t.Errorf("ClearMigrateMark of no such row = %v, want nil", err)
	}
}

// TestMarkCompletesLegacy: marking an account whose mark records
// nothing (an earlier version's) completes it, keeping its time.
func TestMarkCompletesLegacy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newStore(t)
	w.create(t, "legacy")
	w.legacyMark(t, "legacy", "legacy@example.com")
	marked := w.clock.Now().Add(-user.CacheTTL)
	if got, _ := w.s.Get(ctx, "legacy"); got.ClaimableBy("https://new.example", w.clock.Now()) {
		t.Fatal("a mark recording nothing is claimable")
	}
	if err := w.s.MarkAwaitingOwner(ctx, "legacy", w.clock.Now(), apptest.AdminMark(w.clock.Now())); err != nil {
		t.Fatal(err)
	}
	got, err := w.s.Get(ctx, "legacy")
	if err != nil || got.OwnerMark == nil || got.OwnerMark.By != "admin-id" || !got.AwaitingOwner.Equal(marked.Truncate(time.Second)) {
		t.Errorf("completed mark = %+v at %v (%v), want by admin-id at %v", got.OwnerMark, got.AwaitingOwner, err, marked)
	}
	if !got.ClaimableBy("https://new.example", w.clock.Now()) {
		t.Error("the completed mark is not claimable")
	}
}
