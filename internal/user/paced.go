package user

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"ndiro/internal/dynamo"
)

// ListPaced returns every user as List does, by a strongly consistent
// Scan paid for through pace (dynamo.ScanPaced), for background work over
// every account (`ndiro backup`, the admin monitor's recount of Usage,
// which must see every write made before it began). Items under reserved
// keys are no users and are not listed.
func (s *Store) ListPaced(ctx context.Context, pace dynamo.Pace) ([]User, error) {
	in, err := s.scanUsers(nil)
	if err != nil {
		return nil, fmt.Errorf("user: list paced: %w", err)
	}
	in.ConsistentRead = aws.Bool(true)
	users := []User{}
	err = dynamo.ScanPaced(ctx, s.db, in, pace, func(out *dynamodb.ScanOutput) error {
		page := make([]User, 0, len(out.Items))
		if err := attributevalue.UnmarshalListOfMaps(out.Items, &page); err != nil {
			return err
		}
		users = append(users, page...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("user: list paced: %w", err)
	}
	return users, nil
}
