package meal

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/dynamo"
)

// ErrNotFound is returned for a meal that does not exist or belongs to
// someone else: the two are indistinguishable by design.
var ErrNotFound = errors.New("meal not found")

// Conditions on a meal's sort key: a create must not overwrite, a delete
// must find the meal.
var (
	newKey      = mustBuild(expression.AttributeNotExists(expression.Name("sk")))
	existingKey = mustBuild(expression.AttributeExists(expression.Name("sk")))
)

func mustBuild(c expression.ConditionBuilder) expression.Expression {
	e, err := expression.NewBuilder().WithCondition(c).Build()
	if err != nil {
		panic(err) // a constant expression: fails at start-up in every test
	}
	return e
}

// Store reads and writes the meals table.
type Store struct {
	db    *dynamodb.Client
	table string
	// pageLimit, if set, caps items per Query page, so tests can check that
	// queries follow LastEvaluatedKey without writing megabytes.
	pageLimit int32
}

// NewStore returns a Store on the meals table named table.
func NewStore(db *dynamodb.Client, table string) *Store {
	return &Store{db: db, table: table}
}

// ErrExists is returned by Create when m.ID was given and a meal with that
// sort key exists already.
var ErrExists = errors.New("meal already exists")

// Create writes m as a new meal of m.UserID on m.Date at m.Time. The write
// is conditional on the sort key being new (attribute_not_exists). If m.ID
// is empty Create draws one, and draws again on the 1-in-16-million clash
// of random suffixes; if the caller chose m.ID (because photo keys were
// built from it), a clash returns ErrExists.
func (s *Store) Create(ctx context.Context, m *Meal) error {
	d, err := ParseDate(m.Date)
	if err != nil {
		return fmt.Errorf("meal: create: %w", err)
	}
	tod, err := ParseTimeOfDay(m.Time)
	if err != nil {
		return fmt.Errorf("meal: create: %w", err)
	}
	chosen := m.ID != ""
	if chosen {
		if t, err := ParseID(m.ID); err != nil || t != tod {
			return fmt.Errorf("meal: create: id %q does not match time %s: %w", m.ID, m.Time, ErrBadMealID)
		}
	}
	m.Version = 1
	for attempt := 0; ; attempt++ {
		if !chosen {
			m.ID = NewID(tod)
		}
		m.SK = SortKey(d, m.ID)
		item, err := attributevalue.MarshalMap(m)
		if err != nil {
			return fmt.Errorf("meal: create: encode: %w", err)
		}
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                           aws.String(s.table),
			Item:                                item,
			ConditionExpression:                 newKey.Condition(),
			ExpressionAttributeNames:            newKey.Names(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if dynamo.IsConditionFailed(err) {
			mine, herr := s.holds(ctx, m.UserID, m.SK, err, item)
			switch {
			case herr != nil:
				// Not knowing whether the row is this write, drawing another
				// ID could make the meal twice.
				return fmt.Errorf("meal: create: %w", herr)
			case mine:
				return nil // this very write, sent again by the SDK after its answer was lost
			}
			if !chosen && attempt < 3 {
				continue
			}
			return fmt.Errorf("meal: create: %w", ErrExists)
		}
		if err != nil {
			return fmt.Errorf("meal: create: %w", err)
		}
		return nil
	}
}

// Get returns the meal id of userID on date d, or ErrNotFound.
func (s *Store) Get(ctx context.Context, userID string, d Date, id string) (*Meal, error) {
	m, found, err := dynamo.GetItemAt[Meal](ctx, s.db, s.table, key(userID, SortKey(d, id)))
	if err != nil {
		return nil, fmt.Errorf("meal: get: %w", err)
	}
	if !found {
		return nil, fmt.Errorf("meal: get: %w", ErrNotFound)
	}
	return &m, nil
}

// ErrConflict is returned by Update when the meal changed since it was read.
var ErrConflict = errors.New("meal changed meanwhile")

// Update writes m, a meal read with Get and then edited, back in full. The
// key, date and time never change. The write is conditional on the meal
// still existing at the version and comment_rev that were read
// (m.Version, m.CommentRev), so editing a meal deleted meanwhile returns
// ErrNotFound instead of bringing it back, and one the owner changed
// meanwhile returns ErrConflict instead of overwriting it. A refusal
// caused only by comments written since the read (a newer comment_rev at
// the same version) is no conflict: the owner's fields are put over the
// newer comments, read from the refused row, and written again, so an
// edit never drops a comment and never fails because of one. On success
// m.Version is the new version and m.Comments what the row holds.
//
// A full conditional PutItem rather than an UpdateItem with REMOVE for
// blanked fields: the in-process emulator ignores REMOVE, and a whole-item
// write is equally one request.
func (s *Store) Update(ctx context.Context, m *Meal) error {
	read := m.Version
	for attempt := 1; ; attempt++ {
		m.Version = read + 1
		err := s.replace(ctx, m, read, m.CommentRev)
		var cc *commentsChanged
		if errors.As(err, &cc) && attempt < commentAttempts {
			m.Comments, m.CommentRev = cc.latest.Comments, cc.latest.CommentRev
			continue
		}
		if err != nil {
			m.Version = read
			return fmt.Errorf("meal: update: %w", err)
		}
		return nil
	}
}

// replace writes m whole, conditional on the row existing at version and
// comment_rev rev (readCondition). A refusal is this very write sent
// again by the SDK after its answer was lost (nil), or what refusal says
// of the row refused over: ErrNotFound, *commentsChanged or ErrConflict.
func (s *Store) replace(ctx context.Context, m *Meal, version, rev int64) error {
	item, err := attributevalue.MarshalMap(m)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	cond := readCondition(version, rev)
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.table),
		Item:                                item,
		ConditionExpression:                 cond.Condition(),
		ExpressionAttributeNames:            cond.Names(),
		ExpressionAttributeValues:           cond.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if dynamo.IsConditionFailed(err) {
		got, gerr := dynamo.RefusedItem(ctx, s.db, s.table, key(m.UserID, m.SK), err)
		switch {
		case gerr != nil:
			return gerr
		case dynamo.SameItem(got, item):
			return nil
		}
		return refusal(got, version, rev)
	}
	return err
}

