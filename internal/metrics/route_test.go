package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"ndiro/internal/config"
	"ndiro/internal/storage"
	"ndiro/internal/version"
)

// histogram returns the sample count and sum of the series of h under
// labels.
func histogram(t *testing.T, h *prometheus.HistogramVec, labels ...string) (uint64, float64) {
	t.Helper()
	var m dto.Metric
	if err := h.WithLabelValues(labels...).(prometheus.Histogram).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

// TestRouteCountsItsPattern: Route counts a handler served outside the
// chi router (the owner's photos, a ServeMux pattern) under the pattern
// it is given, one series with a pattern chi also has, by method and
// status class, and times it; a flush passes through its writer to the
// one underneath.
func TestRouteCountsItsPattern(t *testing.T) {
	const pattern = "/photo/{date}/{meal_id}"
	m := New(version.Build{})
	q := m.Requests()
	mux := http.NewServeMux()
	mux.Handle("GET "+pattern, q.Route(pattern)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("do") {
		case "slow":
			time.Sleep(5 * time.Millisecond) // a lower bound for the duration, not a wait on anything
			w.WriteHeader(http.StatusNotModified)
		case "flush":
			if err := http.NewResponseController(w).Flush(); err != nil {
				t.Errorf("Flush through the counting writer: %v", err)
			}
		default:
			w.Write([]byte("photo"))
		}
	})))
	mux.Handle(pattern, q.Route(pattern)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusMethodNotAllowed)
	})))
	flushed := httptest.NewRecorder()
	for _, req := range []struct {
		method, target string
		w              *httptest.ResponseRecorder
	}{
		{"GET", "/photo/2026-09-01/a?do=slow", httptest.NewRecorder()},
		{"GET", "/photo/2026-09-01/b", httptest.NewRecorder()},
		{"GET", "/photo/2026-09-01/c?do=flush", flushed},
		{"POST", "/photo/2026-09-01/d", httptest.NewRecorder()},
		{"PUT", "/photo/2026-09-01/e", httptest.NewRecorder()},
	} {
		mux.ServeHTTP(req.w, httptest.NewRequest(req.method, req.target, nil))
	}
	if !flushed.Flushed {
		t.Error("a flush did not reach the writer underneath")
	}
	for _, tc := range []struct {
		method, status string
		want           float64
	}{{"GET", "3xx", 1}, {"GET", "2xx", 2}, {"POST", "4xx", 1}, {"other", "4xx", 1}} {
		if got := testutil.ToFloat64(m.requests.WithLabelValues(pattern, tc.method, tc.status)); got != tc.want {
			t.Errorf("requests{%s %s %s} = %v, want %v", pattern, tc.method, tc.status, got, tc.want)
		}
	}
	if n := testutil.CollectAndCount(m.requests); n != 4 {
		t.Errorf("%d request series, want the 4 above", n)
	}
	if n, sum := histogram(t, m.durations, pattern, "GET", "3xx"); n != 1 || sum < 0.005 {
		t.Errorf("duration of the slow 304 = %d samples, %vs in all; want 1, at least 5 ms", n, sum)
	}
	if n, _ := histogram(t, m.durations, pattern, "GET", "2xx"); n != 2 {
		t.Errorf("durations of the 200s = %d samples, want 2", n)
	}
}

