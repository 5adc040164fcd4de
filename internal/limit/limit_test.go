package limit

import (
	"fmt"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newClock() *clock { return &clock{t: time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)} }

func TestAllowBurstThenRefill(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := New(Rule{Every: 6 * time.Second, Burst: 3, MaxKeys: 10}, c.now)
	for i := range 3 {
		if ok, d := l.Allow("a"); !ok {
			t.Fatalf("Allow(a) #%d = false, %v, want true (within the burst)", i+1, d)
		}
	}
	ok, d := l.Allow("a")
	if ok || d != 6*time.Second {
		t.Fatalf("Allow(a) #4 = %v, %v, want false, 6s", ok, d)
	}
	// A refusal spends nothing: the wait does not grow.
	if ok, d := l.Allow("a"); ok || d != 6*time.Second {
		t.Errorf("Allow(a) #5 = %v, %v, want false, 6s (refusals must not spend)", ok, d)
	}
	// Other keys are independent.
	if ok, _ := l.Allow("b"); !ok {
		t.Error("Allow(b) = false, want true: keys share no allowance")
	}
	c.advance(4 * time.Second)
	if ok, d := l.Allow("a"); ok || d != 2*time.Second {
		t.Errorf("Allow(a) after 4s = %v, %v, want false, 2s", ok, d)
	}
	c.advance(2 * time.Second)
	if ok, d := l.Allow("a"); !ok {
		t.Errorf("Allow(a) after 6s = false, %v, want true", d)
	}
}

func TestBlockedSpendsNothing(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := New(Rule{Every: time.Second, Burst: 2, MaxKeys: 10}, c.now)
	if b, _ := l.Blocked("x"); b {
		t.Fatal("Blocked(unseen key) = true, want false")
	}
	for range 5 {
		if b, _ := l.Blocked("x"); b {
			t.Fatal("Blocked spent the allowance")
		}
	}
	l.Allow("x")
	l.Allow("x")
	b, d := l.Blocked("x")
	if !b || d != time.Second {
		t.Errorf("Blocked(x) after the burst = %v, %v, want true, 1s", b, d)
	}
	c.advance(time.Second)
	if b, _ := l.Blocked("x"); b {
		t.Error("Blocked(x) after a refill = true, want false")
	}
}

// spendAll spends key's whole allowance of burst events.
func spendAll(t *testing.T, l *Limiter, key string, burst int) {
	t.Helper()
	for i := range burst {
		if ok, d := l.Allow(key); !ok {
			t.Fatalf("Allow(%s) #%d = false, %v, want true (within the burst)", key, i+1, d)
		}
	}
	if ok, _ := l.Allow(key); ok {
		t.Fatalf("Allow(%s) #%d = true, want false (past the burst)", key, burst+1)
	}
}

// TestKeysAreIsolated: one key's events spend nothing of another's, and
// Blocked says so key by key.
func TestKeysAreIsolated(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := New(Rule{Every: 6 * time.Second, Burst: 3, MaxKeys: 10}, c.now)
	spendAll(t, l, "a", 3)
	if b, d := l.Blocked("a"); !b || d != 6*time.Second {
		t.Errorf("Blocked(a) = %v, %v, want true, 6s", b, d)
	}
	for _, k := range []string{"b", "c"} {
		if b, _ := l.Blocked(k); b {
			t.Errorf("Blocked(%s) = true after only a spent, want false", k)
		}
		spendAll(t, l, k, 3) // a whole burst each, none taken by a
	}
	c.advance(6 * time.Second)
	for _, k := range []string{"a", "b", "c"} {
		if ok, _ := l.Allow(k); !ok {
			t.Errorf("Allow(%s) after one refill = false, want true", k)
		}
		if ok, _ := l.Allow(k); ok {
			t.Errorf("Allow(%s) twice after one refill = true, want false", k)
		}
	}
}

