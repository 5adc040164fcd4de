package photo

import (
	"context"
	"math"
	"sync"
	"unsafe"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/sync/singleflight"
)

// Cache is the in-process photo cache in front of S3: least-recently-used,
// bounded by bytes of photo data, valid because exactly one process serves
// the bucket (DESIGN.md, caching). Entries are found by S3 key; each holds
// the bytes of one version, and callers serve it only under that version.
// Concurrent misses for one key share one fetch (singleflight), which runs
// detached from any single requester, so one requester cancelling fails no
// other; the storage budget of its S3 call (package storage) bounds it,
// and a stall ends as storage.ErrUnavailable.
type Cache struct {
	budget  int64 // bytes; 0 disables caching
	maxItem int64 // bytes; larger objects are served but not kept
	group   singleflight.Group

	mu        sync.Mutex
	lru       *simplelru.LRU[string, *Object]
	bytes     int64
	flights   map[string]*flight
	hits      int64
	misses    int64
	evictions int64
}

// flight is one fetch in flight. Forget marks it stale: the bytes it reads
// may predate a replace, so they are returned to its waiters but not kept.
type flight struct{ stale bool }

// Stats are the cache counters the admin monitor shows.
type Stats struct {
	Hits, Misses, Evictions int64
	// Bytes is the photo data held now; never more than Budget.
	Bytes, Budget int64
	Items         int
}

// maxItemShare: an object larger than budget/maxItemShare is not cached,
// so one huge photo cannot flush the whole cache.
const maxItemShare = 8

// NewCache returns a cache holding at most budget bytes of photo data; 0
// disables caching (every Get fetches, concurrent ones still shared).
func NewCache(budget int64) *Cache {
	c := &Cache{
		budget:  max(budget, 0),
		maxItem: max(budget, 0) / maxItemShare,
		flights: map[string]*flight{},
	}
	// The LRU's own size limit is not used: the byte budget decides.
	c.lru, _ = simplelru.NewLRU[string, *Object](math.MaxInt, func(_ string, o *Object) {
		c.bytes -= int64(len(o.Body))
	})
	return c
}

// Get returns the object for key from the cache or, on a miss, from fetch,
// keeping the result if it fits. fetch runs once however many requesters
// miss at the same time, under none of their deadlines (its storage
// call's budget ends it); Get returns ctx's error if ctx ends first.
func (c *Cache) Get(ctx context.Context, key string, fetch func(context.Context) (*Object, error)) (*Object, error) {
	c.mu.Lock()
	if o, ok := c.lru.Get(key); ok {
		c.hits++
		c.mu.Unlock()
		return o, nil
	}
	c.misses++
	c.mu.Unlock()
	detached := context.WithoutCancel(ctx)
	ch := c.group.DoChan(key, func() (any, error) { return c.fetch(detached, key, fetch) })
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*Object), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fetch runs one shared fetch of key and keeps its result unless Forget ran
// meanwhile.
func (c *Cache) fetch(ctx context.Context, key string, fetch func(context.Context) (*Object, error)) (*Object, error) {
	fl := &flight{}
	c.mu.Lock()
	// A requester that missed just before the last shared fetch of key
	// kept its result, and joined the group just after that fetch left
	// it, finds the result here instead of fetching again.
	if o, ok := c.lru.Peek(key); ok {
		c.mu.Unlock()
		return o, nil
	}
	c.flights[key] = fl
	c.mu.Unlock()
	obj, err := fetch(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flights[key] == fl {
		delete(c.flights, key)
	}
	if err == nil && obj != nil && !fl.stale {
		c.add(key, obj)
	}
	return obj, err
}

// add keeps obj under key, evicting least-recently-used entries until the
// budget holds. c.mu must be held.
func (c *Cache) add(key string, obj *Object) {
	size := int64(len(obj.Body))
	if c.budget == 0 || size > c.maxItem {
		return
	}
	// Replacing a value does not run the eviction callback: remove first so
	// the byte count stays exact.
	c.lru.Remove(key)
	c.lru.Add(key, obj)
	c.bytes += size
	for c.bytes > c.budget {
		if _, _, ok := c.lru.RemoveOldest(); !ok {
			break
		}
		c.evictions++
	}
}

// Peek returns the object cached for key, counting a hit, or false
// without counting anything: the hot path of Server.Serve, which needs no
// fetch function for a hit.
func (c *Cache) Peek(key string) (*Object, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.lru.Get(key)
	if ok {
		c.hits++
	}
	return o, ok
}

// peek is Peek for a key held in bytes, such as one built in a stack
// buffer (Server.Serve), without making a string of it: the LRU's Get
// only looks the key up and keeps nothing of it, hit or miss, and key is
// not changed while it runs, which is what unsafe.String asks. A hit
// allocates nothing.
func (c *Cache) peek(key []byte) (*Object, bool) {
	return c.Peek(unsafe.String(unsafe.SliceData(key), len(key)))
}

// Forget drops key's entry, and keeps the result of a fetch of key in
// flight from being cached, because its bytes are being replaced or
// deleted. Requests after Forget start a fresh fetch.
func (c *Cache) Forget(key string) {
	c.mu.Lock()
	c.lru.Remove(key)
	if fl, ok := c.flights[key]; ok {
		fl.stale = true
	}
	c.mu.Unlock()
	c.group.Forget(key)
}

// Stats returns the counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Hits: c.hits, Misses: c.misses, Evictions: c.evictions, Bytes: c.bytes, Budget: c.budget, Items: c.lru.Len()}
}
