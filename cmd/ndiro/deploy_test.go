package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"

	// Aliased: main.go has a func of that name.
	"ndiro/internal/config"
	probe "ndiro/internal/healthcheck"
	"ndiro/internal/meal"
)

// Static checks of deploy/: what cannot run here (no Docker engine, no
// systemd as PID 1) is read and checked against the code and each other.

const deployDir = "../../deploy"

// stopBudget is how long ndiro may take to stop after SIGTERM: run's
// Shutdown drains requests for up to 15 s, then App.Close stops the
// background work for up to 10 s, plus a margin. The unit's
// TimeoutStopSec and docker run's --stop-timeout must be at least this,
// or the drain is cut short by SIGKILL.
const stopBudget = 15*time.Second + 10*time.Second + 5*time.Second

// instruction is one Dockerfile instruction: its keyword in upper case and
// the rest of its line, continuations joined.
type instruction struct {
	cmd, args string
}

// stage is a Dockerfile build stage: its FROM's arguments and what follows.
type stage struct {
	from string
	ins  []instruction
}

// parseDockerfile reads path into stages, as the Dockerfile reference
// describes the format: # comments on lines of their own, a trailing
// backslash continuing the line.
func parseDockerfile(t *testing.T, path string) []stage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var stages []stage
	var cur strings.Builder
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || line == "" && cur.Len() == 0 {
			continue
		}
		if l, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(l + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		cur.Reset()
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			stages = append(stages, stage{from: in.args})
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("%s: %s before FROM", path, in.cmd)
		}
		stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
	}
	return stages
}

// all returns the arguments of every cmd instruction of s.
func (s stage) all(cmd string) []string {
	var out []string
	for _, in := range s.ins {
		if in.cmd == cmd {
			out = append(out, in.args)
		}
	}
	return out
}

// pairs splits ENV or LABEL arguments (k=v k2="v 2") into a map.
func pairs(t *testing.T, args []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, a := range args {
		for _, w := range quotedWords(a) {
			k, v, ok := strings.Cut(w, "=")
			if !ok {
				t.Fatalf("%q is not key=value", w)
			}
			out[k] = v
		}
	}
	return out
}

