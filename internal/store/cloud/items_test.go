package cloud

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/truora/minidyn/server"

	"ndiro/internal/dynamo"
	"ndiro/internal/localenv"
	"ndiro/internal/store"
	"ndiro/internal/store/storetest"
)

// TestItemsConformance runs the seam's cases on DynamoDB: the in-process
// emulator (minidyn), or the server at NDIRO_TEST_DYNAMODB_ENDPOINT
// (dynalite in CI), which checks sizes and validation as DynamoDB does.
func TestItemsConformance(t *testing.T) {
	endpoint := localenv.Endpoint{URL: os.Getenv("NDIRO_TEST_DYNAMODB_ENDPOINT")}
	var gaps map[string]string
	if endpoint.URL == "" {
		endpoint, gaps = inProcess(t, "dynamodb.test", server.NewServer()), minidynGaps
	}
	db := localenv.NewDynamoClient(endpoint)
	var b [4]byte
	rand.Read(b[:])
	storetest.RunItems(t, "conf-"+hex.EncodeToString(b[:])+"-", gaps, func(t *testing.T, tb storetest.Tables) store.Items {
		for _, st := range []store.Table{tb.Hash, tb.Range} {
			if err := dynamo.CreateTable(context.Background(), db, dynamo.Table{Name: st.Name, PartitionKey: st.PK, SortKey: st.SK}); err != nil {
				t.Fatal(err)
			}
		}
		return NewItems(db)
	})
}

// minidynGaps are the cases the in-process emulator fails where DynamoDB
// and dynalite pass (make dynamodb runs them all on dynalite).
var minidynGaps = map[string]string{
	"RoundTrip":          "a projection of a nested path returns other attributes",
	"ExactNumbers":       "arithmetic and projections pass numbers through float64",
	"PutConditions":      "PutItem's ReturnValues ALL_OLD returns the new item",
	"UpdateClauses":      "SET of an empty map beside ADD stores another clause's value",
	"Conditions":         "a comparison across types is a ValidationException, not false",
	"SizeLimit":          "no 400 KB limit on UpdateItem",
	"QueryFilterProject": "Limit counts items after the filter; ScannedCount is 0",
	"QueryRanges":        "ScannedCount is 0",
}
