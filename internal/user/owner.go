package user

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/dynamo"
)

// An account waiting for its owner (DESIGN.md, moving an account) is one
// whose users row is keyed by a subject its owner will never sign in with
// again: an account copied from local mode (whose IDs are made from the
// email) or one an admin marked before the deployment changes provider.
// Its row carries awaiting_owner and owner_mark (OwnerMark: who marked
// it, until when, the issuer of its own subject), and a reserved item of
// the users table, OwnerEmailPrefix + the lower-cased email, names it, so
// the first sign-in of a new subject whose provider vouches for that
// email (email_verified) finds it with one GetItem. Only marked accounts
// are ever matched by email: FindAwaitingOwner reads the row the item
// names and checks its mark and email, so an item left behind by an
// interrupted write matches nothing; and only a subject of another
// issuer, before the mark expires, may claim it (User.ClaimableBy).
//
// DynamoDB transactions would make the mark one write, but the mark must
// work on every DynamoDB this code runs against, so it is two ordered
// conditional writes (the email item first, the row's mark second) whose
// leftovers are harmless and cleared by the next mark of that email.

// OwnerEmailPrefix starts the users table key of the item that names the
// marked account of one email: OwnerEmailPrefix + strings.ToLower(email).
const OwnerEmailPrefix = ReservedPrefix + "owner-email#"

// ownerAttr is the email item's attribute naming the marked row (the key
// attribute, user_id, holds the item's own key).
const ownerAttr = "marked_user_id"

// ErrEmailTaken is returned by MarkAwaitingOwner when another account
// with the same email (compared case-insensitively) is already marked:
// a sign-in with that email could not tell them apart.
var ErrEmailTaken = errors.New("user: another account waiting for its owner has that email")

// MarkedByMigrate is OwnerMark.By of a mark ndiro migrate made.
const MarkedByMigrate = "migrate"

// OwnerMark is what a mark records besides its time (the row's
// owner_mark map).
type OwnerMark struct {
	// By is MarkedByMigrate, or the user ID of the admin who marked it.
	By string `dynamodbav:"by"`
	// Expires is when the mark stops being claimable: UTC, whole
	// seconds, so that its RFC 3339 text sorts as time does and a
	// condition can compare it (ClaimMove).
	Expires time.Time `dynamodbav:"expires"`
	// Issuer is the OIDC issuer of the row's own subject: no subject of
	// this issuer ever claims the account.
	Issuer string `dynamodbav:"issuer"`
}

// ClaimableBy reports whether the sign-in of a new subject of issuer may
// claim u at now: u is marked, its mark records an issuer other than
// issuer, and the mark has not expired. A mark without OwnerMark (made
// before marks recorded one) claims nothing. ClaimMove's condition is
// this rule at the time of the write.
func (u *User) ClaimableBy(issuer string, now time.Time) bool {
	m := u.OwnerMark
	return u.AwaitingOwner != nil && m != nil && m.Issuer != "" && issuer != "" &&
		issuer != m.Issuer && now.Before(m.Expires)
}

// MarkedByMigrate reports whether u carries a mark ndiro migrate made, or
// one that does not say who made it: such a mark ends when u's own
// subject signs in (ClearMigrateMark), while an admin's stays.
func (u *User) MarkedByMigrate() bool {
	return u.AwaitingOwner != nil && (u.OwnerMark == nil || u.OwnerMark.By == MarkedByMigrate)
}

