//go:build ignore

// Make-fuzz-seeds writes the seed corpora of the photo package's fuzz
// targets (testdata/fuzz/<target>/<name>, in go test's corpus format):
// small files of each format built as the metadata tests build them,
// and real segments cut from the photo fixtures. Run from
// internal/photo/testdata:
//
//	go run make-fuzz-seeds.go
package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"

	"ndiro/internal/photo/phototest"
)

func main() {
	small := tinyJPEG()
	profile := bytes.Repeat([]byte("profile-"), 80)
	seeds := map[string]map[string][]byte{
		"FuzzJPEGMeta": {
			"exif-orientation-6": insert(small, phototest.Segment(0xE1, append([]byte("Exif\x00\x00"), phototest.TIFF(6, 64)...))),
			"icc-two-parts": insert(small,
				phototest.Segment(0xE2, append([]byte("ICC_PROFILE\x00\x01\x02"), profile[:300]...)),
				phototest.Segment(0xE2, append([]byte("ICC_PROFILE\x00\x02\x02"), profile[300:]...))),
			"fill-bytes-then-cut": append([]byte{0xFF, 0xD8, 0xFF, 0xFF, 0xFF, 0xE1, 0x01, 0x00}, "Exif\x00\x00II*"...),
			"padded":              phototest.PaddedJPEG(small, 300),
			"phone-app1":          insert(small, app1(fixture("phone-portrait-small.jpg"))),
		},
		"FuzzPNGICC": {
			"iccp-text-idats": phototest.HeavyPNG(4, 4, phototest.PNGParts{Text: 100, ZText: 50, ICCInflated: 600, IDATs: 3}),
			"no-iccp":         phototest.HeavyPNG(2, 2, phototest.PNGParts{}),
		},
		"FuzzWebPMeta": {
			"vp8x-iccp-exif": phototest.HeavyWebP(fakeWebP(), 600, 100, 16),
			"alph":           alphWebP(),
		},
		"FuzzReadEXIF": {
			"orientation-6": phototest.TIFF(6, 26),
			"p3-iphone":     app1(fixture("wide-gamut-p3.jpg"))[10:],
			"phone":         app1(fixture("phone-landscape-small.jpg"))[10:],
		},
		"FuzzParseHEIF": {
			"exif-item":     phototest.HeavyHEIF(phototest.HEIFParts{Exif: 64}),
			"free-boxes":    phototest.HeavyHEIF(phototest.HEIFParts{FreeBoxes: 3, Free: 40, Exif: 32, MetaPadding: 16}),
			"rotated-phone": fixture("rotated.heic"),
		},
	}
	for target, files := range seeds {
		dir := filepath.Join("fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fail(err)
		}
		for name, b := range files {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				fail(err)
			}
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

func fixture(name string) []byte {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "photos", name))
	if err != nil {
		fail(err)
	}
	return b
}

// tinyJPEG is an 8×8 grey JPEG.
func tinyJPEG() []byte {
	var buf bytes.Buffer
	jpeg.Encode(&buf, image.NewGray(image.Rect(0, 0, 8, 8)), nil)
	return buf.Bytes()
}

// insert puts segments right after jpg's SOI.
func insert(jpg []byte, segs ...[]byte) []byte {
	return append(append(append([]byte{}, jpg[:2]...), bytes.Join(segs, nil)...), jpg[2:]...)
}

// app1 is a JPEG's first APP1 segment, marker and length included.
func app1(jpg []byte) []byte {
	for i := 2; i+4 <= len(jpg) && jpg[i] == 0xFF; {
		n := int(binary.BigEndian.Uint16(jpg[i+2:]))
		if jpg[i+1] == 0xE1 {
			return jpg[i : i+2+n]
		}
		i += 2 + n
	}
	fail(fmt.Errorf("no APP1"))
	return nil
}

// fakeWebP is a simple WebP whose VP8 chunk holds a key frame header of
// 16 × 16 and no frame data: enough for the chunk walk.
func fakeWebP() []byte {
	vp8 := []byte{0x10, 0x02, 0x00, 0x9d, 0x01, 0x2a, 16, 0, 16, 0, 0, 0}
	b := append([]byte("WEBPVP8 "), binary.LittleEndian.AppendUint32(nil, uint32(len(vp8)))...)
	b = append(b, vp8...)
	return append(append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(len(b)))...), b...)
}

// alphWebP is an extended WebP with a packed (compression 1) ALPH chunk
// before its VP8 chunk.
func alphWebP() []byte {
	w := fakeWebP()
	b := []byte("WEBPVP8X\x0a\x00\x00\x00\x10\x00\x00\x00\x0f\x00\x00\x0f\x00\x00ALPH\x03\x00\x00\x00\x01\xaa\xbb\x00")
	b = append(b, w[12:]...)
	return append(append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(len(b)))...), b...)
}
