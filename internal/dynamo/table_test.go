package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"ndiro/internal/apptest"
	"ndiro/internal/dynamo"
)

// meal is an item of the meals table, as far as these tests need one.
type meal struct {
	UserID string `dynamodbav:"user_id"`
	SK     string `dynamodbav:"sk"`
	Kcal   int    `dynamodbav:"kcal"`
}

// putMeals writes n meals of user u, sk "2026-09-01#000000-%06d", kcal i.
func putMeals(t *testing.T, db *dynamodb.Client, table, u string, n int) {
	t.Helper()
	for i := range n {
		item, err := attributevalue.MarshalMap(meal{UserID: u, SK: fmt.Sprintf("2026-09-01#000000-%06d", i), Kcal: i})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
}

func mealKey(u, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: u}, "sk": &types.AttributeValueMemberS{Value: sk}}
}

func TestRefusedItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	calls, faults := &apptest.Calls{}, &apptest.Faults{}
	env, tables := apptest.Local(t, calls.Option(), faults.DynamoOption())
	db, table := env.DynamoDB, tables.Meals.Name
	putMeals(t, db, table, "u1", 1)
	key := mealKey("u1", "2026-09-01#000000-000000")
	cond, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name("user_id"))).Build()
	if err != nil {
		t.Fatal(err)
	}
	item, _ := attributevalue.MarshalMap(meal{UserID: "u1", SK: "2026-09-01#000000-000000", Kcal: 99})
	_, refusal := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item,
		ConditionExpression: cond.Condition(), ExpressionAttributeNames: cond.Names()})
	if !dynamo.IsConditionFailed(refusal) {
		t.Fatalf("put over an existing item = %v, want a refusal", refusal)
	}
	if dynamo.IsConditionFailed(errors.New("other")) || dynamo.IsConditionFailed(nil) {
		t.Error("IsConditionFailed of another error or nil = true")
	}

	// A refusal without the item: read it now.
	calls.Reset()
	got, err := dynamo.RefusedItem(ctx, db, table, key, &types.ConditionalCheckFailedException{Message: aws.String("refused")})
	var m meal
	if err != nil || attributevalue.UnmarshalMap(got, &m) != nil || m.Kcal != 0 {
		t.Errorf("RefusedItem without the item = %v (%+v), %v, want the stored item (kcal 0)", got, m, err)
	}
	if n := calls.Counts()["GetItem"]; n != 1 {
		t.Errorf("RefusedItem without the item made %d GetItems, want 1", n)
	}
	// A refusal carrying the item (ALL_OLD): no read.
	calls.Reset()
	carried := map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: "u1"}, "kcal": &types.AttributeValueMemberN{Value: "7"}}
	got, err = dynamo.RefusedItem(ctx, db, table, key, fmt.Errorf("meal: update: %w", &types.ConditionalCheckFailedException{Item: carried}))
	if err != nil || !dynamo.SameItem(got, carried) {
		t.Errorf("RefusedItem with the item = %v, %v, want the item it carries", got, err)
	}
	if n := calls.Counts()["GetItem"]; n != 0 {
		t.Errorf("RefusedItem with the item made %d GetItems, want 0", n)
	}
	// No item at the key: nil, no error.
	got, err = dynamo.RefusedItem(ctx, db, table, mealKey("u1", "2026-09-02#000000-000000"), refusal)
	if err != nil || got != nil {
		t.Errorf("RefusedItem of a missing item = %v, %v, want nil, nil", got, err)
	}
	// The read fails: its error.
	faults.FailOnce("GetItem", table, 0)
	if _, err := dynamo.RefusedItem(ctx, db, table, key, refusal); !errors.Is(err, apptest.ErrInjected) {
		t.Errorf("RefusedItem with the read failing = %v, want the read's error", err)
	}
}

// unprocessed is a client option that answers the next n BatchWriteItem
// calls as if DynamoDB had left every request unprocessed (throttling);
// the requests were applied all the same, which a delete allows.
type unprocessed struct {
	mu    sync.Mutex
	n     int
	calls int
	sizes []int
}

func (u *unprocessed) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("unprocessed",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleInitialize(ctx, in)
				if awsmiddleware.GetOperationName(ctx) != "BatchWriteItem" || err != nil {
					return out, md, err
				}
				req := in.Parameters.(*dynamodb.BatchWriteItemInput)
				u.mu.Lock()
				defer u.mu.Unlock()
				u.calls++
				for _, reqs := range req.RequestItems {
					u.sizes = append(u.sizes, len(reqs))
				}
				if u.n > 0 {
					u.n--
					out.Result.(*dynamodb.BatchWriteItemOutput).UnprocessedItems = req.RequestItems
				}
				return out, md, err
			}), middleware.After)
	})
}

func TestBatchDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	faults, throttle := &apptest.Faults{}, &unprocessed{}
	env, tables := apptest.Local(t, faults.DynamoOption(), throttle.option)
	db, table := env.DynamoDB, tables.Meals.Name
	putMeals(t, db, table, "u1", 40)
	putMeals(t, db, table, "u2", 3)
	var keys []map[string]types.AttributeValue
	for i := range 60 { // 40 that exist, 20 already gone
		keys = append(keys, mealKey("u1", fmt.Sprintf("2026-09-01#000000-%06d", i)))
	}
	throttle.n = 2 // the first batch comes back unprocessed twice
	n, err := dynamo.BatchDelete(ctx, db, table, keys)
	if err != nil || n != 60 {
		t.Fatalf("BatchDelete of 60 keys = %d, %v, want 60, nil", n, err)
	}
	if want := []int{25, 25, 25, 25, 10}; !slices.Equal(throttle.sizes, want) {
		t.Errorf("batches sent = %v, want %v (25 at most, the unprocessed sent again)", throttle.sizes, want)
	}
	left, err := dynamo.ScanAll[meal](ctx, db, &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 3 || left[0].UserID != "u2" {
		t.Errorf("after the delete the table holds %+v, want u2's 3 meals", left)
	}
	// Re-running is no error.
	if n, err := dynamo.BatchDelete(ctx, db, table, keys[:5]); err != nil || n != 5 {
		t.Errorf("BatchDelete again = %d, %v, want 5, nil", n, err)
	}
	if n, err := dynamo.BatchDelete(ctx, db, table, nil); err != nil || n != 0 {
		t.Errorf("BatchDelete of nothing = %d, %v, want 0, nil", n, err)
	}

	// A failing request: the keys sent before it are counted.
	faults.FailOnce("BatchWriteItem", table, 1)
	if n, err := dynamo.BatchDelete(ctx, db, table, keys); !errors.Is(err, apptest.ErrInjected) || n != 25 {
		t.Errorf("BatchDelete with the second request failing = %d, %v, want 25 and the error", n, err)
	}
	// Cancelled while waiting to resend.
	cctx, cancel := context.WithCancel(ctx)
	throttle.mu.Lock()
	throttle.n = 1
	throttle.mu.Unlock()
	cancel()
	if _, err := dynamo.BatchDelete(cctx, db, table, keys[:1]); !errors.Is(err, context.Canceled) {
		t.Errorf("BatchDelete cancelled = %v, want context.Canceled", err)
	}
}

// TestBatchDeleteGivesUp: items that stay unprocessed through every
// resend (about 5 s of pauses) are an error naming how many.
func TestBatchDeleteGivesUp(t *testing.T) {
	t.Parallel()
	throttle := &unprocessed{n: 1 << 30}
	env, tables := apptest.Local(t, throttle.option)
	keys := []map[string]types.AttributeValue{mealKey("u1", "a"), mealKey("u1", "b")}
	n, err := dynamo.BatchDelete(context.Background(), env.DynamoDB, tables.Meals.Name, keys)
	if err == nil || n != 0 {
		t.Fatalf("BatchDelete with every resend unprocessed = %d, %v, want 0 and an error", n, err)
	}
	if want := fmt.Sprintf("dynamo: batch delete %s: 2 items still unprocessed after 8 retries", tables.Meals.Name); err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if throttle.calls != 9 {
		t.Errorf("%d requests sent, want 9 (the first and 8 resends)", throttle.calls)
	}
}

func TestScanAndQueryAllFollowPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	calls, faults := &apptest.Calls{}, &apptest.Faults{}
	env, tables := apptest.Local(t, calls.Option(), faults.DynamoOption())
	db, table := env.DynamoDB, tables.Meals.Name
	putMeals(t, db, table, "u1", 7)
	putMeals(t, db, table, "u2", 2)

	calls.Reset()
	all, err := dynamo.ScanAll[meal](ctx, db, &dynamodb.ScanInput{TableName: aws.String(table), Limit: aws.Int32(2)})
	if err != nil || len(all) != 9 {
		t.Fatalf("ScanAll in pages of 2 = %d items, %v, want 9", len(all), err)
	}
	if n := calls.Counts()["Scan"]; n < 5 {
		t.Errorf("ScanAll read %d pages, want at least 5 of 2 items", n)
	}
	expr, err := expression.NewBuilder().WithKeyCondition(expression.Key("user_id").Equal(expression.Value("u1"))).Build()
	if err != nil {
		t.Fatal(err)
	}
	q := &dynamodb.QueryInput{TableName: aws.String(table), Limit: aws.Int32(3), KeyConditionExpression: expr.KeyCondition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()}
	got, err := dynamo.QueryAll[meal](ctx, db, q)
	if err != nil || len(got) != 7 {
		t.Fatalf("QueryAll in pages of 3 = %d items, %v, want 7", len(got), err)
	}
	for i, m := range got {
		if m.UserID != "u1" || m.Kcal != i {
			t.Errorf("QueryAll item %d = %+v, want u1's meal %d in key order", i, m, i)
		}
	}
	if q.ExclusiveStartKey != nil {
		t.Error("QueryAll changed its input")
	}
	none, err := dynamo.ScanAll[meal](ctx, db, &dynamodb.ScanInput{TableName: aws.String(tables.Users.Name)})
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("ScanAll of an empty table = %#v, %v, want an empty, non-nil slice", none, err)
	}

	// A page that fails, and items that do not decode.
	faults.FailOnce("Scan", table, 1)
	if _, err := dynamo.ScanAll[meal](ctx, db, &dynamodb.ScanInput{TableName: aws.String(table), Limit: aws.Int32(2)}); !errors.Is(err, apptest.ErrInjected) {
		t.Errorf("ScanAll with its second page failing = %v, want the error", err)
	}
	faults.FailOnce("Query", table, 0)
	if _, err := dynamo.QueryAll[meal](ctx, db, q); !errors.Is(err, apptest.ErrInjected) {
		t.Errorf("QueryAll failing = %v, want the error", err)
	}
	type wrong struct {
		SK int `dynamodbav:"sk"`
	}
	if _, err := dynamo.QueryAll[wrong](ctx, db, q); err == nil {
		t.Error("QueryAll into a type the items do not fit = nil error")
	}
}

func TestScanPaced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, tables := apptest.Local(t)
	db, table := env.DynamoDB, tables.Meals.Name
	putMeals(t, db, table, "u1", 10)

	// Pages of 4: each page is paid ahead as much as the one before cost
	// (1 for the first), and the rest right after it. A page costs what
	// the server reports (DynamoDB, dynalite) or, reported nothing (the
	// in-process emulator), one unit per item.
	var paid []int
	pace := func(_ context.Context, units int) error { paid = append(paid, units); return nil }
	var pages, costs []int
	err := dynamo.ScanPaced(ctx, db, &dynamodb.ScanInput{TableName: aws.String(table), Limit: aws.Int32(4)}, pace, func(out *dynamodb.ScanOutput) error {
		pages = append(pages, len(out.Items))
		cost := len(out.Items)
		if cc := out.ConsumedCapacity; cc != nil && cc.CapacityUnits != nil {
			cost = int(math.Ceil(*cc.CapacityUnits))
		}
		costs = append(costs, max(1, cost))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{4, 4, 2}; !slices.Equal(pages[:3], want) || len(pages) > 4 {
		t.Errorf("pages = %v, want %v (and at most an empty last one)", pages, want)
	}
	var want []int
	ahead := 1
	for _, c := range costs {
		want = append(want, ahead)
		if c > ahead {
			want = append(want, c-ahead)
		}
		ahead = c
	}
	if !slices.Equal(paid, want) || sum(paid) < sum(costs) {
		t.Errorf("paid %v for pages costing %v, want %v: each page ahead as much as the one before, the rest after it", paid, costs, want)
	}

	n, err := dynamo.CountPaced(ctx, db, &dynamodb.ScanInput{TableName: aws.String(table), Limit: aws.Int32(3)}, func(context.Context, int) error { return nil })
	if err != nil || n != 10 {
		t.Errorf("CountPaced = %d, %v, want 10", n, err)
	}
	// Without a Limit, pages hold PacedPageItems; nothing in the input
	// changes.
	in := &dynamodb.ScanInput{TableName: aws.String(table)}
	if _, err := dynamo.CountPaced(ctx, db, in, func(context.Context, int) error { return nil }); err != nil || in.Limit != nil || in.Select != "" {
		t.Errorf("CountPaced = %v, input now %+v, want it unchanged", err, in)
	}

	stop := errors.New("stop")
	if err := dynamo.ScanPaced(ctx, db, in, func(context.Context, int) error { return stop }, nil); err != stop {
		t.Errorf("ScanPaced with the pacer refusing = %v, want its error", err)
	}
	if err := dynamo.ScanPaced(ctx, db, in, pace, func(*dynamodb.ScanOutput) error { return stop }); err != stop {
		t.Errorf("ScanPaced with the page func failing = %v, want its error", err)
	}
	// Pages of one item cost what was paid ahead: one payment a page.
	paid, pages = nil, nil
	err = dynamo.ScanPaced(ctx, db, &dynamodb.ScanInput{TableName: aws.String(table), Limit: aws.Int32(1)}, pace, func(out *dynamodb.ScanOutput) error {
		pages = append(pages, len(out.Items))
		return nil
	})
	if err != nil || len(paid) != len(pages) || sum(pages) != 10 {
		t.Errorf("ScanPaced in pages of 1 = %v: paid %v for pages %v, want one unit a page", err, paid, pages)
	}
	if _, err := dynamo.CountPaced(ctx, db, &dynamodb.ScanInput{TableName: aws.String("no-such-table")}, pace); err == nil {
		t.Error("CountPaced of a missing table = nil error")
	}
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

func TestPageUnits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cc             *types.ConsumedCapacity
		scanned, count int32
		want           int
	}{
		{&types.ConsumedCapacity{CapacityUnits: aws.Float64(2.5)}, 90, 10, 3},
		{&types.ConsumedCapacity{CapacityUnits: aws.Float64(0)}, 90, 10, 1},
		{&types.ConsumedCapacity{}, 90, 10, 90},
		{nil, 0, 10, 10},
		{nil, 0, 0, 1},
	} {
		if got := dynamo.PageUnits(tc.cc, tc.scanned, tc.count); got != tc.want {
			t.Errorf("PageUnits(%v, %d, %d) = %d, want %d", tc.cc, tc.scanned, tc.count, got, tc.want)
		}
	}
}

