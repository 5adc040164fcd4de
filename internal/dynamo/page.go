package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ScanAll runs a Scan to its end with the SDK's paginator (following
// LastEvaluatedKey) and returns every item unmarshalled as T, never nil.
// Scans are for the small admin and owner lists DESIGN.md allows them for,
// never for a hot path. in is not modified.
func ScanAll[T any](ctx context.Context, db dynamodb.ScanAPIClient, in *dynamodb.ScanInput) ([]T, error) {
	p := dynamodb.NewScanPaginator(db, in)
	return collect[T](ctx, "scan "+aws.ToString(in.TableName), p.HasMorePages, func(ctx context.Context) ([]map[string]types.AttributeValue, error) {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		return out.Items, nil
	})
}

// QueryAll runs a Query to its end with the SDK's paginator (a result can
// span several 1 MB pages) and returns every item unmarshalled as T, never
// nil. It is one logical Query however many pages it takes. in is not
// modified.
func QueryAll[T any](ctx context.Context, db dynamodb.QueryAPIClient, in *dynamodb.QueryInput) ([]T, error) {
	p := dynamodb.NewQueryPaginator(db, in)
	return collect[T](ctx, "query "+aws.ToString(in.TableName), p.HasMorePages, func(ctx context.Context) ([]map[string]types.AttributeValue, error) {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		return out.Items, nil
	})
}

// collect reads pages while more reports there are some, decoding every
// item.
func collect[T any](ctx context.Context, what string, more func() bool, next func(context.Context) ([]map[string]types.AttributeValue, error)) ([]T, error) {
	all := []T{}
	for more() {
		items, err := next(ctx)
		if err != nil {
			return nil, fmt.Errorf("dynamo: %s: %w", what, err)
		}
		decoded := make([]T, 0, len(items))
		if err := attributevalue.UnmarshalListOfMaps(items, &decoded); err != nil {
			return nil, fmt.Errorf("dynamo: %s: decode: %w", what, err)
		}
		all = append(all, decoded...)
	}
	return all, nil
}
