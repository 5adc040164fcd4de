package version

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// repoRoot is the repository's root, seen from this package.
const repoRoot = "../.."

func vcs(revision, modified, at string) []debug.BuildSetting {
	return []debug.BuildSetting{
		{Key: "-buildmode", Value: "exe"}, {Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: revision}, {Key: "vcs.time", Value: at}, {Key: "vcs.modified", Value: modified},
	}
}

func TestResolve(t *testing.T) {
	const rev = "cd6de36fdfcc8e0e01d5fb560d518331b4029a95"
	goVersion, platform := runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH
	committed := time.Date(2026, 11, 30, 10, 58, 26, 0, time.UTC)
	built := time.Date(2026, 12, 1, 18, 30, 0, 0, time.UTC)
	devel := func(settings []debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "ndiro", Version: "(devel)"}, Settings: settings}
	}
	tests := []struct {
		name  string
		stamp stamp
		bi    *debug.BuildInfo
		want  Build
	}{{
		name:  "release build in a checkout: the stamp wins, the commit time comes from Go",
		stamp: stamp{version: "v0.1.0-3-gcd6de36", commit: rev, buildTime: "2026-12-01T18:30:00Z"},
		bi:    devel(vcs(rev, "false", "2026-11-30T10:58:26Z")),
		want:  Build{Version: "v0.1.0-3-gcd6de36", Commit: rev, CommitTime: committed, BuildTime: built},
	}, {
		name:  "release build without .git (the container): all from the stamp",
		stamp: stamp{version: "v0.1.0-dirty", commit: rev, buildTime: "2026-12-01T19:30:00+01:00"},
		bi:    devel(nil),
		want:  Build{Version: "v0.1.0-dirty", Commit: rev, Modified: true, BuildTime: built},
	}, {
		name:  "stamped version only: commit from Go's build information",
		stamp: stamp{version: "v0.2.0"},
		bi:    devel(vcs(rev, "true", "2026-11-30T10:58:26Z")),
		want:  Build{Version: "v0.2.0", Commit: rev, Modified: true, CommitTime: committed},
	}, {
		name: "plain build of an untagged commit: Go's pseudo-version is not shown",
		bi: &debug.BuildInfo{Main: debug.Module{Path: "ndiro", Version: "v0.0.0-20261130105826-cd6de36fdfcc"},
			Settings: vcs(rev, "false", "2026-11-30T10:58:26Z")},
		want: Build{Version: "cd6de36fdfcc", Commit: rev, CommitTime: committed},
	}, {
		name: "plain build of a modified tree",
		bi: &debug.BuildInfo{Main: debug.Module{Path: "ndiro", Version: "v0.1.1-0.20261130105826-cd6de36fdfcc+dirty"},
			Settings: vcs(rev, "true", "2026-11-30T10:58:26Z")},
		want: Build{Version: "cd6de36fdfcc-dirty", Commit: rev, Modified: true, CommitTime: committed},
	}, {
		name: "plain build of a tagged commit: the tag",
		bi:   &debug.BuildInfo{Main: debug.Module{Path: "ndiro", Version: "v0.2.0"}, Settings: vcs(rev, "false", "2026-11-30T10:58:26Z")},
		want: Build{Version: "v0.2.0", Commit: rev, CommitTime: committed},
	}, {
		name: "(devel) without version control: unknown, never (devel)",
		bi:   devel(nil),
		want: Build{Version: Unknown, Commit: Unknown},
	}, {
		name: "no build information at all",
		want: Build{Version: Unknown, Commit: Unknown},
	}, {
		name:  "a build time that is not RFC 3339 is not shown",
		stamp: stamp{version: "v0.2.0", buildTime: "yesterday"},
		want:  Build{Version: "v0.2.0", Commit: Unknown},
	}, {
		name: "a short revision is kept whole",
		bi:   devel(vcs("abc", "false", "not a time")),
		want: Build{Version: "abc", Commit: "abc"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.GoVersion, tc.want.Platform = goVersion, platform
			if d := cmp.Diff(tc.want, resolve(tc.stamp, tc.bi)); d != "" {
				t.Errorf("resolve(%+v) (-want +got):\n%s", tc.stamp, d)
			}
		})
	}
}

