package dynamo

import (
	"context"
	"testing"
	"time"
)

// TestItemCacheGenerations checks the storage under Read: the
// generation check, the TTL and the size bound.
func TestItemCacheGenerations(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	c := NewItemCache[string](5*time.Second, 2, func() time.Time { return now })

	// A read that overlapped a write is not kept.
	gen := c.begin()
	c.Invalidate("a")
	c.put("a", gen, "old", true)
	if c.get("a", c.now()) != nil {
		t.Error("get(a) after an overlapped read = cached, want nothing")
	}
	// Write invalidates before and after: from the moment the write may
	// take effect the entry is gone, and a read that began during it is
	// dropped too.
	c.put("a", c.begin(), "before", true)
	_ = c.Write("a", func() error {
		if c.get("a", c.now()) != nil {
			t.Error("get(a) during a write of a = cached, want nothing")
		}
		gen = c.begin()
		return nil
	})
	c.put("a", gen, "during", true)
	if c.get("a", c.now()) != nil {
		t.Error("get(a) after a read during a write = cached, want nothing")
	}
	// A write of another key drops an overlapping read too: one counter.
	gen = c.begin()
	c.Invalidate("b")
	c.put("a", gen, "old", true)
	if c.get("a", c.now()) != nil {
		t.Error("get(a) after a read overlapping a write of b = cached, want nothing")
	}

	c.put("a", c.begin(), "v1", true)
	c.put("gone", c.begin(), "", false)
	if e := c.get("a", c.now()); e == nil || e.v != "v1" || !e.found {
		t.Errorf("get(a) = %+v, want v1, found", e)
	}
	if e := c.get("gone", c.now()); e == nil || e.found {
		t.Errorf("get(gone) = %+v, want a cached absence", e)
	}
	now = now.Add(5*time.Second - time.Nanosecond)
	if c.get("a", c.now()) == nil {
		t.Error("get(a) just before the TTL = nothing, want cached")
	}
	now = now.Add(time.Nanosecond)
	if c.get("a", c.now()) != nil {
		t.Error("get(a) at the TTL = cached, want lapsed")
	}
	// Size bound: the oldest read go first, hits do not reorder.
	for _, k := range []string{"x", "y"} {
		c.put(k, c.begin(), k, true)
	}
	c.get("x", c.now())
	c.put("z", c.begin(), "z", true)
	if n := c.Len(); n != 2 {
		t.Errorf("Len = %d, want 2", n)
	}
	if c.get("x", c.now()) != nil {
		t.Error("get(x) = cached, want evicted (the oldest read, a hit notwithstanding)")
	}
	if e := c.get("z", c.now()); e == nil || e.v != "z" {
		t.Errorf("get(z) = %+v, want z", e)
	}
}