// TestQueryPaced: a paced Query reads its partition only, in pages, each
// paid for as ScanPaced pays (ahead as much as the page before cost, the
// rest after it), and stops on the pacer's or the page func's error.
func TestQueryPaced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, tables := apptest.Local(t)
	db, table := env.DynamoDB, tables.Meals.Name
	putMeals(t, db, table, "u1", 10)
	putMeals(t, db, table, "u2", 3)
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		Limit:                     aws.Int32(4),
		KeyConditionExpression:    aws.String("user_id = :u"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":u": &types.AttributeValueMemberS{Value: "u1"}},
	}
	var paid, pages, costs []int
	pace := func(_ context.Context, units int) error { paid = append(paid, units); return nil }
	seen := map[string]bool{}
	err := dynamo.QueryPaced(ctx, db, in, pace, func(out *dynamodb.QueryOutput) error {
		pages = append(pages, len(out.Items))
		for _, it := range out.Items {
			seen[it["user_id"].(*types.AttributeValueMemberS).Value] = true
		}
		cost := len(out.Items)
		if cc := out.ConsumedCapacity; cc != nil && cc.CapacityUnits != nil {
			cost = int(math.Ceil(*cc.CapacityUnits))
		}
		costs = append(costs, max(1, cost))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{4, 4, 2}; !slices.Equal(pages[:min(3, len(pages))], want) || len(pages) > 4 || sum(pages) != 10 || seen["u2"] {
		t.Errorf("pages = %v of users %v, want %v of u1 (and at most an empty last one)", pages, seen, want)
	}
	var want []int
	ahead := 1
	for _, c := range costs {
		want = append(want, ahead)
		if c > ahead {
			want = append(want, c-ahead)
		}
		ahead = c
	}
	if !slices.Equal(paid, want) {
		t.Errorf("paid %v for pages costing %v, want %v", paid, costs, want)
	}
	if in.Limit == nil || *in.Limit != 4 || in.ReturnConsumedCapacity != "" {
		t.Errorf("QueryPaced changed its input: %+v", in)
	}
	stop := errors.New("stop")
	if err := dynamo.QueryPaced(ctx, db, in, func(context.Context, int) error { return stop }, nil); err != stop {
		t.Errorf("QueryPaced with the pacer refusing = %v, want its error", err)
	}
	if err := dynamo.QueryPaced(ctx, db, in, pace, func(*dynamodb.QueryOutput) error { return stop }); err != stop {
		t.Errorf("QueryPaced with the page func failing = %v, want its error", err)
	}
}