// quotedWords splits s at spaces outside double quotes, removing the quotes.
func quotedWords(s string) []string {
	var out []string
	var cur strings.Builder
	in, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
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

// execForm decodes an instruction's JSON array (CMD ["/ndiro", …]).
func execForm(t *testing.T, args string) []string {
	t.Helper()
	var out []string
	if err := json.Unmarshal([]byte(args), &out); err != nil {
		t.Fatalf("%q is not the exec (JSON array) form: %v", args, err)
	}
	return out
}

// TestDeployDockerfile checks deploy/Dockerfile: the build stage runs make
// release (so `make release` checks the image's build, and the version is
// stamped the one way) with the version build arguments; Go's version is
// go.mod's; the image carries the OCI labels from those same arguments;
// it runs as a numeric non-root user, listens on every interface inside
// the container, and its health check refuses a loopback NDIRO_ADDR.
func TestDeployDockerfile(t *testing.T) {
	stages := parseDockerfile(t, filepath.Join(deployDir, "Dockerfile"))
	if len(stages) != 2 {
		t.Fatalf("%d stages, want 2 (build, then the image)", len(stages))
	}
	build, image := stages[0], stages[1]

	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if goVersion == nil || !strings.HasPrefix(build.from, "golang:"+string(goVersion[1])+"-") || !strings.HasSuffix(build.from, " AS build") {
		t.Errorf("build stage FROM %q, want golang:%s-… AS build (go.mod's Go)", build.from, goVersion[1])
	}
	// The version arguments, declared in each stage that reads them (an
	// ARG before FROM or in the other stage is empty here).
	for _, s := range []stage{build, image} {
		declared := strings.Fields(strings.Join(s.all("ARG"), " "))
		for _, want := range []string{"VERSION", "REVISION", "CREATED"} {
			if !strings.Contains(" "+strings.Join(declared, " ")+" ", " "+want+" ") {
				t.Errorf("stage %q declares ARG %v, want %s among them", s.from, declared, want)
			}
		}
	}
	wantRun := `make release VERSION="${VERSION}" COMMIT="${REVISION}" BUILD_TIME="${CREATED}"`
	if runs := build.all("RUN"); !strings.Contains(strings.Join(runs, "\n"), wantRun) {
		t.Errorf("build stage runs %q, want %s", runs, wantRun)
	}
	if got := image.all("COPY"); len(got) != 1 || got[0] != "--from=build /src/bin/ndiro /ndiro" {
		t.Errorf("image COPY %q, want --from=build /src/bin/ndiro /ndiro (make release's output under WORKDIR /src)", got)
	}
	if got := build.all("WORKDIR"); len(got) != 1 || got[0] != "/src" {
		t.Errorf("build WORKDIR %q, want /src", got)
	}

	checkImageStage(t, image)
}

// checkImageStage checks the image stage of deploy/Dockerfile: labels,
// user, environment, ports, signals and the health check.
func checkImageStage(t *testing.T, image stage) {
	t.Helper()
	labels := pairs(t, image.all("LABEL"))
	wantLabels := map[string]string{
		"org.opencontainers.image.title":       "ndiro",
		"org.opencontainers.image.description": "A private meal photo diary",
		"org.opencontainers.image.version":     "${VERSION}",
		"org.opencontainers.image.revision":    "${REVISION}",
		"org.opencontainers.image.created":     "${CREATED}",
		"org.opencontainers.image.source":      "${SOURCE}",
		"org.opencontainers.image.licenses":    "Apache-2.0",
	}
	if d := cmp.Diff(wantLabels, labels); d != "" {
		t.Errorf("image labels (-want +Dockerfile):\n%s", d)
	}

	user := image.all("USER")
	if len(user) != 1 {
		t.Fatalf("image USER %q, want one", user)
	}
	uid, gid, _ := strings.Cut(user[0], ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("USER %q: want a numeric user other than root", user[0])
	}
	if n, err := strconv.Atoi(gid); err != nil || n == 0 {
		t.Errorf("USER %q: want a numeric group other than root", user[0])
	}

	env := pairs(t, image.all("ENV"))
	unitEnv := unitEnvironment(t)
	wantEnv := map[string]string{
		"NDIRO_MODE": "aws", "NDIRO_ADDR": "0.0.0.0:8080", "TMPDIR": "/tmp",
		// The server's memory settings are the unit's (deploy/README.md, "Memory").
		"GOMEMLIMIT": unitEnv["GOMEMLIMIT"], "GOGC": unitEnv["GOGC"],
	}
	if d := cmp.Diff(wantEnv, env); d != "" {
		t.Errorf("image ENV (-want +Dockerfile):\n%s", d)
	}
	if got := image.all("EXPOSE"); len(got) != 1 || got[0] != "8080" {
		t.Errorf("EXPOSE %q, want 8080, NDIRO_ADDR's port", got)
	}
	if got := image.all("STOPSIGNAL"); len(got) != 1 || got[0] != "SIGTERM" {
		t.Errorf("STOPSIGNAL %q, want SIGTERM, the signal ndiro drains on", got)
	}
	if got := image.all("ENTRYPOINT"); len(got) != 1 || !cmp.Equal(execForm(t, got[0]), []string{"/ndiro"}) {
		t.Errorf("ENTRYPOINT %q, want [\"/ndiro\"]", got)
	}

	checkHealthcheck(t, image)
}

// checkHealthcheck checks the image's HEALTHCHECK: exec form, the
// container flag, a timeout past the check's own.
func checkHealthcheck(t *testing.T, image stage) {
	t.Helper()
	hc := image.all("HEALTHCHECK")
	if len(hc) != 1 {
		t.Fatalf("HEALTHCHECK %q, want one", hc)
	}
	opts, cmd, ok := strings.Cut(hc[0], "CMD ")
	if !ok {
		t.Fatalf("HEALTHCHECK %q has no CMD", hc[0])
	}
	if got := execForm(t, cmd); !cmp.Equal(got, []string{"/ndiro", "healthcheck", "-container"}) {
		t.Errorf("HEALTHCHECK CMD %q, want /ndiro healthcheck -container (exec form: the image has no shell)", got)
	}
	m := regexp.MustCompile(`--timeout=(\d+)s`).FindStringSubmatch(opts)
	if m == nil {
		t.Fatalf("HEALTHCHECK %q sets no --timeout", opts)
	}
	if n, _ := strconv.Atoi(m[1]); time.Duration(n)*time.Second <= probe.Timeout {
		t.Errorf("HEALTHCHECK --timeout=%ss, want more than the check's own %v, so the check reports why", m[1], probe.Timeout)
	}
}

// unit is a systemd unit file: section → key → values in order (a key
// may repeat; an empty assignment is kept as "").
type unit map[string]map[string][]string

// parseUnit reads a unit file as systemd.syntax(7) describes it
// (sections, key=value, # and ; comments); continuation lines are not
// used by deploy/ndiro.service and are refused.
func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := unit{}
	section := ""
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasSuffix(line, "\\"):
			t.Fatalf("%s:%d: continuation lines are not read by this test", path, i+1)
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: %q is not key=value in a section", path, i+1, line)
			}
			k = strings.TrimSpace(k)
			u[section][k] = append(u[section][k], strings.TrimSpace(v))
		}
	}
	return u
}

