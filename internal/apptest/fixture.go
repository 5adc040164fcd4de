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

// SmallWithEXIF returns small.jpg (640x480) carrying the EXIF segment of the
// JPEG fixture from: its capture time, orientation and GPS, in a file that
// decodes in a fraction of the time of the 12-megapixel original. Tests of
// what the EXIF drives (capture-time offers, stripping) use it; tests of
// full-size decoding use the originals.
func SmallWithEXIF(t testing.TB, from string) []byte {
	t.Helper()
	exif := app1(Photo(t, from))
	if exif == nil {
		t.Fatalf("apptest: %s has no EXIF segment", from)
	}
	small := Photo(t, "small.jpg")
	out := append([]byte{}, small[:2]...) // SOI
	out = append(out, exif...)
	return append(out, small[2:]...)
}

// app1 returns the first APP1 "Exif" segment of a JPEG, marker included,
// or nil.
func app1(jpg []byte) []byte {
	for i := 2; i+4 <= len(jpg) && jpg[i] == 0xFF; {
		marker, n := jpg[i+1], int(jpg[i+2])<<8|int(jpg[i+3])
		if marker == 0xDA || i+2+n > len(jpg) {
			return nil
		}
		if marker == 0xE1 && n > 8 && string(jpg[i+4:i+8]) == "Exif" {
			return jpg[i : i+2+n]
		}
		i += 2 + n
	}
	return nil
}