// holds reports whether the row at sk is item, the one a conditional put
// wrote: how a put whose answer was lost, sent again by the SDK's retries
// and refused by its own condition, is told from another writer's change.
// The refusal's ALL_OLD item is compared when the backend returns it,
// else the row is read (consistently; its error is returned). Numbers
// compare by value. Every write sets updated_at to its own clock reading,
// in nanoseconds, so another writer's row is the same only if it made the
// same change at the same nanosecond, and then it is as good as this one
// (a test clock that stands still makes that likelier).
func (s *Store) holds(ctx context.Context, userID, sk string, refusal error, item map[string]types.AttributeValue) (bool, error) {
	got, err := dynamo.RefusedItem(ctx, s.db, s.table, key(userID, sk), refusal)
	if err != nil {
		return false, err
	}
	return dynamo.SameItem(got, item), nil
}

func mustDate(s string) Date {
	d, _ := ParseDate(s)
	return d
}

// DeleteVersion removes m's row only if it is still at m.Version and
// m.CommentRev (the last step of a move: the row moved away must be the
// one that was copied, comments included). It returns ErrConflict if the
// row changed meanwhile (a *commentsChanged holding the row if only its
// comments did) and ErrNotFound if it is gone, which after the SDK's own
// retries may also mean that an earlier attempt of this call deleted it.
func (s *Store) DeleteVersion(ctx context.Context, m *Meal) error {
	return s.deleteVersion(ctx, m)
}

// DeleteVersionOnce is DeleteVersion in one attempt, without the SDK's
// retries, so that ErrNotFound means the row was gone before this call:
// another writer moved or deleted it. Any failure to get an answer is
// returned as it is, the delete's outcome unknown.
func (s *Store) DeleteVersionOnce(ctx context.Context, m *Meal) error {
	return s.deleteVersion(ctx, m, func(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} })
}

func (s *Store) deleteVersion(ctx context.Context, m *Meal, optFns ...func(*dynamodb.Options)) error {
	cond := readCondition(m.Version, m.CommentRev)
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 key(m.UserID, m.SK),
		ConditionExpression:                 cond.Condition(),
		ExpressionAttributeNames:            cond.Names(),
		ExpressionAttributeValues:           cond.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, optFns...)
	if dynamo.IsConditionFailed(err) {
		// Changed or gone: the row refused over says which.
		got, gerr := dynamo.RefusedItem(ctx, s.db, s.table, key(m.UserID, m.SK), err)
		if gerr != nil {
			return fmt.Errorf("meal: delete version: %w", gerr)
		}
		return fmt.Errorf("meal: delete version: %w", refusal(got, m.Version, m.CommentRev))
	}
	if err != nil {
		return fmt.Errorf("meal: delete version: %w", err)
	}
	return nil
}

