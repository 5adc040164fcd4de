package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ScanAll runs a Scan to its end, following LastEvaluatedKey, and returns
// every item unmarshalled as T. Scans are for the small admin and owner
// lists DESIGN.md allows them for, never for a hot path. in is not modified.
func ScanAll[T any](ctx context.Context, db *dynamodb.Client, in *dynamodb.ScanInput) ([]T, error) {
	req := *in
	return collect[T]("scan "+aws.ToString(in.TableName), func(start map[string]types.AttributeValue) ([]map[string]types.AttributeValue, map[string]types.AttributeValue, error) {
		req.ExclusiveStartKey = start
		out, err := db.Scan(ctx, &req)
		if err != nil {
			return nil, nil, err
		}
		return out.Items, out.LastEvaluatedKey, nil
	})
}

// QueryAll runs a Query to its end, following LastEvaluatedKey (a result can
// span several 1 MB pages), and returns every item unmarshalled as T. It is
// one logical Query however many pages it takes. in is not modified.
func QueryAll[T any](ctx context.Context, db *dynamodb.Client, in *dynamodb.QueryInput) ([]T, error) {
	req := *in
	return collect[T]("query "+aws.ToString(in.TableName), func(start map[string]types.AttributeValue) ([]map[string]types.AttributeValue, map[string]types.AttributeValue, error) {
		req.ExclusiveStartKey = start
		out, err := db.Query(ctx, &req)
		if err != nil {
			return nil, nil, err
		}
		return out.Items, out.LastEvaluatedKey, nil
	})
}

// collect calls page from the start until it returns no LastEvaluatedKey,
// decoding every item. The result is never nil.
func collect[T any](what string, page func(start map[string]types.AttributeValue) (items []map[string]types.AttributeValue, last map[string]types.AttributeValue, err error)) ([]T, error) {
	all := []T{}
	var start map[string]types.AttributeValue
	for {
		items, last, err := page(start)
		if err != nil {
			return nil, fmt.Errorf("dynamo: %s: %w", what, err)
		}
		decoded := make([]T, 0, len(items))
		if err := attributevalue.UnmarshalListOfMaps(items, &decoded); err != nil {
			return nil, fmt.Errorf("dynamo: %s: decode: %w", what, err)
		}
		all = append(all, decoded...)
		if len(last) == 0 {
			return all, nil
		}
		start = last
	}
}
