//go:build ignore

// Shrink writes a quarter-size copy of a phone photo fixture that keeps the
// original's EXIF segment (orientation, capture time, GPS, camera), for
// tests that exercise what EXIF drives without decoding 12 megapixels:
//
//	go run shrink.go phone-portrait.jpg phone-portrait-small.jpg
package main

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"os"

	"golang.org/x/image/draw"
)

// box averages the source pixels under each destination pixel.
var box = &draw.Kernel{Support: 0.5, At: func(float64) float64 { return 1 }}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go run shrink.go IN.jpg OUT.jpg")
		os.Exit(2)
	}
	if err := shrink(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func shrink(in, out string) error {
	src, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	exif := app1(src)
	if exif == nil {
		return fmt.Errorf("%s has no EXIF segment", in)
	}
	img, err := jpeg.Decode(bytes.NewReader(src))
	if err != nil {
		return err
	}
	b := img.Bounds()
	small := image.NewRGBA(image.Rect(0, 0, b.Dx()/4, b.Dy()/4))
	box.Scale(small, small.Rect, img, b, draw.Src, nil)
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, small, &jpeg.Options{Quality: 85}); err != nil {
		return err
	}
	enc := buf.Bytes()
	// The encoder writes SOI then its tables: put the EXIF right after SOI,
	// where cameras put it.
	res := append(append(append([]byte{}, enc[:2]...), exif...), enc[2:]...)
	return os.WriteFile(out, res, 0o644)
}

// app1 returns the first APP1 "Exif" segment of a JPEG, marker included.
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
