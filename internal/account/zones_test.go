package account

import (
	"archive/zip"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones, as the binary has them

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite zones.txt from Go's zone database")

// regions are the first parts of the zone names the list keeps.
var regions = []string{"Africa", "America", "Antarctica", "Arctic", "Asia", "Atlantic", "Australia", "Europe", "Indian", "Pacific"}

// goZones returns the names the list should hold, read from the Go
// installation's zoneinfo.zip.
func goZones(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("go env GOROOT: %v", err)
	}
	z, err := zip.OpenReader(filepath.Join(strings.TrimSpace(string(out)), "lib", "time", "zoneinfo.zip"))
	if err != nil {
		t.Skipf("Go's zone database: %v", err)
	}
	defer z.Close()
	names := []string{"UTC"}
	for _, f := range z.File {
		region, _, ok := strings.Cut(f.Name, "/")
		if ok && slices.Contains(regions, region) {
			names = append(names, f.Name)
		}
	}
	slices.Sort(names)
	return names
}

// TestZonesMatchGo: the offered list is every geographic zone of Go's
// zone database, and every one of them loads.
func TestZonesMatchGo(t *testing.T) {
	want := goZones(t)
	if *update {
		if err := os.WriteFile("zones.txt", []byte(strings.Join(want, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	var got []string
	for _, z := range ParseZones(zonesTxt) {
		got = append(got, z.Name)
		if _, err := time.LoadLocation(z.Name); err != nil {
			t.Errorf("listed zone %s does not load: %v", z.Name, err)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("zones.txt is not Go's zone list (-go +zones.txt); run go test ./internal/account -run TestZonesMatchGo -update:\n%s", d)
	}
	if len(got) < 400 {
		t.Errorf("%d zones listed, want every geographic zone (over 400)", len(got))
	}
}

func TestZoneLabelsAndResolve(t *testing.T) {
	zs := ParseZones(zonesTxt)
	labels := map[string]string{}
	for _, z := range zs {
		labels[z.Name] = z.Label
	}
	for name, want := range map[string]string{
		"Europe/Berlin":                  "Berlin · Europe",
		"America/Los_Angeles":            "Los Angeles · America",
		"America/Argentina/Buenos_Aires": "Buenos Aires · Argentina, America",
		"UTC":                            "UTC · Coordinated Universal Time",
	} {
		if labels[name] != want {
			t.Errorf("label of %s = %q, want %q", name, labels[name], want)
		}
	}
	for _, tc := range []struct {
		in, want string
		matches  []string
	}{
		{"Europe/Berlin", "Europe/Berlin", nil},
		{"Berlin", "Europe/Berlin", nil},
		{"  berlin ", "Europe/Berlin", nil},
		{"Los Angeles", "America/Los_Angeles", nil},
		{"los_angeles", "America/Los_Angeles", nil},
		{"europe/berlin", "Europe/Berlin", nil},
		{"Indianapolis", "", []string{"America/Indiana/Indianapolis", "America/Indianapolis"}},
		{"Atlantis", "", nil},
		{"", "", nil},
		{"Local", "", nil},
	} {
		got, matches, ok := zs.Resolve(tc.in)
		if got != tc.want || ok != (tc.want != "") || !slices.Equal(matches, tc.matches) {
			t.Errorf("Resolve(%q) = %q, %q, %v; want %q, %q", tc.in, got, matches, ok, tc.want, tc.matches)
		}
	}
}
