package lease

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/storage"
)

// fakeClock moves only when told; After never fires (tests call Step).
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}
func (c *fakeClock) After(time.Duration) <-chan time.Time { return nil }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// memStore is the lease item in memory, with failures on command.
type memStore struct {
	mu    sync.Mutex
	rec   *Record
	fail  error // every call fails with it
	lost  bool  // the next Write is stored but answers an error
	write int
}

func (s *memStore) Read(context.Context) (Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return Record{}, false, s.fail
	}
	if s.rec == nil {
		return Record{}, false, nil
	}
	return *s.rec, true, nil
}

func (s *memStore) Write(_ context.Context, rec Record, prev int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	switch {
	case s.rec == nil && prev != 0:
		return &ConflictError{}
	case s.rec != nil && s.rec.Counter != prev:
		return &ConflictError{Current: *s.rec, Found: true}
	}
	s.write++
	s.rec = &rec
	if s.lost {
		s.lost = false
		return errors.New("answer lost")
	}
	return nil
}

func (s *memStore) Delete(_ context.Context, prev int64, instance string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	if s.rec != nil && s.rec.Counter == prev && s.rec.Instance == instance {
		s.rec = nil
	}
	return nil
}

func (s *memStore) counter() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec == nil {
		return 0
	}
	return s.rec.Counter
}

const (
	ttl   = 30 * time.Second
	renew = 5 * time.Second
	guard = 10 * time.Second
)

func newLease(t *testing.T, s Store, c *fakeClock, holder string) *Lease {
	t.Helper()
	l, err := New(s, Options{TTL: ttl, Renew: renew, Guard: guard, Holder: holder, Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustWrite(t *testing.T, l *Lease, want bool) {
	t.Helper()
	err := l.Err()
	if want && err != nil {
		t.Fatalf("Err = %v, want writes allowed", err)
	}
	if !want && !errors.Is(err, storage.ErrNotWriter) {
		t.Fatalf("Err = %v, want storage.ErrNotWriter", err)
	}
}

// TestAcquireFree: no item, the lease is taken at once; Release deletes
// it and stops writes, so the next process takes it at once too.
func TestAcquireFree(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, c := &memStore{}, &fakeClock{now: time.Unix(1e9, 0)}
	a := newLease(t, s, c, "host-a pid 1")
	mustWrite(t, a, false)
	if err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, a, true)
	if st := a.State(); !st.Held || st.Counter != 1 || st.Holder != "host-a pid 1" || st.WindowLeft != ttl-guard {
		t.Errorf("State = %+v, want held at counter 1 by host-a with the whole window left", st)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, a, false)
	if s.rec != nil {
		t.Fatalf("item after Release = %+v, want none", s.rec)
	}
	b := newLease(t, s, c, "host-b pid 2")
	if err := b.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, b, true)
}

// TestRenewalWindow: each renewal bumps the counter and reopens the
// window from when it was sent; failing renewals close it at TTL −
// Guard after the last success (writes refused), and the first renewal
// once storage answers opens it again, on the same lease: a stall
// shorter than TTL costs no lease.
func TestRenewalWindow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, c := &memStore{}, &fakeClock{now: time.Unix(1e9, 0)}
	a := newLease(t, s, c, "a")
	if err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	c.advance(renew)
	if wait := a.Step(ctx); wait != renew || s.counter() != 2 {
		t.Fatalf("renewal: wait %s, counter %d; want %s, 2", wait, s.counter(), renew)
	}
	s.fail = errors.New("stalled")
	c.advance(ttl - guard - time.Nanosecond)
	if wait := a.Step(ctx); wait != time.Second {
		t.Errorf("wait after a failed renewal = %s, want the 1 s retry", wait)
	}
	mustWrite(t, a, true) // still inside the window of the renewal at counter 2
	c.advance(time.Nanosecond)
	mustWrite(t, a, false)
	if st := a.State(); st.Held || !st.Owner || st.LastErr == "" {
		t.Errorf("State in a stall = %+v, want owner, not held, with the error", st)
	}
	c.advance(ttl - (ttl - guard) - time.Second) // the stall lasts just under TTL
	a.Step(ctx)
	s.fail = nil
	a.Step(ctx)
	mustWrite(t, a, true)
	if s.counter() != 3 {
		t.Errorf("counter after the stall = %d, want 3 (renewed, not re-taken)", s.counter())
	}
}

// TestLostAnswerAdopted: a renewal stored whose answer was lost is taken
// as this process's own (same instance) and renewed from, not as a loss.
func TestLostAnswerAdopted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, c := &memStore{}, &fakeClock{now: time.Unix(1e9, 0)}
	a := newLease(t, s, c, "a")
	if err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	s.lost = true
	a.Step(ctx) // stored at 2, answered an error
	if wait := a.Step(ctx); wait != 0 {
		t.Errorf("wait after adopting = %s, want 0 (renew at once)", wait)
	}
	a.Step(ctx)
	mustWrite(t, a, true)
	if st := a.State(); !st.Owner || s.counter() != 3 {
		t.Errorf("after a lost answer: state %+v, counter %d; want owner at 3", st, s.counter())
	}
}

