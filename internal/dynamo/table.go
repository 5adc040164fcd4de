// Package dynamo holds what every DynamoDB-backed concept shares: the four
// table definitions (the one source of truth for local creation, start-up
// checks and deploy/terraform), paging and condition helpers. It knows no
// concept: stores live with their concept (user, meal, share, invite).
package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/store"
)

// Table describes one table's name and key schema. Every key attribute is a
// string (S). SortKey is "" for tables with a partition key only.
type Table struct {
	// Name is the full table name: the configured prefix plus Base.
	Name string
	// Base is the name without prefix: "users", "meals", "shares", "invites".
	Base         string
	PartitionKey string
	SortKey      string
	// TTLAttribute names the epoch-seconds attribute DynamoDB's TTL deletes
	// on; "" means no TTL. TTL deletion lags by up to days, so the app checks
	// expiry itself (DESIGN.md, share links and invites).
	TTLAttribute string
}

// Seam returns t as the storage seam names a table.
func (t Table) Seam() store.Table {
	return store.Table{Name: t.Name, PK: t.PartitionKey, SK: t.SortKey, TTL: t.TTLAttribute}
}

// Tables are the four tables of DESIGN.md "Data model", named with a prefix.
type Tables struct {
	Users   Table
	Meals   Table
	Shares  Table
	Invites Table
}

// NewTables returns the table definitions with every name starting with
// prefix (e.g. "ndiro-" gives "ndiro-users").
func NewTables(prefix string) Tables {
	return Tables{
		Users: Table{Name: prefix + "users", Base: "users", PartitionKey: "user_id"},
		// Meals rows carry no expires_at; the meal form's idempotency
		// claims (meal.ClaimPrefix) do.
		Meals:   Table{Name: prefix + "meals", Base: "meals", PartitionKey: "user_id", SortKey: "sk", TTLAttribute: "expires_at"},
		Shares:  Table{Name: prefix + "shares", Base: "shares", PartitionKey: "share_token", TTLAttribute: "expires_at"},
		Invites: Table{Name: prefix + "invites", Base: "invites", PartitionKey: "invite_token", TTLAttribute: "expires_at"},
	}
}

// All returns the four tables in a fixed order: users, meals, shares, invites.
func (t Tables) All() []Table {
	return []Table{t.Users, t.Meals, t.Shares, t.Invites}
}

// CreateInput returns the CreateTable request for t: on-demand billing,
// string keys.
func (t Table) CreateInput() *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(t.Name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(t.PartitionKey), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(t.PartitionKey), KeyType: types.KeyTypeHash},
		},
	}
	if t.SortKey != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions,
			types.AttributeDefinition{AttributeName: aws.String(t.SortKey), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema,
			types.KeySchemaElement{AttributeName: aws.String(t.SortKey), KeyType: types.KeyTypeRange})
	}
	return in
}

// CreateTables creates every table in tables that does not exist yet and
// waits until each is usable. It is for local mode and tests; in AWS the
// tables come from deploy/terraform. TTL is not set up: the emulators do not
// implement it and the app checks expiry itself.
func CreateTables(ctx context.Context, db *dynamodb.Client, tables Tables) error {
	for _, t := range tables.All() {
		if err := CreateTable(ctx, db, t); err != nil {
			return err
		}
	}
	return nil
}

// CreateTable creates t unless it is there, and waits until it is
// ACTIVE.
func CreateTable(ctx context.Context, db *dynamodb.Client, t Table) error {
	_, err := db.CreateTable(ctx, t.CreateInput())
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("dynamo: create table %s: %w", t.Name, err)
	}
	return waitActive(ctx, db, t.Name)
}

// waitActive polls DescribeTable until the table is ACTIVE. The SDK's
// TableExists waiter is not used because minidyn reports an empty status.
func waitActive(ctx context.Context, db *dynamodb.Client, name string) error {
	for i := 0; ; i++ {
		out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return fmt.Errorf("dynamo: describe table %s: %w", name, err)
		}
		if s := out.Table.TableStatus; s == "" || s == types.TableStatusActive {
			return nil
		}
		if i > 600 {
			return fmt.Errorf("dynamo: table %s still %s after a minute", name, out.Table.TableStatus)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// IsConditionFailed reports whether err is a failed condition expression of
// a conditional write.
func IsConditionFailed(err error) bool {
	var cf *types.ConditionalCheckFailedException
	return errors.As(err, &cf)
}

// RefusedItem returns the item a conditional write was refused over (err
// is its ConditionalCheckFailedException): the ALL_OLD item the refusal
// carries when the write asked for it (ReturnValuesOnConditionCheckFailure)
// and the backend sent it, else the item read now, consistently, at key in
// table. No item (nil) means there is none; the read's error is returned.
func RefusedItem(ctx context.Context, db *dynamodb.Client, table string, key map[string]types.AttributeValue, err error) (map[string]types.AttributeValue, error) {
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) && len(cf.Item) > 0 {
		return cf.Item, nil
	}
	out, gerr := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if gerr != nil {
		return nil, gerr
	}
	return out.Item, nil
}
