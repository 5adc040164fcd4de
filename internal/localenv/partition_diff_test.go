package localenv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/truora/minidyn/server"

	"ndiro/internal/dynamo"
)

// TestMatchesTheEmulator runs the same random writes (puts, updates and
// deletes, conditional or not, batches and transactions across owners)
// against the router and against the emulator alone, and compares what
// every kind of read then returns: the router may read less, never
// answer differently.
func TestMatchesTheEmulator(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := newRouted(t)
	plain := httptest.NewServer(server.NewServer())
	t.Cleanup(plain.Close)
	ref := NewDynamoClient(Endpoint{URL: plain.URL}, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	if err := dynamo.CreateTables(ctx, ref, testTables); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(29, 1))
	owners := []string{"ana", "ben", "cy", "dee"}
	var pool []string
	for i := 0; i < 60; i++ {
		pool = append(pool, mealSK(i*7))
	}
	slices.Sort(pool)
	table := aws.String(testTables.Meals.Name)
	users := aws.String(testTables.Users.Name)
	randKey := func() map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"user_id": s(owners[rng.IntN(len(owners))]), "sk": s(pool[rng.IntN(len(pool))])}
	}
	randItem := func() map[string]types.AttributeValue {
		k := randKey()
		k["kcal"], k["notes"] = n(fmt.Sprint(rng.IntN(1000))), s("soup")
		return k
	}
	cond := func() *string {
		switch rng.IntN(3) {
		case 0:
			return aws.String("attribute_not_exists(sk)")
		case 1:
			return aws.String("attribute_exists(sk)")
		}
		return nil
	}
	distinct := func(n int) []map[string]types.AttributeValue {
		seen := map[string]bool{}
		var out []map[string]types.AttributeValue
		for len(out) < n {
			it := randItem()
			k := fmt.Sprint(it["user_id"], it["sk"])
			if !seen[k] {
				seen[k] = true
				out = append(out, it)
			}
		}
		return out
	}
	key := func(it map[string]types.AttributeValue) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"user_id": it["user_id"], "sk": it["sk"]}
	}
	for step := 0; step < 160; step++ {
		// Draw the operation once, then run it on both.
		var run func(db *dynamodb.Client) error
		switch rng.IntN(6) {
		case 0, 1:
			in := &dynamodb.PutItemInput{TableName: table, Item: randItem(), ConditionExpression: cond()}
			run = func(db *dynamodb.Client) error { _, err := db.PutItem(ctx, in); return err }
		case 2:
			in := &dynamodb.UpdateItemInput{TableName: table, Key: randKey(), UpdateExpression: aws.String("SET kcal = :k"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":k": n(fmt.Sprint(rng.IntN(1000)))}, ConditionExpression: cond()}
			run = func(db *dynamodb.Client) error { _, err := db.UpdateItem(ctx, in); return err }
		case 3:
			in := &dynamodb.DeleteItemInput{TableName: table, Key: randKey(), ReturnValues: types.ReturnValueAllOld}
			run = func(db *dynamodb.Client) error { _, err := db.DeleteItem(ctx, in); return err }
		case 4:
			var reqs []types.WriteRequest
			for _, it := range distinct(1 + rng.IntN(25)) {
				if rng.IntN(3) == 0 {
					reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key(it)}})
				} else {
					reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
				}
			}
			in := &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{*table: reqs}}
			run = func(db *dynamodb.Client) error { _, err := db.BatchWriteItem(ctx, in); return err }
		case 5:
			var items []types.TransactWriteItem
			for _, it := range distinct(2 + rng.IntN(3)) {
				switch rng.IntN(3) {
				case 0:
					items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: table, Item: it, ConditionExpression: cond()}})
				case 1:
					items = append(items, types.TransactWriteItem{Delete: &types.Delete{TableName: table, Key: key(it), ConditionExpression: cond()}})
				default:
					items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: table, Key: key(it), ConditionExpression: aws.String("attribute_not_exists(sk)")}})
				}
			}
			in := &dynamodb.TransactWriteItemsInput{TransactItems: items}
			run = func(db *dynamodb.Client) error { _, err := db.TransactWriteItems(ctx, in); return err }
		}
		if rng.IntN(4) == 0 {
			id := fmt.Sprintf("u%02d", rng.IntN(20))
			if rng.IntN(2) == 0 {
				in := &dynamodb.PutItemInput{TableName: users, Item: map[string]types.AttributeValue{"user_id": s(id)}}
				prev := run
				run = func(db *dynamodb.Client) error { _, err := db.PutItem(ctx, in); return errors.Join(err, prev(db)) }
			} else {
				in := &dynamodb.DeleteItemInput{TableName: users, Key: map[string]types.AttributeValue{"user_id": s(id)}}
				prev := run
				run = func(db *dynamodb.Client) error { _, err := db.DeleteItem(ctx, in); return errors.Join(err, prev(db)) }
			}
		}
		gotErr, wantErr := run(rt.db), run(ref)
		if errCode(gotErr) != errCode(wantErr) {
			t.Fatalf("step %d: router answered %v, the emulator %v", step, gotErr, wantErr)
		}
		if step%40 == 39 {
			compareReads(t, rt.db, ref, rng, owners, pool)
		}
	}
}

