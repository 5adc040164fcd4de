// Package limit is per-key rate limiting in bounded memory: each key (a
// client IP, a share token, an email) gets its own token bucket
// (golang.org/x/time/rate), and at most a fixed number of keys are kept,
// the least recently used dropped first. It knows no concept; callers
// choose the keys and what a refusal looks like (usually 429 with
// Retry-After, see RetryAfter).
package limit

import (
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"
)

// Rule is one limit: Burst events at once, refilled at Every per event.
// Rule{Every: 6 * time.Second, Burst: 20} allows 20 events at once and
// then one every 6 seconds (10 a minute).
type Rule struct {
	// Every is the time one event's allowance takes to come back; > 0.
	Every time.Duration
	// Burst is how many events may happen at once after an idle spell; ≥ 1.
	Burst int
	// MaxKeys bounds memory: the number of keys tracked at once; ≥ 1. When
	// a new key would exceed it, the least recently seen key is forgotten,
	// which hands that key a full burst again. Size it well above the
	// number of keys active within Every*Burst.
	MaxKeys int
}

// Limiter applies one Rule to many keys. It is safe for concurrent use.
// Memory is bounded by Rule.MaxKeys entries of about 100 bytes.
type Limiter struct {
	rule Rule
	now  func() time.Time

	mu   sync.Mutex
	keys *simplelru.LRU[string, *rate.Limiter]
}

// New returns a Limiter for rule. now is the clock (time.Now outside
// tests). It panics if rule is not usable (Every ≤ 0, Burst < 1 or
// MaxKeys < 1): rules are constants of the program, not input.
func New(rule Rule, now func() time.Time) *Limiter {
	if rule.Every <= 0 || rule.Burst < 1 || rule.MaxKeys < 1 {
		panic("limit: rule needs Every > 0, Burst ≥ 1 and MaxKeys ≥ 1")
	}
	keys, _ := simplelru.NewLRU[string, *rate.Limiter](rule.MaxKeys, nil)
	return &Limiter{rule: rule, now: now, keys: keys}
}

// bucket returns key's bucket, creating a full one if key is new. l.mu
// must be held.
func (l *Limiter) bucket(key string) *rate.Limiter {
	if b, ok := l.keys.Get(key); ok {
		return b
	}
	b := rate.NewLimiter(rate.Every(l.rule.Every), l.rule.Burst)
	l.keys.Add(key, b)
	return b
}

// Allow spends one event of key's allowance. It returns true if the event
// may happen now; otherwise false and how long until it may (> 0), and
// nothing is spent.
func (l *Limiter) Allow(key string) (ok bool, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.bucket(key)
	r := b.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// Blocked reports whether key has no event left now, without spending
// one, and if so how long until it has. A key never seen is not blocked.
// Use it before work whose outcome decides whether to spend (e.g. only
// failed lookups count): check Blocked first, Allow after a failure.
func (l *Limiter) Blocked(key string) (blocked bool, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.keys.Peek(key)
	if !ok {
		return false, 0
	}
	now := l.now()
	tokens := b.TokensAt(now)
	if tokens >= 1 {
		return false, 0
	}
	return true, time.Duration(math.Ceil((1 - tokens) * float64(l.rule.Every)))
}

// Len returns the number of keys tracked now; never more than MaxKeys.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.keys.Len()
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
// key, which is stricter, never looser. IPv6 clients are keyed by their
// /64 network, since one host usually holds the whole /64. Never use a
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

func keyOf(a netip.Addr) string {
	if a.Is4() {
		return a.String()
	}
	p, _ := a.WithZone("").Prefix(64)
	return p.String()
}