// one returns the only value of key in section, "missing" or "N values".
func (u unit) one(section, key string) string {
	v := u[section][key]
	switch len(v) {
	case 0:
		return "missing"
	case 1:
		return v[0]
	}
	return fmt.Sprintf("%d values", len(v))
}

// unitEnvironment returns the unit's Environment= assignments.
func unitEnvironment(t *testing.T) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, kv := range parseUnit(t, filepath.Join(deployDir, "ndiro.service"))["Service"]["Environment"] {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// systemdSeconds parses a systemd time span ("30", "30s", "1min 30s").
func systemdSeconds(t *testing.T, s string) time.Duration {
	t.Helper()
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second
	}
	d, err := time.ParseDuration(strings.ReplaceAll(strings.ReplaceAll(s, "min", "m"), " ", ""))
	if err != nil {
		t.Fatalf("time span %q: %v", s, err)
	}
	return d
}

// TestDeploySystemdUnit checks deploy/ndiro.service: the sandbox its
// comments and deploy/README.md promise, a stop timeout longer than
// ndiro's drain, the loopback address behind a proxy on the same host,
// and paths that the install steps create. With systemd-analyze on the
// machine it also verifies the unit (no unknown or misspelt settings) and
// its exposure score.
func TestDeploySystemdUnit(t *testing.T) {
	path := filepath.Join(deployDir, "ndiro.service")
	u := parseUnit(t, path)
	want := map[string]string{
		"Unit/Documentation":              "file:///usr/local/share/doc/ndiro/README.md",
		"Service/ExecStart":               "/usr/local/bin/ndiro",
		"Service/EnvironmentFile":         "/etc/ndiro/ndiro.env",
		"Service/KillSignal":              "SIGTERM",
		"Service/Restart":                 "on-failure",
		"Service/DynamicUser":             "yes",
		"Service/NoNewPrivileges":         "yes",
		"Service/ProtectSystem":           "strict",
		"Service/ProtectHome":             "yes",
		"Service/PrivateTmp":              "yes",
		"Service/PrivateDevices":          "yes",
		"Service/ProtectKernelTunables":   "yes",
		"Service/ProtectKernelModules":    "yes",
		"Service/ProtectKernelLogs":       "yes",
		"Service/ProtectControlGroups":    "yes",
		"Service/ProtectClock":            "yes",
		"Service/ProtectHostname":         "yes",
		"Service/RestrictNamespaces":      "yes",
		"Service/RestrictRealtime":        "yes",
		"Service/RestrictSUIDSGID":        "yes",
		"Service/LockPersonality":         "yes",
		"Service/CapabilityBoundingSet":   "",
		"Service/AmbientCapabilities":     "",
		"Service/SystemCallArchitectures": "native",
		"Service/UMask":                   "0077",
		"Service/MemoryMax":               "1G",
		"Install/WantedBy":                "multi-user.target",
	}
	got := map[string]string{}
	for k := range want {
		section, key, _ := strings.Cut(k, "/")
		got[k] = u.one(section, key)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s (-want +unit):\n%s", path, d)
	}
	if d := systemdSeconds(t, u.one("Service", "TimeoutStopSec")); d < stopBudget {
		t.Errorf("TimeoutStopSec=%v, want at least %v (drain, background stop, margin)", d, stopBudget)
	}
	env := unitEnvironment(t)
	if env["NDIRO_MODE"] != "aws" || env["NDIRO_ADDR"] != "127.0.0.1:8080" {
		t.Errorf("unit environment %v, want NDIRO_MODE=aws and NDIRO_ADDR=127.0.0.1:8080 (the proxy on this host)", env)
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze is not installed: the unit's verify and security checks did not run")
	}
	root := systemdRoot(t, path)
	out, err := exec.Command("systemd-analyze", "verify", "--root="+root, "--man=no", "ndiro.service").CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%q", err, out)
	}
	// Exposure 0.0 (sealed) to 10.0 (none); the threshold is in tenths.
	out, err = exec.Command("systemd-analyze", "security", "--offline=yes", "--root="+root, "--threshold=20", "ndiro.service").CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security: exposure above 2.0 (%v):\n%s", err, out)
	}
}