// markTime is how a mark's expiry is stored and compared: t in UTC, to
// the second, as RFC 3339.
func markTime(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

// ownerEmailKey returns the key of the email item for email.
func ownerEmailKey(email string) string { return OwnerEmailPrefix + strings.ToLower(email) }

// ownerItem is the email item as stored.
type ownerItem struct {
	Key    string `dynamodbav:"user_id"`
	Marked string `dynamodbav:"marked_user_id"`
}

// MarkAwaitingOwner marks the account id as waiting for its owner, as
// m says: a sign-in of a new subject whose verified email equals the
// account's (case-insensitively) may then move the account to that
// subject (User.ClaimableBy). m.Issuer is the issuer of the row's own
// subject when the row does not record one (User.Issuer, which wins).
// It writes the email item (attribute_not_exists, or naming id already)
// and then sets the row's awaiting_owner to now (RFC 3339) and
// owner_mark to m, on the condition that the row exists, is active
// (User.Active) and still has the email read. A repeated mark keeps the
// first; one over a mark without OwnerMark completes it. Errors:
// ErrNotFound (no such row), ErrState (the account is disabled, being
// deleted or moving), ErrEmailTaken (another marked account has that
// email), and an error for an account with no email or issuer, or an m
// without maker or with an expiry not after now.
func (s *Store) MarkAwaitingOwner(ctx context.Context, id string, now time.Time, m OwnerMark) error {
	if m.By == "" || !m.Expires.After(now) {
		return fmt.Errorf("user: mark awaiting owner: mark by %q expiring %v, want a maker and an expiry after %v", m.By, m.Expires, now)
	}
	u, err := s.Get(ctx, id)
	if err != nil {
		return fmt.Errorf("user: mark awaiting owner: %w", err)
	}
	if u.Email == "" {
		return fmt.Errorf("user: mark awaiting owner: account %q has no email to match a sign-in by", id)
	}
	if u.Issuer != "" {
		m.Issuer = u.Issuer
	}
	if m.Issuer == "" {
		return fmt.Errorf("user: mark awaiting owner: the issuer of account %q is not known", id)
	}
	if !u.Active() {
		return fmt.Errorf("user: mark awaiting owner: %w", ErrState)
	}
	created, err := s.putOwnerItem(ctx, id, u.Email)
	if err != nil {
		return fmt.Errorf("user: mark awaiting owner: %w", err)
	}
	if u.AwaitingOwner != nil && u.OwnerMark != nil {
		return nil // marked already: keep the first mark
	}
	at := now
	if u.AwaitingOwner != nil {
		at = *u.AwaitingOwner
	}
	m.Expires = m.Expires.UTC().Truncate(time.Second)
	mark, err := attributevalue.Marshal(m)
	if err != nil {
		return fmt.Errorf("user: mark awaiting owner: %w", err)
	}
	n := expression.Name
	status := n("status")
	err = s.update(ctx, "mark awaiting owner", id,
		expression.AttributeExists(n("user_id")).
			And(n("email").Equal(expression.Value(u.Email))).
			And(expression.AttributeNotExists(status).Or(status.Equal(expression.Value(StatusActive)))),
		expression.Set(n("awaiting_owner"), expression.Value(at.UTC().Format(time.RFC3339Nano))).
			Set(n("owner_mark"), expression.Value(mark)))
	if err != nil && created {
		// The row changed under us: take back the item this call wrote
		// (only if it still names id), so the email is free again.
		if derr := s.deleteOwnerItem(ctx, u.Email, id); derr != nil {
			return errors.Join(err, derr)
		}
	}
	return err
}

// ExtendAwaitingOwner moves the expiry of the mark on the account id to
// expires (an admin's action), whether or not it has passed: one
// conditional UpdateItem on the row being active and carrying a mark
// with OwnerMark. Errors: ErrNotFound (no such row), ErrState (not
// marked so, or not active).
func (s *Store) ExtendAwaitingOwner(ctx context.Context, id string, expires time.Time) error {
	n := expression.Name
	status := n("status")
	return s.update(ctx, "extend awaiting owner", id,
		expression.AttributeType(n("awaiting_owner"), expression.String).
			And(expression.AttributeType(n("owner_mark"), expression.Map)).
			And(expression.AttributeNotExists(status).Or(status.Equal(expression.Value(StatusActive)))),
		expression.Set(n("owner_mark.expires"), expression.Value(markTime(expires))))
}

// putOwnerItem writes the email item naming id, if no item names another
// account. An item naming an account that is not marked with that email
// (left by an interrupted mark or clear) is taken over. created reports
// whether this call wrote the item.
func (s *Store) putOwnerItem(ctx context.Context, id, email string) (created bool, err error) {
	k := ownerEmailKey(email)
	cond, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name("user_id"))).Build()
	if err != nil {
		return false, err
	}
	for try := 0; ; try++ {
		_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(s.table),
			Item: map[string]types.AttributeValue{
				"user_id": &types.AttributeValueMemberS{Value: k},
				ownerAttr: &types.AttributeValueMemberS{Value: id},
			},
			ConditionExpression:      cond.Condition(),
			ExpressionAttributeNames: cond.Names(),
		})
		if err == nil {
			return true, nil
		}
		if !dynamo.IsConditionFailed(err) {
			return false, err
		}
		// An item is there: id's own (a repeated mark), another marked
		// account's (taken), or a leftover to take over.
		it, found, err := dynamo.GetItemAt[ownerItem](ctx, s.db, s.table, key(k))
		switch {
		case err != nil:
			return false, err
		case !found:
			continue // deleted since the put: try again
		case it.Marked == id:
			return false, nil
		case try > 0:
			return false, ErrEmailTaken
		}
		other, err := s.Get(ctx, it.Marked)
		switch {
		case err == nil && other.marked(email):
			return false, ErrEmailTaken
		case err != nil && !errors.Is(err, ErrNotFound):
			return false, err
		}
		if err := s.deleteOwnerItem(ctx, email, it.Marked); err != nil {
			return false, err
		}
	}
}