func TestBuildWrite(t *testing.T) {
	b := Build{
		Version: "v0.1.0-3-gcd6de36-dirty", Commit: "cd6de36fdfcc8e0e01d5fb560d518331b4029a95", Modified: true,
		CommitTime: time.Date(2026, 11, 30, 10, 58, 26, 0, time.UTC), GoVersion: "go1.26.8", Platform: "linux/amd64",
	}
	var buf bytes.Buffer
	if err := b.Write(&buf); err != nil {
		t.Fatal(err)
	}
	want := `ndiro v0.1.0-3-gcd6de36-dirty
commit:      cd6de36fdfcc8e0e01d5fb560d518331b4029a95 (modified)
commit time: 2026-11-30T10:58:26Z
built:       unknown
go:          go1.26.8 linux/amd64
`
	if d := cmp.Diff(want, buf.String()); d != "" {
		t.Errorf("Write (-want +got):\n%s", d)
	}
	buf.Reset()
	if err := (Build{Version: Unknown, Commit: Unknown, Modified: true, GoVersion: "go1.26.8", Platform: "linux/amd64"}).Write(&buf); err != nil {
		t.Fatal(err)
	}
	if got := strings.SplitN(buf.String(), "\n", 3)[1]; got != "commit:      unknown" {
		t.Errorf("unknown commit printed as %q, want no (modified) after unknown", got)
	}
}

// TestTestBinaryIsUnknown: a test binary records no version control
// information, so this process is the "(devel)" case.
func TestTestBinaryIsUnknown(t *testing.T) {
	if got := String(); got != Unknown {
		t.Errorf("String() = %q in a test binary, want %q", got, Unknown)
	}
	if got := Info().Commit; got != Unknown {
		t.Errorf("Info().Commit = %q, want %q", got, Unknown)
	}
}

// need skips the test unless the named programs are installed.
func need(t *testing.T, programs ...string) {
	t.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("needs %s: %v", p, err)
		}
	}
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%s %s (in %s): %v\n%s%s", name, strings.Join(args, " "), dir, err, out, stderr)
	}
	return string(out)
}