// serverDropIn is where deploy/README.md installs deploy/ndiro-server.conf.
const serverDropIn = "/etc/systemd/system/ndiro.service.d/server.conf"

// TestDeployServerDropIn checks deploy/ndiro-server.conf, server mode's
// drop-in for the unit: it switches the mode, gives the service its data
// directory as the StateDirectory systemd creates and the sandbox leaves
// writable, and more memory than AWS mode's unit for the tables; with the
// unit's environment and the env file of deploy/README.md ("On one
// machine without AWS") the configuration loads in server mode. With
// systemd-analyze it verifies the unit with the drop-in in place.
func TestDeployServerDropIn(t *testing.T) {
	path := filepath.Join(deployDir, "ndiro-server.conf")
	d := parseUnit(t, path)
	env := unitEnvironment(t)
	for _, kv := range d["Service"]["Environment"] {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if env["NDIRO_MODE"] != "server" {
		t.Errorf("%s: NDIRO_MODE=%q, want server", path, env["NDIRO_MODE"])
	}
	if state := d.one("Service", "StateDirectory"); state == "" || env["NDIRO_DATA_DIR"] != "/var/lib/"+state {
		t.Errorf("%s: NDIRO_DATA_DIR=%q and StateDirectory=%q, want the data dir systemd creates, /var/lib/<StateDirectory>", path, env["NDIRO_DATA_DIR"], state)
	}
	if mode := d.one("Service", "StateDirectoryMode"); mode != "0700" {
		t.Errorf("%s: StateDirectoryMode=%q, want 0700 (the diary is private)", path, mode)
	}
	u := parseUnit(t, filepath.Join(deployDir, "ndiro.service"))
	if got, aws := systemdBytes(t, d.one("Service", "MemoryMax")), systemdBytes(t, u.one("Service", "MemoryMax")); got <= aws {
		t.Errorf("%s: MemoryMax=%d, want more than AWS mode's %d: the tables live in memory", path, got, aws)
	}

	// The README's env file for this mode, on top of the unit's settings.
	blocks := codeBlocks(t, filepath.Join(deployDir, "README.md"))
	var file []string
	for _, b := range blocks {
		if strings.HasPrefix(b, "NDIRO_BASE_URL=") {
			file = append(file, b)
		}
	}
	if len(file) != 1 {
		t.Fatalf("%d env file blocks for server mode in deploy/README.md, want 1", len(file))
	}
	for _, line := range strings.Split(file[0], "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil || cfg.Mode != config.ModeServer || cfg.Addr != "127.0.0.1:8080" {
		t.Errorf("the unit, drop-in and env file load as %s mode on %s (%v), want server mode on 127.0.0.1:8080", cfg.Mode, cfg.Addr, err)
	}

	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze is not installed: the drop-in's verify check did not run")
	}
	root := systemdRoot(t, filepath.Join(deployDir, "ndiro.service"))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, serverDropIn)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("systemd-analyze", "verify", "--root="+root, "--man=no", "ndiro.service").CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify with the drop-in: %v\n%q", err, out)
	}
	out, err = exec.Command("systemd-analyze", "security", "--offline=yes", "--root="+root, "--threshold=20", "ndiro.service").CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security with the drop-in: exposure above 2.0 (%v):\n%s", err, out)
	}
}

