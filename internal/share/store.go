package share

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
)

// Store reads and writes the shares table. The hot path, a recipient's
// visit, is one GetItem by token; the owner's and the admin's lists are
// paged Scans (a handful of shares per owner; CLAUDE.md says why no GSI).
// Error strings never hold a token: they end up in logs.
//
// Every shares write of the process goes through it, so Get reads through
// a write-through cache (DESIGN.md, sign-in): each write invalidates its
// item before it starts and when it returns, whatever the outcome, so a
// revoke stops the very next request; CacheTTL bounds how long an edit
// made outside the app goes unseen.
type Store struct {
	db    *dynamodb.Client
	table string
	cache *dynamo.ItemCache[Share]
	opens opens
	// pageLimit, if set, caps items per Scan page, so tests can check that
	// scans follow LastEvaluatedKey.
	pageLimit int32
}

// CacheTTL is how long Store keeps a share it read (or its absence): the
// longest an edit made outside the app goes unseen.
const CacheTTL = 5 * time.Second

// cacheSize bounds the shares kept; unknown tokens are refused before a
// read (token.Valid) and rate-limited per client.
const cacheSize = 10_000

// NewStore returns a Store on the shares table named table, caching items
// for CacheTTL by the clock now (time.Now outside tests).
func NewStore(db *dynamodb.Client, table string, now func() time.Time) *Store {
	return &Store{db: db, table: table, cache: dynamo.NewItemCache[Share](CacheTTL, cacheSize, now)}
}

// Create writes sh as a new share under a fresh token (attribute_not_exists,
// so a token is never reused) with no opens, and returns it. The caller has
// checked the fields (Form.Parse).
func (s *Store) Create(ctx context.Context, sh Share) (*Share, error) {
	sh.Token = token.New()
	sh.Opens, sh.FirstOpenedAt, sh.LastOpenedAt, sh.OpenBatch = 0, nil, nil, ""
	sh.NewComments, sh.CommentsSeenAt, sh.Reviewed = 0, nil, nil
	item, err := attributevalue.MarshalMap(sh)
	if err != nil {
		return nil, fmt.Errorf("share: create: encode: %w", err)
	}
	cond, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name("share_token"))).Build()
	if err != nil {
		return nil, fmt.Errorf("share: create: %w", err)
	}
	err = s.cache.Write(sh.Token, func() error {
		_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                aws.String(s.table),
			Item:                     item,
			ConditionExpression:      cond.Condition(),
			ExpressionAttributeNames: cond.Names(),
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("share: create: %w", err)
	}
	return &sh, nil
}

// Get returns a copy of the share named tok, or ErrNotFound: from the
// cache, else with one strongly consistent GetItem (a revoke must stop the
// very next request), whose result the cache keeps unless a write
// overlapped it. A string that cannot be a token is ErrNotFound without a
// read.
func (s *Store) Get(ctx context.Context, tok string) (*Share, error) {
	if !token.Valid(tok) {
		return nil, fmt.Errorf("share: get: %w", ErrNotFound)
	}
	sh, found, err := s.cache.Read(ctx, s.db, s.table, "share_token", tok)
	if err != nil {
		return nil, fmt.Errorf("share: get: %w", err)
	}
	if !found {
		return nil, fmt.Errorf("share: get: %w", ErrNotFound)
	}
	return &sh, nil
}