// TestSecondProcessRefused: a process starting while the holder renews
// refuses to start, naming the holder and its until; a moving counter,
// never a wall clock, tells it the holder lives.
func TestSecondProcessRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, c := &memStore{}, &fakeClock{now: time.Unix(1e9, 0)}
	a := newLease(t, s, c, "host-a pid 1")
	if err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	b := newLease(t, s, c, "host-b pid 2")
	if wait, err := b.watch(ctx, true); err != nil || wait != renew {
		t.Fatalf("first look = %s, %v; want a wait of %s", wait, err, renew)
	}
	c.advance(renew)
	a.Step(ctx)
	_, err := b.watch(ctx, true)
	var held *HeldError
	if !errors.As(err, &held) || held.Holder != "host-a pid 1" || !held.Until.Equal(c.Now().Add(ttl)) {
		t.Fatalf("second look = %v, want HeldError naming host-a until %s", err, c.Now().Add(ttl))
	}
	if msg := err.Error(); !strings.Contains(msg, "host-a pid 1") || !strings.Contains(msg, c.Now().Add(ttl).UTC().Format(time.RFC3339)) {
		t.Errorf("message %q names neither the holder nor until when", msg)
	}
	mustWrite(t, b, false)
}

// TestTakeAfterCrash: a holder that stops renewing (killed) leaves the
// counter still; another process takes the lease once TTL has passed on
// its own clock since it first saw that counter, and not a moment
// before, whatever the item's until says.
func TestTakeAfterCrash(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, c := &memStore{}, &fakeClock{now: time.Unix(1e9, 0)}
	a := newLease(t, s, c, "a")
	if err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	// The holder's wall clock was an hour behind: its until is long past
	// by the taker's. The taker must wait all the same.
	s.rec.Until = s.rec.Until.Add(-time.Hour)
	b := newLease(t, s, c, "b")
	b.watch(ctx, true)
	c.advance(ttl - time.Nanosecond)
	if wait, err := b.watch(ctx, true); err != nil || wait != time.Nanosecond {
		t.Fatalf("look just before TTL = %s, %v; want to wait 1ns more", wait, err)
	}
	mustWrite(t, b, false)
	c.advance(time.Nanosecond)
	if _, err := b.watch(ctx, true); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, b, true)
	if st := b.State(); s.counter() != 2 || st.Holder != "b" {
		t.Errorf("after the take: counter %d, state %+v; want 2, held by b", s.counter(), st)
	}
	// The old holder, back, finds it lost: no writes, and it watches.
	a.Step(ctx)
	mustWrite(t, a, false)
	if st := a.State(); st.Owner || st.Holder != "b" {
		t.Errorf("old holder's state = %+v, want not owner, holder b", st)
	}
}

// TestReacquireAfterLongStall: a holder whose stall outlasted TTL and
// whose lease another process took keeps watching while that one renews,
// and takes the lease back once it is released (or lapses).
func TestReacquireAfterLongStall(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, c := &memStore{}, &fakeClock{now: time.Unix(1e9, 0)}
	a := newLease(t, s, c, "a")
	if err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	b := newLease(t, s, c, "b")
	b.watch(ctx, false)
	c.advance(ttl)
	b.Step(ctx) // a stalled; b takes it
	a.Step(ctx) // a's renewal: lost
	for range 10 {
		c.advance(renew)
		b.Step(ctx)
		a.Step(ctx)
		mustWrite(t, a, false)
	}
	mustWrite(t, b, true)
	// An item that stays the same past TTL is a dead holder: so a's
	// earlier looks, at a moving counter, never let it take the lease.
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	a.Step(ctx)
	mustWrite(t, a, true)
}

// TestOptionsCheck: the window must hold two renewals.
func TestOptionsCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o  Options
		ok bool
	}{
		{Options{TTL: 60 * time.Second, Renew: 10 * time.Second, Guard: 36 * time.Second}, true},
		{Options{TTL: 60 * time.Second, Renew: 10 * time.Second, Guard: 41 * time.Second}, false},
		{Options{TTL: 0, Renew: time.Second}, false},
		{Options{TTL: time.Minute, Renew: 0}, false},
	} {
		if err := tc.o.Check(); (err == nil) != tc.ok {
			t.Errorf("Check(%+v) = %v, want ok %v", tc.o, err, tc.ok)
		}
	}
}

// TestGate: while the lease is not held, a gated client's writes fail
// with storage.ErrNotWriter before anything is sent; its reads are sent.
func TestGate(t *testing.T) {
	t.Parallel()
	var sent atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	s, c := &memStore{}, &fakeClock{now: time.Unix(1e9, 0)}
	l := newLease(t, s, c, "a")
	db := dynamodb.New(dynamodb.Options{
		Region: "local", BaseEndpoint: aws.String(srv.URL), Credentials: aws.AnonymousCredentials{},
		DisableValidateResponseChecksum: true,
	}, l.DynamoDB)
	ctx := t.Context()
	key := map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: "x"}}
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key})
	if !errors.Is(err, storage.ErrNotWriter) || storage.Refused(err) != storage.ErrNotWriter || sent.Load() != 0 {
		t.Fatalf("PutItem without the lease = %v, %d requests sent; want ErrNotWriter, none sent", err, sent.Load())
	}
	if _, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key}); err != nil || sent.Load() != 1 {
		t.Fatalf("GetItem without the lease = %v, %d sent; want it sent", err, sent.Load())
	}
	if err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key}); err != nil || sent.Load() != 2 {
		t.Fatalf("PutItem with the lease = %v, %d sent; want it sent", err, sent.Load())
	}
	for op, want := range map[string]bool{"PutItem": true, "UpdateItem": true, "DeleteItem": true, "BatchWriteItem": true, "TransactWriteItems": true,
		"PutObject": true, "CopyObject": true, "DeleteObjects": true, "CreateMultipartUpload": true, "UploadPart": true, "CompleteMultipartUpload": true,
		"GetItem": false, "Query": false, "Scan": false, "BatchGetItem": false, "GetObject": false, "HeadObject": false, "ListObjectsV2": false, "DescribeTable": false} {
		if IsWrite(op) != want {
			t.Errorf("IsWrite(%s) = %v, want %v", op, !want, want)
		}
	}
}
