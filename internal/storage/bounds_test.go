package storage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
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
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"ndiro/internal/config"
	"ndiro/internal/localenv"
	"ndiro/internal/storage"
)

// slack is how much later than its budget a call may end on a loaded
// machine (timers fire late, never early): generous, as the 2-core
// machines these run on stall for seconds under memory pressure; a call
// without a deadline never ends at all.
const slack = 30 * time.Second

// limits are short budgets for the tests: a stalled call ends in about
// a second and a half, three attempts of 500 ms.
var limits = config.Storage{Item: 1500 * time.Millisecond, Query: 3 * time.Second, Transfer: 3 * time.Second, Attempts: 3, MaxBackoff: time.Millisecond}

// stalled is a listener that accepts connections and never answers:
// a backend frozen mid-request. accepted counts the connections, and
// each one is also sent on conns.
type stalled struct {
	url      string
	accepted atomic.Int32
	conns    chan struct{}
}

func newStalled(t *testing.T) *stalled {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &stalled{url: "http://" + ln.Addr().String(), conns: make(chan struct{}, 100)}
	var mu sync.Mutex
	var open []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			s.accepted.Add(1)
			s.conns <- struct{}{}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range open {
			c.Close()
		}
	})
	return s
}

// logLines collects what a Bounds logs, one JSON object per line.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) records(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, rec)
	}
	return out
}

// clock is a settable clock for the WARN rate limit.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newBounds(l config.Storage) (*storage.Bounds, *logLines, *clock) {
	logs := &logLines{}
	clk := &clock{now: time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)}
	return storage.New(l, slog.New(slog.NewJSONHandler(logs, nil)), clk.Now), logs, clk
}

func getItem(ctx context.Context, db *dynamodb.Client) error {
	_, err := db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String("t"),
		Key:       map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: "u"}},
	})
	return err
}

// checkUnavailable fails unless err is ErrUnavailable from service after
// about budget.
func checkUnavailable(t *testing.T, err error, service string, took, budget time.Duration) {
	t.Helper()
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("error %v, want ErrUnavailable", err)
	}
	if got := storage.Service(err); got != service {
		t.Errorf("Service(%v) = %q, want %q", err, got, service)
	}
	if took < budget*9/10 || took > budget+slack {
		t.Errorf("the call ended after %v, want its budget %v (up to %v more on a busy machine)", took, budget, slack)
	}
}

func TestStalledDynamoDBCallEndsWithinItsBudget(t *testing.T) {
	t.Parallel()
	b, logs, _ := newBounds(limits)
	st := newStalled(t)
	db := localenv.NewDynamoClient(localenv.Endpoint{URL: st.url}, b.DynamoDB)
	start := time.Now()
	err := getItem(context.Background(), db)
	checkUnavailable(t, err, "DynamoDB", time.Since(start), limits.Item)
	if n := st.accepted.Load(); n != int32(limits.Attempts) {
		t.Errorf("the stalled GetItem made %d attempts, want %d (each on a fresh connection)", n, limits.Attempts)
	}
	recs := logs.records(t)
	if len(recs) != 1 || recs[0]["level"] != "WARN" || recs[0]["msg"] != "storage not answering" ||
		recs[0]["service"] != "DynamoDB" || recs[0]["kind"] != "item" || recs[0]["operation"] != "GetItem" || recs[0]["budget"] != "1.5s" {
		t.Errorf("logged %v, want one WARN storage not answering for DynamoDB item GetItem with budget 1.5s", recs)
	}
}

func TestStalledS3UploadEndsWithinItsBudget(t *testing.T) {
	t.Parallel()
	b, _, _ := newBounds(limits)
	st := newStalled(t)
	c := localenv.NewS3Client(localenv.Endpoint{URL: st.url}, b.S3)
	start := time.Now()
	_, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("b"), Key: aws.String("k"), Body: bytes.NewReader(make([]byte, 64<<10))})
	checkUnavailable(t, err, "S3", time.Since(start), limits.Transfer)
}

// TestStalledBodyIsUnavailable answers a GetObject's headers and part of
// its body, then nothing: reading the body ends with ErrUnavailable
// within the transfer budget, not a hang.
func TestStalledBodyIsUnavailable(t *testing.T) {
	t.Parallel()
	b, _, _ := newBounds(limits)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100000")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("0123456789"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	c := localenv.NewS3Client(localenv.Endpoint{URL: srv.URL}, b.S3)
	start := time.Now()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	got, err := io.ReadAll(out.Body)
	if string(got) != "0123456789" {
		t.Errorf("read %q before the stall, want the 10 bytes sent", got)
	}
	// The read is cut by the attempt's share of the budget (the body is
	// read after the retry loop, so it is not tried again).
	checkUnavailable(t, err, "S3", time.Since(start), limits.Transfer/time.Duration(limits.Attempts))
}