// Revoke deletes the share tok if it belongs to ownerID (a conditional
// DeleteItem), so its link stops at the next request. It returns
// ErrNotFound if there is no such share or it is someone else's.
func (s *Store) Revoke(ctx context.Context, tok, ownerID string) error {
	if !token.Valid(tok) || ownerID == "" {
		return fmt.Errorf("share: revoke: %w", ErrNotFound)
	}
	err := s.deleteIf(ctx, tok, expression.Name("owner_id").Equal(expression.Value(ownerID)))
	if dynamo.IsConditionFailed(err) {
		return fmt.Errorf("share: revoke: %w", ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("share: revoke: %w", err)
	}
	return nil
}

// RevokeAny deletes the share tok whoever owns it (the admin's revoke),
// or returns ErrNotFound.
func (s *Store) RevokeAny(ctx context.Context, tok string) error {
	if !token.Valid(tok) {
		return fmt.Errorf("share: revoke: %w", ErrNotFound)
	}
	err := s.deleteIf(ctx, tok, expression.AttributeExists(expression.Name("share_token")))
	if dynamo.IsConditionFailed(err) {
		return fmt.Errorf("share: revoke: %w", ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("share: revoke: %w", err)
	}
	return nil
}

// RecordOpen writes the batch id of n recipient visits of the share tok,
// the first at first and the last at last, with ONE UpdateItem: open_count
// goes up by n atomically (ADD), first_opened_at is set if absent,
// last_opened_at and open_batch always. It is conditional on the share
// existing (so a revoked share is not brought back as a stub; ErrNotFound)
// and on open_batch not being id already: a batch sent again, after its
// answer was lost, by the SDK's retries or by the next flush, is added
// once (nil). Batches of one share are written one at a time, in order
// (FlushOpens), so the last one written is the one to compare with.
func (s *Store) RecordOpen(ctx context.Context, tok, id string, n int64, first, last time.Time) error {
	if !token.Valid(tok) {
		return fmt.Errorf("share: record open: %w", ErrNotFound)
	}
	name := expression.Name
	batch := name("open_batch")
	firstAt := name("first_opened_at")
	expr, err := expression.NewBuilder().
		WithCondition(expression.AttributeExists(name("share_token")).
			And(expression.AttributeNotExists(batch).Or(batch.NotEqual(expression.Value(id))))).
		WithUpdate(expression.Add(name("open_count"), expression.Value(n)).
			Set(firstAt, expression.IfNotExists(firstAt, expression.Value(first.UTC().Format(time.RFC3339Nano)))).
			Set(name("last_opened_at"), expression.Value(last.UTC().Format(time.RFC3339Nano))).
			Set(batch, expression.Value(id))).
		Build()
	if err != nil {
		return fmt.Errorf("share: record open: %w", err)
	}
	err = s.updateItem(ctx, tok, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 key(tok),
		UpdateExpression:                    expr.Update(),
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if dynamo.IsConditionFailed(err) {
		// Gone, or this batch written already: which, the row says.
		item, gerr := dynamo.RefusedItem(ctx, s.db, s.table, key(tok), err)
		if gerr != nil {
			return fmt.Errorf("share: record open: %w", gerr)
		}
		if len(item) == 0 {
			return fmt.Errorf("share: record open: %w", ErrNotFound)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("share: record open: %w", err)
	}
	return nil
}

// ErrClosed is returned by the recipient's writes (CountComment,
// MarkReviewed) for a share that is gone, expired or does not take
// comments: the write's own condition, so a revoke or an expiry stops
// writes from the very moment it happens.
var ErrClosed = errors.New("share closed to comments")

// openForComments is the condition of every recipient write on the share
// item: it exists, takes comments and has not expired at now.
func openForComments(now time.Time) expression.ConditionBuilder {
	exp := expression.Name("expires_at")
	return expression.AttributeExists(expression.Name("share_token")).
		And(expression.Name("allow_comments").Equal(expression.Value(true))).
		And(expression.AttributeNotExists(exp).Or(exp.GreaterThan(expression.Value(now.Unix()))))
}

// CountComment counts one new comment written through the share tok at
// now (ADD new_comments 1, one UpdateItem), conditional on the share being
// open for comments (ErrClosed otherwise). The comment handler calls it
// before writing the comment: it is the write's authorization.
func (s *Store) CountComment(ctx context.Context, tok string, now time.Time) error {
	return s.recipientUpdate(ctx, "count comment", tok, now,
		expression.Add(expression.Name("new_comments"), expression.Value(1)))
}

// UncountComment takes back a CountComment whose comment was not written
// (the meal gone or full). The share gone meanwhile is no error.
func (s *Store) UncountComment(ctx context.Context, tok string) error {
	if !token.Valid(tok) {
		return nil
	}
	expr, err := expression.NewBuilder().
		WithUpdate(expression.Add(expression.Name("new_comments"), expression.Value(-1))).
		WithCondition(expression.AttributeExists(expression.Name("share_token")).And(expression.Name("new_comments").GreaterThan(expression.Value(0)))).
		Build()
	if err != nil {
		return fmt.Errorf("share: uncount comment: %w", err)
	}
	err = s.updateItem(ctx, tok, updateInput(s.table, tok, expr))
	if err != nil && !dynamo.IsConditionFailed(err) {
		return fmt.Errorf("share: uncount comment: %w", err)
	}
	return nil
}

// MarkReviewed adds the week starting on day week ("YYYY-MM-DD", a week
// of the share's range) to the weeks its recipient marked reviewed, or
// takes it out again (on false), with one UpdateItem (ADD or DELETE on
// the reviewed_weeks string set), conditional on the share being open for
// comments (ErrClosed otherwise).
func (s *Store) MarkReviewed(ctx context.Context, tok, week string, on bool, now time.Time) error {
	set := expression.Value(&types.AttributeValueMemberSS{Value: []string{week}})
	upd := expression.Add(expression.Name("reviewed_weeks"), set)
	if !on {
		upd = expression.Delete(expression.Name("reviewed_weeks"), set)
	}
	return s.recipientUpdate(ctx, "mark reviewed", tok, now, upd)
}

// recipientUpdate runs upd on the share tok, conditional on it being open
// for comments at now.
func (s *Store) recipientUpdate(ctx context.Context, what, tok string, now time.Time, upd expression.UpdateBuilder) error {
	if !token.Valid(tok) {
		return fmt.Errorf("share: %s: %w", what, ErrClosed)
	}
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(openForComments(now)).Build()
	if err != nil {
		return fmt.Errorf("share: %s: %w", what, err)
	}
	err = s.updateItem(ctx, tok, updateInput(s.table, tok, expr))
	if dynamo.IsConditionFailed(err) {
		return fmt.Errorf("share: %s: %w", what, ErrClosed)
	}
	if err != nil {
		return fmt.Errorf("share: %s: %w", what, err)
	}
	return nil
}

// SeenComments records that ownerID was shown the comments of their share
// tok at now, n of them new: new_comments goes down by n (not to 0, so a
// comment written while the page was being made stays new) and
// comments_seen_at becomes now, with one UpdateItem conditional on the
// share being ownerID's and holding at least n new ones. It returns
// ErrNotFound for a share that is gone or someone else's; fewer than n
// new ones (another tab counted them seen) is no error.
func (s *Store) SeenComments(ctx context.Context, tok, ownerID string, n int64, now time.Time) error {
	if !token.Valid(tok) {
		return fmt.Errorf("share: seen comments: %w", ErrNotFound)
	}
	owner := expression.Name("owner_id").Equal(expression.Value(ownerID))
	cond := owner
	upd := expression.Set(expression.Name("comments_seen_at"), expression.Value(now.UTC().Format(time.RFC3339Nano)))
	if n > 0 {
		cond = cond.And(expression.Name("new_comments").GreaterThanEqual(expression.Value(n)))
		upd = upd.Add(expression.Name("new_comments"), expression.Value(-n))
	}
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("share: seen comments: %w", err)
	}
	in := updateInput(s.table, tok, expr)
	in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	err = s.updateItem(ctx, tok, in)
	if dynamo.IsConditionFailed(err) {
		item, gerr := dynamo.RefusedItem(ctx, s.db, s.table, key(tok), err)
		if gerr != nil {
			return fmt.Errorf("share: seen comments: %w", gerr)
		}
		var sh Share
		if len(item) == 0 || attributevalue.UnmarshalMap(item, &sh) != nil || sh.OwnerID != ownerID {
			return fmt.Errorf("share: seen comments: %w", ErrNotFound)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("share: seen comments: %w", err)
	}
	return nil
}

// updateInput is the UpdateItem of expr on the share tok.
func updateInput(table, tok string, expr expression.Expression) *dynamodb.UpdateItemInput {
	return &dynamodb.UpdateItemInput{
		TableName:                 aws.String(table),
		Key:                       key(tok),
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}
}

// ListByOwner returns ownerID's shares, newest first, by a paged Scan
// filtered on owner_id (DESIGN.md allows scans for an owner's settings),
// their opens counting those not written yet (CountOpen).
func (s *Store) ListByOwner(ctx context.Context, ownerID string) ([]Share, error) {
	all, err := s.scan(ctx, ownerID, false)
	if err != nil {
		return nil, fmt.Errorf("share: list by owner: %w", err)
	}
	s.withUnwritten(all)
	return all, nil
}

// List returns every share, newest first, by a paged Scan (the admin
// list), their opens counting those not written yet, as ListByOwner.
func (s *Store) List(ctx context.Context) ([]Share, error) {
	all, err := s.scan(ctx, "", false)
	if err != nil {
		return nil, fmt.Errorf("share: list: %w", err)
	}
	s.withUnwritten(all)
	return all, nil
}

// DeleteByOwner deletes every share of ownerID (a step of account
// deletion) and returns how many it deleted. It finds them with a paged,
// strongly consistent Scan and deletes them with BatchWriteItem; shares already gone are no
// error, so it can be re-run after a failure part-way.
func (s *Store) DeleteByOwner(ctx context.Context, ownerID string) (int, error) {
	if ownerID == "" {
		return 0, fmt.Errorf("share: delete by owner: empty owner id")
	}
	all, err := s.scan(ctx, ownerID, true)
	if err != nil {
		return 0, fmt.Errorf("share: delete by owner: %w", err)
	}
	keys := make([]map[string]types.AttributeValue, len(all))
	for i, sh := range all {
		keys[i] = key(sh.Token)
		s.cache.Invalidate(sh.Token)
	}
	defer func() {
		for _, sh := range all {
			s.cache.Invalidate(sh.Token)
		}
	}()
	n, err := dynamo.BatchDelete(ctx, s.db, s.table, keys)
	if err != nil {
		return n, fmt.Errorf("share: delete by owner: %w", err)
	}
	return n, nil
}

// scan reads every share, or only ownerID's if it is not "", newest first.
// consistent makes it a strongly consistent Scan (twice the read units),
// for the account deletion, which must see a share created just before the
// account was marked.
func (s *Store) scan(ctx context.Context, ownerID string, consistent bool) ([]Share, error) {
	var filter *expression.ConditionBuilder
	if ownerID != "" {
		owner := expression.Name("owner_id").Equal(expression.Value(ownerID))
		filter = &owner
	}
	in, err := s.scanInput(filter)
	if err != nil {
		return nil, err
	}
	in.ConsistentRead = aws.Bool(consistent)
	all, err := dynamo.ScanAll[Share](ctx, s.db, in)
	if err != nil {
		return nil, err
	}
	sort.Slice(all, func(i, j int) bool {
		if !all[i].CreatedAt.Equal(all[j].CreatedAt) {
			return all[i].CreatedAt.After(all[j].CreatedAt)
		}
		return all[i].Token < all[j].Token
	})
	return all, nil
}

// Count counts the shares that work at now (Active: not expired) and those
// past their expiry (Expired; TTL deletes them days late), with paced
// Select COUNT Scans, for the admin monitor.
func (s *Store) Count(ctx context.Context, pace dynamo.Pace, now time.Time) (active, expired int, err error) {
	exp := expression.Name("expires_at")
	cond := expression.AttributeExists(exp).And(exp.LessThanEqual(expression.Value(now.Unix())))
	var total int
	for _, c := range []struct {
		filter *expression.ConditionBuilder
		n      *int
	}{{nil, &total}, {&cond, &expired}} {
		in, err := s.scanInput(c.filter)
		if err == nil {
			*c.n, err = dynamo.CountPaced(ctx, s.db, in, pace)
		}
		if err != nil {
			return 0, 0, fmt.Errorf("share: count: %w", err)
		}
	}
	return total - expired, expired, nil
}

// scanInput is a Scan of the table with filter, if any, in pages of
// pageLimit items if that is set.
func (s *Store) scanInput(filter *expression.ConditionBuilder) (*dynamodb.ScanInput, error) {
	in := &dynamodb.ScanInput{TableName: aws.String(s.table)}
	if s.pageLimit > 0 {
		in.Limit = aws.Int32(s.pageLimit)
	}
	if filter != nil {
		expr, err := expression.NewBuilder().WithFilter(*filter).Build()
		if err != nil {
			return nil, err
		}
		in.FilterExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = expr.Filter(), expr.Names(), expr.Values()
	}
	return in, nil
}

// deleteIf runs one DeleteItem of the share tok on condition cond inside
// the cache's Write, so its entry is invalidated whatever the outcome.
func (s *Store) deleteIf(ctx context.Context, tok string, cond expression.ConditionBuilder) error {
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return err
	}
	return s.cache.Write(tok, func() error {
		_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName:                 aws.String(s.table),
			Key:                       key(tok),
			ConditionExpression:       expr.Condition(),
			ExpressionAttributeNames:  expr.Names(),
			ExpressionAttributeValues: expr.Values(),
		})
		return err
	})
}

// updateItem runs one UpdateItem of the share tok inside the cache's
// Write.
func (s *Store) updateItem(ctx context.Context, tok string, in *dynamodb.UpdateItemInput) error {
	return s.cache.Write(tok, func() error {
		_, err := s.db.UpdateItem(ctx, in)
		return err
	})
}

func key(tok string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"share_token": &types.AttributeValueMemberS{Value: tok}}
}

