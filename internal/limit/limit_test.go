package limit

import (
	"fmt"
	"net/http/httptest"
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

func TestMemoryIsBounded(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := New(Rule{Every: time.Minute, Burst: 1, MaxKeys: 100}, c.now)
	l.Allow("hot")
	for i := range 1000 {
		l.Allow(fmt.Sprint("k", i))
		if i%10 == 0 {
			// Touch "hot" so it is never the least recently used.
			if ok, _ := l.Allow("hot"); ok {
				t.Fatalf("Allow(hot) = true after %d other keys, want false: a recently used key was forgotten", i)
			}
		}
	}
	if n := l.Len(); n != 100 {
		t.Errorf("Len() = %d, want 100 (MaxKeys)", n)
	}
	// The oldest idle key was forgotten and starts afresh.
	if ok, _ := l.Allow("k0"); !ok {
		t.Error("Allow(k0) = false, want true: an evicted key starts with a full burst")
	}
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
