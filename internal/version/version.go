// Package version says which build of ndiro is running: the version that
// make release stamps into the binary or, for any other build, what the Go
// toolchain recorded from version control, with the Go version it was
// built with. `ndiro version` prints it (Write); the admin monitor and the
// metrics endpoint show it (String, Info).
package version

import (
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// Unknown is what Version and Commit hold when the build recorded neither
// a stamp nor version control information (a build outside a checkout, or
// with -buildvcs=false): never Go's "(devel)".
const Unknown = "unknown"

// The stamp: make release (and deploy/Dockerfile, which runs it) sets
// these at link time with -ldflags -X ndiro/internal/version.<name>=…;
// in any other build they are empty. They are written only by the linker.
var (
	// version is `git describe --tags --always --dirty` ("v0.1.0",
	// "v0.1.0-3-g1a2b3c4-dirty", "1a2b3c4"), else the VERSION file of a
	// source archive.
	version string
	// commit is the full commit hash (git rev-parse HEAD).
	commit string
	// buildTime is when the binary was built, RFC 3339 in UTC
	// ("2026-12-01T18:30:00Z"; SOURCE_DATE_EPOCH when set).
	buildTime string
)

// Build describes the running binary.
type Build struct {
	// Version is the stamped version; else, for a plain go build, the
	// module version Go recorded when it is a tag ("v0.2.0"); else the
	// first 12 hex digits of the VCS revision, with "-dirty" when the
	// working tree had changes ("1a2b3c4d5e6f-dirty"); else Unknown.
	Version string
	// Commit is the full commit hash: stamped, else Go's vcs.revision,
	// else Unknown.
	Commit string
	// Modified reports uncommitted changes in the tree the binary was
	// built from (Go's vcs.modified, or a stamped version ending in
	// "-dirty").
	Modified bool
	// CommitTime is the commit's time (Go's vcs.time), in UTC; zero when
	// not recorded (stamped builds from a tree without .git, such as a
	// container build).
	CommitTime time.Time
	// BuildTime is the stamped build time in UTC; zero for a build make
	// release did not stamp, or a stamp that is not RFC 3339.
	BuildTime time.Time
	// GoVersion is the Go release that built the binary ("go1.26.8").
	GoVersion string
	// Platform is the binary's GOOS/GOARCH ("linux/amd64").
	Platform string
}

// current is the running binary's Build, read once: neither the stamp nor
// the build information changes while the process runs.
var current = sync.OnceValue(func() Build {
	bi, _ := debug.ReadBuildInfo()
	return resolve(stamp{version: version, commit: commit, buildTime: buildTime}, bi)
})

// Info returns what is known about the running binary's build.
func Info() Build { return current() }

// String returns the running binary's version (Build.Version): never
// empty, never "(devel)".
func String() string { return current().Version }

// Write prints the running binary's build for `ndiro version`, one
// "name: value" line after the first (see Build.Write).
func Write(w io.Writer) error { return current().Write(w) }

// Write prints b as `ndiro version` does:
//
//	ndiro v0.1.0-3-g1a2b3c4-dirty
//	commit:      1a2b3c4d… (modified)
//	commit time: 2026-11-30T10:58:26Z
//	built:       2026-12-01T18:30:00Z
//	go:          go1.26.8 linux/amd64
//
// A time not known is printed as Unknown. It returns w's error.
func (b Build) Write(w io.Writer) error {
	commit := b.Commit
	if b.Modified && commit != Unknown {
		commit += " (modified)"
	}
	_, err := fmt.Fprintf(w, "ndiro %s\ncommit:      %s\ncommit time: %s\nbuilt:       %s\ngo:          %s %s\n",
		b.Version, commit, timeOrUnknown(b.CommitTime), timeOrUnknown(b.BuildTime), b.GoVersion, b.Platform)
	return err
}

func timeOrUnknown(t time.Time) string {
	if t.IsZero() {
		return Unknown
	}
	return t.UTC().Format(time.RFC3339)
}

// stamp is what make release set at link time; empty fields were not set.
type stamp struct {
	version, commit, buildTime string
}

// pseudoVersion matches the tail of a module pseudo-version Go records for
// an untagged commit ("v0.0.0-20261130105826-cd6de36a1b2c", "+dirty"
// optional; cmd/go's version stamping, Go 1.24+): it names no release, so
// the revision is shown instead.
var pseudoVersion = regexp.MustCompile(`\d{14}-[0-9a-f]{12}(\+dirty)?$`)

// resolve combines the stamp with the build information Go recorded (bi
// may be nil: a binary without it).
func resolve(s stamp, bi *debug.BuildInfo) Build {
	b := Build{Version: Unknown, Commit: Unknown, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	var revision, moduleVersion string
	if bi != nil {
		moduleVersion = bi.Main.Version
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				revision = kv.Value
			case "vcs.modified":
				b.Modified = kv.Value == "true"
			case "vcs.time":
				if t, err := time.Parse(time.RFC3339, kv.Value); err == nil {
					b.CommitTime = t.UTC()
				}
			}
		}
	}
	if revision != "" {
		b.Commit = revision
	}
	if s.commit != "" {
		b.Commit = s.commit
	}
	if t, err := time.Parse(time.RFC3339, s.buildTime); err == nil {
		b.BuildTime = t.UTC()
	}
	switch {
	case s.version != "":
		b.Version = s.version
		b.Modified = b.Modified || strings.HasSuffix(s.version, "-dirty")
	case moduleVersion != "" && moduleVersion != "(devel)" && !pseudoVersion.MatchString(moduleVersion):
		b.Version = moduleVersion
	case revision != "":
		b.Version = revision[:min(12, len(revision))]
		if b.Modified {
			b.Version += "-dirty"
		}
	}
	return b
}
