package photo

import (
	"bytes"
	"compress/zlib"
	_ "embed"
	"encoding/binary"
	"io"
	"math"
)

// displayP3 is ndiro's own Display P3 ICC profile (532 bytes, ICC v4,
// P3 primaries, D65 white adapted to D50, the sRGB curve; no copyright),
// written by make-display-p3-icc.py beside it. Stored copies of Display P3
// photos carry it; an upload's own profile bytes are never copied through.
//
//go:embed DisplayP3.icc
var displayP3 []byte

// Gamut is what an upload's ICC profile says about its colours, as far as
// the pipeline cares (DESIGN.md, photos: keep wide-gamut colour).
type Gamut int

const (
	// GamutSRGB: no profile, an sRGB profile, or a profile that is not RGB
	// (grey, CMYK: the decoder already turns those into RGB values). The
	// stored copies carry no profile, which browsers read as sRGB.
	GamutSRGB Gamut = iota
	// GamutDisplayP3: an RGB profile with the Display P3 primaries, as
	// phones save wide-gamut photos. The stored copies carry our own
	// Display P3 profile, so the colours stay as shot on every screen.
	GamutDisplayP3
	// GamutOtherRGB: an RGB profile with other primaries (Adobe RGB,
	// ProPhoto, a camera's own). Rare from phones. The pixels are kept as
	// they are and the copies carry no profile: they are shown as sRGB,
	// so such photos look somewhat duller or shifted. Converting them
	// would mean reading arbitrary profiles (curves, LUTs) of untrusted
	// origin; not done.
	GamutOtherRGB
)

// String names g for logs and tests.
func (g Gamut) String() string {
	switch g {
	case GamutDisplayP3:
		return "display-p3"
	case GamutOtherRGB:
		return "other-rgb"
	}
	return "srgb"
}

// maxICC bounds the profile bytes read from an upload.
const maxICC = 1 << 20

// readICC returns the ICC profile embedded in an upload of format f, or
// nil: a JPEG's APP2 ICC_PROFILE segments (joined in sequence order), a
// PNG's iCCP chunk (inflated) or a WebP's ICCP chunk. Damaged or
// oversized profiles are nil: the photo still counts, as sRGB.
func readICC(r io.ReaderAt, size int64, f Format) []byte {
	switch f {
	case JPEG:
		return jpegICC(r, size)
	case PNG:
		return pngICC(r, size)
	case WebP:
		return webpICC(r, size)
	}
	return nil
}

// jpegICC joins the APP2 "ICC_PROFILE\0" segments found before the first
// scan (each: sequence number, count, a part of the profile).
func jpegICC(r io.ReaderAt, size int64) []byte {
	parts := map[byte][]byte{}
	var count byte
	total := 0
	err := jpegSegments(r, size, func(marker byte, body []byte) bool {
		if marker != 0xE2 || len(body) < 14 || string(body[:12]) != "ICC_PROFILE\x00" {
			return true
		}
		seq, n := body[12], body[13]
		if seq == 0 || n == 0 || seq > n || (count != 0 && n != count) || parts[seq] != nil {
			total = maxICC + 1 // inconsistent: give up
			return false
		}
		count = n
		parts[seq] = body[14:]
		total += len(body) - 14
		return total <= maxICC
	})
	if err != nil || count == 0 || total > maxICC || len(parts) != int(count) {
		return nil
	}
	var out []byte
	for i := byte(1); i <= count; i++ {
		out = append(out, parts[i]...)
	}
	return out
}

// jpegSegments calls fn with each marker segment (its marker byte and
// body) from the start of a JPEG to its first scan (SOS), or until fn
// returns false.
func jpegSegments(r io.ReaderAt, size int64, fn func(marker byte, body []byte) bool) error {
	sr := io.NewSectionReader(r, 0, size)
	var hdr [4]byte
	if _, err := io.ReadFull(sr, hdr[:2]); err != nil || hdr[0] != 0xFF || hdr[1] != 0xD8 {
		return errNotJPEG
	}
	for {
		if _, err := io.ReadFull(sr, hdr[:2]); err != nil {
			return err
		}
		for hdr[1] == 0xFF { // fill bytes
			if _, err := io.ReadFull(sr, hdr[1:2]); err != nil {
				return err
			}
		}
		if hdr[0] != 0xFF {
			return errNotJPEG
		}
		m := hdr[1]
		if m == 0xD8 || (m >= 0xD0 && m <= 0xD7) || m == 0x01 {
			continue // markers without a body
		}
		if m == 0xDA || m == 0xD9 {
			return nil
		}
		if _, err := io.ReadFull(sr, hdr[2:4]); err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint16(hdr[2:4])) - 2
		if n < 0 {
			return errNotJPEG
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(sr, body); err != nil {
			return err
		}
		if !fn(m, body) {
			return nil
		}
	}
}