// TestBlockedKeyOutlastsAFlood is the rule of issue 22: a blocked address
// stays blocked, and a partly spent one keeps what it spent, through
// misses from 20,000 other addresses, twice MaxKeys, with the limits
// share and invite links use.
func TestBlockedKeyOutlastsAFlood(t *testing.T) {
	t.Parallel()
	const every, burst, maxKeys = 6 * time.Second, 20, 10_000
	for _, tc := range []struct {
		name  string
		flood func(i int) string
	}{
		{"IPv4 addresses", func(i int) string { return fmt.Sprintf("198.%d.%d.%d", 18+i>>16, i>>8&0xff, i&0xff) }},
		{"IPv6 networks", func(i int) string { return fmt.Sprintf("2001:db8:%x:%x::/64", i>>16, i&0xffff) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newClock()
			l := New(Rule{Every: every, Burst: burst, MaxKeys: maxKeys}, c.now)
			spendAll(t, l, "203.0.113.9", burst)
			for range burst - 1 {
				l.Allow("203.0.113.10") // one event left
			}
			for i := range 20_000 {
				if ok, _ := l.Allow(tc.flood(i)); !ok {
					t.Fatalf("flood address %d refused its first event: the flood took someone's place", i)
				}
				if i%1000 == 999 {
					c.advance(time.Millisecond) // the flood takes a while
				}
			}
			if n := l.Len(); n > maxKeys {
				t.Errorf("Len() = %d after the flood, want at most %d", n, maxKeys)
			}
			b, d := l.Blocked("203.0.113.9")
			if !b || d != every-20*time.Millisecond {
				t.Errorf("Blocked(blocked address) after the flood = %v, %v, want true, %v", b, d, every-20*time.Millisecond)
			}
			if ok, _ := l.Allow("203.0.113.9"); ok {
				t.Error("Allow(blocked address) after the flood = true: the flood reset it")
			}
			if ok, _ := l.Allow("203.0.113.10"); !ok {
				t.Error("Allow(partly spent address) after the flood = false, want its last event")
			}
			if ok, _ := l.Allow("203.0.113.10"); ok {
				t.Error("Allow(partly spent address) twice after the flood = true: the flood gave it a fresh burst")
			}
			c.advance(every)
			if ok, _ := l.Allow("203.0.113.9"); !ok {
				t.Error("Allow(blocked address) once its block lapsed = false, want true")
			}
		})
	}
}

// TestEvictsTheKeyThatOwesLeast: a new key in a full table takes the
// place of the key whose allowance is whole soonest.
func TestEvictsTheKeyThatOwesLeast(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := New(Rule{Every: time.Second, Burst: 5, MaxKeys: 3}, c.now)
	spend := func(k string, n int) {
		for range n {
			l.Allow(k)
		}
	}
	spend("x", 3)
	spend("y", 1)
	spend("z", 2)
	spend("w", 1) // y owes least: dropped, a fresh start for it
	if n := l.Len(); n != 3 {
		t.Fatalf("Len() = %d, want 3", n)
	}
	for k, left := range map[string]int{"x": 2, "z": 3, "w": 4} {
		for i := range left {
			if ok, _ := l.Allow(k); !ok {
				t.Errorf("Allow(%s) #%d = false, want %d events left: the wrong key was dropped", k, i+1, left)
			}
		}
		if ok, _ := l.Allow(k); ok {
			t.Errorf("Allow(%s) past its %d events = true", k, left)
		}
	}
	// A key whose allowance is whole again is dropped first of all.
	l2 := New(Rule{Every: time.Second, Burst: 2, MaxKeys: 2}, c.now)
	for _, k := range []string{"old", "recent"} {
		l2.Allow(k)
		l2.Allow(k)
		c.advance(time.Second)
	} // now old is whole again, recent owes one event
	l2.Allow("new")
	if b, _ := l2.Blocked("recent"); b {
		t.Error("Blocked(recent) = true, want one event left")
	}
	l2.Allow("recent")
	if b, _ := l2.Blocked("recent"); !b {
		t.Error("recent lost what it spent when a new key came: old, whole again, should have gone")
	}
}

// TestFloodOfSpentKeys: an attacker with more keys than MaxKeys who spends
// each one's whole burst (many IPv6 /64s) fills the table with blocked
// keys. None of them is dropped early; the keys that find no place share
// one overflow allowance; memory stays at MaxKeys; and once the blocks
// lapse, new keys get places and whole bursts again.
func TestFloodOfSpentKeys(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := New(Rule{Every: time.Second, Burst: 2, MaxKeys: 100}, c.now)
	key := func(i int) string { return fmt.Sprintf("2001:db8:%x::/64", i) }
	allowed := 0
	for i := range 150 {
		for range 3 {
			if ok, _ := l.Allow(key(i)); ok {
				allowed++
			}
		}
	}
	if want := 100*2 + 2; allowed != want {
		t.Errorf("%d events allowed to 150 keys, want %d: 100 keys' bursts and one shared burst", allowed, want)
	}
	if n := l.Len(); n != 100 {
		t.Errorf("Len() = %d, want 100 (MaxKeys)", n)
	}
	if b, _ := l.Blocked(key(0)); !b {
		t.Error("Blocked(first key) = false: a blocked key was dropped")
	}
	if b, d := l.Blocked("198.51.100.1"); !b || d != time.Second {
		t.Errorf("Blocked(a newcomer) = %v, %v, want true, 1s: it shares the spent overflow", b, d)
	}
	if ok, _ := l.Allow("198.51.100.1"); ok {
		t.Error("Allow(a newcomer) = true with the overflow spent")
	}
	c.advance(2 * time.Second) // every block lapsed
	spendAll(t, l, "198.51.100.1", 2)
	if b, _ := l.Blocked("198.51.100.1"); !b {
		t.Error("the newcomer did not get a place of its own once the blocks lapsed")
	}
	if n := l.Len(); n != 100 {
		t.Errorf("Len() = %d, want 100 (MaxKeys)", n)
	}
}

