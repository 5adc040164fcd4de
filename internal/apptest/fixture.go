package apptest

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
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

// JPEG returns a w×h JPEG tinted c with a gradient, a photo made in the
// test so that it depends on no file and decodes in no time.
func JPEG(t testing.TB, w, h int, c color.RGBA) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{c.R ^ uint8(x), c.G ^ uint8(y), c.B, 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
