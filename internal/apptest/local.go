package apptest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"ndiro/internal/dynamo"
	"ndiro/internal/localenv"
)

// DynamoEndpointEnv names the environment variable that points the tests
// at another DynamoDB-compatible server (CI runs them against dynalite,
// which enforces DynamoDB's validation and size limits), e.g.
// NDIRO_TEST_DYNAMODB_ENDPOINT=http://127.0.0.1:4567. Unset, tests use the
// in-process emulator.
const DynamoEndpointEnv = "NDIRO_TEST_DYNAMODB_ENDPOINT"

// Local starts in-memory local backends for one test, without the
// sign-in stand-in (New has one), on a table prefix of its own, and stops
// them (deleting the tables on an external endpoint) when
// the test ends.
func Local(t testing.TB, dynamoOpts ...func(*dynamodb.Options)) (*localenv.Env, dynamo.Tables) {
	t.Helper()
	return LocalWith(t, dynamoOpts, nil)
}

// LocalWith is Local with options for the S3 client too.
func LocalWith(t testing.TB, dynamoOpts []func(*dynamodb.Options), s3Opts []func(*s3.Options)) (*localenv.Env, dynamo.Tables) {
	t.Helper()
	env, tables, stop := local(t, dynamoOpts, s3Opts, "", nil)
	t.Cleanup(stop)
	return env, tables
}

// local starts the backends, persisting under dataDir if it is set (then
// always on the in-process emulator: the data follows the tables' base
// names across the fresh prefix), with mod adjusting their options. stop
// closes them (deleting the tables on an external endpoint).
func local(t testing.TB, dynamoOpts []func(*dynamodb.Options), s3Opts []func(*s3.Options), dataDir string, mod func(*localenv.Options)) (_ *localenv.Env, _ dynamo.Tables, stop func()) {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	tables := dynamo.NewTables("t" + hex.EncodeToString(b) + "-")
	endpoint := os.Getenv(DynamoEndpointEnv)
	if dataDir != "" {
		endpoint = ""
	}
	opts := localenv.Options{
		DataDir:        dataDir,
		Tables:         tables,
		Bucket:         "test-photos",
		DynamoOptions:  dynamoOpts,
		S3Options:      s3Opts,
		DynamoEndpoint: endpoint,
	}
	if mod != nil {
		mod(&opts)
	}
	env, err := localenv.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return env, tables, func() {
		if endpoint != "" {
			for _, tb := range tables.All() {
				env.DynamoDB.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(tb.Name)})
			}
		}
		env.Close()
	}
}
