package share_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"ndiro/internal/apptest"
	"ndiro/internal/dynamo"
	"ndiro/internal/share"
	"ndiro/internal/token"
)

var t0 = time.Date(2026, 9, 14, 10, 0, 0, 0, time.UTC)

func newStore(t *testing.T) (*share.Store, *dynamodb.Client, dynamo.Tables) {
	t.Helper()
	env, tables := apptest.Local(t)
	return share.NewStore(env.DynamoDB, tables.Shares.Name, time.Now), env.DynamoDB, tables
}

func create(t *testing.T, s *share.Store, sh share.Share) *share.Share {
	t.Helper()
	if sh.OwnerID == "" {
		sh.OwnerID = "owner-1"
	}
	if sh.From == "" {
		sh.From, sh.To = "2026-09-01", "2026-09-14"
	}
	if sh.CreatedAt.IsZero() {
		sh.CreatedAt = t0
	}
	got, err := s.Create(context.Background(), sh)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func rawItem(t *testing.T, db *dynamodb.Client, table, tok string) map[string]types.AttributeValue {
	t.Helper()
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table),
		Key:       map[string]types.AttributeValue{"share_token": &types.AttributeValueMemberS{Value: tok}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func TestCreateGet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db, tables := newStore(t)
	exp := t0.Add(30 * 24 * time.Hour).Unix()
	sh := create(t, s, share.Share{Label: "Dr. Rossi", Notes: true, ExpiresAt: exp})
	if !token.Valid(sh.Token) {
		t.Fatalf("Create gave token %q, not a token", sh.Token)
	}
	got, err := s.Get(ctx, sh.Token)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(sh, got); d != "" {
		t.Errorf("Get after Create (-created +read):\n%s", d)
	}

	// expires_at is the TTL attribute: it must be a Number of epoch
	// seconds, which TTL reads; TTL ignores strings.
	item := rawItem(t, db, tables.Shares.Name, sh.Token)
	n, ok := item["expires_at"].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("expires_at stored as %T, want a Number (N)", item["expires_at"])
	}
	if n.Value != strconv.FormatInt(exp, 10) {
		t.Errorf("expires_at = %s, want %d", n.Value, exp)
	}
	if tables.Shares.TTLAttribute != "expires_at" {
		t.Errorf("shares TTL attribute = %q, want expires_at", tables.Shares.TTLAttribute)
	}

	// A link that never expires has no expires_at, so TTL never deletes it.
	never := create(t, s, share.Share{Label: "coach"})
	if v, ok := rawItem(t, db, tables.Shares.Name, never.Token)["expires_at"]; ok {
		t.Errorf("never-expiring share stored expires_at = %v, want none", v)
	}
}

func TestGetUnknown(t *testing.T) {
	t.Parallel()
	s, _, _ := newStore(t)
	for _, tok := range []string{token.New(), "", "short", "../../etc/passwd", token.New()[:42] + "!"} {
		if _, err := s.Get(context.Background(), tok); !errors.Is(err, share.ErrNotFound) {
			t.Errorf("Get(%q) = %v, want ErrNotFound", tok, err)
		}
	}
}

