package dynamo_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"ndiro/internal/apptest"
	"ndiro/internal/dynamo"
)

func TestCheckTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, tables := apptest.Local(t)
	if err := dynamo.CheckTables(ctx, env.DynamoDB, tables); err != nil {
		t.Fatalf("CheckTables on the tables as defined = %v, want nil", err)
	}

	// A prefix under which only a wrongly keyed meals table exists.
	other := dynamo.NewTables(tables.Users.Name + "-x-")
	wrong := other.Meals.CreateInput()
	wrong.AttributeDefinitions[1].AttributeName = aws.String("date")
	wrong.KeySchema[1].AttributeName = aws.String("date")
	if _, err := env.DynamoDB.CreateTable(ctx, wrong); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.DynamoDB.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: wrong.TableName}) })
	var err error
	for i := 0; i < 100; i++ { // wait for ACTIVE on emulators that delay it
		err = dynamo.CheckTables(ctx, env.DynamoDB, other)
		if err == nil || !strings.Contains(err.Error(), "status CREATING") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err == nil {
		t.Fatal("CheckTables = nil with three tables missing and one wrong")
	}
	lines := strings.Split(err.Error(), "\n")
	want := map[string]string{
		other.Users.Name:   "dynamodb table " + other.Users.Name + ": does not exist",
		other.Meals.Name:   "dynamodb table " + other.Meals.Name + ": sort key is date",
		other.Shares.Name:  "dynamodb table " + other.Shares.Name + ": does not exist",
		other.Invites.Name: "dynamodb table " + other.Invites.Name + ": does not exist",
	}
	if len(lines) != len(want) {
		t.Fatalf("CheckTables gave %d lines, want %d:\n%s", len(lines), len(want), err)
	}
	for _, l := range lines {
		name := strings.TrimPrefix(l[:strings.Index(l, ":")], "dynamodb table ")
		if !strings.HasPrefix(l, want[name]) {
			t.Errorf("line %q, want it to start %q", l, want[name])
		}
	}
}
