package dynamo

import (
	"context"
	"fmt"
	"math"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/store"
)

// PacedPageItems caps the items of each page of a paced Scan, so one page
// costs at most about that many read units and a pacer's burst can cover
// it.
const PacedPageItems = 100

// Pace is store.Pace, for the readers not yet on the seam.
type Pace = store.Pace

// ScanPaced runs a Scan to its end for background work (the admin
// monitor, the orphan check): each page is paid for through pace before it
// is read, as much as the page before it cost (one unit for the first),
// and what it cost beyond that right after, before the next page, so the
// reads stay under their share of the table's capacity and a small table
// costs what it reads. Pages hold at most PacedPageItems items unless in sets a
// smaller Limit. A page may hold no items and still not be the last (a filter
// dropped them all): only a missing LastEvaluatedKey ends the scan. in is
// not modified.
func ScanPaced(ctx context.Context, db dynamodb.ScanAPIClient, in *dynamodb.ScanInput, pace Pace, page func(*dynamodb.ScanOutput) error) error {
	req := *in
	req.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	if req.Limit == nil {
		req.Limit = aws.Int32(PacedPageItems)
	}
	p := dynamodb.NewScanPaginator(db, &req)
	return pacePages(ctx, pace, p.HasMorePages, func(ctx context.Context) (int, func() error, error) {
		out, err := p.NextPage(ctx)
		if err != nil {
			return 0, nil, fmt.Errorf("dynamo: scan %s: %w", aws.ToString(in.TableName), err)
		}
		return PageUnits(out.ConsumedCapacity, out.ScannedCount, out.Count), func() error { return page(out) }, nil
	})
}

// pacePages is the loop of ScanPaced and QueryPaced: while more, pay
// ahead what the page before cost (1 for the first), read the next page
// (its cost, and the function that hands it on), pay what it cost beyond
// that, then hand it on.
func pacePages(ctx context.Context, pace Pace, more func() bool, next func(context.Context) (int, func() error, error)) error {
	ahead := 1
	for more() {
		if err := pace(ctx, ahead); err != nil {
			return err
		}
		cost, deliver, err := next(ctx)
		if err != nil {
			return err
		}
		if extra := cost - ahead; extra > 0 {
			if err := pace(ctx, extra); err != nil {
				return err
			}
		}
		ahead = cost
		if err := deliver(); err != nil {
			return err
		}
	}
	return nil
}

// CountPaced counts the items a Scan with in's filter matches, with
// Select COUNT summed over every page (see ScanPaced).
func CountPaced(ctx context.Context, db dynamodb.ScanAPIClient, in *dynamodb.ScanInput, pace Pace) (int, error) {
	req := *in
	req.Select = types.SelectCount
	n := 0
	err := ScanPaced(ctx, db, &req, pace, func(out *dynamodb.ScanOutput) error {
		n += int(out.Count)
		return nil
	})
	return n, err
}

// PageUnits is what a page of a Scan or Query cost in read units: the
// consumed capacity DynamoDB reports or, where a server reports none (the
// emulators), one unit per item read, an upper bound for items up to 4 KB
// read with strong consistency. At least 1.
func PageUnits(cc *types.ConsumedCapacity, scanned, count int32) int {
	if cc != nil && cc.CapacityUnits != nil {
		return max(1, int(math.Ceil(*cc.CapacityUnits)))
	}
	return max(1, int(scanned), int(count))
}

// QueryPaced runs a Query to its end for background work as ScanPaced
// runs a Scan: each page paid for through pace, before it is read as much
// as the page before it cost and after it what it cost beyond that.
// Pages hold at most PacedPageItems items unless in sets a smaller
// Limit. in is not modified.
func QueryPaced(ctx context.Context, db dynamodb.QueryAPIClient, in *dynamodb.QueryInput, pace Pace, page func(*dynamodb.QueryOutput) error) error {
	req := *in
	req.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	if req.Limit == nil {
		req.Limit = aws.Int32(PacedPageItems)
	}
	p := dynamodb.NewQueryPaginator(db, &req)
	return pacePages(ctx, pace, p.HasMorePages, func(ctx context.Context) (int, func() error, error) {
		out, err := p.NextPage(ctx)
		if err != nil {
			return 0, nil, fmt.Errorf("dynamo: query %s: %w", aws.ToString(in.TableName), err)
		}
		return PageUnits(out.ConsumedCapacity, out.ScannedCount, out.Count), func() error { return page(out) }, nil
	})
}
