package apptest

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/user"
)

// OldIssuer is the issuer of a sign-in provider no test app uses: a
// users row that records it (FromOldProvider) signed up through the
// provider a deployment used before, so the app's own sign-in is a new
// provider to it.
const OldIssuer = "https://old-provider.example"

// FromOldProvider records on the users row id that it signed up through
// OldIssuer, written around the users store as an earlier deployment
// would have, and moves the clock on by user.CacheTTL so that the store
// reads it.
func (a *App) FromOldProvider(t testing.TB, id string) {
	t.Helper()
	_, err := a.Env.DynamoDB.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(a.Tables.Users.Name),
		Key:                       map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: id}},
		UpdateExpression:          aws.String("SET issuer = :i"),
		ConditionExpression:       aws.String("attribute_exists(user_id)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":i": &types.AttributeValueMemberS{Value: OldIssuer}},
	})
	if err != nil {
		t.Fatalf("record the old provider on %s: %v", id, err)
	}
	a.Clock.Advance(user.CacheTTL)
}

// AdminMark is an admin's mark made at now (user.Store.MarkAwaitingOwner)
// for a row from OldIssuer, claimable for a day.
func AdminMark(now time.Time) user.OwnerMark {
	return user.OwnerMark{By: "admin-id", Expires: now.Add(24 * time.Hour), Issuer: OldIssuer}
}
