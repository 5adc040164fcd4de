package meal_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
	"github.com/shopspring/decimal"

	"ndiro/internal/apptest"
	"ndiro/internal/meal"
)

// storedItem is a meals item in the shape every row has been written in,
// photo attributes top-level beside the others: the shape Meal must keep
// reading and writing, so that no row needs migrating.
func storedItem() map[string]types.AttributeValue {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	return map[string]types.AttributeValue{
		"user_id": s("sub-a"), "sk": s("2026-09-02#123000-abcdef"), "meal_id": s("123000-abcdef"),
		"date": s("2026-09-02"), "time": s("12:30:00"), "kind": s("lunch"), "notes": s("soup"),
		"kcal": n("512.5"), "protein_g": n("31.5"), "carbs_g": n("77.5"), "fat_g": n("12.5"),
		"hunger": n("2"), "fullness": n("4"),
		"photo_v": n("1790000000000000001"), "photo_w": n("1536"), "photo_h": n("2048"),
		"thumb_w": n("480"), "thumb_h": n("640"), "photo_taken": s("2024-06-14T12:31:07"),
		"created_at": s("2026-09-02T10:30:00Z"), "updated_at": s("2026-09-02T11:00:00.5Z"),
		"version": n("3"),
	}
}

// flat shows an item's attributes as their DynamoDB text ("N:512.5",
// "S:soup"), so that a difference reads as a diff.
func flat(t *testing.T, item map[string]types.AttributeValue) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, v := range item {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			out[k] = "S:" + v.Value
		case *types.AttributeValueMemberN:
			out[k] = "N:" + v.Value
		default:
			out[k] = "other"
		}
	}
	return out
}

// TestItemShape reads an item written in the stored shape through the
// store, checks every field, and writes it back: the same attributes, with
// the same names and values, but for the version and updated_at an Update
// moves on. A meal without a photo has no photo attributes at all.
func TestItemShape(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, tables := apptest.Local(t)
	store := meal.NewStore(env.DynamoDB, tables.Meals.Name)
	raw := func() map[string]types.AttributeValue {
		t.Helper()
		out, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tables.Meals.Name), ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
			"user_id": &types.AttributeValueMemberS{Value: "sub-a"}, "sk": &types.AttributeValueMemberS{Value: "2026-09-02#123000-abcdef"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item
	}
	if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tables.Meals.Name), Item: storedItem()}); err != nil {
		t.Fatal(err)
	}
	day, _ := meal.ParseDate("2026-09-02")
	got, err := store.Get(ctx, "sub-a", day, "123000-abcdef")
	if err != nil {
		t.Fatal(err)
	}
	num := func(s string) *meal.Number { n := meal.NumberOf(decimal.RequireFromString(s)); return &n }
	hunger, fullness := 2, 4
	want := meal.Meal{
		UserID: "sub-a", SK: "2026-09-02#123000-abcdef", ID: "123000-abcdef", Date: "2026-09-02", Time: "12:30:00",
		Kind: meal.Lunch, Notes: "soup", Kcal: num("512.5"), ProteinG: num("31.5"), CarbsG: num("77.5"), FatG: num("12.5"),
		Hunger: &hunger, Fullness: &fullness,
		Photo:     meal.Photo{PhotoV: 1_790_000_000_000_000_001, PhotoW: 1536, PhotoH: 2048, ThumbW: 480, ThumbH: 640, PhotoTaken: "2024-06-14T12:31:07"},
		CreatedAt: time.Date(2026, 9, 2, 10, 30, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 9, 2, 11, 0, 0, 5e8, time.UTC),
		Version: 3,
	}
	numbers := cmp.Comparer(func(a, b meal.Number) bool { return a.Decimal().Equal(b.Decimal()) })
	if d := cmp.Diff(want, *got, numbers); d != "" {
		t.Fatalf("Get of a stored item (-want +got):\n%s", d)
	}
	item, err := attributevalue.MarshalMap(got)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(flat(t, storedItem()), flat(t, item)); d != "" {
		t.Errorf("the meal read encodes to another item (-stored +encoded):\n%s", d)
	}

	got.UpdatedAt = time.Date(2026, 9, 3, 8, 0, 0, 0, time.UTC)
	if err := store.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	wantItem := flat(t, storedItem())
	wantItem["version"], wantItem["updated_at"] = "N:4", "S:2026-09-03T08:00:00Z"
	if d := cmp.Diff(wantItem, flat(t, raw())); d != "" {
		t.Errorf("item written back by Update (-want +got):\n%s", d)
	}

	got.Photo = meal.Photo{}
	if err := store.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	wantItem["version"] = "N:5"
	for _, k := range []string{"photo_v", "photo_w", "photo_h", "thumb_w", "thumb_h", "photo_taken"} {
		delete(wantItem, k)
	}
	if d := cmp.Diff(wantItem, flat(t, raw())); d != "" {
		t.Errorf("item of a meal whose photo is cleared (-want +got):\n%s", d)
	}
	if back, err := store.Get(ctx, "sub-a", day, "123000-abcdef"); err != nil || back.HasPhoto() || back.Photo != (meal.Photo{}) {
		t.Errorf("meal whose photo is cleared reads back with %+v, %v; want no photo", back.Photo, err)
	}
}
