package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"ndiro/internal/config"
	"ndiro/internal/demo"
	"ndiro/internal/localenv"
	"ndiro/internal/metrics"
	"ndiro/internal/photo"
	"ndiro/internal/server"
	"ndiro/internal/version"
)

// Main is one run of the server. Run opens what it needs in order
// (listener, backends, app) and serves; Close releases what Run opened,
// last opened first, however far Run got.
type Main struct {
	cfg    config.Config
	getenv func(string) string
	stdout io.Writer
	log    *slog.Logger
	// metrics is the run's registry: the SDK clients, local mode's
	// journal and the app count into it; the metrics listener serves it.
	metrics *metrics.Metrics
	// closers release what Run opened, in the order opened.
	closers []func()
	// holderNote follows host and process ID in the lease's holder
	// (" (ndiro migrate)"), so a refused start says what holds it.
	holderNote string
}

func newMain(cfg config.Config, getenv func(string) string, stdout io.Writer) *Main {
	return &Main{cfg: cfg, getenv: getenv, stdout: stdout, log: newLogger(cfg, stdout), metrics: metrics.New(version.Info())}
}

// onClose adds f to what Close runs.
func (m *Main) onClose(f func()) { m.closers = append(m.closers, f) }

// Close releases what Run opened, last first: the app's background work
// (account deletions, the monitor's jobs, share opens) stops before the
// HEIC worker and the backends close. Problems are logged.
func (m *Main) Close() {
	for i := len(m.closers) - 1; i >= 0; i-- {
		m.closers[i]()
	}
	m.closers = nil
}

// Run listens on NDIRO_ADDR (and NDIRO_METRICS_ADDR, if set, serving
// the metrics there at once), opens the backends, builds the app,
// resumes what a stop interrupted and serves until ctx ends.
func (m *Main) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", m.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (NDIRO_ADDR): %w", m.cfg.Addr, err)
	}
	m.onClose(func() { ln.Close() })
	if m.cfg.MetricsAddr != "" {
		if err := m.serveMetrics(); err != nil {
			return err
		}
	}
	if m.cfg.BaseURL == "" {
		m.cfg.BaseURL = localBaseURL(ln.Addr())
	}
	b, err := m.backends(ctx)
	if err != nil {
		return err
	}
	b.Variants = true // every photo's sized copies, made in the background
	app, err := server.Build(ctx, m.cfg, b, m.log, time.Now)
	if err != nil {
		return err
	}
	m.onClose(func() { app.HEIC.Close() })
	m.onClose(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := app.Close(cctx); err != nil {
			m.log.Error("background work did not stop in time", "err", err)
		}
	})
	// Account deletions a stop interrupted go on where their users rows
	// say (DESIGN.md, account deletion).
	if n, err := app.Deletions.ResumeAll(ctx); err != nil {
		m.log.Error("account deletions not resumed", "err", err)
	} else if n > 0 {
		m.log.Info("account deletions resumed", "count", n)
	}
	// So do imports of export zips, from their last saved meal.
	if n, err := app.Imports.ResumeAll(ctx); err != nil {
		m.log.Error("imports not resumed", "err", err)
	} else if n > 0 {
		m.log.Info("imports resumed", "count", n)
	}
	// So are moves of accounts to a new subject.
	if n, err := app.Moves.ResumeAll(ctx); err != nil {
		m.log.Error("account moves not resumed", "err", err)
	} else if n > 0 {
		m.log.Info("account moves resumed", "count", n)
	}
	var seeded *demo.Result
	if m.cfg.Demo {
		if seeded, err = m.seedDemo(ctx, app, b); err != nil {
			return err
		}
	}
	return m.serve(ctx, ln, app.Handler, seeded)
}

// localBaseURL is local mode's origin: the address this machine's browser
// can open. A wildcard listener (0.0.0.0, [::]) is opened on loopback.
func localBaseURL(addr net.Addr) string {
	host, port, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// seedDemo fills the demo diary (NDIRO_DEMO=1) unless the data dir has
// it already, and returns what it did.
func (m *Main) seedDemo(ctx context.Context, app *server.App, b server.Backends) (*demo.Result, error) {
	fmt.Fprintf(m.stdout, "Demo mode: seeding the demo diary unless this data dir has it (the first time takes about half a minute)…\n")
	res, err := demo.Seed(ctx, demo.Deps{
		Users: app.Users, Meals: app.Meals, Shares: app.Shares,
		Photos: photo.NewStore(b.S3, b.Bucket), Pipeline: app.Pipeline, Now: time.Now,
	}, demo.Options{OwnerID: localenv.Subject(demo.Email)})
	if err != nil {
		return nil, err
	}
	m.log.Info("demo diary", "seeded", res.Seeded, "meals", res.Meals)
	return res, nil
}
