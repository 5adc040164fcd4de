// Package share owns share links: the shares table, the owner's pages to
// create, list and revoke them, the admin list, and what a recipient with
// no account sees at /s/{token}: one owner's meals over a date range,
// read-only, with notes and numbers only if the owner chose to show them
// (DESIGN.md, share links and invites).
package share

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"time"

	"ndiro/internal/meal"
)

// Share is one shares row.
type Share struct {
	// Token is the partition key and the secret in the link /s/{token}:
	// token.New, 256 random bits in base64url.
	Token string `dynamodbav:"share_token"`
	// OwnerID is the users row whose meals the link shows. Photo keys are
	// built from it and nothing else.
	OwnerID string `dynamodbav:"owner_id"`
	// Label says who the link is for ("Dr. Rossi"); only the owner sees
	// it (not the recipient, not the admin list).
	Label string `dynamodbav:"label"`
	// From and To are the first and last day shown, "YYYY-MM-DD",
	// inclusive, at most MaxDays apart.
	From string `dynamodbav:"from_date"`
	To   string `dynamodbav:"to_date"`
	// Notes and Numbers say whether the recipient sees the meals' notes and
	// their numbers (kcal, grams, hunger, fullness). Photos always show.
	Notes   bool `dynamodbav:"show_notes"`
	Numbers bool `dynamodbav:"show_numbers"`
	// CreatedAt is when the owner made the link (UTC).
	CreatedAt time.Time `dynamodbav:"created_at"`
	// ExpiresAt is the end of the link's life in Unix seconds, 0 for
	// never. It is a DynamoDB Number because it is also the table's TTL
	// attribute (TTL ignores strings); TTL deletes days late, so every
	// request checks it (Expired).
	ExpiresAt int64 `dynamodbav:"expires_at,omitempty"`
	// Opens counts recipient visits of /s/{token}; FirstOpenedAt and
	// LastOpenedAt bound them (nil until the first). Visits are counted in
	// memory (Store.CountOpen) and added with one atomic update per share
	// every OpensEvery (Store.FlushOpens).
	Opens         int64      `dynamodbav:"open_count"`
	FirstOpenedAt *time.Time `dynamodbav:"first_opened_at,omitempty"`
	LastOpenedAt  *time.Time `dynamodbav:"last_opened_at,omitempty"`
	// OpenBatch is the ID of the last batch of opens written
	// (Store.RecordOpen), so that a batch sent again is added once.
	OpenBatch string `dynamodbav:"open_batch,omitempty" json:"-"`
	// Comments says whether the recipient may comment on meals and mark
	// weeks reviewed (the form's "Let them comment"; off by default).
	Comments bool `dynamodbav:"allow_comments,omitempty"`
	// NewComments counts the comments written through the link that the
	// owner has not seen yet (Store.CountComment adds one, Store.SeenComments
	// takes away what the owner was shown).
	NewComments int64 `dynamodbav:"new_comments,omitempty"`
	// CommentsSeenAt is when the owner last looked at the link's comments
	// (UTC); comments written after it are new. Nil if never.
	CommentsSeenAt *time.Time `dynamodbav:"comments_seen_at,omitempty"`
	// Reviewed holds the first days ("YYYY-MM-DD") of the weeks the
	// recipient marked reviewed (a string set; weeks start on From, every
	// seven days).
	Reviewed []string `dynamodbav:"reviewed_weeks,stringset,omitempty"`
}

// ID returns the share's non-secret ID: the first 16 hex digits of the
// SHA-256 of "ndiro share " and the token. Comments name their link by
// it, so an export or a backup of the meals holds no working link, and
// nobody can turn it back into the token.
func ID(tok string) string {
	sum := sha256.Sum256([]byte("ndiro share " + tok))
	return hex.EncodeToString(sum[:8])
}

// ValidID reports whether id has the shape of ID's: 16 lowercase hex
// digits.
func ValidID(id string) bool {
	if len(id) != 16 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Limits of a share.
const (
	// MaxDays is the longest range one link may show, inclusive.
	MaxDays = 366
	// MaxLabel is the longest label, in characters (runes).
	MaxLabel = 100
	// DefaultDays is the range the create form offers: the last 14 days.
	DefaultDays = 14
)

// ExpiryChoices are the lifetimes the create form offers, in days; 0 is
// never.
var ExpiryChoices = []int{0, 7, 30, 90}

// Sentinel errors of Store.
var (
	// ErrNotFound: no such share, or (for an owner's revoke) not theirs.
	ErrNotFound = errors.New("share not found")
)

// Range returns the first and last day the share shows. Rows are checked
// when written, so a parse failure gives zero dates, which contain
// nothing.
func (s *Share) Range() (from, to meal.Date) {
	from, err1 := meal.ParseDate(s.From)
	to, err2 := meal.ParseDate(s.To)
	if err1 != nil || err2 != nil {
		return meal.Date{}, meal.Date{}.AddDays(-1)
	}
	return from, to
}

// Contains reports whether day d lies within the share's range.
func (s *Share) Contains(d meal.Date) bool {
	from, to := s.Range()
	return !d.Before(from) && !to.Before(d)
}

// IsReviewed reports whether the recipient marked the week starting on
// day week reviewed.
func (s *Share) IsReviewed(week string) bool { return slices.Contains(s.Reviewed, week) }

// Expired reports whether the share's life ended at or before now.
func (s *Share) Expired(now time.Time) bool {
	return s.ExpiresAt != 0 && now.Unix() >= s.ExpiresAt
}

// Expires returns ExpiresAt as a time, or nil for never.
func (s *Share) Expires() *time.Time {
	if s.ExpiresAt == 0 {
		return nil
	}
	t := time.Unix(s.ExpiresAt, 0).UTC()
	return &t
}

// State is where a share stands at a given time.
type State string

// The states a listed share can be in; a revoked share is deleted, so it
// is never listed.
const (
	StateActive  State = "active"
	StateExpired State = "expired"
)

// StateAt returns s's state at now.
func (s *Share) StateAt(now time.Time) State {
	if s.Expired(now) {
		return StateExpired
	}
	return StateActive
}

// Shows says in words what the recipient sees: "photos, notes and
// numbers", "photos and notes", "photos and numbers" or "photos only".
func (s *Share) Shows() string {
	switch {
	case s.Notes && s.Numbers:
		return "photos, notes and numbers"
	case s.Notes:
		return "photos and notes"
	case s.Numbers:
		return "photos and numbers"
	}
	return "photos only"
}

// RangeText is the range for people: "1 Sep – 14 Sep 2026",
// "28 Dec 2025 – 3 Jan 2026", or one day "1 Sep 2026".
func (s *Share) RangeText() string {
	from, to := s.Range()
	return rangeText(from, to)
}

func rangeText(from, to meal.Date) string {
	f, t := from.Time(), to.Time()
	switch {
	case from.String() == to.String():
		return t.Format("2 Jan 2006")
	case f.Year() == t.Year():
		return f.Format("2 Jan") + " – " + t.Format("2 Jan 2006")
	}
	return f.Format("2 Jan 2006") + " – " + t.Format("2 Jan 2006")
}
