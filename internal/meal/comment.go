package meal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/store"
)

// Limits of comments (DESIGN.md, comments through a share link, which
// gives the arithmetic that keeps a meals item within
// store.MaxItemBytes with room for the owner's replies).
const (
	// MaxCommentLinks is the most links taking comments that may cover
	// one day (share.Handler.Create refuses another; links gone count by
	// the comments they left), and so the most links whose comments one
	// meal holds.
	MaxCommentLinks = 4
	// MaxLinkComments is the most comments one link leaves on one meal.
	MaxLinkComments = 5
	// MaxComments is the most comments one meal holds from links:
	// MaxCommentLinks × MaxLinkComments.
	MaxComments = MaxCommentLinks * MaxLinkComments
	// MaxCommentText is the longest comment, in characters (runes).
	MaxCommentText = 2000
)

// Comment is one comment a share recipient left on a meal, stored in the
// meal item's comments map under its ID.
type Comment struct {
	// ID is NewCommentID's: the time written in Unix milliseconds, 13
	// digits, then "-" and 8 random hex digits, so IDs sort by time.
	ID string `dynamodbav:"id" json:"id"`
	// ShareID names the link it came through: share.ID, a digest of the
	// token, never the token itself, so an export or backup holds no
	// working link.
	ShareID string `dynamodbav:"share_id" json:"share_id"`
	// Label is the link's label when the comment was written ("Dr.
	// Rossi"): the owner's to see ("from the link for Dr. Rossi"), never
	// the recipient's, and kept here because revoking the link deletes it.
	Label string `dynamodbav:"label" json:"from"`
	// Text is what the recipient wrote, checked by the share page
	// (internal/text, at most MaxCommentText characters).
	Text string `dynamodbav:"text" json:"text"`
	// At is when it was written (UTC).
	At time.Time `dynamodbav:"at" json:"at"`
	// Imported marks a comment an import brought in: its ShareID names a
	// link of the diary the export came from, never one of this diary's,
	// so it is no link's own (CommentsFrom) and shows to the owner alone,
	// with its Label.
	Imported bool `dynamodbav:"imported,omitempty" json:"imported,omitempty"`
}

// Errors of comment writes.
var (
	// ErrCommentsFull: the link left MaxLinkComments comments on the
	// meal already.
	ErrCommentsFull = errors.New("link left the most comments it may on the meal")
	// ErrNoRoom: the meals item would outgrow store.MaxItemBytes with
	// the comment (a state the bounds on links and comments rule out;
	// this refusal keeps a write DynamoDB would refuse from being tried).
	ErrNoRoom = errors.New("meal has no room for another comment")
	// ErrNoComment: the meal has no comment of that ID.
	ErrNoComment = errors.New("comment not found")
)

// NewCommentID returns a fresh comment ID for a comment written at at:
// "1790000000000-1a2b3c4d".
func NewCommentID(at time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%013d-%s", at.UnixMilli(), hex.EncodeToString(b[:]))
}

// ValidCommentID reports whether id has NewCommentID's form: only such
// IDs are ever used as attribute names inside the comments map.
func ValidCommentID(id string) bool {
	if len(id) != 22 || id[13] != '-' || !digits(id[:13]) || !lowerHex(id[14:]) {
		return false
	}
	_, err := strconv.ParseInt(id[:13], 10, 64)
	return err == nil
}

