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

// WithEXIF returns jpg (a JPEG starting with its SOI marker) with the
// EXIF segment (APP1 "Exif\0\0") of the JPEG from inserted after its SOI:
// a photo made small in the test that carries a fixture's capture time,
// orientation and GPS, for tests about what EXIF drives rather than the
// pixels. It fails the test if from has no EXIF segment.
func WithEXIF(t testing.TB, jpg, from []byte) []byte {
	t.Helper()
	if len(jpg) < 2 || jpg[0] != 0xFF || jpg[1] != 0xD8 {
		t.Fatal("apptest: WithEXIF: not a JPEG")
	}
	// Segments after SOI: 0xFF, marker, a two-byte big-endian length
	// that counts itself, until the start of scan.
	for i := 2; i+4 <= len(from) && from[i] == 0xFF && from[i+1] != 0xDA; {
		n := int(from[i+2])<<8 | int(from[i+3])
		end := i + 2 + n
		if n < 2 || end > len(from) {
			break
		}
		if from[i+1] == 0xE1 && bytes.HasPrefix(from[i+4:end], []byte("Exif\x00\x00")) {
			out := append([]byte{0xFF, 0xD8}, from[i:end]...)
			return append(out, jpg[2:]...)
		}
		i = end
	}
	t.Fatal("apptest: WithEXIF: no EXIF segment")
	return nil
}
