// Package healthcheck is the client side of `ndiro healthcheck`: it asks a
// running ndiro for /healthz on the address it listens on, so a container
// image with no shell or curl can still have a health check.
package healthcheck

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Timeout bounds one check, connection and answer together; the image's
// HEALTHCHECK --timeout (deploy/Dockerfile) is a little longer.
const Timeout = 5 * time.Second

// ErrLoopback is returned (wrapped) by Run with -container when NDIRO_ADDR
// listens on loopback only, which no published port can reach.
var ErrLoopback = errors.New("NDIRO_ADDR listens on the container's loopback only")

// Run checks the ndiro listening on addr (NDIRO_ADDR, host:port): nil when
// GET /healthz answers 200 within Timeout (and ctx), else an error naming
// the status or what failed. A wildcard host (0.0.0.0, [::] or none) is
// asked on 127.0.0.1.
//
// args are the words after "healthcheck". The one flag, -container, says
// the check runs inside a container whose published port must reach the
// server: then a loopback addr (127.0.0.0/8, ::1, localhost) fails with
// ErrLoopback before anything is asked, because such a server answers
// this check from inside while every request from outside is refused
// (an env file's NDIRO_ADDR=127.0.0.1:8080 overriding the image's
// 0.0.0.0:8080). Any other argument is an error.
func Run(ctx context.Context, addr string, args []string) error {
	fs := flag.NewFlagSet("ndiro healthcheck", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	container := fs.Bool("container", false, "fail when NDIRO_ADDR is a loopback address")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("healthcheck: %w (the only flag is -container)", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("healthcheck: unexpected argument %q (the only flag is -container)", fs.Arg(0))
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("healthcheck: NDIRO_ADDR %q: %w", addr, err)
	}
	if *container && isLoopback(host) {
		return fmt.Errorf("healthcheck: %w (%s): nothing outside it can connect. Leave NDIRO_ADDR out of the container's environment (the image listens on 0.0.0.0:8080) and publish the port on the host's loopback instead: docker run -p 127.0.0.1:8080:8080", ErrLoopback, addr)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/healthz", nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	// A client of its own (a zero Transport uses no proxy from the
	// environment: the server is on this machine); a redirect is an
	// answer other than 200, not followed.
	client := &http.Client{Transport: &http.Transport{}, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: /healthz answered %d", resp.StatusCode)
	}
	return nil
}

// isLoopback reports whether host names this machine's loopback only.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
