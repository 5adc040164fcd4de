package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/PuerkitoBio/goquery"
)

// Routes as the report names them.
const (
	routeMonth      = "GET /meals?month="
	routeThumb      = "GET /photo (thumb, cached)"
	routeDisplay    = "GET /photo (display)"
	routeNotChanged = "GET /photo (If-None-Match: 304)"
	routeShare      = "GET /s/{token}"
	routeUpload     = "POST /meals (photo upload)"
	routeEditForm   = "GET /meals/{date}/{meal_id}/edit"
	routeEdit       = "POST /meals/{date}/{meal_id} (edit)"
)

// mix is how often each operation is chosen, in percent. An upload the
// owner's allowance does not permit now, or an edit while the owner has
// one under way, is a month page instead.
var mix = []struct {
	op     string
	weight int
}{
	{"month", 30}, {"thumb", 20}, {"notModified", 15}, {"display", 5},
	{"share", 12}, {"upload", 10}, {"edit", 8},
}

// sample is one request's outcome.
type sample struct {
	route string
	took  time.Duration
	// end is when the request finished.
	end time.Time
	// status is the HTTP status; 0 for no answer (err).
	status int
	// unexpected: an answer other than the one the operation expects
	// (e.g. 200 where 304 was asked for), 5xx and 429 aside.
	unexpected bool
	err        error
}

// results are every sample of the load phase.
type results struct {
	samples []sample
	elapsed time.Duration
}

// load runs concurrency clients for d (or until maxRequests) and returns
// what they saw. Client i acts for owner i mod owners.
func (w *world) load(ctx context.Context, concurrency int, d time.Duration, maxRequests int64) results {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var sent atomic.Int64
	per := make([][]sample, concurrency)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range concurrency {
		o := w.owners[i%len(w.owners)]
		wg.Go(func() {
			for ctx.Err() == nil && sent.Add(1) <= maxRequests {
				per[i] = append(per[i], w.step(ctx, o)...)
			}
		})
	}
	wg.Wait()
	r := results{elapsed: time.Since(start)}
	deadline, _ := ctx.Deadline()
	for _, s := range per {
		for _, x := range s {
			// A request cut off by the end of the run is not a result; one
			// that failed before the end (a client timeout, say) is.
			if x.err != nil && !x.end.Before(deadline) && errors.Is(x.err, context.DeadlineExceeded) {
				continue
			}
			r.samples = append(r.samples, x)
		}
	}
	return r
}

// pick chooses an operation by mix.
func pick() string {
	n := rand.IntN(100)
	for _, m := range mix {
		if n < m.weight {
			return m.op
		}
		n -= m.weight
	}
	return "month"
}

// timed runs f as one request of route and records it; want is the
// status the operation expects.
func timed(route string, want int, f func() (*answer, error)) (sample, *answer) {
	start := time.Now()
	a, err := f()
	end := time.Now()
	s := sample{route: route, took: end.Sub(start), end: end, err: err}
	if a != nil {
		s.status = a.status
		s.unexpected = a.status != want && a.status < 500 && a.status != http.StatusTooManyRequests
	}
	return s, a
}