// MoveOwner gives every share of fromID to toID (the move of an account
// to a new subject): the links and their tokens stay as they are, so a
// recipient's link keeps working, now for the new account. It finds them
// with a strongly consistent paged Scan and re-points each with an
// UpdateItem conditional on its owner still being fromID; shares moved
// already are not found again, so it can be re-run. It returns how many
// it moved.
func (s *Store) MoveOwner(ctx context.Context, fromID, toID string) (int, error) {
	if fromID == "" || toID == "" {
		return 0, fmt.Errorf("share: move owner: empty owner id")
	}
	all, err := s.scan(ctx, fromID, true)
	if err != nil {
		return 0, fmt.Errorf("share: move owner: %w", err)
	}
	owner := expression.Name("owner_id")
	expr, err := expression.NewBuilder().
		WithCondition(owner.Equal(expression.Value(fromID))).
		WithUpdate(expression.Set(owner, expression.Value(toID))).Build()
	if err != nil {
		return 0, fmt.Errorf("share: move owner: %w", err)
	}
	moved := 0
	for _, sh := range all {
		err := s.updateItem(ctx, sh.Token, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.table),
			Key:                       key(sh.Token),
			UpdateExpression:          expr.Update(),
			ConditionExpression:       expr.Condition(),
			ExpressionAttributeNames:  expr.Names(),
			ExpressionAttributeValues: expr.Values(),
		})
		switch {
		case dynamo.IsConditionFailed(err):
			// Gone (revoked, expired by TTL) or moved already.
		case err != nil:
			return moved, fmt.Errorf("share: move owner: %w", err)
		default:
			moved++
		}
	}
	return moved, nil
}