func TestRevoke(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newStore(t)
	sh := create(t, s, share.Share{Label: "x"})
	if err := s.Revoke(ctx, sh.Token, "someone-else"); !errors.Is(err, share.ErrNotFound) {
		t.Fatalf("Revoke by another owner = %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, sh.Token); err != nil {
		t.Fatalf("share gone after another owner's revoke: %v", err)
	}
	if err := s.Revoke(ctx, sh.Token, sh.OwnerID); err != nil {
		t.Fatalf("Revoke by the owner = %v", err)
	}
	if _, err := s.Get(ctx, sh.Token); !errors.Is(err, share.ErrNotFound) {
		t.Errorf("Get after revoke = %v, want ErrNotFound", err)
	}
	if err := s.Revoke(ctx, sh.Token, sh.OwnerID); !errors.Is(err, share.ErrNotFound) {
		t.Errorf("second Revoke = %v, want ErrNotFound", err)
	}

	other := create(t, s, share.Share{Label: "y"})
	if err := s.RevokeAny(ctx, other.Token); err != nil {
		t.Fatalf("RevokeAny = %v", err)
	}
	if err := s.RevokeAny(ctx, other.Token); !errors.Is(err, share.ErrNotFound) {
		t.Errorf("second RevokeAny = %v, want ErrNotFound", err)
	}
}

// TestCountOpens: opens are counted in memory, none written until a
// flush; a flush writes each share's count, first and last open with one
// UpdateItem, adding to what is stored (ADD, atomic); opens counted during
// a flush are kept for the next; a batch sent again (a lost answer, a
// failed write tried at the next flush) is added once; the lists add what
// is not written yet; a revoked share is not brought back as a stub.
func TestCountOpens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db, tables := newStore(t)
	sh := create(t, s, share.Share{Label: "x"})
	stored := func() *share.Share {
		t.Helper()
		got, err := share.NewStore(db, tables.Shares.Name, time.Now).Get(ctx, sh.Token) // uncached
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	// 20 opens at once while flushes run: all 20 land.
	const n = 20
	opened := t0.Add(time.Minute)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			<-start
			s.CountOpen(sh.Token, opened)
		})
	}
	wg.Go(func() {
		<-start
		for range 5 {
			if err := s.FlushOpens(ctx); err != nil {
				t.Errorf("FlushOpens = %v", err)
			}
		}
	})
	close(start)
	wg.Wait()
	if err := s.FlushOpens(ctx); err != nil {
		t.Fatal(err)
	}
	got := stored()
	if got.Opens != n || !got.FirstOpenedAt.Equal(opened) || !got.LastOpenedAt.Equal(opened) {
		t.Errorf("after %d opens: %d, first %v, last %v; want %d, both %v", n, got.Opens, got.FirstOpenedAt, got.LastOpenedAt, n, opened)
	}
	if _, ok := rawItem(t, db, tables.Shares.Name, sh.Token)["open_count"].(*types.AttributeValueMemberN); !ok {
		t.Error("open_count is not a Number")
	}

	// Counted, not yet written; then written, first kept, last moved.
	later := t0.Add(48 * time.Hour)
	s.CountOpen(sh.Token, later)
	if got := stored(); got.Opens != n {
		t.Errorf("an open was written before a flush: %d", got.Opens)
	}
	if err := s.FlushOpens(ctx); err != nil {
		t.Fatal(err)
	}
	if got := stored(); got.Opens != n+1 || !got.FirstOpenedAt.Equal(opened) || !got.LastOpenedAt.Equal(later) {
		t.Errorf("after one more open: %d, first %v, last %v; want %d, %v, %v", got.Opens, got.FirstOpenedAt, got.LastOpenedAt, n+1, opened, later)
	}

	// RecordOpen adds each batch once, atomically.
	for _, id := range []string{"b1", "b2", "b2"} {
		if err := s.RecordOpen(ctx, sh.Token, id, 3, later, later); err != nil {
			t.Errorf("RecordOpen(%s) = %v", id, err)
		}
	}
	if got := stored(); got.Opens != n+7 {
		t.Errorf("after batches b1, b2 and b2 again of 3: %d, want %d", got.Opens, n+7)
	}

	// A lost answer the SDK sends again, and a failed write the next flush
	// sends again, are each added once; the list counts them meanwhile.
	f := &apptest.Faults{}
	faulty := share.NewStore(dynamodb.New(db.Options(), f.DynamoOption()), tables.Shares.Name, time.Now)
	faulty.CountOpen(sh.Token, later)
	f.LoseAnswerOnce("UpdateItem", tables.Shares.Name)
	if err := faulty.FlushOpens(ctx); err != nil {
		t.Fatal(err)
	}
	if got := stored(); got.Opens != n+8 {
		t.Errorf("after a lost answer: %d, want %d", got.Opens, n+8)
	}
	faulty.CountOpen(sh.Token, later)
	faulty.CountOpen(sh.Token, later)
	f.Fail("UpdateItem", tables.Shares.Name, 0)
	if err := faulty.FlushOpens(ctx); !errors.Is(err, apptest.ErrInjected) {
		t.Errorf("FlushOpens with UpdateItem failing = %v, want ErrInjected", err)
	}
	faulty.CountOpen(sh.Token, later)
	if list, err := faulty.ListByOwner(ctx, sh.OwnerID); err != nil || len(list) != 1 || list[0].Opens != n+11 {
		t.Errorf("the list while 3 opens are unwritten: %+v, %v; want %d opens", list, err, n+11)
	}
	f.Clear()
	for range 2 { // the failed batch as it was, then the open counted since
		if err := faulty.FlushOpens(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := stored(); got.Opens != n+11 {
		t.Errorf("after the failed write's retry: %d, want %d", got.Opens, n+11)
	}

	// A revoked share is not brought back as a stub by a late open.
	if err := s.Revoke(ctx, sh.Token, sh.OwnerID); err != nil {
		t.Fatal(err)
	}
	s.CountOpen(sh.Token, later)
	if err := s.FlushOpens(ctx); err != nil {
		t.Errorf("FlushOpens of a revoked share's open = %v, want nil (dropped)", err)
	}
	if err := s.RecordOpen(ctx, sh.Token, "b9", 1, later, later); !errors.Is(err, share.ErrNotFound) {
		t.Errorf("RecordOpen after revoke = %v, want ErrNotFound", err)
	}
	if item := rawItem(t, db, tables.Shares.Name, sh.Token); len(item) != 0 {
		t.Errorf("an open after revoke left an item: %v", item)
	}
}

func TestListsAndDeleteByOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newStore(t)
	s.SetPageLimit(2) // several Scan pages
	var mine []string
	for i := range 5 {
		sh := create(t, s, share.Share{OwnerID: "me", Label: "m", CreatedAt: t0.Add(time.Duration(i) * time.Hour)})
		mine = append([]string{sh.Token}, mine...) // newest first
		create(t, s, share.Share{OwnerID: "other", Label: "o"})
	}
	list, err := s.ListByOwner(ctx, "me")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sh := range list {
		got = append(got, sh.Token)
	}
	if d := cmp.Diff(mine, got); d != "" {
		t.Errorf("ListByOwner(me) tokens, newest first (-want +got):\n%s", d)
	}
	all, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 10 {
		t.Errorf("List() = %d shares, want 10", len(all))
	}

	n, err := s.DeleteByOwner(ctx, "me")
	if err != nil || n != 5 {
		t.Fatalf("DeleteByOwner(me) = %d, %v; want 5, nil", n, err)
	}
	for _, tok := range mine {
		if _, err := s.Get(ctx, tok); !errors.Is(err, share.ErrNotFound) {
			t.Errorf("Get(deleted share) = %v, want ErrNotFound", err)
		}
	}
	if rest, _ := s.ListByOwner(ctx, "other"); len(rest) != 5 {
		t.Errorf("other owner's shares after DeleteByOwner(me) = %d, want 5", len(rest))
	}
	// Re-running is no error.
	if n, err := s.DeleteByOwner(ctx, "me"); err != nil || n != 0 {
		t.Errorf("DeleteByOwner(me) again = %d, %v; want 0, nil", n, err)
	}
}