// systemdBytes parses a systemd size ("1G", "1536M": binary units).
func systemdBytes(t *testing.T, s string) int64 {
	t.Helper()
	units := map[byte]int64{'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30}
	n, err := strconv.ParseInt(s[:max(0, len(s)-1)], 10, 64)
	u, ok := units[s[max(0, len(s)-1)]]
	if s == "" || err != nil || !ok {
		t.Fatalf("size %q: want a number and K, M or G", s)
	}
	return n * u
}

// systemdRoot lays out a root directory for systemd-analyze: the unit
// where the install steps put it, an executable at its ExecStart, and the
// system's own units (the targets it names).
func systemdRoot(t *testing.T, unitPath string) string {
	t.Helper()
	root := t.TempDir()
	write := func(path string, b []byte, mode os.FileMode) {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, mode); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	write("etc/systemd/system/ndiro.service", b, 0o644)
	write("usr/local/bin/ndiro", []byte("#!/bin/sh\n"), 0o755)
	// The targets and slices the unit and its default dependencies name,
	// copied (a symlinked directory makes systemd-analyze resolve links
	// outside the root).
	for _, dir := range []string{"/usr/lib/systemd/system", "/lib/systemd/system"} {
		if _, err := os.Stat(filepath.Join(dir, "multi-user.target")); err != nil {
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			ext := filepath.Ext(e.Name())
			if !e.Type().IsRegular() || ext != ".target" && ext != ".slice" {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			write(filepath.Join("usr/lib/systemd/system", e.Name()), b, 0o644)
		}
		return root
	}
	t.Skip("no systemd units on this machine (multi-user.target): the unit's verify and security checks did not run")
	return ""
}

// TestDeployDockerignore checks .dockerignore with the matcher docker
// build uses: local data, photos, binaries, .git, screenshots, env files
// and Terraform state never reach the build context, and every file the
// image's build reads does (go.mod, go.sum, the Makefile, VERSION, and
// every Go and embedded file of the packages ./cmd/ndiro is built from,
// as go list reports them).
func TestDeployDockerignore(t *testing.T) {
	t.Parallel()
	f, err := os.Open("../../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	excluded := func(path string) bool {
		t.Helper()
		ok, err := pm.MatchesOrParentMatches(path)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for _, p := range []string{
		"var/dynamodb.journal", "var/s3.bolt", "var-demo/s3.bolt", "data/s3.bolt",
		"bin/ndiro", "bin/ndiro-dev", "ndiro", ".git/HEAD", ".git",
		"screenshots/month-phone-dark.png", "node_modules/dynalite/cli.js",
		"ndiro.env", "deploy/ndiro.env", "deploy/README.md",
		"deploy/terraform/terraform.tfstate", "deploy/terraform/terraform.tfstate.backup",
		"deploy/terraform/.terraform/providers/registry.terraform.io/hashicorp/aws/x",
		"testdata/photos/phone-portrait.jpg", "internal/photo/testdata/fuzz/x",
		"cmd/ndiro/main_test.go", "e2e/e2e_test.go",
	} {
		if !excluded(p) {
			t.Errorf("%s is sent to docker build (.dockerignore lets it through)", p)
		}
	}

	needed := []string{"go.mod", "go.sum", "Makefile", "VERSION"}
	out, err := exec.Command("go", "list", "-tags", "nodynamic", "-deps", "-json=Dir,Module,GoFiles,IgnoredGoFiles,EmbedFiles", "./").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			Dir                                 string
			Module                              *struct{ Path string }
			GoFiles, IgnoredGoFiles, EmbedFiles []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.Module == nil || p.Module.Path != "ndiro" {
			continue
		}
		rel, err := filepath.Rel(root, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range append(append(p.GoFiles, p.IgnoredGoFiles...), p.EmbedFiles...) {
			if !strings.HasSuffix(f, "_test.go") {
				needed = append(needed, filepath.ToSlash(filepath.Join(rel, f)))
			}
		}
	}
	if len(needed) < 50 {
		t.Fatalf("go list found %d files the build reads, want the whole app's", len(needed))
	}
	for _, p := range needed {
		if excluded(p) {
			t.Errorf("%s is needed by the image's build but .dockerignore leaves it out", p)
		}
	}
}

// TestDeployGitignore checks that git never offers Terraform's state,
// plans, provider cache and crash logs, or an env file, for a commit; the
// provider lock file and the configuration are kept.
func TestDeployGitignore(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	if err := exec.Command("git", "rev-parse", "--git-dir").Run(); err != nil {
		t.Skip("not a git checkout")
	}
	ignored := func(path string) bool {
		err := exec.Command("git", "-C", "../..", "check-ignore", "-q", "--no-index", path).Run()
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
			return false
		} else if err != nil {
			t.Fatalf("git check-ignore %s: %v", path, err)
		}
		return true
	}
	for path, want := range map[string]bool{
		"deploy/terraform/terraform.tfstate":                   true,
		"deploy/terraform/terraform.tfstate.backup":            true,
		"deploy/terraform/terraform.tfstate.1733075000.backup": true,
		"deploy/terraform/.terraform/terraform.tfstate":        true,
		"deploy/terraform/.terraform/providers/x":              true,
		"deploy/terraform/plan.tfplan":                         true,
		"deploy/terraform/crash.log":                           true,
		"ndiro.env":                                            true,
		"deploy/ndiro.env":                                     true,
		"var/s3.bolt":                                          true,
		"deploy/terraform/.terraform.lock.hcl":                 false,
		"deploy/terraform/bucket.tf":                           false,
		"deploy/ndiro.service":                                 false,
		"cmd/ndiro/crash_test.go":                              false,
	} {
		if got := ignored(path); got != want {
			t.Errorf("git check-ignore %s = %v, want %v", path, got, want)
		}
	}
}

// codeBlocks returns the fenced code blocks of a Markdown file, each with
// its backslash-continued lines joined.
func codeBlocks(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var cur []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "```") && !in:
			in, cur = true, nil
		case strings.HasPrefix(line, "```"):
			in = false
			out = append(out, strings.ReplaceAll(strings.Join(cur, "\n"), "\\\n", " "))
		case in:
			cur = append(cur, line)
		}
	}
	return out
}

