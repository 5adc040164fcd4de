package apptest

import (
	"os"
	"path/filepath"
	"testing"
)

// PhotosDir returns the directory of the shared photo fixtures
// (shared/photos beside the repository), found by walking up from the
// test's working directory. It fails the test if there is none.
func PhotosDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		for _, cand := range []string{filepath.Join(dir, "shared", "photos"), filepath.Join(dir, "..", "shared", "photos")} {
			if st, err := os.Stat(cand); err == nil && st.IsDir() {
				return cand
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("shared/photos not found beside the repository")
		}
		dir = parent
	}
}

// Photo returns the bytes of the shared photo fixture name.
func Photo(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(PhotosDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
