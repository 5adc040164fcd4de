package dynamo

import (
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// ItemCache keeps items of one table in memory, by key, for the store that
// writes that table (DESIGN.md, sign-in: rows come from a write-through
// in-process cache). It is exact only because one process makes every
// write: the store calls Invalidate before and after each write it
// attempts, whatever the outcome, and an entry also lapses after its TTL,
// the backstop for edits made outside the app (the console, a restore).
//
// A read that overlapped a write is not kept: Begin returns a generation
// that Put checks, and every Invalidate moves the generation on, so a
// value read before a write finished can never outlive it in the cache.
// The generation is one counter for the whole cache: a write to one key
// also stops overlapping reads of other keys from being kept, which costs
// one more read later and keeps no per-key state.
//
// Values are kept as given and handed out as they are; V should be a value
// type (a struct, not a pointer) so callers get copies. Missing items can
// be cached too (Put with found false). The zero value is not usable; use
// NewItemCache.
type ItemCache[V any] struct {
	ttl time.Duration
	now func() time.Time

	mu  sync.Mutex
	gen uint64
	lru *simplelru.LRU[string, cached[V]]
}

type cached[V any] struct {
	v       V
	found   bool
	expires time.Time
}

// NewItemCache returns a cache whose entries lapse ttl after they were
// read, by the clock now, holding at most size entries (the oldest read
// go first; size < 1 means 1: hits do not reorder entries, which keeps a
// hit free of writes, and every entry is re-read within its TTL anyway). ttl ≤ 0 disables caching: Get never
// finds anything.
func NewItemCache[V any](ttl time.Duration, size int, now func() time.Time) *ItemCache[V] {
	l, _ := simplelru.NewLRU[string, cached[V]](max(size, 1), nil)
	return &ItemCache[V]{ttl: ttl, now: now, lru: l}
}

// Get returns the entry for key if there is one younger than the TTL:
// found false means the item is known to be missing. ok is false if the
// cache has no (fresh) entry and the caller must read the table.
func (c *ItemCache[V]) Get(key string) (v V, found, ok bool) {
	if c.ttl <= 0 {
		return v, false, false
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e, hit := c.lru.Peek(key) // no reordering on a hit: see NewItemCache
	if !hit {
		return v, false, false
	}
	if !now.Before(e.expires) {
		c.lru.Remove(key)
		return v, false, false
	}
	return e.v, e.found, true
}

// Begin returns the generation to pass to Put for a read starting now.
func (c *ItemCache[V]) Begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// Put keeps what a read that began at generation gen found for key (v,
// or found false for no item), unless some write was invalidated since
// gen: then the read may predate it and is dropped.
func (c *ItemCache[V]) Put(key string, gen uint64, v V, found bool) {
	if c.ttl <= 0 {
		return
	}
	expires := c.now().Add(c.ttl)
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	c.lru.Add(key, cached[V]{v: v, found: found, expires: expires})
}

// Invalidate drops key's entry and moves the generation on, so a read in
// flight is not kept. Stores call it before a write of key starts and
// again when it returns, successful, refused or failed.
func (c *ItemCache[V]) Invalidate(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.lru.Remove(key)
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

// Len returns the number of entries held, fresh or lapsed.
func (c *ItemCache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
