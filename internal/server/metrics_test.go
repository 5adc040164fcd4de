package server_test

import (
	"image/color"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/version"
)

// scrape reads the app's /metrics as a Prometheus server would, over
// HTTP from the metrics handler, parsed from the text exposition format.
func scrape(t *testing.T, app *apptest.App) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(app.Metrics.Handler(false))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// value returns the value of the series name{labels} (a counter's or
// gauge's value, a histogram's sample count), 0 if absent.
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	base, count := name, false
	if f, ok := fams[name]; !ok || f == nil {
		if b, found := strings.CutSuffix(name, "_count"); found {
			base, count = b, true
		}
	}
	f := fams[base]
	if f == nil {
		return 0
	}
series:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if got[k] != v {
				continue series
			}
		}
		if len(got) != len(labels) {
			continue
		}
		switch {
		case count && m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Untyped != nil:
			return m.Untyped.GetValue()
		}
	}
	return 0
}

// TestMetricsCountWhatHappened scrapes /metrics before and after a month
// page, a photo answered 200 then 304, an upload and a share opened, and
// checks that each named series moved by exactly what those requests
// did; that no label holds the share's token, the meal's ID or any raw
// path; and that ndiro_build_info names this build.
func TestMetricsCountWhatHappened(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	c.SignIn("admin@example.com")
	tok := c.CreateShare(url.Values{"label": {"Dr. Rossi"}, "from": {"2026-09-01"}, "to": {"2026-09-07"}, "expiry": {"never"}})
	recipient := app.Client()

	form := url.Values{"date": {"2026-09-02"}, "time": {"12:30"}, "kind": {"lunch"}, "notes": {"Soup"}}
	photo := apptest.File{Field: "photo", Name: "meal.jpg", Body: apptest.JPEG(t, 640, 480, color.RGBA{200, 80, 40, 255})}
	var m meal.Meal
	var etag string
	// A series' labels are written "name=value,…".
	type series struct{ name, labels string }
	req3 := func(route, method, status string) string {
		return "route=" + route + ",method=" + method + ",status=" + status
	}
	dynamo := func(op, result string) string { return "service=DynamoDB,operation=" + op + ",result=" + result }
	s3 := func(op, result string) string { return "service=S3,operation=" + op + ",result=" + result }
	// Every step lists the series it moves, by how much; every series
	// named in any step must stay put in the others.
	steps := []struct {
		name  string
		do    func()
		moves map[series]float64
	}{
		{"upload", func() {
			if r := c.PostMultipart("/meals", form, photo); r.StatusCode != http.StatusSeeOther {
				t.Fatalf("upload = %d, want 303", r.StatusCode)
			}
			ms, err := app.Meals.All(t.Context(), localenv.Subject("admin@example.com"))
			if err != nil || len(ms) != 1 {
				t.Fatalf("meals = %v, %v", ms, err)
			}
			m = ms[0]
		}, map[series]float64{
			{"ndiro_http_requests_total", req3("/meals", "POST", "3xx")}:                 1,
			{"ndiro_http_request_duration_seconds_count", req3("/meals", "POST", "3xx")}: 1,
			// The header's share of the decode budget, then the decode's.
			{"ndiro_decode_admitted_total", ""}: 2,
			// Two copies stored (thumbnail, display), then the row.
			{"ndiro_storage_calls_total", s3("PutObject", "ok")}:                            2,
			{"ndiro_storage_call_duration_seconds_count", "service=S3,operation=PutObject"}: 2,
			{"ndiro_storage_calls_total", dynamo("PutItem", "ok")}:                          1,
			// This test's own read of the meal back (Meals.All).
			{"ndiro_storage_calls_total", dynamo("Query", "ok")}: 1,
		}},
		{"month page", func() {
			if r := c.Get("/meals?month=2026-09"); r.StatusCode != http.StatusOK {
				t.Fatalf("month page = %d", r.StatusCode)
			}
		}, map[series]float64{
			{"ndiro_http_requests_total", req3("/meals", "GET", "2xx")}:                 1,
			{"ndiro_http_request_duration_seconds_count", req3("/meals", "GET", "2xx")}: 1,
			{"ndiro_storage_calls_total", dynamo("Query", "ok")}:                        1,
		}},
		{"photo 200", func() {
			r := c.Get(m.ThumbURL())
			if r.StatusCode != http.StatusOK {
				t.Fatalf("photo = %d", r.StatusCode)
			}
			etag = r.Header.Get("ETag")
		}, map[series]float64{
			{"ndiro_http_requests_total", req3("/photo/{date}/{meal_id}", "GET", "2xx")}: 1,
			{"ndiro_photo_cache_misses_total", ""}:                                       1,
			{"ndiro_storage_calls_total", s3("GetObject", "ok")}:                         1,
		}},
		{"photo 304", func() {
			req, _ := http.NewRequest(http.MethodGet, app.URL+m.ThumbURL(), nil)
			req.Header.Set("If-None-Match", etag)
			if r := c.Do(req); r.StatusCode != http.StatusNotModified {
				t.Fatalf("photo with its ETag = %d, want 304", r.StatusCode)
			}
		}, map[series]float64{
			{"ndiro_http_requests_total", req3("/photo/{date}/{meal_id}", "GET", "3xx")}:                 1,
			{"ndiro_http_request_duration_seconds_count", req3("/photo/{date}/{meal_id}", "GET", "3xx")}: 1,
			{"ndiro_photo_cache_hits_total", ""}:                                                         1,
		}},
		{"share open", func() {
			if r := recipient.Get("/s/" + tok); r.StatusCode != http.StatusOK {
				t.Fatalf("share open = %d", r.StatusCode)
			}
		}, map[series]float64{
			{"ndiro_http_requests_total", req3("/s/{token}", "GET", "2xx")}: 1,
			{"ndiro_share_opens_total", ""}:                                 1,
			{"ndiro_storage_calls_total", dynamo("Query", "ok")}:            1,
		}},
	}
	watched := map[series]bool{
		{"ndiro_decode_refused_total", ""}:                                  true,
		{"ndiro_storage_calls_total", dynamo("Query", "error")}:             true,
		{"ndiro_storage_retries_total", "service=DynamoDB,operation=Query"}: true,
		{"ndiro_http_requests_total", req3("/s/{token}/", "GET", "2xx")}:    true,
	}
	for _, st := range steps {
		for s := range st.moves {
			watched[s] = true
		}
	}
	var after map[string]*dto.MetricFamily
	moved := func(before, after map[string]*dto.MetricFamily, s series) float64 {
		labels := map[string]string{}
		for kv := range strings.SplitSeq(s.labels, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				labels[k] = v
			}
		}
		return value(after, s.name, labels) - value(before, s.name, labels)
	}
	for _, st := range steps {
		before := scrape(t, app)
		st.do()
		// A request's series move once its handler has returned, which
		// may be just after the client has read the response: scrape
		// until every expected move is there (or a deadline), then
		// compare every watched series once.
		for deadline := time.Now().Add(10 * time.Second); ; {
			after = scrape(t, app)
			missing := false
			for s, want := range st.moves {
				if moved(before, after, s) < want {
					missing = true
				}
			}
			if !missing || time.Now().After(deadline) {
				break
			}
			runtime.Gosched()
		}
		for s := range watched {
			if got, want := moved(before, after, s), st.moves[s]; got != want {
				t.Errorf("%s: %s%v moved by %v, want %v", st.name, s.name, s.labels, got, want)
			}
		}
	}

	b := version.Info()
	if v := value(after, "ndiro_build_info", map[string]string{"version": b.Version, "commit": b.Commit, "goversion": runtime.Version()}); v != 1 {
		t.Errorf("ndiro_build_info{version=%q, commit=%q, goversion=%q} = %v, want 1", b.Version, b.Commit, runtime.Version(), v)
	}

	// No label value holds a token, an ID or a raw path.
	var routes []string
	for name, f := range after {
		for _, s := range f.Metric {
			for _, l := range s.Label {
				v := l.GetValue()
				if strings.Contains(v, tok) || strings.Contains(v, m.ID) || strings.Contains(v, m.Date) || strings.Contains(v, "month=") {
					t.Errorf("%s has label %s=%q, which holds a token, an ID or a path", name, l.GetName(), v)
				}
				if name == "ndiro_http_requests_total" && l.GetName() == "route" {
					routes = append(routes, v)
				}
			}
		}
	}
	sort.Strings(routes)
	t.Logf("route labels: %v", routes)
}

