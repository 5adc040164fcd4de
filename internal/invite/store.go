// Package invite owns the invites table: admins create invites, a person
// opens /invite/{token}, signs in, and claims it with one conditional write.
package invite

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/dynamo"
	"ndiro/internal/token"
	"ndiro/internal/user"
)

// Invite is one invites row.
type Invite struct {
	// Token is the partition key and the secret in the invite link.
	Token string `dynamodbav:"invite_token"`
	// Email, if set, is the only (lower-cased) email that may claim it.
	Email string    `dynamodbav:"email,omitempty"`
	Role  user.Role `dynamodbav:"role"`
	// CreatedBy is the admin's user ID.
	CreatedBy string    `dynamodbav:"created_by"`
	CreatedAt time.Time `dynamodbav:"created_at"`
	// ExpiresAt is in Unix seconds; it is also the table's TTL attribute,
	// but TTL deletes lazily, so Claim checks it itself.
	ExpiresAt int64  `dynamodbav:"expires_at"`
	ClaimedBy string `dynamodbav:"claimed_by,omitempty"`
	// ClaimedAt and RevokedAt are nil until it happens: the conditions test
	// the attributes' absence, and a zero time.Time would still be written.
	ClaimedAt *time.Time `dynamodbav:"claimed_at,omitempty"`
	RevokedAt *time.Time `dynamodbav:"revoked_at,omitempty"`
}

// State is where an invite stands at a given time (Invite.StateAt); it is
// worked out from the item's attributes, not stored.
type State string

// The states, as the admin's invite list shows them.
const (
	// StateOpen: not claimed, revoked or expired; its link signs someone up.
	StateOpen State = "open"
	// StateClaimed: someone signed up with it (claimed_by is set); only
	// they can use it again, to finish a sign-up that failed half-way.
	StateClaimed State = "claimed"
	// StateRevoked: an admin withdrew it before anyone claimed it.
	StateRevoked State = "revoked"
	// StateExpired: unclaimed past expires_at; the table's TTL deletes it
	// some days later.
	StateExpired State = "expired"
)

// StateAt returns inv's state at now. Revoked wins over claimed, claimed
// over expired.
func (inv *Invite) StateAt(now time.Time) State {
	switch {
	case inv.RevokedAt != nil:
		return StateRevoked
	case inv.ClaimedBy != "":
		return StateClaimed
	case now.Unix() >= inv.ExpiresAt:
		return StateExpired
	}
	return StateOpen
}

// Expires returns ExpiresAt as a time.
func (inv *Invite) Expires() time.Time { return time.Unix(inv.ExpiresAt, 0).UTC() }

// Sentinel errors of Store. Each has its own page.
var (
	ErrNotFound   = errors.New("invite not found")
	ErrExpired    = errors.New("invite expired")
	ErrClaimed    = errors.New("invite already used")
	ErrRevoked    = errors.New("invite revoked")
	ErrWrongEmail = errors.New("invite is for another email")
)

// Store reads and writes the invites table.
type Store struct {
	db    *dynamodb.Client
	table string
}

// NewStore returns a Store on the invites table named table.
func NewStore(db *dynamodb.Client, table string) *Store {
	return &Store{db: db, table: table}
}

// Create writes a new invite with a fresh token (attribute_not_exists, so a
// token is never reused) and returns it.
func (s *Store) Create(ctx context.Context, inv Invite) (*Invite, error) {
	inv.Token = token.New()
	item, err := attributevalue.MarshalMap(inv)
	if err != nil {
		return nil, fmt.Errorf("invite: create: encode: %w", err)
	}
	cond, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name("invite_token"))).Build()
	if err != nil {
		return nil, fmt.Errorf("invite: create: %w", err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.table),
		Item:                     item,
		ConditionExpression:      cond.Condition(),
		ExpressionAttributeNames: cond.Names(),
	})
	if err != nil {
		return nil, fmt.Errorf("invite: create: %w", err)
	}
	return &inv, nil
}

// Get returns the invite named tok, or ErrNotFound.
func (s *Store) Get(ctx context.Context, tok string) (*Invite, error) {
	if !token.Valid(tok) {
		return nil, fmt.Errorf("invite: get: %w", ErrNotFound)
	}
	inv, found, err := dynamo.GetItemAt[Invite](ctx, s.db, s.table, key(tok))
	if err != nil {
		return nil, fmt.Errorf("invite: get: %w", err)
	}
	if !found {
		return nil, fmt.Errorf("invite: get: %w", ErrNotFound)
	}
	return &inv, nil
}

