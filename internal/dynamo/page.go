package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// ScanAll runs a Scan to its end, following LastEvaluatedKey, and returns
// every item unmarshalled as T. Scans are for the small admin and owner
// lists DESIGN.md allows them for, never for a hot path. in is not modified.
func ScanAll[T any](ctx context.Context, db *dynamodb.Client, in *dynamodb.ScanInput) ([]T, error) {
	req := *in
	var all []T
	for {
		out, err := db.Scan(ctx, &req)
		if err != nil {
			return nil, fmt.Errorf("dynamo: scan %s: %w", deref(req.TableName), err)
		}
		page := make([]T, 0, len(out.Items))
		if err := attributevalue.UnmarshalListOfMaps(out.Items, &page); err != nil {
			return nil, fmt.Errorf("dynamo: scan %s: decode: %w", deref(req.TableName), err)
		}
		all = append(all, page...)
		if len(out.LastEvaluatedKey) == 0 {
			return all, nil
		}
		req.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// QueryAll runs a Query to its end, following LastEvaluatedKey (a result can
// span several 1 MB pages), and returns every item unmarshalled as T.
func QueryAll[T any](ctx context.Context, db *dynamodb.Client, in *dynamodb.QueryInput) ([]T, error) {
	req := *in
	all := []T{}
	for {
		out, err := db.Query(ctx, &req)
		if err != nil {
			return nil, fmt.Errorf("dynamo: query %s: %w", deref(req.TableName), err)
		}
		page := make([]T, 0, len(out.Items))
		if err := attributevalue.UnmarshalListOfMaps(out.Items, &page); err != nil {
			return nil, fmt.Errorf("dynamo: query %s: decode: %w", deref(req.TableName), err)
		}
		all = append(all, page...)
		if len(out.LastEvaluatedKey) == 0 {
			return all, nil
		}
		req.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
