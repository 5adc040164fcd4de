package photo

import (
	"bytes"
	"testing"
)

// The metadata readers take any bytes: whatever a file's segments,
// chunks or boxes say, they answer within their bounds, never panic, and
// never return more than the bound they state. Seed corpora:
// testdata/fuzz/<target>.

// FuzzJPEGMeta: the segment walk over a JPEG (SOF, APP1 EXIF, APP2 ICC).
func FuzzJPEGMeta(f *testing.F) {
	f.Add([]byte{0xFF, 0xD8, 0xFF, 0xD9})
	f.Fuzz(func(t *testing.T, data []byte) {
		info := jpegMeta(bytes.NewReader(data), int64(len(data)))
		if len(info.icc) > maxICC || info.orientation < 0 || info.orientation > 8 {
			t.Errorf("jpegMeta = %d bytes of profile, orientation %d; want at most %d, 0–8", len(info.icc), info.orientation, maxICC)
		}
	})
}

// FuzzPNGICC: the chunk walk over a PNG and the iCCP inflate.
func FuzzPNGICC(f *testing.F) {
	f.Add([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x00IEND\xaeB`\x82"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if p := pngICC(bytes.NewReader(data), int64(len(data))); len(p) > maxICC {
			t.Errorf("pngICC = %d bytes, want at most %d", len(p), maxICC)
		}
	})
}

// FuzzWebPMeta: the chunk walk over a WebP (RIFF).
func FuzzWebPMeta(f *testing.F) {
	f.Add([]byte("RIFF\x04\x00\x00\x00WEBP"))
	f.Fuzz(func(t *testing.T, data []byte) {
		w := webpMeta(bytes.NewReader(data), int64(len(data)))
		if len(w.icc) > maxICC || w.vp8 < 0 || w.vp8 > int64(len(data)) {
			t.Errorf("webpMeta = %d bytes of profile, VP8 chunk %d; want at most %d, within the %d bytes", len(w.icc), w.vp8, maxICC, len(data))
		}
	})
}

// FuzzReadEXIF: EXIF as TIFF, read by imagemeta.
func FuzzReadEXIF(f *testing.F) {
	f.Add([]byte("MM\x00*\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if o, taken := readEXIF(data); o < 0 || o > 8 || (!taken.IsZero() && taken.Year() < 1990) {
			t.Errorf("readEXIF = %d, %v; want 0–8 and no time before 1990", o, taken)
		}
	})
}