// pngICC inflates the iCCP chunk found before the image data.
func pngICC(r io.ReaderAt, size int64) []byte {
	sr := io.NewSectionReader(r, 8, size-8)
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(sr, hdr[:]); err != nil {
			return nil
		}
		n := int64(binary.BigEndian.Uint32(hdr[:4]))
		typ := string(hdr[4:8])
		if typ == "IDAT" || typ == "IEND" || n > maxICC {
			return nil
		}
		if typ != "iCCP" {
			if _, err := sr.Seek(n+4, io.SeekCurrent); err != nil {
				return nil
			}
			continue
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(sr, body); err != nil {
			return nil
		}
		// Profile name (1–79 bytes), NUL, compression method 0 (zlib).
		i := bytes.IndexByte(body, 0)
		if i < 1 || i+2 > len(body) || body[i+1] != 0 {
			return nil
		}
		zr, err := zlib.NewReader(bytes.NewReader(body[i+2:]))
		if err != nil {
			return nil
		}
		prof, err := io.ReadAll(io.LimitReader(zr, maxICC+1))
		if err != nil || len(prof) > maxICC {
			return nil
		}
		return prof
	}
}

// webpICC returns the ICCP chunk of an extended (VP8X) WebP.
func webpICC(r io.ReaderAt, size int64) []byte {
	sr := io.NewSectionReader(r, 12, size-12)
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(sr, hdr[:]); err != nil {
			return nil
		}
		n := int64(binary.LittleEndian.Uint32(hdr[4:8]))
		switch string(hdr[:4]) {
		case "ICCP":
			if n > maxICC {
				return nil
			}
			prof := make([]byte, n)
			if _, err := io.ReadFull(sr, prof); err != nil {
				return nil
			}
			return prof
		case "VP8 ", "VP8L", "ANIM":
			return nil // the profile comes before the image data
		}
		if _, err := sr.Seek(n+n%2, io.SeekCurrent); err != nil {
			return nil
		}
	}
}

// Colorant XYZ values (D50, as ICC profiles store them) of the two RGB
// spaces the pipeline recognises, red, green, blue.
var (
	p3Colorants   = [3][3]float64{{0.5151, 0.2412, -0.0011}, {0.2920, 0.6922, 0.0419}, {0.1571, 0.0666, 0.7841}}
	srgbColorants = [3][3]float64{{0.4361, 0.2225, 0.0139}, {0.3851, 0.7169, 0.0971}, {0.1431, 0.0606, 0.7141}}
)

// classifyICC reads an ICC profile's header and colorant tags: an RGB
// display or input profile whose rXYZ, gXYZ and bXYZ are within 0.01 of
// Display P3's is GamutDisplayP3, of sRGB's GamutSRGB; any other RGB
// profile GamutOtherRGB; no profile, a damaged one, or one that is not RGB
// GamutSRGB. Only numbers are read from the profile; its bytes go nowhere.
func classifyICC(p []byte) Gamut {
	if len(p) < 132 || string(p[36:40]) != "acsp" || string(p[16:20]) != "RGB " {
		return GamutSRGB
	}
	n := int(binary.BigEndian.Uint32(p[128:132]))
	if n > 100 || 132+12*n > len(p) {
		return GamutOtherRGB
	}
	var got [3][3]float64
	found := 0
	for i := 0; i < n; i++ {
		e := p[132+12*i:]
		off, ln := int(binary.BigEndian.Uint32(e[4:8])), int(binary.BigEndian.Uint32(e[8:12]))
		k := -1
		switch string(e[:4]) {
		case "rXYZ":
			k = 0
		case "gXYZ":
			k = 1
		case "bXYZ":
			k = 2
		}
		if k < 0 {
			continue
		}
		if ln < 20 || off < 0 || off+20 > len(p) || string(p[off:off+4]) != "XYZ " {
			return GamutOtherRGB
		}
		for j := 0; j < 3; j++ {
			got[k][j] = float64(int32(binary.BigEndian.Uint32(p[off+8+4*j:]))) / 65536
		}
		found++
	}
	if found != 3 {
		return GamutOtherRGB // a LUT-based profile: not one we recognise
	}
	near := func(want [3][3]float64) bool {
		for i := range want {
			for j := range want[i] {
				if math.Abs(got[i][j]-want[i][j]) > 0.01 {
					return false
				}
			}
		}
		return true
	}
	switch {
	case near(p3Colorants):
		return GamutDisplayP3
	case near(srgbColorants):
		return GamutSRGB
	}
	return GamutOtherRGB
}

// iccSegment is the APP2 segment that carries profile p in a JPEG (a
// profile under 65,519 bytes fits in one; ours is 532).
func iccSegment(p []byte) []byte {
	seg := []byte{0xFF, 0xE2, 0, 0}
	binary.BigEndian.PutUint16(seg[2:], uint16(2+12+2+len(p)))
	seg = append(seg, "ICC_PROFILE\x00"...)
	seg = append(seg, 1, 1)
	return append(seg, p...)
}

// tagDisplayP3 returns the JPEG j with our Display P3 profile in an APP2
// segment right after SOI, where decoders look for it (~57 µs for both
// copies, against ~40 ms to convert the pixels to sRGB and clip them).
func tagDisplayP3(j []byte) []byte {
	seg := iccSegment(displayP3)
	out := make([]byte, 0, len(j)+len(seg))
	out = append(out, j[:2]...)
	out = append(out, seg...)
	return append(out, j[2:]...)
}

// DisplayP3Segment returns the APP2 segment the pipeline writes into the
// copies of Display P3 photos: the only metadata a stored copy may carry
// (tests compare stored bytes with it).
func DisplayP3Segment() []byte { return iccSegment(displayP3) }