// TestSlowAnswersSucceed: a backend that answers slowly, but within an
// attempt's share of the budget, is waited for.
func TestSlowAnswersSucceed(t *testing.T) {
	t.Parallel()
	b, logs, _ := newBounds(limits)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		calls.Add(1)
		select {
		case <-time.After(200 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Write([]byte(`{"Item":{"user_id":{"S":"u"}}}`))
	}))
	t.Cleanup(srv.Close)
	db := localenv.NewDynamoClient(localenv.Endpoint{URL: srv.URL}, b.DynamoDB)
	if err := getItem(context.Background(), db); err != nil {
		t.Fatalf("GetItem answered after 200 ms: %v, want success", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
	if recs := logs.records(t); len(recs) != 0 {
		t.Errorf("logged %v for a slow answer, want nothing", recs)
	}
}

// TestStalledAttemptIsRetried: the first attempt gets no answer, the
// second does; the call succeeds after the first attempt's share.
func TestStalledAttemptIsRetried(t *testing.T) {
	t.Parallel()
	b, _, _ := newBounds(limits)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The body read first: the server notices the client going away
		// only once it has read the request.
		io.Copy(io.Discard, r.Body)
		if calls.Add(1) == 1 {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	db := localenv.NewDynamoClient(localenv.Endpoint{URL: srv.URL}, b.DynamoDB)
	start := time.Now()
	if err := getItem(context.Background(), db); err != nil {
		t.Fatalf("GetItem with one stalled attempt: %v, want success on the second", err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d attempts, want 2", n)
	}
	if took, share := time.Since(start), limits.Item/3; took < share {
		t.Errorf("took %v, less than the first attempt's share %v", took, share)
	}
}

// TestRetryableFailuresRunOut: a backend answering 500 every time is
// tried Attempts times, then not answering.
func TestRetryableFailuresRunOut(t *testing.T) {
	t.Parallel()
	b, _, _ := newBounds(limits)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"boom"}`))
	}))
	t.Cleanup(srv.Close)
	db := localenv.NewDynamoClient(localenv.Endpoint{URL: srv.URL}, b.DynamoDB)
	err := getItem(context.Background(), db)
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("500 on every attempt: %v, want ErrUnavailable", err)
	}
	if n := calls.Load(); n != int32(limits.Attempts) {
		t.Errorf("%d attempts, want %d", n, limits.Attempts)
	}
}

// TestRefusalIsPassedThrough: an answer that is a refusal (a failed
// condition) is the backend answering: the SDK's error, not
// ErrUnavailable, and no retry.
func TestRefusalIsPassedThrough(t *testing.T) {
	t.Parallel()
	b, logs, _ := newBounds(limits)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed"}`))
	}))
	t.Cleanup(srv.Close)
	db := localenv.NewDynamoClient(localenv.Endpoint{URL: srv.URL}, b.DynamoDB)
	err := getItem(context.Background(), db)
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) || errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("refused: %v, want ConditionalCheckFailedException and not ErrUnavailable", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d attempts for a refusal, want 1", n)
	}
	if recs := logs.records(t); len(recs) != 0 {
		t.Errorf("logged %v for a refusal, want nothing", recs)
	}
}

// TestCallerGoneIsNotUnavailable: the caller's own context ending (the
// person closed the page) is its error, not the backend's.
func TestCallerGoneIsNotUnavailable(t *testing.T) {
	t.Parallel()
	b, logs, _ := newBounds(limits)
	st := newStalled(t)
	db := localenv.NewDynamoClient(localenv.Endpoint{URL: st.url}, b.DynamoDB)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-st.conns
		cancel()
	}()
	err := getItem(ctx, db)
	if !errors.Is(err, context.Canceled) || errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("caller gone: %v, want context.Canceled and not ErrUnavailable", err)
	}
	if recs := logs.records(t); len(recs) != 0 {
		t.Errorf("logged %v for a caller gone, want nothing", recs)
	}
}

// TestCallerDeadlineIsNotUnavailable: a caller's own deadline, shorter
// than the budget, is the caller's to report.
func TestCallerDeadlineIsNotUnavailable(t *testing.T) {
	t.Parallel()
	b, logs, _ := newBounds(limits)
	st := newStalled(t)
	db := localenv.NewDynamoClient(localenv.Endpoint{URL: st.url}, b.DynamoDB)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := getItem(ctx, db)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("caller's deadline: %v, want context.DeadlineExceeded and not ErrUnavailable", err)
	}
	if recs := logs.records(t); len(recs) != 0 {
		t.Errorf("logged %v for the caller's deadline, want nothing", recs)
	}
}