// step does one operation for o and returns its requests' samples.
func (w *world) step(ctx context.Context, o *owner) []sample {
	op := pick()
	o.mu.Lock()
	var ph photoRef
	if len(o.photos) > 0 {
		ph = o.photos[rand.IntN(len(o.photos))]
	}
	var m mealRef
	if len(o.meals) > 0 {
		m = o.meals[rand.IntN(len(o.meals))]
	}
	if op == "edit" && o.edit {
		op = "month"
	}
	if op == "edit" {
		o.edit = true
	}
	o.mu.Unlock()
	if ph.thumb == "" && (op == "thumb" || op == "notModified" || op == "display") {
		op = "month"
	}
	if op == "upload" {
		if ok, _ := o.uploads.Allow(o.email); !ok {
			op = "month"
		}
	}

	switch op {
	case "thumb", "notModified":
		route, want, header := routeThumb, http.StatusOK, []string(nil)
		if op == "notModified" && ph.etag != "" {
			route, want, header = routeNotChanged, http.StatusNotModified, []string{"If-None-Match", ph.etag}
		}
		s, a := timed(route, want, func() (*answer, error) { return o.c.get(ctx, ph.thumb, header...) })
		if a != nil && a.status == http.StatusOK && ph.etag == "" {
			o.remember(ph.thumb, a.header.Get("ETag"))
		}
		return []sample{s}
	case "display":
		s, _ := timed(routeDisplay, http.StatusOK, func() (*answer, error) { return o.c.get(ctx, ph.display) })
		return []sample{s}
	case "share":
		s, _ := timed(routeShare, http.StatusOK, func() (*answer, error) { return w.anon.get(ctx, "/s/"+o.share) })
		return []sample{s}
	case "upload":
		p := w.photos[rand.IntN(len(w.photos))]
		at := time.Date(2026, 9, 1, rand.IntN(24), rand.IntN(60), rand.IntN(60), 0, time.UTC)
		start := time.Now()
		status, err := o.upload(ctx, p, at)
		end := time.Now()
		s := sample{route: routeUpload, took: end.Sub(start), end: end, status: status, err: err}
		s.unexpected = err == nil && status != http.StatusSeeOther && status < 500 && status != http.StatusTooManyRequests
		return []sample{s}
	case "edit":
		defer func() { o.mu.Lock(); o.edit = false; o.mu.Unlock() }()
		path := "/meals/" + m.date + "/" + m.id
		s1, a := timed(routeEditForm, http.StatusOK, func() (*answer, error) { return o.c.get(ctx, path+"/edit") })
		if a == nil || a.status != http.StatusOK {
			return []sample{s1}
		}
		form := url.Values{}
		if doc, err := a.doc(); err == nil {
			form = formValues(doc.Find("form.meal-form"))
		}
		form.Set("kind", "dinner")
		form.Set("notes", fmt.Sprintf("Edited at %s", time.Now().Format(time.TimeOnly)))
		s2, _ := timed(routeEdit, http.StatusSeeOther, func() (*answer, error) { return o.c.postForm(ctx, path, form) })
		return []sample{s1, s2}
	}
	s, _ := timed(routeMonth, http.StatusOK, func() (*answer, error) { return o.readMonth(ctx, false) })
	return []sample{s}
}

// formValues returns what a browser would send for form as it stands:
// every named input but files and unticked boxes, and the textareas.
func formValues(form *goquery.Selection) url.Values {
	v := url.Values{}
	form.Find("input[name], textarea[name]").Each(func(_ int, in *goquery.Selection) {
		name, _ := in.Attr("name")
		if _, off := in.Attr("disabled"); off {
			return
		}
		if goquery.NodeName(in) == "textarea" {
			v.Add(name, in.Text())
			return
		}
		switch typ, _ := in.Attr("type"); typ {
		case "file", "submit":
			return
		case "checkbox", "radio":
			if _, on := in.Attr("checked"); !on {
				return
			}
		}
		v.Add(name, in.AttrOr("value", ""))
	})
	return v
}

// remember keeps the ETag of the photo at thumb.
func (o *owner) remember(thumb, etag string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range o.photos {
		if o.photos[i].thumb == thumb {
			o.photos[i].etag = etag
		}
	}
}

// goroutines are the server's goroutine counts before and after the
// load, each read once the keep-alive connections to local mode's
// in-process DynamoDB and S3 have had time to close
// (localenv.IdleConnTimeout).
type goroutines struct{ before, after int }

