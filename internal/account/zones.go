package account

import (
	_ "embed"
	"strings"

	"ndiro/internal/user"
)

// zonesTxt lists the IANA zones the time zone field offers, one per line:
// every zone of Go's zone database under a continent or ocean (Europe/,
// America/, …, Pacific/) and UTC, leaving out the legacy aliases (US/,
// Etc/, EST5EDT, …). TestZonesMatchGo regenerates it with -update from
// $GOROOT/lib/time/zoneinfo.zip and fails when it falls behind.
//
//go:embed zones.txt
var zonesTxt string

// Zone is one choice of the time zone field.
type Zone struct {
	// Name is the IANA name the field submits: "America/Los_Angeles".
	Name string
	// Label names the place in words, so that typing a city finds its
	// zone: "Los Angeles · America".
	Label string
	// city is the last part of Name in lower case with spaces:
	// "los angeles".
	city string
}

// Zones is the list the account page offers, in zonesTxt's order.
type Zones []Zone

// ParseZones reads a list of zone names, one per line.
func ParseZones(txt string) Zones {
	var zs Zones
	for _, name := range strings.Fields(txt) {
		parts := strings.Split(strings.ReplaceAll(name, "_", " "), "/")
		city := parts[len(parts)-1]
		label := city
		if len(parts) > 1 {
			region := parts[:len(parts)-1]
			for i, j := 0, len(region)-1; i < j; i, j = i+1, j-1 {
				region[i], region[j] = region[j], region[i]
			}
			label += " · " + strings.Join(region, ", ")
		} else if name == "UTC" {
			label = "UTC · Coordinated Universal Time"
		}
		zs = append(zs, Zone{Name: name, Label: label, city: strings.ToLower(city)})
	}
	return zs
}

// Resolve returns the zone s names: s itself if it is a valid IANA name
// ("Europe/Berlin"), else the one listed zone whose name or city matches s
// regardless of case, underscores or surrounding space ("berlin", "Los
// Angeles", "europe/berlin"). matches lists the zones s matched when it
// matched several ("Indianapolis"), so the page can name them; ok is
// false then, and when nothing matched.
func (zs Zones) Resolve(s string) (name string, matches []string, ok bool) {
	s = strings.TrimSpace(s)
	if user.ValidTimeZone(s) {
		return s, nil, true
	}
	want := strings.ToLower(strings.ReplaceAll(s, "_", " "))
	if want == "" {
		return "", nil, false
	}
	for _, z := range zs {
		if z.city == want || strings.ToLower(strings.ReplaceAll(z.Name, "_", " ")) == want {
			matches = append(matches, z.Name)
		}
	}
	if len(matches) == 1 {
		return matches[0], nil, true
	}
	return "", matches, false
}
