package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"ndiro/internal/config"
	"ndiro/internal/demo"
)

// serve answers on ln with h until ctx ends, then shuts down gracefully:
// requests in flight get 15 s to finish. In local mode it first prints
// where to open ndiro and how to sign in (and the demo's share link, if
// seeded is set).
func (m *Main) serve(ctx context.Context, ln net.Listener, h http.Handler, seeded *demo.Result) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute, // photo uploads over slow phone networks
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(m.log.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	if m.cfg.Mode == config.ModeLocal {
		m.banner(seeded)
	}
	m.log.Info("listening", "addr", ln.Addr().String(), "mode", string(m.cfg.Mode))

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	m.log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		// Requests still running (a long export) lose their connections
		// and their contexts end; a handler finishing a write past that
		// (the few that do, in milliseconds) is not waited for.
		srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// banner tells the person who ran local mode where to go.
func (m *Main) banner(seeded *demo.Result) {
	fmt.Fprintf(m.stdout, "\nndiro is running in local mode. Open %s\nSign in as %s (admin), or any email once you have an invite link.\nData is kept in %s. Stop with Ctrl-C.\n\n", m.cfg.BaseURL, m.cfg.AdminEmails[0], m.cfg.DataDir)
	if seeded != nil {
		fmt.Fprintf(m.stdout, "Demo: sign in as %s to see six weeks of meals.\nThe demo's share link (what a dietitian sees): %s/s/%s\n\n", demo.Email, m.cfg.BaseURL, seeded.ShareToken)
	}
}