// Delete removes the meal id of userID on date d and returns it as it was,
// or ErrNotFound if there was none.
func (s *Store) Delete(ctx context.Context, userID string, d Date, id string) (*Meal, error) {
	out, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                aws.String(s.table),
		Key:                      key(userID, SortKey(d, id)),
		ConditionExpression:      existingKey.Condition(),
		ExpressionAttributeNames: existingKey.Names(),
		ReturnValues:             types.ReturnValueAllOld,
	})
	if dynamo.IsConditionFailed(err) {
		return nil, fmt.Errorf("meal: delete: %w", ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("meal: delete: %w", err)
	}
	var m Meal
	if err := attributevalue.UnmarshalMap(out.Attributes, &m); err != nil {
		return nil, fmt.Errorf("meal: delete: decode: %w", err)
	}
	return &m, nil
}

// Month returns userID's meals in month m, oldest first, with ONE Query:
// begins_with(sk, "2026-09-"), following LastEvaluatedKey across 1 MB pages.
func (s *Store) Month(ctx context.Context, userID string, m Month) ([]Meal, error) {
	meals, err := s.query(ctx, userID, expression.KeyBeginsWith(expression.Key("sk"), m.Prefix()))
	if err != nil {
		return nil, fmt.Errorf("meal: month %s: %w", m, err)
	}
	return meals, nil
}

// Window returns userID's meals from day from through day to, inclusive,
// oldest first, with ONE Query: sk BETWEEN "from#" AND "to#~". It returns
// ErrBadRange or ErrLongRange for a window DayRange refuses.
func (s *Store) Window(ctx context.Context, userID string, from, to Date) ([]Meal, error) {
	lo, hi, err := DayRange(from, to)
	if err != nil {
		return nil, fmt.Errorf("meal: window: %w", err)
	}
	meals, err := s.query(ctx, userID, expression.KeyBetween(expression.Key("sk"), expression.Value(lo), expression.Value(hi)))
	if err != nil {
		return nil, fmt.Errorf("meal: window %s..%s: %w", from, to, err)
	}
	return meals, nil
}

// Beyond returns userID's meal nearest outside a window: with before, the
// last meal whose sort key is below lo; otherwise the first above hi (lo
// and hi as DayRange gives them), read as BETWEEN hi AND MealKeyCeiling
// (hi, ending "#~", is no meal's key) so that no idempotency claim is
// taken for a meal. ONE Query with Limit 1, read backwards for before. It returns ErrNotFound when there is no such meal.
func (s *Store) Beyond(ctx context.Context, userID, lo, hi string, before bool) (*Meal, error) {
	// Up to the ceiling only: claims (idem.go) sort above every meal.
	sk := expression.KeyBetween(expression.Key("sk"), expression.Value(hi), expression.Value(MealKeyCeiling))
	if before {
		sk = expression.Key("sk").LessThan(expression.Value(lo))
	}
	return s.first(ctx, "beyond", userID, sk, before)
}

// Adjacent returns userID's meal next to the one at sort key sk within
// lo..hi (DayRange's bounds, e.g. a share's range): with before, the
// last meal below sk; otherwise the first above it. It is ONE Query with
// Limit 1 whose key condition is clamped to lo..hi, so nothing outside
// them is read: sk BETWEEN lo AND below(sk), read backwards, or BETWEEN
// above(sk) AND hi (KeyBelow, KeyAbove). It returns ErrNotFound when there
// is no such meal, and for an sk that is not a sort key.
func (s *Store) Adjacent(ctx context.Context, userID, sk, lo, hi string, before bool) (*Meal, error) {
	if _, _, err := ParseSortKey(sk); err != nil {
		return nil, fmt.Errorf("meal: adjacent: %w", ErrNotFound)
	}
	a, b := KeyAbove(sk), hi
	if before {
		a, b = lo, KeyBelow(sk)
	}
	if b < a {
		return nil, fmt.Errorf("meal: adjacent: %w", ErrNotFound)
	}
	return s.first(ctx, "adjacent", userID, expression.KeyBetween(expression.Key("sk"), expression.Value(a), expression.Value(b)), before)
}