// TestSnapshotReadsOncePerScrape: a Snapshot's series come from one
// reading per scrape, counters as counters and gauges as gauges.
func TestSnapshotReadsOncePerScrape(t *testing.T) {
	type stats struct{ hits, bytes int }
	reads := 0
	c := Snapshot(func() stats { reads++; return stats{hits: 3 * reads, bytes: 100 * reads} },
		Series[stats]{Name: "ndiro_test_hits_total", Help: "Hits.", Counter: true, Value: func(s stats) float64 { return float64(s.hits) }},
		Series[stats]{Name: "ndiro_test_bytes", Help: "Bytes.", Value: func(s stats) float64 { return float64(s.bytes) }},
	)
	m := New(version.Build{})
	if err := m.Register(c); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP ndiro_test_bytes Bytes.
# TYPE ndiro_test_bytes gauge
ndiro_test_bytes 100
# HELP ndiro_test_hits_total Hits.
# TYPE ndiro_test_hits_total counter
ndiro_test_hits_total 3
`
	if err := testutil.GatherAndCompare(m.Gatherer(), strings.NewReader(want), "ndiro_test_bytes", "ndiro_test_hits_total"); err != nil {
		t.Error(err)
	}
	if reads != 1 {
		t.Errorf("one scrape read the figures %d times, want 1", reads)
	}
	if err := m.Register(Snapshot(func() stats { return stats{} },
		Series[stats]{Name: "ndiro_test_bytes", Help: "Bytes.", Value: func(s stats) float64 { return 0 }})); err == nil {
		t.Error("Register of a name registered already = nil, want the registry's error")
	}
}

// TestObserveSync: each journal fsync is one sample of its duration.
func TestObserveSync(t *testing.T) {
	m := New(version.Build{})
	m.ObserveSync(3 * time.Millisecond)
	m.ObserveSync(time.Millisecond)
	var out dto.Metric
	if err := m.fsync.Write(&out); err != nil {
		t.Fatal(err)
	}
	if n, sum := out.GetHistogram().GetSampleCount(), out.GetHistogram().GetSampleSum(); n != 2 || sum < 0.0039 || sum > 0.0041 {
		t.Errorf("fsync = %d samples, %vs; want 2, 0.004s", n, sum)
	}
}

// fakeAWS answers every request with the next status of statuses (the
// last one from then on) and a body for it, counting the requests.
func fakeAWS(t *testing.T, statuses ...int) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		status := statuses[min(i, len(statuses)-1)]
		if status == http.StatusBadRequest { // DynamoDB's throttling refusal
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.WriteHeader(status)
			fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"slow down"}`)
			return
		}
		if status == http.StatusServiceUnavailable { // S3's SlowDown
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(status)
			fmt.Fprint(w, `<Error><Code>SlowDown</Code><Message>slow down</Message></Error>`)
			return
		}
		if strings.HasPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_") {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			fmt.Fprint(w, `{}`)
			return
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// quickRetries retries at once, without the client's rate limit, up to
// 3 attempts.
func quickRetries() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = 3
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		o.RateLimiter = ratelimit.None
	})
}

// TestStorageCallsCounted: every DynamoDB and S3 call the clients make
// is one count by service, operation and result, one duration sample,
// its attempts past the first as retries, and those the backend refused
// as throttled as throttles.
func TestStorageCallsCounted(t *testing.T) {
	ctx := context.Background()
	m := New(version.Build{})
	creds := credentials.NewStaticCredentialsProvider("test", "test", "")

	dsrv, dn := fakeAWS(t, http.StatusBadRequest, http.StatusBadRequest, http.StatusOK)
	db := dynamodb.New(dynamodb.Options{Region: "eu-west-1", Credentials: creds, BaseEndpoint: aws.String(dsrv.URL), Retryer: quickRetries()}, m.DynamoDB)
	if _, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("users"), Key: map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: "u1"}}}); err != nil {
		t.Fatalf("GetItem after two throttled attempts: %v", err)
	}
	if n := dn.Load(); n != 3 {
		t.Fatalf("the DynamoDB client made %d attempts, want 3: the test shows nothing", n)
	}
	ssrv, _ := fakeAWS(t, http.StatusServiceUnavailable)
	bucket := s3.New(s3.Options{Region: "eu-west-1", Credentials: creds, BaseEndpoint: aws.String(ssrv.URL), UsePathStyle: true, Retryer: quickRetries()}, m.S3)
	if _, err := bucket.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String("a")}); err == nil {
		t.Fatal("GetObject throttled three times = nil, want its error")
	}
	for _, tc := range []struct {
		name string
		c    prometheus.Collector
		want float64
	}{
		{"calls{DynamoDB GetItem ok}", m.calls.WithLabelValues("DynamoDB", "GetItem", "ok"), 1},
		{"retries{DynamoDB GetItem}", m.retries.WithLabelValues("DynamoDB", "GetItem"), 2},
		{"throttles{DynamoDB GetItem}", m.throttles.WithLabelValues("DynamoDB", "GetItem"), 2},
		{"calls{S3 GetObject error}", m.calls.WithLabelValues("S3", "GetObject", "error"), 1},
		{"retries{S3 GetObject}", m.retries.WithLabelValues("S3", "GetObject"), 2},
		{"throttles{S3 GetObject}", m.throttles.WithLabelValues("S3", "GetObject"), 3},
	} {
		if got := testutil.ToFloat64(tc.c); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, got, tc.want)
		}
	}
	if n := testutil.CollectAndCount(m.calls); n != 2 {
		t.Errorf("%d call series, want the 2 above", n)
	}
	if n, _ := histogram(t, m.callDurations, "DynamoDB", "GetItem"); n != 1 {
		t.Errorf("GetItem durations = %d samples, want 1 for its three attempts", n)
	}
}

