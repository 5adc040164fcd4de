package main

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ndiro/internal/config"
)

func TestCloseRunsLastOpenedFirst(t *testing.T) {
	m := newMain(config.Config{Mode: config.ModeLocal}, func(string) string { return "" }, io.Discard)
	var got []string
	for _, name := range []string{"listener", "backends", "heic", "jobs"} {
		m.onClose(func() { got = append(got, name) })
	}
	m.Close()
	m.Close() // a second Close runs nothing again
	if want := []string{"jobs", "heic", "backends", "listener"}; !slices.Equal(got, want) {
		t.Errorf("Close ran %q, want %q", got, want)
	}
}

// TestFailedStartReleasesListener starts local mode on a data dir that
// cannot be made: run fails after it listened, and the port is free
// again at once.
func TestFailedStartReleasesListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"NDIRO_ADDR": addr, "NDIRO_DATA_DIR": filepath.Join(file, "var")}
	err = run(context.Background(), nil, func(k string) string { return env[k] }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "NDIRO_DATA_DIR") {
		t.Fatalf("run on a data dir under a file = %v, want an error naming NDIRO_DATA_DIR", err)
	}
	again, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("after the failed start, %s is still taken: %v", addr, err)
	}
	again.Close()
}
