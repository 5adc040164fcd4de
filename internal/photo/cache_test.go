package photo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func obj(n int, v Version) *Object { return &Object{Body: bytes.Repeat([]byte{1}, n), Version: v} }

func fixed(o *Object) func(context.Context) (*Object, error) {
	return func(context.Context) (*Object, error) { return o, nil }
}

func TestCacheBudgetNeverExceeded(t *testing.T) {
	const budget = 10_000
	c := NewCache(budget)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		key := fmt.Sprintf("k%d", rng.IntN(200))
		switch rng.IntN(10) {
		case 0:
			c.Forget(key)
		default:
			size := rng.IntN(budget/maxItemShare + 200) // some too large to keep
			if _, err := c.Get(context.Background(), key, fixed(obj(size, 1))); err != nil {
				t.Fatal(err)
			}
		}
		s := c.Stats()
		if s.Bytes > budget || s.Bytes < 0 {
			t.Fatalf("step %d: %d bytes resident, budget %d", i, s.Bytes, budget)
		}
		// The byte count is exact: it equals the sum of what is held.
		c.mu.Lock()
		var sum int64
		for _, k := range c.lru.Keys() {
			o, _ := c.lru.Peek(k)
			sum += int64(len(o.Body))
		}
		c.mu.Unlock()
		if sum != s.Bytes {
			t.Fatalf("step %d: counted %d bytes, holding %d", i, s.Bytes, sum)
		}
	}
	if s := c.Stats(); s.Evictions == 0 || s.Hits == 0 {
		t.Errorf("stats %+v: want evictions and hits in a random run", s)
	}
}

func TestCacheLRUOrder(t *testing.T) {
	c := NewCache(800) // items up to 100 bytes
	get := func(k string) {
		if _, err := c.Get(context.Background(), k, fixed(obj(100, 1))); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 8; i++ {
		get(fmt.Sprint(i))
	}
	get("0") // 0 is now the most recently used; 1 the least
	get("8") // evicts 1
	has := func(k string) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.lru.Peek(k)
		return ok
	}
	if has("1") || !has("0") || !has("8") || !has("2") {
		t.Errorf("after LRU eviction: keys %v, want 1 gone and 0, 2, 8 kept", c.lru.Keys())
	}
	if s := c.Stats(); s.Evictions != 1 || s.Items != 8 || s.Bytes != 800 {
		t.Errorf("stats %+v, want 1 eviction, 8 items, 800 bytes", s)
	}
	// Too large for a share of the budget: served, not kept.
	o, _ := c.Get(context.Background(), "big", fixed(obj(101, 1)))
	if len(o.Body) != 101 || has("big") {
		t.Errorf("oversized object: served %d bytes, kept=%v; want served, not kept", len(o.Body), has("big"))
	}
}

// TestCacheConcurrentMissesOneFetch: 50 requesters miss at once and share
// one fetch. The first of them, whose request started the fetch, gives up
// before it ends; the fetch honours its context, so it must be running on
// one of its own, not that first requester's.
func TestCacheConcurrentMissesOneFetch(t *testing.T) {
	c := NewCache(1 << 20)
	var fetches atomic.Int32
	release := make(chan struct{})
	fetch := func(ctx context.Context) (*Object, error) {
		fetches.Add(1)
		select {
		case <-release:
			return obj(100, 7), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	first, cancel := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() {
		_, err := c.Get(first, "k", fetch)
		firstErr <- err
	}()
	waitFor(t, func() bool { return fetches.Load() == 1 })

	var wg sync.WaitGroup
	errs := make(chan error, 49)
	for i := 1; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := c.Get(context.Background(), "k", fetch)
			if err != nil || o.Version != 7 {
				errs <- fmt.Errorf("requester %d: %v %v", i, o, err)
			}
		}()
	}
	waitFor(t, func() bool { return c.Stats().Misses == 50 })
	cancel()
	if err := <-firstErr; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled first requester got %v, want context.Canceled", err)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("%d fetches for 50 concurrent misses, want 1", n)
	}
	if _, err := c.Get(context.Background(), "k", fetch); err != nil || c.Stats().Hits != 1 {
		t.Errorf("after the shared fetch: %v, stats %+v; want a hit", err, c.Stats())
	}
}

// TestCacheLateJoinerFindsResult: a requester that missed just before a
// shared fetch kept its result and reaches the fetch group after that
// fetch left it (the window between Get's miss and its DoChan) gets the
// kept object, not a second fetch.
func TestCacheLateJoinerFindsResult(t *testing.T) {
	c := NewCache(1 << 20)
	c.mu.Lock()
	c.add("k", obj(100, 7))
	c.mu.Unlock()
	o, err := c.fetch(context.Background(), "k", func(context.Context) (*Object, error) {
		t.Error("fetched again what the cache holds")
		return obj(100, 8), nil
	})
	if err != nil || o.Version != 7 {
		t.Errorf("late joiner got %v, %v; want the kept version 7", o, err)
	}
}

func TestCacheForgetDuringFetch(t *testing.T) {
	c := NewCache(1 << 20)
	started, release := make(chan struct{}), make(chan struct{})
	oldDone := make(chan *Object, 1)
	go func() {
		o, _ := c.Get(context.Background(), "k", func(context.Context) (*Object, error) {
			close(started)
			<-release
			return obj(10, 1), nil // the old version, read before the replace
		})
		oldDone <- o
	}()
	<-started
	c.Forget("k") // the photo is replaced while the old bytes are in flight
	// A request after the replace does not join the old fetch.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	o, err := c.Get(ctx, "k", fixed(obj(10, 2)))
	cancel()
	if err != nil || o.Version != 2 {
		t.Errorf("Get after Forget = %v, %v; want the new version 2, not to wait for the old fetch", o, err)
	}
	close(release)
	if o := <-oldDone; o == nil || o.Version != 1 {
		t.Errorf("the request that started the old fetch got %v, want version 1", o)
	}
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.flights) == 0 })
	c.mu.Lock()
	kept, _ := c.lru.Peek("k")
	c.mu.Unlock()
	if kept == nil || kept.Version != 2 {
		t.Errorf("cached %v after the replace, want version 2 (a fetch that raced a replace must not be kept)", kept)
	}
}

func TestCacheDisabled(t *testing.T) {
	c := NewCache(0)
	n := 0
	for i := 0; i < 3; i++ {
		c.Get(context.Background(), "k", func(context.Context) (*Object, error) { n++; return obj(1, 1), nil })
	}
	if n != 3 || c.Stats().Items != 0 {
		t.Errorf("disabled cache: %d fetches, %d items; want 3, 0", n, c.Stats().Items)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCacheFetchKeepsNoDeadlineOfItsOwn: a shared fetch runs under no
// deadline of the cache's or of its requesters', so the storage budget
// of its S3 call is what ends a stall (as storage.ErrUnavailable, a 503)
// rather than a deadline that may come first (a 500).
func TestCacheFetchKeepsNoDeadlineOfItsOwn(t *testing.T) {
	c := NewCache(1 << 20)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	_, err := c.Get(ctx, "k", func(ctx context.Context) (*Object, error) {
		if d, ok := ctx.Deadline(); ok {
			return nil, fmt.Errorf("the fetch runs under a deadline %s from now", time.Until(d).Round(time.Second))
		}
		return obj(10, 1), nil
	})
	if err != nil {
		t.Error(err)
	}
}
