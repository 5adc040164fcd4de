// Package metrics holds ndiro's Prometheus series (all named ndiro_…)
// and serves them on the metrics listener (NDIRO_METRICS_ADDR, never the
// public one; deploy/README.md, "Metrics"). It counts what happens at its
// own edges (HTTP requests, DynamoDB and S3 calls, journal fsyncs);
// figures other packages already keep (the photo cache, the decode
// admission, the HEIC worker, share opens, deletions) are read from them
// at scrape time through Register, so the admin monitor and /metrics show
// one source, never two counts that could drift.
package metrics

import (
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"ndiro/internal/version"
)

// Metrics is one process's registry and the series it counts itself.
// The zero value is not usable; use New. Safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	requests  *prometheus.CounterVec
	durations *prometheus.HistogramVec

	calls         *prometheus.CounterVec
	callDurations *prometheus.HistogramVec
	retries       *prometheus.CounterVec
	throttles     *prometheus.CounterVec

	fsync prometheus.Histogram
}

// New returns a registry holding ndiro_build_info (b's version, commit
// and Go version, value 1), the Go runtime's and the process's standard
// series (go_…, process_…), and ndiro's own HTTP, storage and journal
// series, none of them observed yet.
func New(b version.Build) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ndiro_http_requests_total",
			Help: "HTTP requests answered, by route pattern (\"unmatched\" for none), method (GET, HEAD, POST or other) and status class (2xx…).",
		}, []string{"route", "method", "status"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ndiro_http_request_duration_seconds",
			Help:    "Time from a request's arrival at the router to its handler's return, by route, method and status class.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "method", "status"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ndiro_storage_calls_total",
			Help: "DynamoDB and S3 calls, by service, operation and result: ok, error (the backend refused it: a failed condition, a missing key…) or unavailable (no answer within the call's budget, or only retryable failures).",
		}, []string{"service", "operation", "result"}),
		callDurations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ndiro_storage_call_duration_seconds",
			Help:    "Time a DynamoDB or S3 call took, attempts and backoff included (a streamed body's reading excluded), by service and operation.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"service", "operation"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ndiro_storage_retries_total",
			Help: "Attempts of DynamoDB and S3 calls beyond each call's first, by service and operation.",
		}, []string{"service", "operation"}),
		throttles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ndiro_storage_throttles_total",
			Help: "Attempts of DynamoDB and S3 calls the backend refused as throttled (ProvisionedThroughputExceeded, SlowDown…), by service and operation.",
		}, []string{"service", "operation"}),
		fsync: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ndiro_journal_fsync_duration_seconds",
			Help:    "Time one fsync of local mode's DynamoDB journal took (local mode only).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}),
	}
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "ndiro_build_info",
		Help:        "The running binary's build (ndiro version); always 1.",
		ConstLabels: prometheus.Labels{"version": b.Version, "commit": b.Commit, "goversion": b.GoVersion},
	})
	info.Set(1)
	reg.MustRegister(info, m.requests, m.durations, m.calls, m.callDurations, m.retries, m.throttles, m.fsync,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Register adds collectors that read figures kept elsewhere
// (prometheus.NewCounterFunc, NewGaugeFunc, or a Collector of one's
// own). It returns the registry's error for a name registered twice.
func (m *Metrics) Register(cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Gatherer is the registry, for tests that read the series directly.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// ObserveSync records one journal fsync that took d
// (localenv.Options.ObserveSync).
func (m *Metrics) ObserveSync(d time.Duration) { m.fsync.Observe(d.Seconds()) }

// Handler serves the metrics listener: GET /metrics in Prometheus's
// exposition format and, only when pprof is true (NDIRO_PPROF=1), Go's
// profiles under /debug/pprof/. Anything else is a 404. It must never be
// mounted on the public listener: the figures and profiles are for the
// operator.
func (m *Metrics) Handler(pprofOn bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog: nil, ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: 4,
	}))
	if pprofOn {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}
