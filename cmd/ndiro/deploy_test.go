package main

import (
	"os"
	"regexp"
	"testing"
)

// TestReleaseBuildMatchesDockerfile keeps `make release` and the
// Dockerfile's build step the same static (CGO_ENABLED=0) command, only the
// output path differs, so building the release binary checks the image's
// build without Docker.
func TestReleaseBuildMatchesDockerfile(t *testing.T) {
	goBuild := regexp.MustCompile(`(?m)^\s*(?:RUN\s+)?(CGO_ENABLED=0 go build .*) -o \S+ (\./cmd/ndiro)\s*$`)
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		m := goBuild.FindStringSubmatch(string(b))
		if m == nil {
			t.Fatalf("%s has no static go build line", path)
		}
		return m[1] + " " + m[2]
	}
	docker, makefile := read("../../deploy/Dockerfile"), read("../../Makefile")
	if docker != makefile {
		t.Errorf("build commands differ:\nDockerfile: %s\nMakefile:   %s", docker, makefile)
	}
}