// TestItemCacheWriteThrough: a successful write keeps the item as
// written; a failed one, or one another write overlapped, keeps nothing.
func TestItemCacheWriteThrough(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	c := NewItemCache[string](5*time.Second, 10, func() time.Time { return now })
	if err := c.WriteThrough("a", "written", func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if e := c.get("a", c.now()); e == nil || e.v != "written" || !e.found {
		t.Errorf("get(a) after WriteThrough = %+v, want written, found", e)
	}
	refused := errFake("refused")
	if err := c.WriteThrough("a", "not written", func() error { return refused }); err != refused {
		t.Errorf("WriteThrough = %v, want the write's error", err)
	}
	if c.get("a", c.now()) != nil {
		t.Error("get(a) after a refused WriteThrough = cached, want nothing: the old entry must go too")
	}
	_ = c.WriteThrough("a", "overlapped", func() error {
		c.Invalidate("b") // another write, in flight at the same time
		return nil
	})
	if c.get("a", c.now()) != nil {
		t.Error("get(a) after a WriteThrough another write overlapped = cached, want nothing")
	}
	off := NewItemCache[string](0, 10, func() time.Time { return now })
	_ = off.WriteThrough("a", "x", func() error { return nil })
	if off.get("a", off.now()) != nil || off.Len() != 0 {
		t.Error("a cache with TTL 0 kept an entry")
	}
}

type errFake string

func (e errFake) Error() string { return string(e) }

// TestItemCacheWriteReturning: the value a successful write returns is
// kept; a failed write, or one another write overlapped, keeps nothing.
func TestItemCacheWriteReturning(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	c := NewItemCache[string](5*time.Second, 10, func() time.Time { return now })
	c.put("a", c.begin(), "before", true)
	if err := c.WriteReturning("a", func() (string, error) {
		if c.get("a", c.now()) != nil {
			t.Error("get(a) during WriteReturning = cached, want nothing")
		}
		return "as written", nil
	}); err != nil {
		t.Fatal(err)
	}
	if e := c.get("a", c.now()); e == nil || e.v != "as written" || !e.found {
		t.Errorf("get(a) after WriteReturning = %+v, want as written, found", e)
	}
	refused := errFake("refused")
	if err := c.WriteReturning("a", func() (string, error) { return "partial", refused }); err != refused {
		t.Errorf("WriteReturning = %v, want the write's error", err)
	}
	if c.get("a", c.now()) != nil {
		t.Error("get(a) after a refused WriteReturning = cached, want nothing")
	}
	_ = c.WriteReturning("a", func() (string, error) {
		c.Invalidate("b")
		return "overlapped", nil
	})
	if c.get("a", c.now()) != nil {
		t.Error("get(a) after a WriteReturning another write overlapped = cached, want nothing")
	}
}

// TestItemCacheReadFunc: a miss runs load once and keeps what it found
// (an absence too); a hit does not run it; an error keeps nothing; a
// load that a write overlapped is not kept.
func TestItemCacheReadFunc(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	c := NewItemCache[string](5*time.Second, 10, func() time.Time { return now })
	loads := 0
	load := func(v string, found bool, err error) func(context.Context, string) (string, bool, error) {
		return func(context.Context, string) (string, bool, error) { loads++; return v, found, err }
	}
	for range 2 {
		if v, found, err := c.ReadFunc(ctx, "tok", load("uid", true, nil)); v != "uid" || !found || err != nil {
			t.Fatalf("ReadFunc(tok) = %q, %v, %v; want uid, found", v, found, err)
		}
	}
	if loads != 1 {
		t.Errorf("load ran %d times for two reads, want 1", loads)
	}
	if _, found, _ := c.ReadFunc(ctx, "unknown", load("", false, nil)); found {
		t.Error("ReadFunc(unknown) found something")
	}
	if _, found, _ := c.ReadFunc(ctx, "unknown", load("late", true, nil)); found {
		t.Error("ReadFunc(unknown) again loaded anew: the absence was not kept")
	}
	failed := errFake("failed")
	if _, _, err := c.ReadFunc(ctx, "err", load("x", true, failed)); err != failed {
		t.Errorf("ReadFunc with load failing = %v, want its error", err)
	}
	if c.get("err", c.now()) != nil {
		t.Error("a failed load was kept")
	}
	c.ReadFunc(ctx, "raced", func(context.Context, string) (string, bool, error) {
		c.Invalidate("raced") // a write of the item while it is read
		return "stale", true, nil
	})
	if c.get("raced", c.now()) != nil {
		t.Error("a load a write overlapped was kept")
	}
}

// TestItemCacheReadFuncAt: ReadFuncAt judges an entry's freshness at the
// reading it is given, not at the cache's clock, which it does not read.
func TestItemCacheReadFuncAt(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	start := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	clockReads := 0
	c := NewItemCache[string](5*time.Second, 10, func() time.Time { clockReads++; return start })
	loads := 0
	load := func(context.Context, string) (string, bool, error) { loads++; return "uid", true, nil }
	if _, _, err := c.ReadFunc(ctx, "tok", load); err != nil {
		t.Fatal(err)
	}
	clockReads = 0
	for _, tc := range []struct {
		at        time.Duration
		wantLoads int
	}{{5*time.Second - time.Nanosecond, 1}, {5 * time.Second, 2}} {
		if v, found, err := c.ReadFuncAt(ctx, start.Add(tc.at), "tok", load); v != "uid" || !found || err != nil {
			t.Fatalf("ReadFuncAt(+%v) = %q, %v, %v; want uid, found", tc.at, v, found, err)
		}
		if loads != tc.wantLoads {
			t.Errorf("ReadFuncAt(+%v): %d loads in all, want %d (the TTL is 5s)", tc.at, loads, tc.wantLoads)
		}
	}
	if clockReads != 1 { // the second load's put only
		t.Errorf("the cache read its clock %d times, want 1 (for the lapsed entry's new expiry)", clockReads)
	}
}
