package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	"ndiro/internal/config"
)

// TestStartupErrorIsOneJSONLineInAWSMode runs ndiro as its own process
// with a setting it refuses: in AWS mode the error is one JSON log line
// at ERROR and the exit status 1; in local mode it is text for a person.
func TestStartupErrorIsOneJSONLineInAWSMode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"aws", []string{"NDIRO_MODE=aws", "NDIRO_LOG_LEVEL=loud"}},
		{"server", []string{"NDIRO_MODE=server", "NDIRO_LOG_LEVEL=loud"}},
		{"local", []string{"NDIRO_LOG_LEVEL=loud"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0])
			cmd.Env = append([]string{runAsMain + "=1", "HOME=" + t.TempDir()}, tc.env...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("ndiro with NDIRO_LOG_LEVEL=loud: %v, want exit status 1; stderr:\n%s", err, stderr.String())
			}
			out := stderr.String()
			if tc.name == "local" {
				if !strings.HasPrefix(out, "ndiro: ") || !strings.Contains(out, `NDIRO_LOG_LEVEL must be debug, info, warn or error, not "loud"`) {
					t.Errorf("local mode stderr = %q, want \"ndiro: \" and the refusal", out)
				}
				return
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != 1 {
				t.Fatalf("AWS mode stderr has %d lines, want one JSON line:\n%s", len(lines), out)
			}
			var line struct {
				Level, Msg, Err string
			}
			if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
				t.Fatalf("AWS mode stderr %q is not JSON: %v", lines[0], err)
			}
			if line.Level != "ERROR" || line.Msg != "ndiro stopped" || !strings.Contains(line.Err, `NDIRO_LOG_LEVEL must be debug, info, warn or error, not "loud"`) {
				t.Errorf("AWS mode line = %+v, want level ERROR, msg \"ndiro stopped\" and the refusal in err", line)
			}
		})
	}
}

// TestFatalKeepsAMultiLineErrorOnOneLine: start-up check failures span
// lines; in AWS mode they stay one JSON line.
func TestFatalKeepsAMultiLineErrorOnOneLine(t *testing.T) {
	var b bytes.Buffer
	fatal(&b, func(k string) string { return map[string]string{"NDIRO_MODE": "aws"}[k] }, errors.New("start-up check failed:\ntable a missing\ntable b missing"))
	if n := strings.Count(b.String(), "\n"); n != 1 {
		t.Errorf("fatal wrote %d lines, want 1: %q", n, b.String())
	}
	var line map[string]any
	if err := json.Unmarshal(b.Bytes(), &line); err != nil || line["err"] != "start-up check failed:\ntable a missing\ntable b missing" {
		t.Errorf("fatal wrote %q (%v), want the whole error in err", b.String(), err)
	}
}

// TestLoggerLevel: NDIRO_LOG_LEVEL drops the lines below it, in both
// modes' formats.
func TestLoggerLevel(t *testing.T) {
	for _, mode := range []config.Mode{config.ModeLocal, config.ModeServer, config.ModeAWS} {
		for _, tc := range []struct {
			level      slog.Level
			info, warn bool
		}{
			{slog.LevelDebug, true, true},
			{slog.LevelInfo, true, true},
			{slog.LevelWarn, false, true},
			{slog.LevelError, false, false},
		} {
			var b bytes.Buffer
			log := newLogger(config.Config{Mode: mode, LogLevel: tc.level}, &b)
			log.Debug("debug line")
			log.Info("info line")
			log.Warn("warn line")
			got := b.String()
			if strings.Contains(got, "debug line") != (tc.level == slog.LevelDebug) ||
				strings.Contains(got, "info line") != tc.info || strings.Contains(got, "warn line") != tc.warn {
				t.Errorf("%s mode, level %v wrote %q", mode, tc.level, got)
			}
		}
	}
}
