package apptest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// PhotosDir returns the repository's photo fixtures folder, testdata/photos
// (what each file tests is in its README.md). It is found from this source
// file's own path, so it works from every package's tests and from a bare
// clone.
func PhotosDir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("apptest: cannot locate the repository")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "photos")
}

// Photo returns the bytes of the photo fixture name in testdata/photos.
func Photo(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(PhotosDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
