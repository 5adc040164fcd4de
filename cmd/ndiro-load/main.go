// Command ndiro-load puts ndiro under a realistic load and reports how it
// held up (make load). It starts the ndiro binary given by -bin in local
// mode as a child process on 127.0.0.1 with a data directory of its own,
// signs in an admin and -owners owners through local mode's sign-in
// stand-in (the owners by invite), gives each owner meals with photos and
// a share link, and then, for -duration, runs -concurrency clients that
// mix month pages, photos served from the cache, 304s, uploads of the
// fixture photos, share views and edits. It then prints requests per
// second, p50 and p99 latency and status counts per route, the server's
// peak RSS (VmHWM from /proc) and its goroutines before and after (from
// the admin monitor), stops the server and removes its data.
//
// It talks to loopback only, stops by itself (-duration, at most 10
// minutes; -max-requests), and exits 1 if any request got a 5xx or no
// answer, if peak RSS exceeds the photo cache budget + 128 MB, or if the
// goroutines do not come back to within 5 of where they were.
//
// Each owner is one client: its uploads keep to the server's per-owner
// limit (meal.UploadBurst, meal.UploadEvery), as a phone sending a
// camera-roll backfill one photo at a time does; any 429 is counted apart.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ndiro-load:", err)
		os.Exit(1)
	}
}

// settings are the command's flags.
type settings struct {
	bin         string
	photos      string
	duration    time.Duration
	concurrency int
	owners      int
	cacheBytes  int64
	maxRequests int64
}

// errFailed is run's error when the load ran but a check failed; the
// report says which.
var errFailed = errors.New("the run failed its checks (see above)")

// run parses args, runs the load and writes the report to out.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ndiro-load", flag.ContinueOnError)
	var s settings
	fs.StringVar(&s.bin, "bin", "bin/ndiro-dev", "the ndiro binary to start in local mode")
	fs.StringVar(&s.photos, "photos", "testdata/photos", "folder of the fixture photos small.jpg and phone-portrait-small.jpg")
	fs.DurationVar(&s.duration, "duration", 60*time.Second, "how long the mixed load runs (at most 10m)")
	fs.IntVar(&s.concurrency, "concurrency", 50, "clients sending requests at once (1 to 500)")
	fs.IntVar(&s.owners, "owners", 12, "owners signed in (1 to 100); each is one client with its own upload allowance")
	fs.Int64Var(&s.cacheBytes, "cache-bytes", 64<<20, "the server's photo cache budget (NDIRO_PHOTO_CACHE_BYTES)")
	fs.Int64Var(&s.maxRequests, "max-requests", 5_000_000, "stop after this many requests of the load phase")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case s.duration <= 0 || s.duration > 10*time.Minute:
		return fmt.Errorf("-duration must be more than 0 and at most 10m, not %s", s.duration)
	case s.concurrency < 1 || s.concurrency > 500:
		return fmt.Errorf("-concurrency must be from 1 to 500, not %d", s.concurrency)
	case s.owners < 1 || s.owners > 100:
		return fmt.Errorf("-owners must be from 1 to 100, not %d", s.owners)
	case s.cacheBytes < 0:
		return fmt.Errorf("-cache-bytes must be 0 or more")
	}
	photos, err := readPhotos(s.photos)
	if err != nil {
		return err
	}
	// Everything, set-up and shutdown included, within a fixed bound.
	ctx, cancel := context.WithTimeout(ctx, s.duration+5*time.Minute)
	defer cancel()

	srv, err := startServer(ctx, s.bin, s.cacheBytes)
	if err != nil {
		return err
	}
	defer srv.stop()
	fmt.Fprintf(out, "ndiro-load: %s in local mode at %s (pid %d)\n", s.bin, srv.base, srv.pid())

	w, err := setUp(ctx, srv.base, s.owners, photos)
	if err != nil {
		return fmt.Errorf("set-up: %w", err)
	}
	var g goroutines
	if g.before, err = w.settledGoroutines(ctx, -1); err != nil {
		return fmt.Errorf("goroutines before: %w", err)
	}
	fmt.Fprintf(out, "ndiro-load: %d owners signed in with %d meals; %d clients for %s\n", s.owners, w.meals(), s.concurrency, s.duration)

	wctx, stopWatch := context.WithCancel(ctx)
	peaks := srv.watch(wctx)
	res := w.load(ctx, s.concurrency, s.duration, s.maxRequests)
	stopWatch()
	top := peaks()

	if g.after, err = w.settledGoroutines(ctx, g.before); err != nil {
		return fmt.Errorf("goroutines after: %w", err)
	}
	mon, err := w.monitor(ctx)
	if err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	m, err := srv.memory()
	if err != nil {
		return err
	}
	n, first := srv.errorLines()
	ok := report(out, res, s, m, top, g, mon, n, first)
	if !ok {
		return errFailed
	}
	return nil
}