// render prints an item's attributes and values, sorted by name.
func render(t *testing.T, item map[string]types.AttributeValue) string {
	t.Helper()
	var m map[string]any
	if err := attributevalue.UnmarshalMapWithOptions(item, &m, func(o *attributevalue.DecoderOptions) { o.UseNumber = true }); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(m)
}

// errCode is an error's API code ("" for none).
func errCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// compareReads compares partition Queries (whole, a random range, paged
// with a random Limit either way), Scans and GetItems of got and want.
func compareReads(t *testing.T, got, want *dynamodb.Client, rng *rand.Rand, owners, pool []string) {
	t.Helper()
	ctx := context.Background()
	table := aws.String(testTables.Meals.Name)
	read := func(db *dynamodb.Client, in dynamodb.QueryInput) []string {
		var out []string
		for _, pg := range queryAll(t, db, &in) {
			for _, it := range pg.Items {
				out = append(out, it["sk"].(*types.AttributeValueMemberS).Value+"="+it["kcal"].(*types.AttributeValueMemberN).Value)
			}
		}
		return out
	}
	for _, o := range owners {
		a, b := pool[rng.IntN(len(pool))], pool[rng.IntN(len(pool))]
		if a > b {
			a, b = b, a
		}
		for _, in := range []dynamodb.QueryInput{
			{TableName: table, KeyConditionExpression: aws.String("user_id = :u"), ExpressionAttributeValues: map[string]types.AttributeValue{":u": s(o)}},
			{TableName: table, KeyConditionExpression: aws.String("user_id = :u AND sk BETWEEN :a AND :b"), Limit: aws.Int32(1 + rng.Int32N(6)),
				ScanIndexForward: aws.Bool(rng.IntN(2) == 0), ExpressionAttributeValues: map[string]types.AttributeValue{":u": s(o), ":a": s(a), ":b": s(b)}},
			{TableName: table, KeyConditionExpression: aws.String("user_id = :u AND sk > :a"), Limit: aws.Int32(1),
				ScanIndexForward: aws.Bool(false), ExpressionAttributeValues: map[string]types.AttributeValue{":u": s(o), ":a": s(a)}},
		} {
			if d := cmp.Diff(read(want, in), read(got, in), cmpopts.EquateEmpty()); d != "" {
				t.Fatalf("Query %s %v on %s (-emulator +router):\n%s", aws.ToString(in.KeyConditionExpression), in.ExpressionAttributeValues, o, d)
			}
		}
	}
	for _, tb := range []string{testTables.Meals.Name, testTables.Users.Name} {
		scan := func(db *dynamodb.Client, limit *int32) []string {
			var out []string
			for _, pg := range scanAll(t, db, &dynamodb.ScanInput{TableName: aws.String(tb), Limit: limit}) {
				for _, it := range pg.Items {
					out = append(out, render(t, it))
				}
			}
			slices.Sort(out)
			return out
		}
		if d := cmp.Diff(scan(want, nil), scan(got, aws.Int32(5+rng.Int32N(30))), cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("Scan %s (-emulator +router):\n%s", tb, d)
		}
	}
	for i := 0; i < 10; i++ {
		k := map[string]types.AttributeValue{"user_id": s(owners[rng.IntN(len(owners))]), "sk": s(pool[rng.IntN(len(pool))])}
		g, err1 := got.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: k})
		w, err2 := want.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: k})
		if err1 != nil || err2 != nil || render(t, g.Item) != render(t, w.Item) {
			t.Fatalf("GetItem %v: router %v %v, emulator %v %v", k, g.Item, err1, w.Item, err2)
		}
	}
}
