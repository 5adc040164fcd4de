package dynamo

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// ItemCache keeps items of one table in memory, by partition key, for the
// store that writes that table (DESIGN.md, sign-in: rows come from a
// write-through in-process cache). It is exact only because one process
// makes every write: the store runs each write it attempts inside Write,
// which invalidates the item before and after, whatever the outcome, and
// an entry also lapses after its TTL, the backstop for edits made outside
// the app (the console, a restore). Read is the one cached,
// generation-checked GetItem every such store uses.
//
// A read that overlapped a write is not kept: Read notes the generation
// before its GetItem and keeps the result only if it is unchanged, and
// every Invalidate moves the generation on, so a value read before a
// write finished can never outlive it in the cache.
// The generation is one counter for the whole cache: a write to one key
// also stops overlapping reads of other keys from being kept, which costs
// one more read later and keeps no per-key state.
//
// The storage under the generation check is a simplelru with a lapse time
// per entry. golang-lru's expirable LRU would replace only the lapse
// times, and it reads the wall clock itself (the TTL could not follow the
// clock tests advance, apptest.Clock) and starts a goroutine per cache
// that never ends; so it is not used.
//
// Values are kept as given and handed out as they are; V should be a value
// type (a struct, not a pointer) so callers get copies. Missing items are
// cached too (Read of no item). The zero value is not usable; use
// NewItemCache.
type ItemCache[V any] struct {
	ttl time.Duration
	now func() time.Time

	mu  sync.Mutex
	gen uint64
	lru *simplelru.LRU[string, *cached[V]]
}

// cached is one entry. An entry is never changed once made (a new read
// replaces it with another), so a hit hands out its pointer and reads it
// after the lock is released: the only copy of V is the caller's.
type cached[V any] struct {
	v       V
	found   bool
	expires time.Time
}

// NewItemCache returns a cache whose entries lapse ttl after they were
// read, by the clock now, holding at most size entries (the oldest read
// go first; size < 1 means 1: hits do not reorder entries, which keeps a
// hit free of writes, and every entry is re-read within its TTL anyway).
// ttl ≤ 0 disables caching: Get never finds anything and Read always
// reads the table.
func NewItemCache[V any](ttl time.Duration, size int, now func() time.Time) *ItemCache[V] {
	l, _ := simplelru.NewLRU[string, *cached[V]](max(size, 1), nil)
	return &ItemCache[V]{ttl: ttl, now: now, lru: l}
}

// Read returns the item of table whose partition key, the string
// attribute pk, is key, decoded as V (attributevalue): from the cache
// while its entry is fresh, else with one strongly consistent GetItem
// (consistent, because a write just made, a revoke or a deletion mark,
// must decide the next read), whose result, the item or its absence, the
// cache keeps unless a write was invalidated while it ran. found is false
// if there is no such item. err is the GetItem's error or a decode error
// ("decode: …"), not wrapped otherwise: callers add their own context.
// Nothing is kept after an error.
func (c *ItemCache[V]) Read(ctx context.Context, db *dynamodb.Client, table, pk, key string) (v V, found bool, err error) {
	return c.ReadAt(ctx, c.now(), db, table, pk, key)
}

// ReadAt is Read with its entry's freshness judged at now, a reading of
// the cache's clock the caller made: a caller making several reads for
// one request (the session guard: a token, then its users row) reads the
// clock once: a reading costs 20–30 ns on a virtual machine, where the
// guard's whole cached lookup, two hits and one reading, takes ~130 ns
// (BenchmarkFindAccountHit in package user).
func (c *ItemCache[V]) ReadAt(ctx context.Context, now time.Time, db *dynamodb.Client, table, pk, key string) (v V, found bool, err error) {
	if e := c.get(key, now); e != nil {
		return e.v, e.found, nil
	}
	return c.readTable(ctx, db, table, pk, key)
}

// readTable is Read's miss, apart so that a hit (the auth guard's path)
// does not pay for setting up the GetItem.
func (c *ItemCache[V]) readTable(ctx context.Context, db *dynamodb.Client, table, pk, key string) (v V, found bool, err error) {
	return c.load(ctx, key, func(ctx context.Context, key string) (V, bool, error) { return GetItem[V](ctx, db, table, pk, key) })
}

// ReadFunc is Read for an entry whose key is not the item's partition key
// (a secret kept in memory only, whose item is stored under its digest):
// on a miss, load reads the item (strongly consistent, as Read's GetItem
// is) for key, and the cache keeps what it found unless a write was
// invalidated while it ran. Its errors are returned as they are, and
// nothing is kept. Pass a load made once (a method value), not a closure
// per call: a hit then allocates nothing.
func (c *ItemCache[V]) ReadFunc(ctx context.Context, key string, load func(context.Context, string) (V, bool, error)) (v V, found bool, err error) {
	return c.ReadFuncAt(ctx, c.now(), key, load)
}

