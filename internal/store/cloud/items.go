// Package cloud is the storage seam's engine for AWS mode: items in
// DynamoDB, blobs in S3, through the AWS SDK. It only translates the
// seam's requests (package store) into API calls: conditions, updates,
// key conditions and projections as expressions (store.Expr).
package cloud

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"ndiro/internal/dynamo"
	"ndiro/internal/store"
)

// Items is the item engine: store.Items on DynamoDB.
type Items struct {
	db *dynamodb.Client
}

var _ store.Items = (*Items)(nil)

// NewItems returns the engine on db's tables.
func NewItems(db *dynamodb.Client) *Items { return &Items{db: db} }

// Get implements store.Items.
func (c *Items) Get(ctx context.Context, t store.Table, k store.Key, r store.Read) (store.Item, bool, error) {
	var e store.Expr
	in := &dynamodb.GetItemInput{TableName: aws.String(t.Name), Key: t.Attrs(k), ConsistentRead: aws.Bool(r.Consistent)}
	if len(r.Project) > 0 {
		in.ProjectionExpression = aws.String(e.Projection(r.Project))
		in.ExpressionAttributeNames = e.Names()
	}
	out, err := c.db.GetItem(ctx, in)
	if err != nil {
		return nil, false, fmt.Errorf("cloud: get %s: %w", t.Name, err)
	}
	if out.Item == nil {
		return nil, false, nil
	}
	return out.Item, true, nil
}

// condition sets a write's condition and its placeholders.
func condition(e *store.Expr, cond store.Cond) *string {
	if cond.IsZero() {
		return nil
	}
	return aws.String(e.Cond(cond))
}

// Put implements store.Items.
func (c *Items) Put(ctx context.Context, t store.Table, item store.Item, cond store.Cond) (store.Item, error) {
	if err := store.CheckSize(item); err != nil {
		return nil, err
	}
	var e store.Expr
	in := &dynamodb.PutItemInput{
		TableName: aws.String(t.Name), Item: item, ConditionExpression: condition(&e, cond),
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.Names(), e.Values()
	out, err := c.db.PutItem(ctx, in)
	if err != nil {
		return nil, c.refused(ctx, t, item, err, "put")
	}
	return nonEmpty(out.Attributes), nil
}

// Update implements store.Items.
func (c *Items) Update(ctx context.Context, t store.Table, k store.Key, u store.Update, cond store.Cond) (store.Item, error) {
	var e store.Expr
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(t.Name), Key: t.Attrs(k),
		UpdateExpression:                    aws.String(e.Update(u)),
		ConditionExpression:                 condition(&e, cond),
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.Names(), e.Values()
	out, err := c.db.UpdateItem(ctx, in)
	if err != nil {
		return nil, c.refused(ctx, t, t.Attrs(k), err, "update")
	}
	return out.Attributes, nil
}

// Delete implements store.Items.
func (c *Items) Delete(ctx context.Context, t store.Table, k store.Key, cond store.Cond) (store.Item, error) {
	var e store.Expr
	in := &dynamodb.DeleteItemInput{
		TableName: aws.String(t.Name), Key: t.Attrs(k), ConditionExpression: condition(&e, cond),
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.Names(), e.Values()
	out, err := c.db.DeleteItem(ctx, in)
	if err != nil {
		return nil, c.refused(ctx, t, t.Attrs(k), err, "delete")
	}
	return nonEmpty(out.Attributes), nil
}

// refused turns a failed write's error into the seam's: a
// *store.ConditionFailedError carrying the item as it is (from the
// refusal, or read now where the server sent none), ErrTooLarge for
// DynamoDB's size refusal, else the error as it is.
func (c *Items) refused(ctx context.Context, t store.Table, item store.Item, err error, verb string) error {
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		if len(cf.Item) > 0 {
			return &store.ConditionFailedError{Current: cf.Item}
		}
		k, _ := t.KeyOf(item)
		cur, _, gerr := c.Get(ctx, t, k, store.Read{Consistent: true})
		if gerr != nil {
			return fmt.Errorf("cloud: %s %s refused, and the item could not be read: %w", verb, t.Name, gerr)
		}
		return &store.ConditionFailedError{Current: cur}
	}
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ValidationException" && strings.Contains(api.ErrorMessage(), "size") {
		return fmt.Errorf("%w: %s", store.ErrTooLarge, api.ErrorMessage())
	}
	return fmt.Errorf("cloud: %s %s: %w", verb, t.Name, err)
}