// TestWarnOncePerKindPerMinute: a kind that keeps stalling logs one
// WARN a minute, the next one counting those left out; another kind
// logs on its own.
func TestWarnOncePerKindPerMinute(t *testing.T) {
	t.Parallel()
	fast := config.Storage{Item: 60 * time.Millisecond, Query: 60 * time.Millisecond, Transfer: 60 * time.Millisecond, Attempts: 1}
	b, logs, clk := newBounds(fast)
	st := newStalled(t)
	db := localenv.NewDynamoClient(localenv.Endpoint{URL: st.url}, b.DynamoDB)
	ctx := context.Background()
	for range 3 {
		if err := getItem(ctx, db); !errors.Is(err, storage.ErrUnavailable) {
			t.Fatalf("stalled GetItem: %v", err)
		}
	}
	_, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("t")})
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("stalled Query: %v", err)
	}
	clk.Advance(storage.WarnEvery)
	if err := getItem(ctx, db); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("stalled GetItem: %v", err)
	}
	type line struct {
		kind, op string
		left     float64
	}
	var got []line
	for _, r := range logs.records(t) {
		left, _ := r["not_logged_since"].(float64)
		got = append(got, line{r["kind"].(string), r["operation"].(string), left})
	}
	want := []line{{"item", "GetItem", 0}, {"query", "Query", 0}, {"item", "GetItem", 2}}
	if len(got) != len(want) {
		t.Fatalf("logged %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("log line %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestKindOf(t *testing.T) {
	for op, want := range map[string]storage.Kind{
		"GetItem": storage.Item, "PutItem": storage.Item, "UpdateItem": storage.Item, "DeleteItem": storage.Item,
		"DescribeTable": storage.Item, "HeadBucket": storage.Item, "HeadObject": storage.Item, "DeleteObject": storage.Item,
		"Query": storage.Query, "Scan": storage.Query, "BatchWriteItem": storage.Query, "TransactWriteItems": storage.Query,
		"ListObjectsV2": storage.Query, "DeleteObjects": storage.Query, "SomethingNew": storage.Query,
		"GetObject": storage.Transfer, "PutObject": storage.Transfer, "CopyObject": storage.Transfer,
	} {
		if got := storage.KindOf(op); got != want {
			t.Errorf("KindOf(%s) = %v, want %v", op, got, want)
		}
	}
}

func TestBudget(t *testing.T) {
	b := storage.New(config.Storage{Item: 1 * time.Second, Query: 2 * time.Second, Transfer: 3 * time.Second, Attempts: 2}, slog.New(slog.DiscardHandler), time.Now)
	for k, want := range map[storage.Kind]time.Duration{storage.Item: time.Second, storage.Query: 2 * time.Second, storage.Transfer: 3 * time.Second} {
		if got := b.Budget(k); got != want {
			t.Errorf("Budget(%v) = %v, want %v", k, got, want)
		}
	}
}

// TestRetryerBounded checks the retryer the clients get: Attempts tries,
// no wait past MaxBackoff.
func TestRetryerBounded(t *testing.T) {
	b, _, _ := newBounds(config.Storage{Item: time.Second, Query: time.Second, Transfer: time.Second, Attempts: 4, MaxBackoff: 40 * time.Millisecond})
	var o dynamodb.Options
	b.DynamoDB(&o)
	if got := o.Retryer.MaxAttempts(); got != 4 {
		t.Errorf("MaxAttempts() = %d, want 4", got)
	}
	for attempt := 1; attempt < 20; attempt++ {
		d, err := o.Retryer.RetryDelay(attempt, errors.New("connection reset"))
		if err != nil || d > 40*time.Millisecond {
			t.Errorf("RetryDelay(%d) = %v, %v; want at most 40ms", attempt, d, err)
		}
	}
	var so s3.Options
	b.S3(&so)
	if got := so.Retryer.MaxAttempts(); got != 4 {
		t.Errorf("S3 MaxAttempts() = %d, want 4", got)
	}
}

// TestBudgetEndingFirstIsUnavailable: a call whose budget ends before
// its caller's later deadline is the backend not answering, even when it
// returns only after the caller's deadline has passed too, as a call
// waking late on a busy machine does under readiness's backstop. The
// call is held inside its budget until both have ended, so the order is
// the same every run.
func TestBudgetEndingFirstIsUnavailable(t *testing.T) {
	t.Parallel()
	b, logs, _ := newBounds(limits)
	st := newStalled(t)
	ctx, cancel := context.WithTimeout(context.Background(), limits.Item+10*time.Millisecond)
	defer cancel()
	late := func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("late",
			func(cctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleInitialize(cctx, in)
				<-ctx.Done() // returns only once the caller's deadline has passed too
				return out, md, err
			}), middleware.After)
	}
	db := localenv.NewDynamoClient(localenv.Endpoint{URL: st.url}, b.DynamoDB, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, late) })
	err := getItem(ctx, db)
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("budget ended first, call returned after the caller's deadline: %v, want ErrUnavailable", err)
	}
	if recs := logs.records(t); len(recs) != 1 {
		t.Errorf("logged %d lines for a call without an answer, want 1", len(recs))
	}
}
