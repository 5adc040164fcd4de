package dynamo_test

import (
	"testing"
	"time"

	"ndiro/internal/dynamo"
)

func TestItemCache(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	c := dynamo.NewItemCache[string](5*time.Second, 2, func() time.Time { return now })
	get := func(key string) (string, bool, bool) { return c.Get(key) }

	// A read that overlapped a write is not kept.
	gen := c.Begin()
	c.Invalidate("a")
	c.Put("a", gen, "old", true)
	if _, _, ok := get("a"); ok {
		t.Error("Get(a) after an overlapped read = cached, want nothing")
	}
	// Write invalidates before and after: a read that began during it is
	// dropped too.
	_ = c.Write("a", func() error {
		gen = c.Begin()
		return nil
	})
	c.Put("a", gen, "during", true)
	if _, _, ok := get("a"); ok {
		t.Error("Get(a) after a read during a write = cached, want nothing")
	}

	c.Put("a", c.Begin(), "v1", true)
	c.Put("gone", c.Begin(), "", false)
	if v, found, ok := get("a"); v != "v1" || !found || !ok {
		t.Errorf("Get(a) = %q, %v, %v, want v1, true, true", v, found, ok)
	}
	if _, found, ok := get("gone"); found || !ok {
		t.Errorf("Get(gone) = found %v, ok %v, want a cached absence", found, ok)
	}
	now = now.Add(5*time.Second - time.Nanosecond)
	if _, _, ok := get("a"); !ok {
		t.Error("Get(a) just before the TTL = nothing, want cached")
	}
	now = now.Add(time.Nanosecond)
	if _, _, ok := get("a"); ok {
		t.Error("Get(a) at the TTL = cached, want lapsed")
	}
	// Size bound: the oldest read go first.
	for _, k := range []string{"x", "y", "z"} {
		c.Put(k, c.Begin(), k, true)
	}
	if n := c.Len(); n != 2 {
		t.Errorf("Len = %d, want 2", n)
	}
	if _, _, ok := get("x"); ok {
		t.Error("Get(x) = cached, want evicted")
	}
}