// deleteOwnerItem deletes the email item of email if it names id.
func (s *Store) deleteOwnerItem(ctx context.Context, email, id string) error {
	cond, err := expression.NewBuilder().WithCondition(expression.Name(ownerAttr).Equal(expression.Value(id))).Build()
	if err != nil {
		return err
	}
	_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(ownerEmailKey(email)),
		ConditionExpression:       cond.Condition(),
		ExpressionAttributeNames:  cond.Names(),
		ExpressionAttributeValues: cond.Values(),
	})
	if dynamo.IsConditionFailed(err) {
		return nil // gone already, or another account's now
	}
	return err
}

// marked reports whether u is marked as waiting for its owner and has
// email (case-insensitively).
func (u *User) marked(email string) bool {
	return u.AwaitingOwner != nil && strings.EqualFold(u.Email, email)
}

// ClearAwaitingOwner removes the mark of the account id: the row's
// awaiting_owner and owner_mark (if the row is still there) and then the
// email item, if it names id. Clearing an unmarked account, or one whose
// row is gone, is no error, so it can be re-run; account deletion calls
// it before it deletes the row.
func (s *Store) ClearAwaitingOwner(ctx context.Context, id string) error {
	return s.clearMark(ctx, id, false)
}

// ClearMigrateMark removes the mark of the account id as
// ClearAwaitingOwner does, but only one ndiro migrate made
// (User.MarkedByMigrate) on a row not claimed by a move: the sign-in of
// the row's own subject calls it, since the owner it waited for has
// come. The row's write is conditional on that, so an admin's mark made
// meanwhile stays, and so does its email item.
func (s *Store) ClearMigrateMark(ctx context.Context, id string) error {
	return s.clearMark(ctx, id, true)
}

// clearMark clears the mark of id as ClearAwaitingOwner says, or, if
// migrateOnly, as ClearMigrateMark says.
func (s *Store) clearMark(ctx context.Context, id string, migrateOnly bool) error {
	u, err := s.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("user: clear awaiting owner: %w", err)
	}
	n := expression.Name
	cond := expression.AttributeExists(n("user_id"))
	if migrateOnly {
		if !u.MarkedByMigrate() || u.MovedTo != "" {
			return nil
		}
		cond = cond.And(expression.AttributeNotExists(n("moved_to"))).And(
			expression.AttributeNotExists(n("owner_mark")).
				Or(expression.AttributeType(n("owner_mark"), expression.Null)).
				Or(n("owner_mark.by").Equal(expression.Value(MarkedByMigrate))))
	}
	if u.AwaitingOwner != nil || u.OwnerMark != nil {
		// NULL, not REMOVE: the in-process DynamoDB ignores REMOVE, and
		// every reader of the mark takes NULL as no mark (marked,
		// ListAwaitingOwner's attribute_type, ClaimMove's condition).
		null := expression.Value(&types.AttributeValueMemberNULL{Value: true})
		err := s.update(ctx, "clear awaiting owner", id, cond,
			expression.Set(n("awaiting_owner"), null).Set(n("owner_mark"), null))
		switch {
		case errors.Is(err, ErrNotFound):
		case errors.Is(err, ErrState) && migrateOnly:
			return nil // an admin's mark since, or a claim: theirs to keep
		case err != nil:
			return err
		}
	}
	if u.Email == "" {
		return nil
	}
	if err := s.deleteOwnerItem(ctx, u.Email, id); err != nil {
		return fmt.Errorf("user: clear awaiting owner: %w", err)
	}
	return nil
}

// FindAwaitingOwner returns the account waiting for its owner whose email
// equals email (case-insensitively): one consistent GetItem of the email
// item and one read of the row it names, which must carry the mark and
// that email. It returns ErrNotFound when no marked account has it; an
// account that is not marked is never returned.
func (s *Store) FindAwaitingOwner(ctx context.Context, email string) (*User, error) {
	if email == "" {
		return nil, fmt.Errorf("user: find awaiting owner: %w", ErrNotFound)
	}
	it, found, err := dynamo.GetItemAt[ownerItem](ctx, s.db, s.table, key(ownerEmailKey(email)))
	if err != nil {
		return nil, fmt.Errorf("user: find awaiting owner: %w", err)
	}
	if !found || it.Marked == "" {
		return nil, fmt.Errorf("user: find awaiting owner: %w", ErrNotFound)
	}
	u, err := s.Get(ctx, it.Marked)
	if err != nil {
		return nil, fmt.Errorf("user: find awaiting owner: %w", err)
	}
	if !u.marked(email) {
		return nil, fmt.Errorf("user: find awaiting owner: %w", ErrNotFound)
	}
	return u, nil
}

// ListAwaitingOwner returns every account marked as waiting for its
// owner, by paged Scan (the admin page).
func (s *Store) ListAwaitingOwner(ctx context.Context) ([]User, error) {
	marked := expression.AttributeType(expression.Name("awaiting_owner"), expression.String)
	in, err := s.scanUsers(&marked)
	if err != nil {
		return nil, fmt.Errorf("user: list awaiting owner: %w", err)
	}
	return dynamo.ScanAll[User](ctx, s.db, in)
}
