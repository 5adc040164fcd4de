package store

import (
	"context"
	"fmt"
	"math"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
)

// Encode marshals v (a struct with dynamodbav tags) into an item.
func Encode(v any) (Item, error) { return attributevalue.MarshalMap(v) }

// Decode unmarshals item into a T.
func Decode[T any](item Item) (T, error) {
	var v T
	err := attributevalue.UnmarshalMap(item, &v)
	return v, err
}

// GetAs reads the item at k, strongly consistent, decoded as T; found is
// false if there is none.
func GetAs[T any](ctx context.Context, items Items, t Table, k Key) (v T, found bool, err error) {
	item, found, err := items.Get(ctx, t, k, Read{Consistent: true})
	if err != nil || !found {
		return v, false, err
	}
	if v, err = Decode[T](item); err != nil {
		return v, false, fmt.Errorf("decode %s: %w", t.Name, err)
	}
	return v, true, nil
}

// QueryAll reads q to its end, page after page, and returns every item
// decoded as T, never nil. It is one logical Query however many pages it
// takes.
func QueryAll[T any](ctx context.Context, items Items, q Query) ([]T, error) {
	all := []T{}
	for {
		p, err := items.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		if all, err = appendDecoded(all, p.Items); err != nil {
			return nil, fmt.Errorf("decode %s: %w", q.Table.Name, err)
		}
		if p.Next == nil {
			return all, nil
		}
		q.After = p.Next
	}
}

// ScanAll reads a whole table (s to its end) and returns every item
// decoded as T, never nil: for the small admin and owner lists DESIGN.md
// allows scans for, never for a hot path.
func ScanAll[T any](ctx context.Context, items Items, s Scan) ([]T, error) {
	all := []T{}
	for {
		p, err := items.Scan(ctx, s)
		if err != nil {
			return nil, err
		}
		if all, err = appendDecoded(all, p.Items); err != nil {
			return nil, fmt.Errorf("decode %s: %w", s.Table.Name, err)
		}
		if p.Next == nil {
			return all, nil
		}
		s.After = p.Next
	}
}

func appendDecoded[T any](all []T, items []Item) ([]T, error) {
	for _, it := range items {
		v, err := Decode[T](it)
		if err != nil {
			return nil, err
		}
		all = append(all, v)
	}
	return all, nil
}

// PacedPageItems caps the items of each page of a paced read, so a page
// costs at most about that many read units and a pacer's burst covers it.
const PacedPageItems = 100

// Pace holds background reads to a rate: it is called with read units to
// spend and returns once they may be spent (limit.Pacer.Wait).
type Pace func(ctx context.Context, units int) error

// QueryPaced reads q to its end for background work, each page paid for
// through pace: before it is read as much as the page before it cost (one
// unit for the first), and after it what it cost beyond that, so the
// reads stay within their share of capacity. Each page is its own read,
// so a long scan holds no snapshot open. Pages hold at most
// PacedPageItems items unless q sets a smaller Limit.
func QueryPaced(ctx context.Context, items Items, q Query, pace Pace, page func(Page) error) error {
	if q.Limit <= 0 || q.Limit > PacedPageItems {
		q.Limit = PacedPageItems
	}
	return paced(ctx, pace, page, func(ctx context.Context, after *Key) (Page, error) {
		q.After = after
		return items.Query(ctx, q)
	})
}

// ScanPaced reads a whole table for background work (the admin monitor,
// the orphan check), paced as QueryPaced is. A page may hold no items
// and not be the last (a filter dropped them all).
func ScanPaced(ctx context.Context, items Items, s Scan, pace Pace, page func(Page) error) error {
	if s.Limit <= 0 || s.Limit > PacedPageItems {
		s.Limit = PacedPageItems
	}
	return paced(ctx, pace, page, func(ctx context.Context, after *Key) (Page, error) {
		s.After = after
		return items.Scan(ctx, s)
	})
}

// paced is the loop of QueryPaced and ScanPaced.
func paced(ctx context.Context, pace Pace, page func(Page) error, next func(context.Context, *Key) (Page, error)) error {
	ahead := 1
	var after *Key
	for {
		if err := pace(ctx, ahead); err != nil {
			return err
		}
		p, err := next(ctx, after)
		if err != nil {
			return err
		}
		cost := max(1, int(math.Ceil(p.Units)))
		if extra := cost - ahead; extra > 0 {
			if err := pace(ctx, extra); err != nil {
				return err
			}
		}
		ahead = cost
		if err := page(p); err != nil {
			return err
		}
		if p.Next == nil {
			return nil
		}
		after = p.Next
	}
}

// CountPaced counts the items of a whole table that s's filter matches,
// paced as ScanPaced reads them.
func CountPaced(ctx context.Context, items Items, s Scan, pace Pace) (int, error) {
	n := 0
	err := ScanPaced(ctx, items, s, pace, func(p Page) error {
		n += len(p.Items)
		return nil
	})
	return n, err
}