// SortedComments returns the meal's comments oldest first (by At, then
// ID).
func (m *Meal) SortedComments() []Comment {
	out := make([]Comment, 0, len(m.Comments))
	for _, c := range m.Comments {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.Before(out[j].At)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// CommentsFrom returns the meal's comments written through the link
// shareID, oldest first: all a recipient of that link may see. An
// imported comment is never one of them, whatever its ShareID.
func (m *Meal) CommentsFrom(shareID string) []Comment {
	var out []Comment
	for _, c := range m.SortedComments() {
		if c.ShareID == shareID && !c.Imported {
			out = append(out, c)
		}
	}
	return out
}

// commentAttempts bounds how often a comment write reads and writes again
// when the meal changes under it.
const commentAttempts = 5

// AddComment writes c on the meal id of userID on day d: it reads the
// meal and writes it back whole with c in its comments and comment_rev
// one higher, conditional on version and comment_rev being as read, and
// reads again when either changed meanwhile (the owner's edit, another
// comment). It is not one UpdateItem (SET comments.#id, ADD comment_rev):
// the in-process emulator of local and server mode evaluates an update
// expression over every attribute as float64 and writes them all back,
// which rounds photo_v (nanoseconds, beyond 2^53) and so breaks the
// photo's version; a whole-item put stores each number as its text. It
// returns ErrNotFound for a meal that is not there (moved or deleted),
// ErrCommentsFull for one holding MaxLinkComments of c's link (other
// links' comments never count) and ErrNoRoom for one whose item would
// outgrow store.MaxItemBytes. A write whose answer was lost, sent again
// by the SDK, finds its own comment and is no error.
// The owner's fields are written back as read, and Update merges the new
// comment into an edit made from an older read.
func (s *Store) AddComment(ctx context.Context, userID string, d Date, id string, c Comment) error {
	if !ValidCommentID(c.ID) {
		return fmt.Errorf("meal: add comment: malformed comment id %q", c.ID)
	}
	if _, err := ParseID(id); err != nil {
		return fmt.Errorf("meal: add comment: %w", ErrNotFound)
	}
	if err := s.putComments(ctx, userID, d, id, []Comment{c}, MaxLinkComments); err != nil {
		return fmt.Errorf("meal: add comment: %w", err)
	}
	return nil
}

// CopyComments adds cs to the comments of m's row, leaving out those it
// holds already, with no limit: a move carrying comments
// written on the old row while it was copied. It returns ErrNotFound if
// the row is gone.
func (s *Store) CopyComments(ctx context.Context, m *Meal, cs map[string]Comment) error {
	list := make([]Comment, 0, len(cs))
	for _, c := range cs {
		if ValidCommentID(c.ID) {
			list = append(list, c)
		}
	}
	d, err := ParseDate(m.Date)
	if err != nil {
		return fmt.Errorf("meal: copy comments: %w", err)
	}
	if err := s.putComments(ctx, m.UserID, d, m.ID, list, 0); err != nil {
		return fmt.Errorf("meal: copy comments: %w", err)
	}
	return nil
}

// putComments adds cs to the comments of the meal id of userID on day d,
// as AddComment does, leaving out those the row holds already (a retry,
// or a move copying comments twice). A max above 0 refuses with
// ErrCommentsFull once the row would hold more than max of one link's
// comments, and with ErrNoRoom once its item would outgrow
// store.MaxItemBytes.
func (s *Store) putComments(ctx context.Context, userID string, d Date, id string, cs []Comment, max int) error {
	for range commentAttempts {
		m, err := s.Get(ctx, userID, d, id)
		if err != nil {
			return err
		}
		var add []Comment
		for _, c := range cs {
			if _, ok := m.Comments[c.ID]; !ok {
				add = append(add, c)
			}
		}
		if len(add) == 0 {
			return nil
		}
		if max > 0 && overLinkLimit(m.Comments, add, max) {
			return ErrCommentsFull
		}
		if m.Comments == nil {
			m.Comments = make(map[string]Comment, len(add))
		}
		for _, c := range add {
			m.Comments[c.ID] = c
		}
		if max > 0 {
			if item, err := attributevalue.MarshalMap(m); err != nil {
				return fmt.Errorf("encode: %w", err)
			} else if store.Size(item) > store.MaxItemBytes {
				return ErrNoRoom
			}
		}
		rev := m.CommentRev
		m.CommentRev = rev + 1
		err = s.replace(ctx, m, m.Version, rev)
		var cc *commentsChanged
		if err == nil {
			return nil
		}
		if !errors.As(err, &cc) && !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("comments changed %d times while written: %w", commentAttempts, ErrConflict)
}

// overLinkLimit reports whether have with add would hold more than max
// comments of one link.
func overLinkLimit(have map[string]Comment, add []Comment, max int) bool {
	n := map[string]int{}
	for _, c := range have {
		n[c.ShareID]++
	}
	for _, c := range add {
		if n[c.ShareID]++; n[c.ShareID] > max {
			return true
		}
	}
	return false
}

// DeleteComment removes the comment commentID from the meal id of
// userID on day d (the owner's delete) and returns it. It reads the meal
// and writes it back whole without the comment, conditional on version
// and comment_rev being as read (the in-process emulator ignores REMOVE),
// and reads again if either changed meanwhile. It returns ErrNotFound for
// a meal that is not there and ErrNoComment for a comment it lacks.
func (s *Store) DeleteComment(ctx context.Context, userID string, d Date, id, commentID string) (*Comment, error) {
	for range commentAttempts {
		m, err := s.Get(ctx, userID, d, id)
		if err != nil {
			return nil, fmt.Errorf("meal: delete comment: %w", err)
		}
		c, ok := m.Comments[commentID]
		if !ok {
			return nil, fmt.Errorf("meal: delete comment: %w", ErrNoComment)
		}
		delete(m.Comments, commentID)
		if len(m.Comments) == 0 {
			m.Comments = nil // no attribute rather than an empty map, which the in-process emulator stores wrong
		}
		rev := m.CommentRev
		m.CommentRev = rev + 1
		err = s.replace(ctx, m, m.Version, rev)
		var cc *commentsChanged
		if err == nil {
			return &c, nil
		}
		if !errors.As(err, &cc) && !errors.Is(err, ErrConflict) {
			return nil, fmt.Errorf("meal: delete comment: %w", err)
		}
	}
	return nil, fmt.Errorf("meal: delete comment: changed %d times meanwhile: %w", commentAttempts, ErrConflict)
}

// commentsChanged is a whole-item write refused only because the row's
// comments changed after it was read (a newer comment_rev, the same
// version): latest is the row as it is now. It unwraps to ErrConflict, so
// a caller that does not merge sees a conflict.
type commentsChanged struct{ latest *Meal }

func (e *commentsChanged) Error() string { return "meal comments changed meanwhile" }

func (e *commentsChanged) Unwrap() error { return ErrConflict }

// refusal tells why a write conditional on version and comment_rev, as
// read, was refused, from the row refused over (item; empty if gone): the
// row gone (ErrNotFound), its comments alone changed (*commentsChanged) or
// the owner's fields changed (ErrConflict).
func refusal(item map[string]types.AttributeValue, version, rev int64) error {
	if len(item) == 0 {
		return ErrNotFound
	}
	var cur Meal
	if err := attributevalue.UnmarshalMap(item, &cur); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if cur.Version == version && cur.CommentRev != rev {
		return &commentsChanged{latest: &cur}
	}
	return ErrConflict
}

// readCondition is the condition of a write made from a read of a row at
// version and comment_rev rev: the row is there and unchanged. A rev of 0
// also matches a row without comment_rev (written before comments were).
func readCondition(version, rev int64) expression.Expression {
	revCond := expression.Name("comment_rev").Equal(expression.Value(rev))
	if rev == 0 {
		revCond = expression.AttributeNotExists(expression.Name("comment_rev")).Or(revCond)
	}
	cond, err := expression.NewBuilder().WithCondition(expression.AttributeExists(expression.Name("sk")).
		And(expression.Name("version").Equal(expression.Value(version))).And(revCond)).Build()
	if err != nil {
		panic(err) // names and numbers: cannot fail
	}
	return cond
}
