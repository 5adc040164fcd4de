package share_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ndiro/internal/share"
	"ndiro/internal/token"
)

// TestRecipientWrites: comments are counted and weeks marked reviewed
// only on a share that takes comments and has not expired; a revoked one
// takes nothing; the owner's look subtracts what they were shown.
func TestRecipientWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newStore(t)
	open := create(t, s, share.Share{Comments: true, ExpiresAt: t0.Add(time.Hour).Unix()})
	closed := create(t, s, share.Share{})
	now := t0
	for range 3 {
		if err := s.CountComment(ctx, open.Token, now); err != nil {
			t.Fatalf("CountComment = %v", err)
		}
	}
	if err := s.MarkReviewed(ctx, open.Token, "2026-09-01", true, now); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkReviewed(ctx, open.Token, "2026-09-08", true, now); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkReviewed(ctx, open.Token, "2026-09-01", false, now); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, open.Token)
	if err != nil {
		t.Fatal(err)
	}
	if got.NewComments != 3 || !cmp.Equal(got.Reviewed, []string{"2026-09-08"}) || !got.IsReviewed("2026-09-08") || got.IsReviewed("2026-09-01") {
		t.Errorf("after 3 comments and marks: new %d, reviewed %v; want 3, [2026-09-08]", got.NewComments, got.Reviewed)
	}
	for _, tc := range []struct {
		name string
		tok  string
		at   time.Time
	}{
		{"comments off", closed.Token, now},
		{"expired", open.Token, t0.Add(time.Hour)},
		{"unknown", token.New(), now},
		{"not a token", "x", now},
	} {
		if err := s.CountComment(ctx, tc.tok, tc.at); !errors.Is(err, share.ErrClosed) {
			t.Errorf("CountComment (%s) = %v, want ErrClosed", tc.name, err)
		}
		if err := s.MarkReviewed(ctx, tc.tok, "2026-09-01", true, tc.at); !errors.Is(err, share.ErrClosed) {
			t.Errorf("MarkReviewed (%s) = %v, want ErrClosed", tc.name, err)
		}
	}
	if sh, _ := s.Get(ctx, closed.Token); sh.NewComments != 0 || len(sh.Reviewed) != 0 {
		t.Errorf("a share without comments got %d new comments, reviewed %v", sh.NewComments, sh.Reviewed)
	}

	// The owner is shown 2 of the 3; one more arrives.
	if err := s.SeenComments(ctx, open.Token, "someone-else", 2, now); !errors.Is(err, share.ErrNotFound) {
		t.Errorf("SeenComments by another owner = %v, want ErrNotFound", err)
	}
	if err := s.SeenComments(ctx, open.Token, open.OwnerID, 2, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.UncountComment(ctx, open.Token); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Get(ctx, open.Token)
	if got.NewComments != 0 || got.CommentsSeenAt == nil || !got.CommentsSeenAt.Equal(now.Add(time.Minute)) {
		t.Errorf("after seeing 2 and one taken back: new %d, seen at %v; want 0, %v", got.NewComments, got.CommentsSeenAt, now.Add(time.Minute))
	}
	// Seeing more than are new (another tab) is no error and no negative count.
	if err := s.SeenComments(ctx, open.Token, open.OwnerID, 5, now); err != nil {
		t.Errorf("SeenComments of more than are new = %v", err)
	}
	if err := s.UncountComment(ctx, open.Token); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.Get(ctx, open.Token); got.NewComments != 0 {
		t.Errorf("new comments = %d, want 0 (never below)", got.NewComments)
	}
	if err := s.Revoke(ctx, open.Token, open.OwnerID); err != nil {
		t.Fatal(err)
	}
	if err := s.CountComment(ctx, open.Token, now); !errors.Is(err, share.ErrClosed) {
		t.Errorf("CountComment after revoke = %v, want ErrClosed", err)
	}
	if _, err := s.Get(ctx, open.Token); !errors.Is(err, share.ErrNotFound) {
		t.Errorf("the revoked share came back as a stub: %v", err)
	}
}

// TestShareID: the comment's link ID is stable, differs per token and is
// not the token.
func TestShareID(t *testing.T) {
	t.Parallel()
	a, b := token.New(), token.New()
	first, again := share.ID(a), share.ID(a)
	if first != again || first == share.ID(b) || len(first) != 16 || strings.Contains(a, first) {
		t.Errorf("ID(a) = %q, ID(b) = %q: want 16 stable, distinct hex digits", share.ID(a), share.ID(b))
	}
}