// TestMetricsUnmatchedRoute: a path no route matches is counted under
// one label value, whatever the path, and /metrics and pprof are not on
// the public listener.
func TestMetricsUnmatchedRoute(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	before := scrape(t, app)
	for _, p := range []string{"/no-such-page-a1b2c3", "/metrics", "/debug/pprof/", "/s/"} {
		if r := c.Get(p); r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s on the public listener = %d, want 404", p, r.StatusCode)
		}
	}
	after := scrape(t, app)
	un := map[string]string{"route": "unmatched", "method": "GET", "status": "4xx"}
	if got := value(after, "ndiro_http_requests_total", un) - value(before, "ndiro_http_requests_total", un); got != 4 {
		t.Errorf("unmatched 404s counted %v, want 4", got)
	}
	for _, s := range after["ndiro_http_requests_total"].Metric {
		for _, l := range s.Label {
			if l.GetName() == "route" && (strings.Contains(l.GetValue(), "a1b2c3") || l.GetValue() == "/*" || strings.Contains(l.GetValue(), "pprof")) {
				t.Errorf("route label %q: a raw path or chi's catch-all", l.GetValue())
			}
		}
	}
}

// TestMonitorShowsTheMetricsFigures: the admin monitor's process panel
// reads the same sources as /metrics: the version of ndiro_build_info,
// the decode admission's counters.
func TestMonitorShowsTheMetricsFigures(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	c.SignIn("admin@example.com")
	photo := apptest.File{Field: "photo", Name: "meal.jpg", Body: apptest.JPEG(t, 320, 240, color.RGBA{20, 80, 40, 255})}
	if r := c.PostMultipart("/meals", url.Values{"date": {"2026-09-02"}, "time": {"12:30"}, "kind": {"lunch"}}, photo); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("upload = %d", r.StatusCode)
	}
	fams := scrape(t, app)
	doc := c.Get("/admin/monitor").Doc()
	up := doc.Find("#process tr").First().Find("td.muted").Text()
	if want := "version " + version.String() + ","; !strings.HasPrefix(up, want) {
		t.Errorf("process panel says %q, want it to start %q", up, want)
	}
	admitted := value(fams, "ndiro_decode_admitted_total", nil)
	if admitted != 2 {
		t.Fatalf("ndiro_decode_admitted_total = %v, want 2 (one upload)", admitted)
	}
	row := doc.Find("#decode-admission")
	if got, want := row.Find("td").First().Text(), "0 waiting"; got != want {
		t.Errorf("decode admission row says %q, want %q", got, want)
	}
	if got := row.Find("td.muted").Text(); !strings.HasPrefix(got, "2 admitted (0 after a wait), 0 refused") {
		t.Errorf("decode admission row says %q, want the counters /metrics has: 2 admitted", got)
	}
}
