package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReleaseBinaryIsStatic builds the release binary with the Makefile's
// own command (the one the Dockerfile runs, TestReleaseBuildMatchesDockerfile)
// and reads its ELF headers: no program interpreter (PT_INTERP), no
// dynamic section (PT_DYNAMIC), no needed libraries (DT_NEEDED). Without
// -tags nodynamic the HEIC decoder's dynamic libheif loader makes the
// binary dynamically linked even with CGO_ENABLED=0.
func TestReleaseBinaryIsStatic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release binary")
	}
	t.Parallel()
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*CGO_ENABLED=0 go build (.*) -o \S+ \./cmd/ndiro\s*$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile has no release build line")
	}
	out := filepath.Join(t.TempDir(), "ndiro")
	args := append([]string{"build"}, shellWords(string(m[1]))...)
	args = append(args, "-o", out, ".")
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("release binary has a %v program header", p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) != 0 {
		t.Errorf("release binary needs libraries %v (%v), want none", libs, err)
	}
	if f.Section(".dynamic") != nil {
		t.Error("release binary has a .dynamic section")
	}
}

// shellWords splits s as a shell would for the Makefile's line: words
// separated by spaces, single quotes kept together and removed.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