// ReadFuncAt is ReadFunc with its entry's freshness judged at now, a
// reading of the cache's clock the caller made (see ReadAt).
func (c *ItemCache[V]) ReadFuncAt(ctx context.Context, now time.Time, key string, load func(context.Context, string) (V, bool, error)) (v V, found bool, err error) {
	if e := c.get(key, now); e != nil {
		return e.v, e.found, nil
	}
	return c.load(ctx, key, load)
}

// load runs load for key and keeps its result if no write overlapped it.
func (c *ItemCache[V]) load(ctx context.Context, key string, load func(context.Context, string) (V, bool, error)) (v V, found bool, err error) {
	gen := c.begin()
	got, found, err := load(ctx, key)
	if err != nil {
		return v, false, err
	}
	if !found {
		c.put(key, gen, v, false)
		return v, false, nil
	}
	c.put(key, gen, got, true)
	return got, true, nil
}

// GetItem reads the item of table whose partition key, the string
// attribute pk, is key, strongly consistent, decoded as V; found is false
// if there is none. err is the GetItem's error or a decode error
// ("decode: …").
func GetItem[V any](ctx context.Context, db *dynamodb.Client, table, pk, key string) (v V, found bool, err error) {
	return GetItemAt[V](ctx, db, table, map[string]types.AttributeValue{pk: &types.AttributeValueMemberS{Value: key}})
}

// GetItemAt is GetItem for a full primary key (partition and sort key).
func GetItemAt[V any](ctx context.Context, db *dynamodb.Client, table string, key map[string]types.AttributeValue) (v V, found bool, err error) {
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            key,
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return v, false, err
	}
	if len(out.Item) == 0 {
		return v, false, nil
	}
	if err := attributevalue.UnmarshalMap(out.Item, &v); err != nil {
		return v, false, fmt.Errorf("decode: %w", err)
	}
	return v, true, nil
}

// Write runs write, a write of key's item, between two Invalidates, so
// the entry is gone from the moment the write may take effect until after
// it returns, whatever its outcome (a refused condition, a timeout whose
// result is unknown). It returns write's error.
func (c *ItemCache[V]) Write(key string, write func() error) error {
	c.Invalidate(key)
	defer c.Invalidate(key)
	return write()
}

// WriteThrough runs write as Write does, and if write succeeded and no
// other write was invalidated while it ran (so the item is exactly what
// write made), keeps v, the item as written, as key's entry: the next
// Read needs no GetItem (a sign-up's first request). It returns write's
// error.
func (c *ItemCache[V]) WriteThrough(key string, v V, write func() error) (err error) {
	start := c.invalidate(key)
	defer func() { c.finish(key, start, v, err == nil) }()
	return write()
}

// WriteReturning runs write as Write does, and if write succeeded and no
// other write was invalidated while it ran, keeps the value write
// returned, the item as the write left it (an UpdateItem's ALL_NEW
// attributes, decoded), as key's entry: the next Read needs no GetItem.
// It returns write's error.
func (c *ItemCache[V]) WriteReturning(key string, write func() (V, error)) (err error) {
	start := c.invalidate(key)
	var v V
	defer func() { c.finish(key, start, v, err == nil) }()
	v, err = write()
	return err
}

// finish is the closing Invalidate of WriteThrough: it keeps v for key if
// keep is set and the generation is still start, the one the write began
// at, all under one lock, so no write can slip in between.
func (c *ItemCache[V]) finish(key string, start uint64, v V, keep bool) {
	expires := c.now().Add(c.ttl)
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := keep && c.ttl > 0 && c.gen == start
	c.gen++
	c.lru.Remove(key)
	if kept {
		c.lru.Add(key, &cached[V]{v: v, found: true, expires: expires})
	}
}

// Invalidate drops key's entry and moves the generation on, so a read in
// flight is not kept. Stores call it before a write of key starts and
// again when it returns, successful, refused or failed (Write does both);
// a write of many items (a batch delete) calls it for each.
func (c *ItemCache[V]) Invalidate(key string) { c.invalidate(key) }

// invalidate is Invalidate, returning the generation it moved on to.
func (c *ItemCache[V]) invalidate(key string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.lru.Remove(key)
	return c.gen
}

// Len returns the number of entries held, fresh or lapsed.
func (c *ItemCache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// get returns the entry for key if there is one younger than the TTL at
// now (its found false means the item is known to be missing), or nil if
// the table must be read.
func (c *ItemCache[V]) get(key string, now time.Time) *cached[V] {
	if c.ttl <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, hit := c.lru.Peek(key) // no reordering on a hit: see NewItemCache
	if !hit {
		return nil
	}
	if !now.Before(e.expires) {
		c.lru.Remove(key)
		return nil
	}
	return e
}

// begin returns the generation to pass to put for a read starting now.
func (c *ItemCache[V]) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put keeps what a read that began at generation gen found for key (v,
// or found false for no item), unless some write was invalidated since
// gen: then the read may predate it and is dropped.
func (c *ItemCache[V]) put(key string, gen uint64, v V, found bool) {
	if c.ttl <= 0 {
		return
	}
	expires := c.now().Add(c.ttl)
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	c.lru.Add(key, &cached[V]{v: v, found: found, expires: expires})
}
