package meal

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"ndiro/internal/dynamo"
)

// AllPaced returns every meal of userID, oldest first, as All does, for
// background work (`ndiro backup`): the Query's pages are paid for
// through pace (dynamo.QueryPaced), so reading a whole diary keeps to its
// share of the table's read capacity. Claims are left out.
func (s *Store) AllPaced(ctx context.Context, userID string, pace dynamo.Pace) ([]Meal, error) {
	cond := expression.Key("user_id").Equal(expression.Value(userID)).And(belowClaims())
	expr, err := expression.NewBuilder().WithKeyCondition(cond).Build()
	if err != nil {
		return nil, fmt.Errorf("meal: all paced: %w", err)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		Limit:                     s.limit(),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}
	meals := []Meal{}
	err = dynamo.QueryPaced(ctx, s.db, in, pace, func(out *dynamodb.QueryOutput) error {
		page := make([]Meal, 0, len(out.Items))
		if err := attributevalue.UnmarshalListOfMaps(out.Items, &page); err != nil {
			return err
		}
		meals = append(meals, page...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("meal: all paced: %w", err)
	}
	return meals, nil
}
