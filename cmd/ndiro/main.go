// Command ndiro serves the meal photo diary. With no configuration it runs
// in local mode: DynamoDB, S3 and a stand-in for Google sign-in in-process,
// data under ./var. See README.md and deploy/README.md.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	_ "time/tzdata" // IANA zones in images without /usr/share/zoneinfo

	"ndiro/internal/config"
	"ndiro/internal/healthcheck"
	"ndiro/internal/photo"
	"ndiro/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	limitMemory(os.Getenv)
	if err := run(ctx, os.Args, os.Getenv, os.Stdout); err != nil {
		fatal(os.Stderr, os.Getenv, err)
		os.Exit(1)
	}
}

// fatal writes the error that stopped ndiro (a setting refused, a backend
// not answering at start, a listener that could not open) to w: in AWS
// and server mode (NDIRO_MODE, read directly, since the error may be the
// configuration's own) one JSON log line at ERROR like every other line
// there, so the journal or log service keeps it whole however many lines
// the message has; otherwise "ndiro: " and the message, for a person at
// a terminal.
func fatal(w io.Writer, getenv func(string) string, err error) {
	if mode := config.Mode(getenv("NDIRO_MODE")); mode == config.ModeAWS || mode == config.ModeServer {
		slog.New(slog.NewJSONHandler(w, nil)).Error("ndiro stopped", "err", err.Error())
		return
	}
	fmt.Fprintln(w, "ndiro:", err)
}

// memoryOverhead is what the Go heap may hold beyond the photo cache's
// budget (requests in flight, photos being decoded, in local mode the
// in-process DynamoDB's tables) before the garbage collector works
// harder: with the binary's own pages, the process stays within the
// budget + 128 MB (make load checks it; without the limit it peaked at
// 210 MB there). It is a soft limit: decodes admitted by
// NDIRO_DECODE_BUDGET_BYTES that need more make the collector run more
// often while they last, they are not refused.
const memoryOverhead = 64 << 20

// limitMemory sets the Go runtime's soft memory limit to the photo cache
// budget (NDIRO_PHOTO_CACHE_BYTES) + memoryOverhead, unless GOMEMLIMIT
// says otherwise or the configuration does not load (run reports that).
// It is the whole process's setting, so main sets it, not run, which
// tests call in their own process.
func limitMemory(getenv func(string) string) {
	if getenv("GOMEMLIMIT") != "" {
		return
	}
	if cfg, err := config.Load(getenv); err == nil {
		debug.SetMemoryLimit(cfg.PhotoCacheBytes + memoryOverhead)
	}
}

// liveHeap returns the bytes the heap's live objects hold, measured after
// a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// roomForTables makes room under the soft memory limit, if one is set
// (limitMemory's, or GOMEMLIMIT), for the embedded tables of local and
// server mode: it measures the live heap now, before they load, and
// returns the function to call once they have, which raises the limit by
// what they took (about 2.6 KB a meal). memoryOverhead has room for a
// small diary's tables, but a household's years of meals (100,000 take
// about 260 MB) would otherwise hold the heap above the limit and the
// collector running all the time. Meals added later count against the
// limit until the next start. Without a limit (tests calling run) it
// measures nothing and changes nothing.
func (m *Main) roomForTables() (loaded func()) {
	limit := debug.SetMemoryLimit(-1)
	if limit == math.MaxInt64 {
		return func() {}
	}
	before := liveHeap()
	return func() {
		tables := liveHeap() - before
		if tables <= 0 {
			return
		}
		debug.SetMemoryLimit(limit + tables)
		m.log.Info("memory limit raised by what the embedded tables hold", "tables_bytes", tables, "limit_bytes", limit+tables)
	}
}

// run starts ndiro and serves until ctx is cancelled, then shuts down
// gracefully (Main.Run, then Main.Close). It writes the address to open,
// and logs, to stdout. With an argument it runs that command instead.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) > 1 {
		return command(ctx, args[1:], getenv, stdout)
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	m := newMain(cfg, getenv, stdout)
	defer m.Close()
	return m.Run(ctx)
}

// command runs one of ndiro's commands, args[0] naming it:
//
//   - "version" (or "--version") prints the version, commit and Go
//     version (version.Write) and reads no configuration.
//   - "heic-worker" and "webp-worker" are the HEIC decoder and the WebP
//     encoder processes ndiro starts itself: requests on stdin, answers
//     on stdout (photo.RunHEICWorker, photo.RunWebPWorker). They read no
//     configuration.
//   - "migrate --from-data-dir DIR [--dry-run]" copies a local mode
//     data dir into AWS mode's tables and bucket (migrateCommand;
//     --help says what it copies).
//   - "healthcheck [-container]" asks a running ndiro's /healthz on
//     NDIRO_ADDR and fails unless it answers 200: the container's health
//     check, which needs no shell or curl in the image (healthcheck.Run).
func command(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	switch args[0] {
	case "version", "--version":
		return version.Write(stdout)
	case "heic-worker":
		return photo.RunHEICWorker(os.Stdin, os.Stdout)
	case "webp-worker":
		return photo.RunWebPWorker(os.Stdin, os.Stdout)
	case "migrate":
		return migrateCommand(ctx, args[1:], getenv, stdout, os.Stderr)
	case "healthcheck":
		cfg, err := config.Load(getenv)
		if err != nil {
			return err
		}
		return healthcheck.Run(ctx, cfg.Addr, args[1:])
	}
	return fmt.Errorf("unknown command %q; run ndiro with no arguments to serve, or \"ndiro version\", \"ndiro healthcheck\" or \"ndiro migrate\" (\"ndiro heic-worker\" and \"ndiro webp-worker\" are started by ndiro itself)", args[0])
}

// newLogger is the one logger of a run: JSON lines in server and AWS
// mode (for the journal or the log service: config.Config.Production),
// text locally, writing lines at cfg.LogLevel and above
// (NDIRO_LOG_LEVEL).
func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.Production() {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
