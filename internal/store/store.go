// Package store is ndiro's storage seam: the one interface under the
// domain stores, for items (tables keyed by partition and sort key,
// conditional writes, ranges of a partition, paced scans) and blobs
// (photos and staged uploads by key). Two engines implement it: DynamoDB
// and S3 in AWS mode (package cloud), SQLite and plain files on one
// machine (package disk); package storetest holds the cases both pass.
//
// The rules are the domain stores': which keys, which conditions, which
// ranges. An engine only translates them. It knows no concept.
package store

import (
	"context"
	"errors"
	"io"
	"time"
)

// Items is a set of tables. Methods are safe for concurrent use. A write
// that would leave an item larger than MaxItemBytes is refused with
// ErrTooLarge (CheckSize); a condition that does not hold fails the
// write whole with a *ConditionFailedError.
type Items interface {
	// Get returns the item at k, or found false.
	Get(ctx context.Context, t Table, k Key, r Read) (item Item, found bool, err error)
	// Put writes item (its key inside it) if cond holds, replacing any
	// item at its key, and returns the item it replaced (nil if none).
	Put(ctx context.Context, t Table, item Item, cond Cond) (old Item, err error)
	// Update applies u to the item at k if cond holds, creating it if it
	// is not there, and returns the item as it is after.
	Update(ctx context.Context, t Table, k Key, u Update, cond Cond) (updated Item, err error)
	// Delete removes the item at k if cond holds and returns it (nil if
	// there was none).
	Delete(ctx context.Context, t Table, k Key, cond Cond) (old Item, err error)
	// Query reads one page of items of one partition, in sort-key order.
	Query(ctx context.Context, q Query) (Page, error)
	// Scan reads one page of a whole table, in no order.
	Scan(ctx context.Context, s Scan) (Page, error)
	// BatchDelete removes the items at keys, any of which may be missing.
	BatchDelete(ctx context.Context, t Table, keys []Key) error
}

// Read says how a Get reads.
type Read struct {
	// Consistent asks for a strongly consistent read: one that sees
	// every write acknowledged before it.
	Consistent bool
	// Project, if set, returns only these attributes.
	Project []Path
}

// Query is one page's worth of a partition: items whose sort key is in
// SK, in ascending order (descending with Reverse).
type Query struct {
	Table Table
	PK    string
	SK    Range
	// Reverse reads from the highest sort key down.
	Reverse bool
	// Limit, if above 0, is how many items the page evaluates, before
	// Filter, as DynamoDB's Limit counts them.
	Limit int
	// After, if set, starts the page after this key: the Next of the
	// page before.
	After *Key
	// Filter leaves out items that do not match, after Limit counted
	// them.
	Filter     Cond
	Project    []Path
	Consistent bool
}

// Scan is one page of a whole table.
type Scan struct {
	Table      Table
	Limit      int
	After      *Key
	Filter     Cond
	Project    []Path
	Consistent bool
}

// Page is what a Query or Scan read.
type Page struct {
	// Items are the items that matched the filter, projected.
	Items []Item
	// Next is where the next page starts; nil when this was the last.
	Next *Key
	// Scanned is how many items the page evaluated, before the filter.
	Scanned int
	// Units is what the page cost in read capacity units: the sizes of
	// the items evaluated, in 4 KB, halved for an eventually consistent
	// read, as DynamoDB counts them.
	Units float64
}

// rangeOp is how a Range bounds the sort key.
type rangeOp int

const (
	rangeAll rangeOp = iota
	rangeBetween
	rangePrefix
	rangeAbove
	rangeBelow
)

// Range bounds a Query's sort keys; the zero Range is the whole
// partition.
type Range struct {
	op   rangeOp
	a, b string
}

// Between is every sort key from a through b, inclusive.
func Between(a, b string) Range { return Range{op: rangeBetween, a: a, b: b} }

// Prefix is every sort key that begins with p.
func Prefix(p string) Range { return Range{op: rangePrefix, a: p} }

// Above is every sort key greater than a.
func Above(a string) Range { return Range{op: rangeAbove, a: a} }

// Below is every sort key less than b.
func Below(b string) Range { return Range{op: rangeBelow, b: b} }

// ErrConditionFailed is what errors.Is finds in a *ConditionFailedError.
var ErrConditionFailed = errors.New("store: condition failed")

// ConditionFailedError is a write refused because its condition did not
// hold. Current is the item as it is (nil if there is none), so a caller
// tells "not found" from "in another state" without reading again.
type ConditionFailedError struct {
	Current Item
}

func (e *ConditionFailedError) Error() string { return ErrConditionFailed.Error() }

// Is reports true for ErrConditionFailed.
func (e *ConditionFailedError) Is(target error) bool { return target == ErrConditionFailed }

// Blobs is a bucket of blobs by key (photos, staged uploads). Keys are
// built by the server only; an engine maps them to its own names
// injectively. Methods are safe for concurrent use.
type Blobs interface {
	// Put stores size bytes of body under key with meta, whole or not at
	// all.
	Put(ctx context.Context, key string, body io.Reader, size int64, meta Meta) error
	// Get opens the blob at key from byte off for n bytes (n < 0: to
	// the end). It returns ErrNoBlob if there is none.
	Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, Info, error)
	// Head returns the blob's info, or ErrNoBlob.
	Head(ctx context.Context, key string) (Info, error)
	// Copy stores the bytes of src under dst with meta, or with src's
	// own for nil (ErrNoBlob if src is missing).
	Copy(ctx context.Context, src, dst string, meta *Meta) error
	// Delete removes the blobs at keys; missing ones are no error.
	Delete(ctx context.Context, keys ...string) error
	// List returns up to limit blobs whose keys begin with prefix and
	// sort after after, in byte order, and the key to list after next
	// ("" when there are no more). Its Infos carry Key, Size and
	// Modified; Meta comes with Head and Get.
	List(ctx context.Context, prefix, after string, limit int) ([]Info, string, error)
}

// Meta is what a blob carries besides its bytes.
type Meta struct {
	ContentType string
	// User is small user metadata (a photo's version, an upload's
	// size), names in lower case.
	User map[string]string
}

// Info describes a stored blob; Size is the whole blob's, also for a
// ranged Get.
type Info struct {
	Key      string
	Size     int64
	Meta     Meta
	Modified time.Time
}

// ErrNoBlob is a blob that is not there.
var ErrNoBlob = errors.New("store: no such blob")

// Bound is one end of a Range: a sort key, whether it is in the range
// itself, and whether there is that end at all.
type Bound struct {
	Key       string
	Inclusive bool
	Set       bool
}

// Bounds returns r's two ends, for an engine that scans a range of its
// own index: a Prefix p is [p, p+"\xff"), which holds every UTF-8 string
// that begins with p, since no UTF-8 byte is 0xff.
func (r Range) Bounds() (lo, hi Bound) {
	switch r.op {
	case rangeBetween:
		return Bound{r.a, true, true}, Bound{r.b, true, true}
	case rangePrefix:
		return Bound{r.a, true, true}, Bound{r.a + "\xff", false, true}
	case rangeAbove:
		return Bound{r.a, false, true}, Bound{}
	case rangeBelow:
		return Bound{}, Bound{r.b, false, true}
	}
	return Bound{}, Bound{}
}