// words splits a command line as the shell would for make release's
// recipe: single-quoted words kept together, quotes removed.
func words(s string) []string {
	var out []string
	var cur strings.Builder
	in, quoted := false, false
	for _, r := range strings.TrimSpace(s) {
		switch {
		case r == '\'':
			quoted, in = !quoted, true
		case r == ' ' && !quoted:
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// releaseCommand returns make release's build command (make -n) in dir
// with vars given on make's command line, split into words.
func releaseCommand(t *testing.T, dir string, env []string, vars ...string) []string {
	t.Helper()
	out := run(t, dir, env, "make", append([]string{"-n", "-s", "-f", mustAbs(t, filepath.Join(repoRoot, "Makefile")), "release"}, vars...)...)
	w := words(out)
	if len(w) < 6 || w[0] != "CGO_ENABLED=0" || w[1] != "go" || w[2] != "build" {
		t.Fatalf("make release runs %q, want CGO_ENABLED=0 go build …", out)
	}
	return w
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// stampedVersion returns the value make release gives
// ndiro/internal/version.version in its -ldflags.
func stampedVersion(t *testing.T, cmd []string) string {
	t.Helper()
	for i, w := range cmd {
		if w != "-ldflags" && !strings.HasPrefix(w, "-ldflags=") {
			continue
		}
		flags := strings.TrimPrefix(w, "-ldflags=")
		if w == "-ldflags" {
			flags = cmd[i+1]
		}
		fields := strings.Fields(flags)
		for j, f := range fields {
			if f == "-X" && j+1 < len(fields) {
				if v, ok := strings.CutPrefix(fields[j+1], "ndiro/internal/version.version="); ok {
					return v
				}
			}
		}
	}
	t.Fatalf("make release stamps no ndiro/internal/version.version: %q", cmd)
	return ""
}

// TestReleaseStampsVersion builds testdata/printversion with exactly the
// command make release runs (its -ldflags included; only the package and
// output differ) and checks that the stamped version, commit and build
// time are what the program prints.
func TestReleaseStampsVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	need(t, "make", "go")
	t.Parallel()
	const (
		ver    = "v9.8.7-2-gabcdef0-dirty"
		commit = "abcdef0123456789abcdef0123456789abcdef01"
		built  = "2026-12-01T18:30:00Z"
	)
	cmd := releaseCommand(t, ".", nil, "VERSION="+ver, "COMMIT="+commit, "BUILD_TIME="+built)
	n := len(cmd)
	if cmd[n-3] != "-o" || cmd[n-2] != "bin/ndiro" || cmd[n-1] != "./cmd/ndiro" {
		t.Fatalf("make release ends %q, want -o bin/ndiro ./cmd/ndiro", cmd[n-3:])
	}
	bin := filepath.Join(t.TempDir(), "printversion")
	args := append(append([]string{}, cmd[2:n-3]...), "-o", bin, "./internal/version/testdata/printversion")
	run(t, repoRoot, []string{"CGO_ENABLED=0"}, "go", args...)
	got := run(t, ".", nil, bin)
	want := "ndiro " + ver + "\n" +
		"commit:      " + commit + " (modified)\n"
	if !strings.HasPrefix(got, want) {
		t.Errorf("release build prints\n%s\nwant it to start\n%s", got, want)
	}
	for _, line := range []string{"built:       " + built, "go:          " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH} {
		if !strings.Contains(got, "\n"+line+"\n") {
			t.Errorf("release build prints\n%s\nwant the line %q", got, line)
		}
	}
}

// TestReleaseVersionDefaults checks where make release takes the version
// from when none is given: git describe --tags --always --dirty in a
// checkout; the VERSION file without git; "unknown" when that file still
// holds its archive placeholder.
func TestReleaseVersionDefaults(t *testing.T) {
	need(t, "make", "git")
	t.Parallel()
	t.Run("checkout", func(t *testing.T) {
		if err := exec.Command("git", "-C", repoRoot, "rev-parse", "HEAD").Run(); err != nil {
			t.Skip("not a git checkout")
		}
		want := strings.TrimSpace(run(t, repoRoot, nil, "git", "describe", "--tags", "--always", "--dirty"))
		if got := stampedVersion(t, releaseCommand(t, repoRoot, nil)); got != want {
			t.Errorf("make release stamps %q, want git describe's %q", got, want)
		}
	})
	// Outside any repository: git finds none above the temporary directory.
	noGit := func(t *testing.T, version string, vars ...string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "VERSION"), []byte(version), 0o644); err != nil {
			t.Fatal(err)
		}
		return stampedVersion(t, releaseCommand(t, dir, []string{"GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir)}, vars...))
	}
	t.Run("archive", func(t *testing.T) {
		if got := noGit(t, "v0.3.0-1-g11f9aa7\n11f9aa7\n"); got != "v0.3.0-1-g11f9aa7" {
			t.Errorf("make release without git stamps %q, want VERSION's first line v0.3.0-1-g11f9aa7", got)
		}
	})
	t.Run("empty VERSION, as the Dockerfile passes it without build arguments", func(t *testing.T) {
		if got := noGit(t, "v0.3.0\n", "VERSION=", "COMMIT=", "BUILD_TIME="); got != "v0.3.0" {
			t.Errorf("make release VERSION= stamps %q, want the VERSION file's v0.3.0", got)
		}
	})
	t.Run("archive of an untagged commit", func(t *testing.T) {
		if got := noGit(t, "\n11f9aa7\n"); got != "11f9aa7" {
			t.Errorf("make release without git stamps %q, want the short hash 11f9aa7", got)
		}
	})
	t.Run("placeholder", func(t *testing.T) {
		placeholder, err := os.ReadFile(filepath.Join(repoRoot, "VERSION"))
		if err != nil {
			t.Fatal(err)
		}
		if got := noGit(t, string(placeholder)); got != Unknown {
			t.Errorf("make release with the repository's VERSION and no git stamps %q, want %q", got, Unknown)
		}
		// git archive fills the placeholder in (export-subst).
		out := run(t, repoRoot, nil, "git", "check-attr", "export-subst", "VERSION")
		if strings.TrimSpace(out) != "VERSION: export-subst: set" {
			t.Errorf("git check-attr export-subst VERSION = %q, want set (.gitattributes)", out)
		}
		if !strings.HasPrefix(string(placeholder), "$Format:%(describe:tags)$\n") {
			t.Errorf("VERSION = %q, want the archive placeholder $Format:%%(describe:tags)$ first", placeholder)
		}
	})
}

// TestPlainBuildReportsRevision builds testdata/printversion with a plain
// go build (no -ldflags) in a git repository of its own holding this
// package, and checks that the version comes from the commit Go recorded,
// never "(devel)": the revision; with "-dirty" once the tree has changes;
// the tag on a tagged commit; "unknown" without version control
// information. -buildvcs is given explicitly because a machine's go env
// may turn VCS stamping off (GOFLAGS=-buildvcs=false), and a git worktree
// (.git a file) is a tree Go does not stamp.
func TestPlainBuildReportsRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	need(t, "git", "go")
	t.Parallel()
	repo := t.TempDir()
	copyFile := func(from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		to = filepath.Join(repo, to)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile("version.go", "internal/version/version.go")
	copyFile("testdata/printversion/main.go", "internal/version/testdata/printversion/main.go")
	if err := os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module ndiro\n\ngo 1.26.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitEnv := []string{
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CEILING_DIRECTORIES=" + filepath.Dir(repo),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_AUTHOR_DATE=2026-11-30T10:58:26Z", "GIT_COMMITTER_DATE=2026-11-30T10:58:26Z",
	}
	git := func(args ...string) string { return strings.TrimSpace(run(t, repo, gitEnv, "git", args...)) }
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "first")
	rev := git("rev-parse", "HEAD")
	bins := t.TempDir()
	build := func(name, buildvcs string) string {
		bin := filepath.Join(bins, name)
		run(t, repo, append(gitEnv, "GOWORK=off"), "go", "build", "-buildvcs="+buildvcs, "-o", bin, "./internal/version/testdata/printversion")
		return run(t, repo, nil, bin)
	}
	head := func(out string) []string { return strings.Split(out, "\n")[:3] }

	want := []string{"ndiro " + rev[:12], "commit:      " + rev, "commit time: 2026-11-30T10:58:26Z"}
	if d := cmp.Diff(want, head(build("clean", "true"))); d != "" {
		t.Errorf("plain build of a clean commit (-want +got):\n%s", d)
	}
	if err := os.WriteFile(filepath.Join(repo, "notes.txt"), []byte("not committed"), 0o644); err != nil {
		t.Fatal(err)
	}
	want = []string{"ndiro " + rev[:12] + "-dirty", "commit:      " + rev + " (modified)", "commit time: 2026-11-30T10:58:26Z"}
	if d := cmp.Diff(want, head(build("dirty", "true"))); d != "" {
		t.Errorf("plain build of a modified tree (-want +got):\n%s", d)
	}
	if err := os.Remove(filepath.Join(repo, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	git("tag", "v0.3.0")
	if got := head(build("tagged", "true"))[0]; got != "ndiro v0.3.0" {
		t.Errorf("plain build of a tagged commit prints %q, want ndiro v0.3.0", got)
	}
	want = []string{"ndiro unknown", "commit:      unknown", "commit time: unknown"}
	if d := cmp.Diff(want, head(build("novcs", "false"))); d != "" {
		t.Errorf("plain build without VCS information (-want +got):\n%s", d)
	}
}