// first is the one meal of userID's partition whose sort key meets sk:
// ONE Query with Limit 1, read backwards with last (the highest such key),
// else forwards. It returns ErrNotFound when no meal meets it; op names
// the caller in errors.
func (s *Store) first(ctx context.Context, op, userID string, sk expression.KeyConditionBuilder, last bool) (*Meal, error) {
	expr, err := expression.NewBuilder().WithKeyCondition(expression.Key("user_id").Equal(expression.Value(userID)).And(sk)).Build()
	if err != nil {
		return nil, fmt.Errorf("meal: %s: %w", op, err)
	}
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		Limit:                     aws.Int32(1),
		ScanIndexForward:          aws.Bool(!last),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	if err != nil {
		return nil, fmt.Errorf("meal: %s: %w", op, err)
	}
	if len(out.Items) == 0 {
		return nil, fmt.Errorf("meal: %s: %w", op, ErrNotFound)
	}
	var m Meal
	if err := attributevalue.UnmarshalMap(out.Items[0], &m); err != nil {
		return nil, fmt.Errorf("meal: %s: decode: %w", op, err)
	}
	return &m, nil
}

// All returns every meal of userID, oldest first (export and account
// deletion). It pages through the partition with one Query, below
// MealKeyCeiling: no idempotency claim is a meal.
func (s *Store) All(ctx context.Context, userID string) ([]Meal, error) {
	meals, err := s.query(ctx, userID, belowClaims())
	if err != nil {
		return nil, fmt.Errorf("meal: all: %w", err)
	}
	return meals, nil
}

// DeleteAll deletes every meal of userID (a step of account deletion),
// and every idempotency claim with them (the whole partition):
// strongly consistent Query pages of keys only, each page deleted with BatchWriteItem (25 at a
// time, unprocessed items resent). It returns how many meals it deleted;
// meals already gone are no error, so it can be re-run after a failure
// part-way.
func (s *Store) DeleteAll(ctx context.Context, userID string) (int, error) {
	if userID == "" {
		return 0, fmt.Errorf("meal: delete all: empty user id")
	}
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key("user_id").Equal(expression.Value(userID))).
		WithProjection(expression.NamesList(expression.Name("user_id"), expression.Name("sk"))).
		Build()
	if err != nil {
		return 0, fmt.Errorf("meal: delete all: %w", err)
	}
	// Strongly consistent: a meal written just before the account was
	// marked (the write gate waited for it) must be seen.
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		ConsistentRead:            aws.Bool(true),
		Limit:                     s.limit(),
		KeyConditionExpression:    expr.KeyCondition(),
		ProjectionExpression:      expr.Projection(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	deleted := 0
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return deleted, fmt.Errorf("meal: delete all: %w", err)
		}
		n, err := dynamo.BatchDelete(ctx, s.db, s.table, page.Items)
		deleted += n
		if err != nil {
			return deleted, fmt.Errorf("meal: delete all: %w", err)
		}
	}
	return deleted, nil
}

