package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/storage"
)

// CheckTables describes every table of tables and returns one error line
// per table that is missing, not ACTIVE, or keyed differently from the
// definition here (partition key, sort key, both strings). AWS mode runs it
// at start, so a wrong prefix or a drifted table stops ndiro at once with a
// message naming the resource, instead of failing on a user's request.
// If DynamoDB does not answer (storage.ErrUnavailable, within the item
// budget of the client's storage.Bounds) it stops at the first table and
// returns that error.
func CheckTables(ctx context.Context, db *dynamodb.Client, tables Tables) error {
	var problems []string
	for _, t := range tables.All() {
		p, err := checkTable(ctx, db, t)
		if err != nil {
			// DynamoDB did not answer: the other tables would wait as long.
			return err
		}
		if p != "" {
			problems = append(problems, p)
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// checkTable returns what is wrong with table t ("" for nothing), or an
// error wrapping storage.ErrUnavailable if DynamoDB did not answer.
func checkTable(ctx context.Context, db *dynamodb.Client, t Table) (string, error) {
	out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(t.Name)})
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		return fmt.Sprintf("dynamodb table %s: does not exist (create it with deploy/terraform, or check NDIRO_TABLE_PREFIX and AWS_REGION)", t.Name), nil
	}
	if errors.Is(err, storage.ErrUnavailable) {
		return "", fmt.Errorf("dynamodb table %s: %w", t.Name, err)
	}
	if err != nil {
		return fmt.Sprintf("dynamodb table %s: cannot describe it: %v", t.Name, err), nil
	}
	d := out.Table
	if s := d.TableStatus; s != "" && s != types.TableStatusActive && s != types.TableStatusUpdating {
		return fmt.Sprintf("dynamodb table %s: status %s, want ACTIVE", t.Name, s), nil
	}
	attrTypes := map[string]types.ScalarAttributeType{}
	for _, a := range d.AttributeDefinitions {
		attrTypes[aws.ToString(a.AttributeName)] = a.AttributeType
	}
	var hash, rng string
	for _, k := range d.KeySchema {
		switch k.KeyType {
		case types.KeyTypeHash:
			hash = aws.ToString(k.AttributeName)
		case types.KeyTypeRange:
			rng = aws.ToString(k.AttributeName)
		}
	}
	want := func(name string) string {
		if name == "" {
			return "none"
		}
		return name + " (S)"
	}
	got := func(name string) string {
		if name == "" {
			return "none"
		}
		if ty, ok := attrTypes[name]; ok {
			return fmt.Sprintf("%s (%s)", name, ty)
		}
		return name
	}
	// minidyn describes no attribute definitions; DynamoDB always does.
	isS := func(name string) bool { t, ok := attrTypes[name]; return !ok || t == types.ScalarAttributeTypeS }
	if hash != t.PartitionKey || !isS(hash) {
		return fmt.Sprintf("dynamodb table %s: partition key is %s, want %s", t.Name, got(hash), want(t.PartitionKey)), nil
	}
	if rng != t.SortKey || (rng != "" && !isS(rng)) {
		return fmt.Sprintf("dynamodb table %s: sort key is %s, want %s", t.Name, got(rng), want(t.SortKey)), nil
	}
	return "", nil
}
