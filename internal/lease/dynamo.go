package lease

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/dynamo"
)

// Dynamo is the lease item in a DynamoDB table: the item whose string
// partition key attribute PK is Key. Its attributes: holder, instance,
// counter (N), until (RFC 3339), ttl_ms (N). The table's other readers
// must leave the key out of their scans (ndiro keeps it in the users
// table under a reserved key, user.LeaseKey).
type Dynamo struct {
	DB      *dynamodb.Client
	Table   string
	PK, Key string
}

func (d Dynamo) key() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{d.PK: &types.AttributeValueMemberS{Value: d.Key}}
}

// Read reads the item, strongly consistent.
func (d Dynamo) Read(ctx context.Context) (Record, bool, error) {
	out, err := d.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.Table), Key: d.key(), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Record{}, false, fmt.Errorf("lease: read: %w", err)
	}
	if len(out.Item) == 0 {
		return Record{}, false, nil
	}
	r, err := decode(out.Item)
	return r, err == nil, err
}

// Write puts rec, conditional on the stored counter being prev (no item
// for prev 0).
func (d Dynamo) Write(ctx context.Context, rec Record, prev int64) error {
	item := d.key()
	item["holder"] = &types.AttributeValueMemberS{Value: rec.Holder}
	item["instance"] = &types.AttributeValueMemberS{Value: rec.Instance}
	item["counter"] = num(rec.Counter)
	item["until"] = &types.AttributeValueMemberS{Value: rec.Until.UTC().Format(time.RFC3339Nano)}
	item["ttl_ms"] = num(rec.TTL.Milliseconds())
	in := &dynamodb.PutItemInput{
		TableName:                           aws.String(d.Table),
		Item:                                item,
		ExpressionAttributeNames:            map[string]string{"#k": d.PK},
		ConditionExpression:                 aws.String("attribute_not_exists(#k)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if prev != 0 {
		in.ExpressionAttributeNames = map[string]string{"#c": "counter"}
		in.ConditionExpression = aws.String("#c = :prev")
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":prev": num(prev)}
	}
	_, err := d.DB.PutItem(ctx, in)
	if err == nil {
		return nil
	}
	if !dynamo.IsConditionFailed(err) {
		return fmt.Errorf("lease: write: %w", err)
	}
	cur, gerr := dynamo.RefusedItem(ctx, d.DB, d.Table, d.key(), err)
	if gerr != nil {
		return fmt.Errorf("lease: write refused, and the item could not be read: %w", gerr)
	}
	if len(cur) == 0 {
		return &ConflictError{}
	}
	r, derr := decode(cur)
	if derr != nil {
		return derr
	}
	return &ConflictError{Current: r, Found: true}
}

// Delete deletes the item if it is at counter prev and written by
// instance.
func (d Dynamo) Delete(ctx context.Context, prev int64, instance string) error {
	_, err := d.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(d.Table),
		Key:                       d.key(),
		ConditionExpression:       aws.String("#c = :prev AND #i = :inst"),
		ExpressionAttributeNames:  map[string]string{"#c": "counter", "#i": "instance"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":prev": num(prev), ":inst": &types.AttributeValueMemberS{Value: instance}},
	})
	if err != nil && !dynamo.IsConditionFailed(err) {
		return fmt.Errorf("lease: release: %w", err)
	}
	return nil
}

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func decode(item map[string]types.AttributeValue) (Record, error) {
	var r Record
	s := func(k string) string {
		if v, ok := item[k].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	n := func(k string) (int64, error) {
		v, ok := item[k].(*types.AttributeValueMemberN)
		if !ok {
			return 0, fmt.Errorf("lease: item: %s is not a number", k)
		}
		return strconv.ParseInt(v.Value, 10, 64)
	}
	r.Holder, r.Instance = s("holder"), s("instance")
	var err error
	if r.Counter, err = n("counter"); err != nil {
		return r, err
	}
	ms, err := n("ttl_ms")
	if err != nil {
		return r, err
	}
	r.TTL = time.Duration(ms) * time.Millisecond
	if r.Until, err = time.Parse(time.RFC3339Nano, s("until")); err != nil {
		return r, fmt.Errorf("lease: item: until: %w", err)
	}
	return r, nil
}