// CountByOwner counts every meal of every owner, by owner's user ID,
// with a paced Scan of the partition keys (the admin monitor's counts
// and its recount of user.Usage); idempotency claims are filtered out.
// The Scan is strongly consistent: the recount must see every meal
// written before it began.
func (s *Store) CountByOwner(ctx context.Context, pace dynamo.Pace) (map[string]int64, error) {
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(s.table),
		Limit:                     s.limit(),
		ConsistentRead:            aws.Bool(true),
		FilterExpression:          ownersOfMeals.Filter(),
		ProjectionExpression:      ownersOfMeals.Projection(),
		ExpressionAttributeNames:  ownersOfMeals.Names(),
		ExpressionAttributeValues: ownersOfMeals.Values(),
	}
	n := map[string]int64{}
	err := dynamo.ScanPaced(ctx, s.db, in, pace, func(out *dynamodb.ScanOutput) error {
		for _, it := range out.Items {
			if v, ok := it["user_id"].(*types.AttributeValueMemberS); ok {
				n[v.Value]++
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("meal: count by owner: %w", err)
	}
	return n, nil
}

// ownersOfMeals is CountByOwner's Scan: meals only (mealsOnly), their
// owner's ID alone (a string: the emulator projects numbers as floats).
var ownersOfMeals = func() expression.Expression {
	e, err := expression.NewBuilder().
		WithFilter(expression.Name("sk").LessThan(expression.Value(MealKeyCeiling))).
		WithProjection(expression.NamesList(expression.Name("user_id"))).
		Build()
	if err != nil {
		panic(err) // a constant expression: fails at start-up in every test
	}
	return e
}()

// ScanPhotos calls fn with every meal of every owner, by a paced Scan (the
// orphan check). It reads whole items: the in-process emulator turns
// numbers into floats when it projects them, and photo_v has 19 digits.
// Idempotency claims are filtered out: they name no photo, and one left
// by a deleted user expires by TTL.
func (s *Store) ScanPhotos(ctx context.Context, pace dynamo.Pace, fn func(*Meal) error) error {
	err := dynamo.ScanPaced(ctx, s.db, s.scanMeals(), pace, func(out *dynamodb.ScanOutput) error {
		var page []Meal
		if err := attributevalue.UnmarshalListOfMaps(out.Items, &page); err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		for i := range page {
			if err := fn(&page[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("meal: scan photos: %w", err)
	}
	return nil
}

// DeleteKeys deletes the meals rows of one owner with the given sort keys
// (the orphan clean-up: rows whose users row is gone), with BatchWriteItem.
// It returns how many it deleted; rows already gone are no error.
func (s *Store) DeleteKeys(ctx context.Context, userID string, sks []string) (int, error) {
	keys := make([]map[string]types.AttributeValue, len(sks))
	for i, sk := range sks {
		keys[i] = key(userID, sk)
	}
	n, err := dynamo.BatchDelete(ctx, s.db, s.table, keys)
	if err != nil {
		return n, fmt.Errorf("meal: delete keys: %w", err)
	}
	return n, nil
}

// query runs one Query on userID's partition, with at most one sort-key
// condition, to its last page.
func (s *Store) query(ctx context.Context, userID string, sk ...expression.KeyConditionBuilder) ([]Meal, error) {
	cond := expression.Key("user_id").Equal(expression.Value(userID))
	if len(sk) > 0 {
		cond = cond.And(sk[0])
	}
	expr, err := expression.NewBuilder().WithKeyCondition(cond).Build()
	if err != nil {
		return nil, err
	}
	return dynamo.QueryAll[Meal](ctx, s.db, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		Limit:                     s.limit(),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
}

// scanMeals is a Scan of the table's meals, claims filtered out.
func (s *Store) scanMeals() *dynamodb.ScanInput {
	return &dynamodb.ScanInput{
		TableName:                 aws.String(s.table),
		Limit:                     s.limit(),
		FilterExpression:          mealsOnly.Filter(),
		ExpressionAttributeNames:  mealsOnly.Names(),
		ExpressionAttributeValues: mealsOnly.Values(),
	}
}

func (s *Store) limit() *int32 {
	if s.pageLimit > 0 {
		return aws.Int32(s.pageLimit)
	}
	return nil
}

func key(userID, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"user_id": &types.AttributeValueMemberS{Value: userID},
		"sk":      &types.AttributeValueMemberS{Value: sk},
	}
}

// CopyTo writes m, a meal of another account, as the same meal of userID
// (the move of an account to a new subject): every attribute as it is
// (version, comments, photo version and sizes; the photo keys follow
// from the user ID, so they name userID's copies) under userID's
// partition key, on the condition that the sort key is new there. A meal
// copied already is no error, so the copy can be re-run.
func (s *Store) CopyTo(ctx context.Context, m *Meal, userID string) error {
	if userID == "" || m.SK == "" {
		return fmt.Errorf("meal: copy: empty user id or sort key")
	}
	c := *m
	c.UserID = userID
	item, err := attributevalue.MarshalMap(&c)
	if err != nil {
		return fmt.Errorf("meal: copy: encode: %w", err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.table),
		Item:                     item,
		ConditionExpression:      newKey.Condition(),
		ExpressionAttributeNames: newKey.Names(),
	})
	if err != nil && !dynamo.IsConditionFailed(err) {
		return fmt.Errorf("meal: copy: %w", err)
	}
	return nil
}