// List returns every invite, newest first, by Scan (a handful per
// deployment; DESIGN.md allows scans for admin lists).
func (s *Store) List(ctx context.Context) ([]Invite, error) {
	all, err := dynamo.ScanAll[Invite](ctx, s.db, &dynamodb.ScanInput{TableName: aws.String(s.table)})
	if err != nil {
		return nil, fmt.Errorf("invite: list: %w", err)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].CreatedAt.After(all[j].CreatedAt) })
	return all, nil
}

// Claim marks the invite tok as claimed by userID with ONE conditional
// UpdateItem: it must exist and be unrevoked, and either be unclaimed and
// unexpired at now, or be claimed by userID already — a re-run by the
// claimer is a no-op, even after the invite's expiry, so a sign-up whose
// users-row write failed after the claim can be finished later (DESIGN.md,
// sign-up). Its email restriction, if any, must equal email. Of many
// racing claimants exactly one succeeds. On a failed condition it returns
// ErrNotFound, ErrRevoked, ErrClaimed, ErrExpired or ErrWrongEmail.
func (s *Store) Claim(ctx context.Context, tok, userID, email string, now time.Time) (*Invite, error) {
	if !token.Valid(tok) {
		return nil, fmt.Errorf("invite: claim: %w", ErrNotFound)
	}
	name := expression.Name
	claimedBy, mail := name("claimed_by"), name("email")
	expr, err := expression.NewBuilder().
		WithCondition(expression.AttributeExists(name("invite_token")).
			And(expression.AttributeNotExists(name("revoked_at"))).
			And(expression.AttributeNotExists(claimedBy).And(name("expires_at").GreaterThan(expression.Value(now.Unix()))).
				Or(claimedBy.Equal(expression.Value(userID)))).
			And(expression.AttributeNotExists(mail).Or(mail.Equal(expression.Value(email))))).
		WithUpdate(expression.Set(claimedBy, expression.Value(userID)).
			Set(name("claimed_at"), expression.IfNotExists(name("claimed_at"), expression.Value(now.UTC().Format(time.RFC3339Nano))))).
		Build()
	if err != nil {
		return nil, fmt.Errorf("invite: claim: %w", err)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 key(tok),
		UpdateExpression:                    expr.Update(),
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if dynamo.IsConditionFailed(err) {
		return nil, fmt.Errorf("invite: claim: %w", s.whyRefused(ctx, tok, err, userID, email, now))
	}
	if err != nil {
		return nil, fmt.Errorf("invite: claim: %w", err)
	}
	var inv Invite
	if err := attributevalue.UnmarshalMap(out.Attributes, &inv); err != nil {
		return nil, fmt.Errorf("invite: claim: decode: %w", err)
	}
	return &inv, nil
}

// whyRefused names the sentinel for a failed claim condition, from the
// invite the refusal was over (dynamo.RefusedItem: the old item the
// failure returned or, if the backend returned none, a consistent read).
// The item only picks the message; the write already decided. A read that
// fails, or an item that does not decode, is returned as it is: no
// sentinel fits it.
func (s *Store) whyRefused(ctx context.Context, tok string, condErr error, userID, email string, now time.Time) error {
	item, err := dynamo.RefusedItem(ctx, s.db, s.table, key(tok), condErr)
	if err != nil {
		return err
	}
	if len(item) == 0 {
		return ErrNotFound
	}
	var inv Invite
	if err := attributevalue.UnmarshalMap(item, &inv); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	switch inv.StateAt(now) {
	case StateRevoked:
		return ErrRevoked
	case StateClaimed:
		if inv.ClaimedBy != userID {
			return ErrClaimed
		}
	case StateExpired:
		return ErrExpired
	}
	if inv.Email != "" && inv.Email != email {
		return ErrWrongEmail
	}
	return ErrClaimed
}

// FindClaimed returns the invite userID claimed, or ErrNotFound. It is
// for a sign-in without an invite by someone with no users row: if the
// row's write failed after their claim, the claim lets them finish
// signing up. No key leads from a user to their invite, so it is a
// paginated Scan filtered on claimed_by: the invites table holds a few
// rows per user at this scale, and the path runs only for people who
// have no account (each one a sign-in start, rate-limited per address).
func (s *Store) FindClaimed(ctx context.Context, userID string) (*Invite, error) {
	if userID == "" {
		return nil, fmt.Errorf("invite: find claimed: %w", ErrNotFound)
	}
	expr, err := expression.NewBuilder().WithFilter(expression.Name("claimed_by").Equal(expression.Value(userID))).Build()
	if err != nil {
		return nil, fmt.Errorf("invite: find claimed: %w", err)
	}
	all, err := dynamo.ScanAll[Invite](ctx, s.db, &dynamodb.ScanInput{
		TableName:                 aws.String(s.table),
		FilterExpression:          expr.Filter(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("invite: find claimed: %w", err)
	}
	for _, inv := range all {
		if inv.ClaimedBy == userID && inv.RevokedAt == nil {
			return &inv, nil
		}
	}
	return nil, fmt.Errorf("invite: find claimed: %w", ErrNotFound)
}

// Revoke marks an unclaimed invite revoked, so its link stops working. It
// returns ErrNotFound for no such invite and ErrClaimed if it was used.
func (s *Store) Revoke(ctx context.Context, tok string, now time.Time) error {
	if !token.Valid(tok) {
		return fmt.Errorf("invite: revoke: %w", ErrNotFound)
	}
	name := expression.Name
	expr, err := expression.NewBuilder().
		WithCondition(expression.AttributeExists(name("invite_token")).And(expression.AttributeNotExists(name("claimed_by")))).
		WithUpdate(expression.Set(name("revoked_at"), expression.IfNotExists(name("revoked_at"), expression.Value(now.UTC().Format(time.RFC3339Nano))))).
		Build()
	if err != nil {
		return fmt.Errorf("invite: revoke: %w", err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 key(tok),
		UpdateExpression:                    expr.Update(),
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if dynamo.IsConditionFailed(err) {
		// Gone, or claimed: which, the invite says.
		item, gerr := dynamo.RefusedItem(ctx, s.db, s.table, key(tok), err)
		switch {
		case gerr != nil:
			return fmt.Errorf("invite: revoke: %w", gerr)
		case len(item) == 0:
			return fmt.Errorf("invite: revoke: %w", ErrNotFound)
		}
		return fmt.Errorf("invite: revoke: %w", ErrClaimed)
	}
	if err != nil {
		return fmt.Errorf("invite: revoke: %w", err)
	}
	return nil
}

// DeleteFor removes userID from the invites table (a step of account
// deletion): the invites they created that nobody claimed (open, expired or
// revoked), and the invite they claimed, which holds their email and user
// ID. Invites they created that others claimed stay: those record the
// others' sign-ups. A paged, strongly consistent Scan finds them; each
// delete is conditional on the invite still being in the state that made it
// deletable, so an invite claimed meanwhile by someone else is kept. It
// returns how many it deleted and can be re-run.
func (s *Store) DeleteFor(ctx context.Context, userID string) (int, error) {
	if userID == "" {
		return 0, fmt.Errorf("invite: delete for user: empty user id")
	}
	name := expression.Name
	all, err := s.ofUser(ctx, userID)
	if err != nil {
		return 0, fmt.Errorf("invite: delete for user: %w", err)
	}
	unclaimed, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(name("claimed_by"))).Build()
	if err != nil {
		return 0, fmt.Errorf("invite: delete for user: %w", err)
	}
	claimedByUser, err := expression.NewBuilder().WithCondition(name("claimed_by").Equal(expression.Value(userID))).Build()
	if err != nil {
		return 0, fmt.Errorf("invite: delete for user: %w", err)
	}
	deleted := 0
	for _, inv := range all {
		cond := unclaimed
		switch {
		case inv.ClaimedBy == userID:
			cond = claimedByUser
		case inv.ClaimedBy != "":
			continue // created by userID, claimed by someone else
		}
		_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName:                 aws.String(s.table),
			Key:                       key(inv.Token),
			ConditionExpression:       cond.Condition(),
			ExpressionAttributeNames:  cond.Names(),
			ExpressionAttributeValues: cond.Values(),
		})
		switch {
		case dynamo.IsConditionFailed(err):
			// Claimed meanwhile by someone else, or already gone.
		case err != nil:
			return deleted, fmt.Errorf("invite: delete for user: %w", err)
		default:
			deleted++
		}
	}
	return deleted, nil
}

// Counts are the monitor's numbers of invites by state (StateAt).
type Counts struct{ Open, Claimed, Revoked, Expired int }

// Count counts the invites in each state at now with paced Select COUNT
// Scans, for the admin monitor.
func (s *Store) Count(ctx context.Context, pace dynamo.Pace, now time.Time) (Counts, error) {
	name := expression.Name
	claimed := expression.AttributeExists(name("claimed_by"))
	unclaimed := expression.AttributeNotExists(name("claimed_by"))
	revoked := unclaimed.And(expression.AttributeExists(name("revoked_at")))
	expired := unclaimed.And(expression.AttributeNotExists(name("revoked_at"))).And(name("expires_at").LessThanEqual(expression.Value(now.Unix())))
	var c Counts
	total, err := dynamo.CountPaced(ctx, s.db, &dynamodb.ScanInput{TableName: aws.String(s.table)}, pace)
	if err != nil {
		return c, fmt.Errorf("invite: count: %w", err)
	}
	for _, f := range []struct {
		cond expression.ConditionBuilder
		n    *int
	}{{claimed, &c.Claimed}, {revoked, &c.Revoked}, {expired, &c.Expired}} {
		expr, err := expression.NewBuilder().WithFilter(f.cond).Build()
		if err != nil {
			return c, fmt.Errorf("invite: count: %w", err)
		}
		*f.n, err = dynamo.CountPaced(ctx, s.db, &dynamodb.ScanInput{
			TableName:                 aws.String(s.table),
			FilterExpression:          expr.Filter(),
			ExpressionAttributeNames:  expr.Names(),
			ExpressionAttributeValues: expr.Values(),
		}, pace)
		if err != nil {
			return c, fmt.Errorf("invite: count: %w", err)
		}
	}
	c.Open = total - c.Claimed - c.Revoked - c.Expired
	return c, nil
}

func key(tok string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"invite_token": &types.AttributeValueMemberS{Value: tok}}
}

// ofUser returns every invite userID created or claimed, by a paged
// Scan that is strongly consistent: an invite created just before the
// account was marked (deleting, moving) must be seen.
func (s *Store) ofUser(ctx context.Context, userID string) ([]Invite, error) {
	name := expression.Name
	filter := name("created_by").Equal(expression.Value(userID)).Or(name("claimed_by").Equal(expression.Value(userID)))
	expr, err := expression.NewBuilder().WithFilter(filter).Build()
	if err != nil {
		return nil, err
	}
	return dynamo.ScanAll[Invite](ctx, s.db, &dynamodb.ScanInput{
		TableName:                 aws.String(s.table),
		ConsistentRead:            aws.Bool(true),
		FilterExpression:          expr.Filter(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
}

// MoveUser gives fromID's invites to toID (the move of an account to a
// new subject): created_by of the invites they made and claimed_by of the
// one they signed up with. A strongly consistent paged Scan finds them;
// each attribute is re-pointed with an UpdateItem conditional on it still
// naming fromID, so it can be re-run. It returns how many invites it
// changed.
func (s *Store) MoveUser(ctx context.Context, fromID, toID string) (int, error) {
	if fromID == "" || toID == "" {
		return 0, fmt.Errorf("invite: move user: empty user id")
	}
	all, err := s.ofUser(ctx, fromID)
	if err != nil {
		return 0, fmt.Errorf("invite: move user: %w", err)
	}
	moved := 0
	for _, inv := range all {
		for _, attr := range []string{"created_by", "claimed_by"} {
			if (attr == "created_by" && inv.CreatedBy != fromID) || (attr == "claimed_by" && inv.ClaimedBy != fromID) {
				continue
			}
			e, err := expression.NewBuilder().
				WithCondition(expression.Name(attr).Equal(expression.Value(fromID))).
				WithUpdate(expression.Set(expression.Name(attr), expression.Value(toID))).Build()
			if err != nil {
				return moved, fmt.Errorf("invite: move user: %w", err)
			}
			_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:                 aws.String(s.table),
				Key:                       key(inv.Token),
				UpdateExpression:          e.Update(),
				ConditionExpression:       e.Condition(),
				ExpressionAttributeNames:  e.Names(),
				ExpressionAttributeValues: e.Values(),
			})
			switch {
			case dynamo.IsConditionFailed(err):
				// Gone (TTL) or moved already.
			case err != nil:
				return moved, fmt.Errorf("invite: move user: %w", err)
			default:
				moved++
			}
		}
	}
	return moved, nil
}