// TestMemoryIsBounded: however many keys come, the table holds MaxKeys.
func TestMemoryIsBounded(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := New(Rule{Every: time.Minute, Burst: 3, MaxKeys: 100}, c.now)
	for i := range 20_000 {
		l.Allow(fmt.Sprint("k", i))
		if n := l.Len(); n > 100 {
			t.Fatalf("Len() = %d after %d keys, want at most 100", n, i+1)
		}
	}
	if n, h := len(l.keys), l.owed.Len(); n != 100 || h != 100 {
		t.Errorf("table holds %d keys and %d heap entries, want 100 each", n, h)
	}
}

// BenchmarkFloodMemory reports the heap a full table of MaxKeys (10,000)
// IPv6 keys holds, per key, after a flood of ten times as many.
func BenchmarkFloodMemory(b *testing.B) {
	const maxKeys = 10_000
	keys := make([]string, 10*maxKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("2001:db8:%x:%x::/64", i>>16, i&0xffff)
	}
	var perKey float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := newClock()
		l := New(Rule{Every: 6 * time.Second, Burst: 20, MaxKeys: maxKeys}, c.now)
		for _, k := range keys {
			l.Allow(k)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perKey = float64(after.HeapAlloc-before.HeapAlloc) / maxKeys
		runtime.KeepAlive(l)
	}
	b.ReportMetric(perKey, "heap-B/key")
}

func TestConcurrentAllowSpendsExactly(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := New(Rule{Every: time.Hour, Burst: 50, MaxKeys: 10}, c.now)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for range 200 {
		wg.Go(func() {
			if ok, _ := l.Allow("k"); ok {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if allowed != 50 {
		t.Errorf("%d of 200 concurrent events allowed, want 50 (the burst)", allowed)
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{6200 * time.Millisecond, "7"},
		{6 * time.Second, "6"},
		{time.Millisecond, "1"},
		{0, "1"},
	} {
		if got := RetryAfter(tc.d); got != tc.want {
			t.Errorf("RetryAfter(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestClientIP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		remote  string
		header  string
		headers []string
		want    string
	}{
		{name: "peer v4", remote: "192.0.2.7:5123", want: "192.0.2.7"},
		{name: "peer v6 keyed by /64", remote: "[2001:db8:1:2:3:4:5:6]:443", want: "2001:db8:1:2::/64"},
		{name: "peer v4-mapped v6", remote: "[::ffff:192.0.2.7]:80", want: "192.0.2.7"},
		{name: "peer v6, another host of the same /64", remote: "[2001:db8:1:2:ffff:ffff:ffff:ffff]:443", want: "2001:db8:1:2::/64"},
		{name: "peer v6, the next /64", remote: "[2001:db8:1:3::6]:443", want: "2001:db8:1:3::/64"},
		{name: "peer v6 with a zone", remote: "[fe80::1:2%eth0]:80", want: "fe80::/64"},
		{name: "peer v4 without a port", remote: "192.0.2.7", want: "192.0.2.7"},
		{name: "peer that is no address", remote: "pipe", want: "pipe"},
		{name: "trusted header v6", remote: "10.0.0.1:1", header: "X-Forwarded-For", headers: []string{"2001:db8:9:0:1::5"}, want: "2001:db8:9::/64"},
		{name: "trusted header v6 with a port", remote: "10.0.0.1:1", header: "X-Forwarded-For", headers: []string{"198.51.100.1, [2001:db8:9::5]:8443"}, want: "2001:db8:9::/64"},
		{name: "trusted header v4-mapped", remote: "10.0.0.1:1", header: "X-Forwarded-For", headers: []string{"::ffff:203.0.113.9"}, want: "203.0.113.9"},
		{name: "header ignored unless trusted", remote: "192.0.2.7:1", headers: []string{"203.0.113.9"}, want: "192.0.2.7"},
		{name: "trusted header", remote: "10.0.0.1:1", header: "X-Forwarded-For", headers: []string{"203.0.113.9"}, want: "203.0.113.9"},
		{name: "last hop wins", remote: "10.0.0.1:1", header: "X-Forwarded-For", headers: []string{"198.51.100.1, 203.0.113.9"}, want: "203.0.113.9"},
		{name: "last line wins", remote: "10.0.0.1:1", header: "X-Forwarded-For", headers: []string{"198.51.100.1", "203.0.113.9"}, want: "203.0.113.9"},
		{name: "port in header", remote: "10.0.0.1:1", header: "X-Real-Ip", headers: []string{"203.0.113.9:4444"}, want: "203.0.113.9"},
		{name: "garbage falls back to peer", remote: "10.0.0.1:1", header: "X-Forwarded-For", headers: []string{"unknown"}, want: "10.0.0.1"},
		{name: "missing falls back to peer", remote: "10.0.0.1:1", header: "X-Forwarded-For", want: "10.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.remote
			for _, v := range tc.headers {
				name := tc.header
				if name == "" {
					name = "X-Forwarded-For"
				}
				r.Header.Add(name, v)
			}
			if got := ClientIP(r, tc.header); got != tc.want {
				t.Errorf("ClientIP(%s, %q) = %q, want %q", tc.remote, tc.header, got, tc.want)
			}
		})
	}
}