// nonEmpty is nil for an empty item (no old item).
func nonEmpty(item store.Item) store.Item {
	if len(item) == 0 {
		return nil
	}
	return item
}

// Query implements store.Items.
func (c *Items) Query(ctx context.Context, q store.Query) (store.Page, error) {
	var e store.Expr
	in := &dynamodb.QueryInput{
		TableName:              aws.String(q.Table.Name),
		KeyConditionExpression: aws.String(e.KeyCond(q.Table, q.PK, q.SK)),
		ScanIndexForward:       aws.Bool(!q.Reverse),
		ConsistentRead:         aws.Bool(q.Consistent),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		ExclusiveStartKey:      startKey(q.Table, q.After),
	}
	if !q.Filter.IsZero() {
		in.FilterExpression = aws.String(e.Cond(q.Filter))
	}
	if len(q.Project) > 0 {
		in.ProjectionExpression = aws.String(e.Projection(q.Project))
	}
	if q.Limit > 0 {
		in.Limit = aws.Int32(int32(q.Limit))
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.Names(), e.Values()
	out, err := c.db.Query(ctx, in)
	if err != nil {
		return store.Page{}, fmt.Errorf("cloud: query %s: %w", q.Table.Name, err)
	}
	return page(q.Table, out.Items, out.LastEvaluatedKey, out.ScannedCount, out.ConsumedCapacity, q.Consistent), nil
}

// Scan implements store.Items.
func (c *Items) Scan(ctx context.Context, s store.Scan) (store.Page, error) {
	var e store.Expr
	in := &dynamodb.ScanInput{
		TableName:              aws.String(s.Table.Name),
		ConsistentRead:         aws.Bool(s.Consistent),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		ExclusiveStartKey:      startKey(s.Table, s.After),
	}
	if !s.Filter.IsZero() {
		in.FilterExpression = aws.String(e.Cond(s.Filter))
	}
	if len(s.Project) > 0 {
		in.ProjectionExpression = aws.String(e.Projection(s.Project))
	}
	if s.Limit > 0 {
		in.Limit = aws.Int32(int32(s.Limit))
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.Names(), e.Values()
	out, err := c.db.Scan(ctx, in)
	if err != nil {
		return store.Page{}, fmt.Errorf("cloud: scan %s: %w", s.Table.Name, err)
	}
	return page(s.Table, out.Items, out.LastEvaluatedKey, out.ScannedCount, out.ConsumedCapacity, s.Consistent), nil
}

func startKey(t store.Table, after *store.Key) map[string]types.AttributeValue {
	if after == nil {
		return nil
	}
	return t.Attrs(*after)
}

// page makes a store.Page of a Query's or Scan's answer. Where the
// server reports no consumed capacity (the emulators), the units are
// the sizes of the items returned, as DynamoDB counts them: a lower
// bound when a filter left some out.
func page(t store.Table, items []map[string]types.AttributeValue, last map[string]types.AttributeValue, scanned int32, cc *types.ConsumedCapacity, consistent bool) store.Page {
	p := store.Page{Items: items, Scanned: int(scanned)}
	if k, ok := t.KeyOf(last); ok {
		p.Next = &k
	}
	if cc != nil && cc.CapacityUnits != nil {
		p.Units = *cc.CapacityUnits
		return p
	}
	bytes := 0
	for _, it := range items {
		bytes += store.Size(it)
	}
	p.Units = math.Ceil(float64(bytes) / 4096)
	if !consistent {
		p.Units /= 2
	}
	return p
}

// BatchDelete implements store.Items: BatchWriteItem, 25 keys a call,
// resending what DynamoDB leaves unprocessed.
func (c *Items) BatchDelete(ctx context.Context, t store.Table, keys []store.Key) error {
	attrs := make([]map[string]types.AttributeValue, len(keys))
	for i, k := range keys {
		attrs[i] = t.Attrs(k)
	}
	_, err := dynamo.BatchDelete(ctx, c.db, t.Name, attrs)
	return err
}
