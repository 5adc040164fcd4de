// Package limit is per-key rate limiting in bounded memory: each key (a
// client address, a share token, an owner's ID) gets its own token
// bucket, and at most a fixed number of keys are held at once, so a flood
// of distinct keys can neither grow memory nor hand a spent key its
// allowance back. It knows no concept; callers choose the keys (ClientIP
// for addresses) and what a refusal looks like (usually 429 with
// Retry-After, see RetryAfter).
package limit

import (
	"container/heap"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Rule is one limit: Burst events at once, refilled at Every per event.
// Rule{Every: 6 * time.Second, Burst: 20} allows 20 events at once and
// then one every 6 seconds (10 a minute).
type Rule struct {
	// Every is the time one event's allowance takes to come back; > 0.
	Every time.Duration
	// Burst is how many events may happen at once after an idle spell; ≥ 1.
	Burst int
	// MaxKeys bounds memory: the number of keys held at once; ≥ 1. A key
	// whose allowance is whole again needs no memory; of the others, a
	// new key takes the place of the one that owes least (see Limiter).
	// Size it well above the number of keys active within Every·Burst.
	MaxKeys int
}

// Limiter applies one Rule to many keys. It is safe for concurrent use.
//
// Each key's bucket is kept as the time its allowance is whole again
// (the generic cell rate algorithm's theoretical arrival time): an event
// at now is allowed if that time is at most (Burst−1)·Every after now,
// and moves it on by Every. So the state is one number, and the keys
// order by how much they owe, which is what eviction needs.
//
// Memory is bounded by Rule.MaxKeys entries of about 100 bytes (85 for
// an IPv6 /64 key, BenchmarkFloodMemory). When a new key finds the table full, the key
// that owes least (whose allowance is whole soonest) is dropped to make
// room, unless that key is blocked, in which case every key held is: a
// blocked key is never dropped before its block lapses, and a key is
// dropped only when every other key owes at least as much as it does. A
// flood of fresh keys, each owing one event, therefore only ever pushes
// out keys of the flood itself; it cannot reset a key that is blocked or
// has spent more than they have.
//
// When every key held is blocked — an attacker holding more than MaxKeys
// addresses (IPv6 /64 networks) and spending each one's whole burst —
// keys not in the table share one overflow allowance of the same Rule
// until blocks lapse (at most Burst·Every after the last event): people
// arriving then may be refused along with the attacker, nobody gains an
// allowance, and memory stays at MaxKeys entries.
type Limiter struct {
	every, tolerance int64 // nanoseconds: Every, and (Burst−1)·Every
	burst            int
	max              int
	now              func() time.Time

	mu       sync.Mutex
	keys     map[string]*entry
	owed     owedHeap // the keys, least owed first
	overflow int64    // the shared allowance's whole-again time
}

// entry is one key's bucket: whole is the time (Unix nanoseconds) at
// which its allowance is whole again; idx is its place in the heap.
type entry struct {
	key   string
	whole int64
	idx   int
}

// New returns a Limiter for rule. now is the clock (time.Now outside
// tests). It panics if rule is not usable (Every ≤ 0, Burst < 1 or
// MaxKeys < 1): rules are constants of the program, not input.
func New(rule Rule, now func() time.Time) *Limiter {
	if rule.Every <= 0 || rule.Burst < 1 || rule.MaxKeys < 1 {
		panic("limit: rule needs Every > 0, Burst ≥ 1 and MaxKeys ≥ 1")
	}
	every := int64(rule.Every)
	return &Limiter{
		every: every, tolerance: int64(rule.Burst-1) * every, burst: rule.Burst, max: rule.MaxKeys, now: now,
		keys: make(map[string]*entry),
	}
}

// Allow spends one event of key's allowance. It returns true if the event
// may happen now; otherwise false and how long until it may (> 0), and
// nothing is spent.
func (l *Limiter) Allow(key string) (ok bool, retryAfter time.Duration) {
	now := l.now().UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.keys[key]
	if e == nil && !l.room(now) {
		var wait int64
		if l.overflow, wait = l.spend(l.overflow, now); wait > 0 {
			return false, time.Duration(wait)
		}
		return true, 0
	}
	if e == nil {
		e = &entry{key: key, whole: now}
		l.keys[key] = e
		heap.Push(&l.owed, e)
	}
	next, wait := l.spend(e.whole, now)
	if wait > 0 {
		return false, time.Duration(wait)
	}
	e.whole = next
	heap.Fix(&l.owed, e.idx)
	return true, 0
}

// spend returns the whole-again time after one event at now on a bucket
// whole again at whole, or, if the bucket has no event left, whole as it
// is and how long until it has (> 0).
func (l *Limiter) spend(whole, now int64) (int64, int64) {
	if wait := whole - now - l.tolerance; wait > 0 {
		return whole, wait
	}
	return max(whole, now) + l.every, 0
}

// room makes a place for a new key if the table is full, by dropping the
// key that owes least unless that key is blocked at now, and reports
// whether there is a place. l.mu must be held.
func (l *Limiter) room(now int64) bool {
	if len(l.keys) < l.max {
		return true
	}
	least := l.owed[0]
	if least.whole-now > l.tolerance { // blocked, and so is every key held
		return false
	}
	heap.Pop(&l.owed)
	delete(l.keys, least.key)
	return true
}

// Blocked reports whether key has no event left now, without spending
// one, and if so how long until it has. A key never seen is not blocked
// (unless every key held is, and the overflow allowance is spent). Use it
// before work whose outcome decides whether to spend (e.g. only failed
// lookups count): check Blocked first, Allow after a failure.
func (l *Limiter) Blocked(key string) (blocked bool, retryAfter time.Duration) {
	now := l.now().UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	whole := now
	switch e := l.keys[key]; {
	case e != nil:
		whole = e.whole
	case len(l.keys) >= l.max && l.owed[0].whole-now > l.tolerance:
		whole = l.overflow
	}
	if wait := whole - now - l.tolerance; wait > 0 {
		return true, time.Duration(wait)
	}
	return false, 0
}

// Len returns the number of keys held now; never more than MaxKeys.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// owedHeap is a min-heap of entries by whole (container/heap).
type owedHeap []*entry

func (h owedHeap) Len() int           { return len(h) }
func (h owedHeap) Less(i, j int) bool { return h[i].whole < h[j].whole }
func (h owedHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}

func (h *owedHeap) Push(x any) {
	e := x.(*entry)
	e.idx = len(*h)
	*h = append(*h, e)
}

func (h *owedHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

// RetryAfter returns d as the value of a Retry-After header: whole
// seconds, rounded up, at least 1 ("7" for 6.2 s).
func RetryAfter(d time.Duration) string {
	s := int64(math.Ceil(d.Seconds()))
	return strconv.FormatInt(max(s, 1), 10)
}

// ClientIP returns the key for the client that sent r: the direct peer's
// address (r.RemoteAddr), or, when trustedHeader names a header set by a
// proxy in front of ndiro (NDIRO_TRUSTED_PROXY_HEADER, e.g.
// "X-Forwarded-For"), the last address in that header's last line, which
// is the one that proxy added. A header that is missing or holds no
// address falls back to the peer: every request then shares the proxy's
// key, which is stricter, never looser.
//
// IPv4 clients are keyed by their address ("192.0.2.7"), IPv4-mapped
// IPv6 addresses (::ffff:192.0.2.7) as the IPv4 address they are, and
// IPv6 clients by their /64 network ("2001:db8:1:2::/64", zone dropped),
// since one host or home usually holds the whole /64 and could otherwise
// use its 2^64 addresses as that many keys. An attacker with many /64s
// is bounded by the Limiter's MaxKeys (see Limiter). Never use a
// client-supplied header without a proxy that overwrites or appends it.
func ClientIP(r *http.Request, trustedHeader string) string {
	if trustedHeader != "" {
		if vals := r.Header.Values(trustedHeader); len(vals) > 0 {
			last := vals[len(vals)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			if a, ok := parseAddr(strings.TrimSpace(last)); ok {
				return keyOf(a)
			}
		}
	}
	if a, ok := parseAddr(r.RemoteAddr); ok {
		return keyOf(a)
	}
	return r.RemoteAddr
}

// parseAddr reads "192.0.2.1", "192.0.2.1:443", "2001:db8::1" or
// "[2001:db8::1]:443".
func parseAddr(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		if a, err := netip.ParseAddr(host); err == nil {
			return a.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// keyOf is the key of a: the address itself for IPv4, the /64 network
// for IPv6.
func keyOf(a netip.Addr) string {
	if a.Is4() {
		return a.String()
	}
	p, _ := a.WithZone("").Prefix(64)
	return p.String()
}