// TestUnavailableCallCounted: a call the storage bounds gave up on
// (storage.ErrUnavailable, however wrapped) is "unavailable", any other
// failure "error"; a call without the retry loop's metadata counts no
// retries.
func TestUnavailableCallCounted(t *testing.T) {
	m := New(version.Build{})
	m.observeCall("S3", "GetObject", time.Millisecond, middleware.Metadata{}, fmt.Errorf("get: %w", storage.ErrUnavailable))
	m.observeCall("S3", "GetObject", time.Millisecond, middleware.Metadata{}, errors.New("access denied"))
	for result, want := range map[string]float64{"unavailable": 1, "error": 1, "ok": 0} {
		if got := testutil.ToFloat64(m.calls.WithLabelValues("S3", "GetObject", result)); got != want {
			t.Errorf("calls{S3 GetObject %s} = %v, want %v", result, got, want)
		}
	}
	if n := testutil.CollectAndCount(m.retries); n != 0 {
		t.Errorf("%d retry series for calls without attempts, want 0", n)
	}
}

// TestCutBodyCountedUnavailable: a GetObject whose answer began but whose
// body the storage budget cut off is one call, counted "unavailable"
// (the series the alert watches), not "ok"; one read to its end is
// "ok".
func TestCutBodyCountedUnavailable(t *testing.T) {
	ctx := context.Background()
	m := New(version.Build{})
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusOK)
		if r.URL.Path == "/photos/whole" {
			w.Write(make([]byte, 1000))
			return
		}
		w.Write(make([]byte, 10))
		w.(http.Flusher).Flush()
		<-release // the rest never comes
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // first: the server's Close waits for the handler
	bounds := storage.New(config.Storage{Item: time.Second, Query: time.Second, Transfer: 300 * time.Millisecond, Attempts: 1, MaxBackoff: time.Millisecond}, slog.New(slog.DiscardHandler), time.Now)
	creds := credentials.NewStaticCredentialsProvider("test", "test", "")
	bucket := s3.New(s3.Options{Region: "eu-west-1", Credentials: creds, BaseEndpoint: aws.String(srv.URL), UsePathStyle: true}, bounds.S3, m.S3)
	for key, wantErr := range map[string]bool{"cut": true, "whole": false} {
		out, err := bucket.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("GetObject(%s) = %v, want its answer to begin", key, err)
		}
		_, err = io.ReadAll(out.Body)
		out.Body.Close()
		if (err != nil) != wantErr || wantErr && !errors.Is(err, storage.ErrUnavailable) {
			t.Fatalf("reading %s's body = %v, want an error: %v (storage.ErrUnavailable)", key, err, wantErr)
		}
	}
	for result, want := range map[string]float64{"unavailable": 1, "ok": 1, "error": 0} {
		if got := testutil.ToFloat64(m.calls.WithLabelValues("S3", "GetObject", result)); got != want {
			t.Errorf("calls{S3 GetObject %s} = %v, want %v", result, got, want)
		}
	}
}
