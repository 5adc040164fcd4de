package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// MaxBatchWrite is how many requests one BatchWriteItem may carry.
const MaxBatchWrite = 25

// batchRetries bounds how often BatchDelete resends items DynamoDB left
// unprocessed (throttling), with a doubling pause from batchPause.
const (
	batchRetries = 8
	batchPause   = 20 * time.Millisecond
)

// BatchDelete deletes the items with keys from table with BatchWriteItem,
// 25 at a time, resending what DynamoDB returns as UnprocessedItems with a
// doubling pause (20 ms, 40 ms, …, 8 times). Keys already gone are no
// error, so a deletion can be re-run. It returns the number of keys sent
// for deletion before the first error, and an error if a request fails or
// items stay unprocessed.
func BatchDelete(ctx context.Context, db *dynamodb.Client, table string, keys []map[string]types.AttributeValue) (int, error) {
	done := 0
	for start := 0; start < len(keys); start += MaxBatchWrite {
		batch := keys[start:min(start+MaxBatchWrite, len(keys))]
		reqs := make([]types.WriteRequest, len(batch))
		for i, k := range batch {
			reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k}}
		}
		pause := batchPause
		for attempt := 0; len(reqs) > 0; attempt++ {
			if attempt > batchRetries {
				return done, fmt.Errorf("dynamo: batch delete %s: %d items still unprocessed after %d retries", table, len(reqs), batchRetries)
			}
			if attempt > 0 {
				select {
				case <-ctx.Done():
					return done, ctx.Err()
				case <-time.After(pause):
				}
				pause *= 2
			}
			out, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}})
			if err != nil {
				return done, fmt.Errorf("dynamo: batch delete %s: %w", table, err)
			}
			reqs = out.UnprocessedItems[table]
		}
		done += len(batch)
	}
	return done, nil
}