// TestRevokeStopsTheNextGet: with the share cached (Get reads no table),
// a revoke decides the very next Get, and a refused revoke (another
// owner's) drops the cached item too, so an edit made around the store
// shows at once.
func TestRevokeStopsTheNextGet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	calls := &apptest.Calls{}
	env, tables := apptest.Local(t, calls.Option())
	s := share.NewStore(env.DynamoDB, tables.Shares.Name, time.Now)
	sh := create(t, s, share.Share{Label: "x"})
	s.Get(ctx, sh.Token)
	calls.Reset()
	if _, err := s.Get(ctx, sh.Token); err != nil || calls.Counts()["GetItem"] != 0 {
		t.Fatalf("warm Get = %v with %d GetItems, want the cached share", err, calls.Counts()["GetItem"])
	}
	_, err := env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(tables.Shares.Name),
		Key:                       map[string]types.AttributeValue{"share_token": &types.AttributeValueMemberS{Value: sh.Token}},
		UpdateExpression:          aws.String("SET label = :l"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":l": &types.AttributeValueMemberS{Value: "edited"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Revoke(ctx, sh.Token, "someone-else"); !errors.Is(err, share.ErrNotFound) {
		t.Fatalf("Revoke by another owner = %v, want ErrNotFound", err)
	}
	if got, err := s.Get(ctx, sh.Token); err != nil || got.Label != "edited" {
		t.Errorf("Get after a refused revoke = %+v, %v, want the item read again (label edited)", got, err)
	}
	if err := s.Revoke(ctx, sh.Token, sh.OwnerID); err != nil {
		t.Fatal(err)
	}
	calls.Reset()
	if _, err := s.Get(ctx, sh.Token); !errors.Is(err, share.ErrNotFound) || calls.Counts()["GetItem"] != 1 {
		t.Errorf("Get right after the revoke = %v with %d GetItems, want ErrNotFound read from the table", err, calls.Counts()["GetItem"])
	}
	for _, tok := range []string{"", "../x"} {
		if err := s.Revoke(ctx, tok, sh.OwnerID); !errors.Is(err, share.ErrNotFound) {
			t.Errorf("Revoke(%q) = %v, want ErrNotFound", tok, err)
		}
		if err := s.RevokeAny(ctx, tok); !errors.Is(err, share.ErrNotFound) {
			t.Errorf("RevokeAny(%q) = %v, want ErrNotFound", tok, err)
		}
	}
	if err := s.Revoke(ctx, token.New(), ""); !errors.Is(err, share.ErrNotFound) {
		t.Errorf("Revoke with no owner = %v, want ErrNotFound", err)
	}
}

func TestCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newStore(t)
	s.SetPageLimit(2)
	now := t0.Add(48 * time.Hour)
	for _, exp := range []int64{0, 0, now.Add(-time.Hour).Unix(), now.Unix(), now.Add(time.Second).Unix()} {
		create(t, s, share.Share{Label: "x", ExpiresAt: exp})
	}
	pages := 0
	active, expired, err := s.Count(ctx, func(context.Context, int) error { pages++; return nil }, now)
	if err != nil || active != 3 || expired != 2 {
		t.Errorf("Count = %d active, %d expired, %v; want 3 and 2 (expiry at now counts as expired)", active, expired, err)
	}
	if pages < 6 {
		t.Errorf("Count paced %d pages, want every page of two scans in pages of 2 (at least 6)", pages)
	}
	stop := errors.New("stop")
	if _, _, err := s.Count(ctx, func(context.Context, int) error { return stop }, now); !errors.Is(err, stop) {
		t.Errorf("Count with the pacer refusing = %v, want its error", err)
	}
}
