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

func TestRecordOpenConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db, tables := newStore(t)
	sh := create(t, s, share.Share{Label: "x"})
	const n = 20
	opened := t0.Add(time.Minute)
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			<-start
			errs <- s.RecordOpen(ctx, sh.Token, opened)
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("RecordOpen = %v", err)
		}
	}
	got, err := s.Get(ctx, sh.Token)
	if err != nil {
		t.Fatal(err)
	}
	if got.Opens != n {
		t.Errorf("open_count after %d concurrent opens = %d, want %d", n, got.Opens, n)
	}
	if got.FirstOpenedAt == nil || got.LastOpenedAt == nil || !got.FirstOpenedAt.Equal(opened) || !got.LastOpenedAt.Equal(opened) {
		t.Errorf("first/last opened = %v / %v, want both %v", got.FirstOpenedAt, got.LastOpenedAt, opened)
	}
	// first_opened_at is kept: a later open moves only last_opened_at.
	first := *got.FirstOpenedAt
	later := t0.Add(48 * time.Hour)
	if err := s.RecordOpen(ctx, sh.Token, later); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Get(ctx, sh.Token)
	if !got.FirstOpenedAt.Equal(first) || !got.LastOpenedAt.Equal(later) || got.Opens != n+1 {
		t.Errorf("after one more open: first %v last %v opens %d; want first %v, last %v, %d", got.FirstOpenedAt, got.LastOpenedAt, got.Opens, first, later, n+1)
	}
	if _, ok := rawItem(t, db, tables.Shares.Name, sh.Token)["open_count"].(*types.AttributeValueMemberN); !ok {
		t.Error("open_count is not a Number")
	}

	// A revoked share is not brought back as a stub by a late open.
	if err := s.Revoke(ctx, sh.Token, sh.OwnerID); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordOpen(ctx, sh.Token, later); !errors.Is(err, share.ErrNotFound) {
		t.Errorf("RecordOpen after revoke = %v, want ErrNotFound", err)
	}
	if item := rawItem(t, db, tables.Shares.Name, sh.Token); len(item) != 0 {
		t.Errorf("RecordOpen after revoke left an item: %v", item)
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