// blockWith returns the only code block holding s.
func blockWith(t *testing.T, blocks []string, s string) string {
	t.Helper()
	var found []string
	for _, b := range blocks {
		if strings.Contains(b, s) {
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d code blocks in deploy/README.md hold %q, want 1", len(found), s)
	}
	return found[0]
}

// dockerBytes parses a docker size ("256m", "1g", "1280m": binary units).
func dockerBytes(t *testing.T, s string) int64 {
	t.Helper()
	units := map[byte]int64{'k': 1 << 10, 'm': 1 << 20, 'g': 1 << 30}
	n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	u, ok := units[s[len(s)-1]]
	if err != nil || !ok {
		t.Fatalf("size %q: want a number and k, m or g", s)
	}
	return n * u
}

// TestDeployReadme checks deploy/README.md's commands against the files
// they install and run: the systemd steps install every path the unit
// names and reload systemd before enabling it; docker build passes every
// build argument the Dockerfile declares; docker run has the hardening
// and limits the unit has (a read-only root but a tmpfs for spooled
// uploads big enough for ten full forms, no capabilities, no new
// privileges, memory for the unit's MemoryMax plus the tmpfs, a stop
// timeout past the drain), publishes on the host's loopback the port the
// image listens on, and never sets NDIRO_ADDR.
func TestDeployReadme(t *testing.T) {
	blocks := codeBlocks(t, filepath.Join(deployDir, "README.md"))
	u := parseUnit(t, filepath.Join(deployDir, "ndiro.service"))
	awsSteps, serverSteps := systemdSteps(t, blocks)
	t.Run("systemd", func(t *testing.T) { checkSystemdSteps(t, awsSteps, u) })
	t.Run("systemd server mode", func(t *testing.T) {
		checkSystemdSteps(t, serverSteps, u, "install -D -m 0644 deploy/ndiro-server.conf "+serverDropIn)
	})
	t.Run("docker build", func(t *testing.T) { checkDockerBuild(t, blocks) })
	t.Run("docker run", func(t *testing.T) { checkDockerRun(t, blocks, u) })
	if env := blockWith(t, blocks, "output -raw env_file"); strings.Contains(env, "NDIRO_ADDR") {
		t.Errorf("the env file steps set NDIRO_ADDR:\n%s", env)
	}
}

// systemdSteps returns the two code blocks that install and enable the
// unit: AWS mode's, and server mode's, the one that also installs
// deploy/ndiro-server.conf.
func systemdSteps(t *testing.T, blocks []string) (aws, server string) {
	t.Helper()
	for _, b := range blocks {
		switch {
		case !strings.Contains(b+"\n", "systemctl enable --now ndiro\n"): // not ndiro-backup.timer
		case strings.Contains(b, "deploy/ndiro-server.conf") && server == "":
			server = b
		case !strings.Contains(b, "deploy/ndiro-server.conf") && aws == "":
			aws = b
		default:
			t.Fatalf("deploy/README.md has more than one block of %s mode's systemd steps", map[bool]string{true: "server", false: "AWS"}[strings.Contains(b, "deploy/ndiro-server.conf")])
		}
	}
	if aws == "" || server == "" {
		t.Fatalf("deploy/README.md lacks AWS mode's or server mode's systemd steps (found AWS %v, server %v)", aws != "", server != "")
	}
	return aws, server
}

// checkSystemdSteps checks that the systemd steps in block install every
// path the unit names, and the extra ones, before daemon-reload, and
// reload before enabling.
func checkSystemdSteps(t *testing.T, block string, u unit, extra ...string) {
	install := strings.Split(block, "\n")
	at := func(want string) int {
		t.Helper()
		for i, line := range install {
			if strings.Contains(line, want) {
				return i
			}
		}
		t.Errorf("the systemd steps have no %q", want)
		return -1
	}
	docPath, _ := strings.CutPrefix(u.one("Unit", "Documentation"), "file://")
	for _, step := range append([]string{
		"make release",
		"install -m 0755 bin/ndiro " + u.one("Service", "ExecStart"),
		"install -m 0644 deploy/ndiro.service /etc/systemd/system/ndiro.service",
		"install -D -m 0644 deploy/README.md " + docPath,
		"install -m 0600 ndiro.env " + u.one("Service", "EnvironmentFile"),
	}, extra...) {
		if i := at(step); i > at("systemctl daemon-reload") {
			t.Errorf("the systemd steps run %q after daemon-reload", step)
		}
	}
	if at("systemctl daemon-reload") > at("systemctl enable --now ndiro") {
		t.Error("the systemd steps enable ndiro before systemctl daemon-reload")
	}

}

// checkDockerBuild checks that docker build passes every build argument
// the Dockerfile declares.
func checkDockerBuild(t *testing.T, blocks []string) {
	var args []string
	for _, s := range parseDockerfile(t, filepath.Join(deployDir, "Dockerfile")) {
		for _, a := range s.all("ARG") {
			for _, name := range strings.Fields(a) {
				name, _, _ = strings.Cut(name, "=")
				if !slices.Contains(args, name) {
					args = append(args, name)
				}
			}
		}
	}
	build := blockWith(t, blocks, "docker build -f deploy/Dockerfile")
	for _, a := range args {
		if !strings.Contains(build, "--build-arg "+a+"=") {
			t.Errorf("docker build passes no --build-arg %s (the Dockerfile declares it)", a)
		}
	}

}

// checkDockerRun checks docker run's hardening and limits against the
// unit and the image.
func checkDockerRun(t *testing.T, blocks []string, u unit) {
	run := strings.Fields(blockWith(t, blocks, "docker run"))
	flags := map[string][]string{}
	for i := 0; i < len(run); i++ {
		w := run[i]
		if !strings.HasPrefix(w, "-") {
			continue
		}
		name, v, ok := strings.Cut(w, "=")
		switch {
		case ok:
		case name == "--read-only" || name == "-d" || name == "--rm":
		case i+1 < len(run):
			i++
			v = run[i]
		}
		flags[name] = append(flags[name], v)
	}
	got := func(name string) string {
		if v := flags[name]; len(v) == 1 {
			return v[0]
		}
		return fmt.Sprintf("%d values", len(flags[name]))
	}
	if got("--read-only") != "" || got("--cap-drop") != "ALL" || got("--security-opt") != "no-new-privileges" || got("--env-file") != "ndiro.env" {
		t.Errorf("docker run flags %v: want --read-only, --cap-drop ALL, --security-opt no-new-privileges, --env-file ndiro.env", flags)
	}
	tmpfs := got("--tmpfs")
	opts, ok := strings.CutPrefix(tmpfs, "/tmp:")
	size := regexp.MustCompile(`(?:^|,)size=(\d+[kmg])(?:,|$)`).FindStringSubmatch(opts)
	if !ok || size == nil {
		t.Fatalf("docker run --tmpfs %q, want /tmp:…,size=…", tmpfs)
	}
	tmpBytes := dockerBytes(t, size[1])
	if tmpBytes < 10*meal.MaxFormBytes {
		t.Errorf("--tmpfs /tmp size %s, want room for ten full forms (%d MB)", size[1], 10*meal.MaxFormBytes>>20)
	}
	unitMax := dockerBytes(t, strings.ToLower(u.one("Service", "MemoryMax")))
	if mem := dockerBytes(t, got("--memory")); mem < unitMax+tmpBytes {
		t.Errorf("--memory %s, want at least the unit's MemoryMax (%d MB) plus the tmpfs (%d MB): its pages are memory", got("--memory"), unitMax>>20, tmpBytes>>20)
	}
	if got("--memory-swap") != got("--memory") {
		t.Errorf("--memory-swap %s, want %s (no swap)", got("--memory-swap"), got("--memory"))
	}
	if n, err := strconv.Atoi(got("--stop-timeout")); err != nil || time.Duration(n)*time.Second < stopBudget {
		t.Errorf("--stop-timeout %s, want at least %v (Docker's default is 10 s)", got("--stop-timeout"), stopBudget)
	}
	image := pairs(t, parseDockerfile(t, filepath.Join(deployDir, "Dockerfile"))[1].all("ENV"))
	_, port, _ := strings.Cut(image["NDIRO_ADDR"], ":")
	if p := got("-p"); p != "127.0.0.1:8080:"+port {
		t.Errorf("docker run -p %s, want 127.0.0.1:8080:%s (the host's loopback, the image's NDIRO_ADDR port)", p, port)
	}
	for _, e := range append(flags["-e"], flags["--env"]...) {
		if strings.HasPrefix(e, "NDIRO_ADDR") {
			t.Errorf("docker run sets %s; the image's 0.0.0.0 is what the published port reaches", e)
		}
	}
}

// apacheSHA256 is the SHA-256 of the Apache License 2.0's standard text,
// https://www.apache.org/licenses/LICENSE-2.0.txt.
const apacheSHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"

// TestDeployLicense checks LICENSE: the copyright line of the ndiro
// authors, then the Apache License 2.0 byte for byte (the image's
// licenses label says Apache-2.0).
func TestDeployLicense(t *testing.T) {
	b, err := os.ReadFile("../../LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	notice, text, _ := strings.Cut(string(b), "\n\n")
	if !regexp.MustCompile(`^Copyright 20\d\d The ndiro authors$`).MatchString(notice) {
		t.Errorf("LICENSE starts %q, want Copyright <year> The ndiro authors", notice)
	}
	if sum := fmt.Sprintf("%x", sha256.Sum256([]byte(text))); sum != apacheSHA256 {
		t.Errorf("LICENSE after its copyright line has SHA-256 %s, want the Apache License 2.0's standard text (%s)", sum, apacheSHA256)
	}
}

// TestDeployChangelog checks CHANGELOG.md's form (Keep a Changelog 1.1.0):
// an Unreleased section first, then released versions newest first, each
// "## [x.y.z] - YYYY-MM-DD", with only the form's kinds of change.
func TestDeployChangelog(t *testing.T) {
	b, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	release := regexp.MustCompile(`^## \[(\d+)\.(\d+)\.(\d+)\] - (\d{4}-\d{2}-\d{2})$`)
	kinds := []string{"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
	var versions []string
	var last [3]int
	var lastDate string
	for i, line := range strings.Split(string(b), "\n") {
		switch {
		case line == "## [Unreleased]":
			if len(versions) != 0 {
				t.Errorf("line %d: Unreleased after a release", i+1)
			}
			versions = append(versions, "Unreleased")
		case strings.HasPrefix(line, "## "):
			m := release.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("line %d: %q is not ## [x.y.z] - YYYY-MM-DD", i+1, line)
				continue
			}
			if _, err := time.Parse(time.DateOnly, m[4]); err != nil {
				t.Errorf("line %d: %v", i+1, err)
			}
			var v [3]int
			for j := range v {
				v[j], _ = strconv.Atoi(m[j+1])
			}
			if len(versions) > 1 && (slices.Compare(v[:], last[:]) >= 0 || m[4] > lastDate) {
				t.Errorf("line %d: %s is not older than the version above it", i+1, line)
			}
			last, lastDate = v, m[4]
			versions = append(versions, m[1]+"."+m[2]+"."+m[3])
		case strings.HasPrefix(line, "### "):
			if !slices.Contains(kinds, strings.TrimPrefix(line, "### ")) {
				t.Errorf("line %d: %q is not one of %v", i+1, line, kinds)
			}
		}
	}
	if len(versions) < 2 || versions[0] != "Unreleased" {
		t.Errorf("CHANGELOG.md sections %v, want Unreleased then at least one release", versions)
	}
}