// report prints the figures and the checks, and reports whether every
// check passed.
func report(out io.Writer, r results, s settings, m, top rss, g goroutines, mon monitorFigures, errorLines int64, firstErrors []string) bool {
	byRoute := map[string][]sample{}
	for _, x := range r.samples {
		byRoute[x.route] = append(byRoute[x.route], x)
	}
	routes := make([]string, 0, len(byRoute))
	for k := range byRoute {
		routes = append(routes, k)
	}
	sort.Strings(routes)
	secs := r.elapsed.Seconds()
	fmt.Fprintf(out, "\nndiro-load: %d requests in %.1f s at concurrency %d, %d owners\n\n", len(r.samples), secs, s.concurrency, s.owners)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "route\trequests\treq/s\tp50 ms\tp99 ms\t5xx\t429\tother\tno answer\t")
	var total, fivexx, tooMany, other, noAnswer int
	var all []time.Duration
	odd := map[string]int{} // "route status" of answers other than expected
	for _, route := range routes {
		xs := byRoute[route]
		var took []time.Duration
		var c5, c429, cOther, cErr int
		for _, x := range xs {
			took = append(took, x.took)
			switch {
			case x.err != nil:
				cErr++
			case x.status >= 500:
				c5++
			case x.status == http.StatusTooManyRequests:
				c429++
			case x.unexpected:
				cOther++
				odd[fmt.Sprintf("%s: %d", route, x.status)]++
			}
		}
		all = append(all, took...)
		p50, p99 := percentiles(took)
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%d\t%d\t%d\t%d\t\n", route, len(xs), float64(len(xs))/secs, ms(p50), ms(p99), c5, c429, cOther, cErr)
		total += len(xs)
		fivexx += c5
		tooMany += c429
		other += cOther
		noAnswer += cErr
	}
	p50, p99 := percentiles(all)
	fmt.Fprintf(tw, "all\t%d\t%.1f\t%.1f\t%.1f\t%d\t%d\t%d\t%d\t\n", total, float64(total)/secs, ms(p50), ms(p99), fivexx, tooMany, other, noAnswer)
	tw.Flush()

	budget := s.cacheBytes + 128<<20
	fmt.Fprintf(out, "\nserver: peak RSS %.1f MB (VmHWM), photo cache budget %.0f MB, limit %.0f MB\n", mb(m.peak), mb(s.cacheBytes), mb(budget))
	fmt.Fprintf(out, "server: sampled peaks %.1f MB anonymous (heap, stacks), %.1f MB file pages (binary, mapped S3 data); now %.1f MB\n", mb(top.anon), mb(top.file), mb(m.now))
	fmt.Fprintf(out, "server: goroutines %d before, %d after; heap %s; photo cache hit ratio %s, held %s\n", g.before, g.after, mon.heap, mon.hitRatio, mon.cacheHeld)
	fmt.Fprintf(out, "server: %d ERROR log lines\n", errorLines)
	for _, l := range firstErrors {
		fmt.Fprintf(out, "  %s\n", l)
	}

	ok := true
	check := func(pass bool, what string) {
		mark := "ok  "
		if !pass {
			mark, ok = "FAIL", false
		}
		fmt.Fprintf(out, "%s %s\n", mark, what)
	}
	fmt.Fprintln(out)
	var missing []string
	for _, route := range []string{routeMonth, routeThumb, routeDisplay, routeNotChanged, routeShare, routeUpload, routeEditForm, routeEdit} {
		if len(byRoute[route]) == 0 {
			missing = append(missing, route)
		}
	}
	check(len(missing) == 0, fmt.Sprintf("every part of the mix ran (missing: %q)", missing))
	check(fivexx == 0, fmt.Sprintf("no 5xx (%d)", fivexx))
	check(noAnswer == 0, fmt.Sprintf("every request answered (%d without an answer)", noAnswer))
	check(m.peak <= budget, fmt.Sprintf("peak RSS %.1f MB ≤ cache budget + 128 MB = %.0f MB", mb(m.peak), mb(budget)))
	check(abs(g.after-g.before) <= 5, fmt.Sprintf("goroutines back within 5 of the baseline (%d → %d)", g.before, g.after))
	if tooMany > 0 || other > 0 {
		fmt.Fprintf(out, "note %d answers were 429 and %d other than expected (4xx); neither fails the run\n", tooMany, other)
		keys := make([]string, 0, len(odd))
		for k := range odd {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(out, "     %s × %d\n", k, odd[k])
		}
	}
	return ok
}

// percentiles returns the 50th and 99th percentile of d (nearest rank).
func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	at := func(p float64) time.Duration {
		i := int(p*float64(len(d))+0.999999) - 1
		return d[min(max(i, 0), len(d)-1)]
	}
	return at(0.50), at(0.99)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mb(n int64) float64 { return float64(n) / (1 << 20) }
