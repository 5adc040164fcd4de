package photo

import (
	"bytes"
	"compress/zlib"
	_ "embed"
	"encoding/binary"
	"errors"
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

// readICC returns the ICC profile embedded in an upload of format f, or
// nil: a JPEG's APP2 ICC_PROFILE segments (joined in sequence order), a
// PNG's iCCP chunk (inflated) or a WebP's ICCP chunk, each found by
// walking the format's segments or chunks (segment.go). A profile over
// maxICC, or damaged, is nil: the photo still counts, as sRGB.
func readICC(r io.ReaderAt, size int64, f Format) []byte {
	switch f {
	case JPEG:
		return jpegMeta(r, size).icc
	case PNG:
		return pngICC(r, size)
	case WebP:
		return webpMeta(r, size).icc
	}
	return nil
}

// iccParts gathers a JPEG's APP2 "ICC_PROFILE\0" segments (each: sequence
// number 1–n, count n, a part of the profile), in any order, up to maxICC
// bytes in all.
type iccParts struct {
	parts  map[byte][]byte
	count  byte
	total  int
	broken bool // inconsistent numbering, or over maxICC: no profile
}

// add takes the body of one APP2 segment; others than ICC_PROFILE are
// ignored.
func (p *iccParts) add(body []byte) {
	if p.broken || len(body) < 14 || string(body[:12]) != "ICC_PROFILE\x00" {
		return
	}
	seq, n := body[12], body[13]
	if seq == 0 || n == 0 || seq > n || (p.count != 0 && n != p.count) || p.parts[seq] != nil {
		p.broken = true
		return
	}
	p.total += len(body) - 14
	if p.total > maxICC {
		p.broken, p.parts = true, nil
		return
	}
	if p.parts == nil {
		p.parts = map[byte][]byte{}
	}
	p.count = n
	p.parts[seq] = bytes.Clone(body[14:])
}

// profile joins the parts, or returns nil if any is missing.
func (p *iccParts) profile() []byte {
	if p.broken || p.count == 0 || len(p.parts) != int(p.count) {
		return nil
	}
	out := make([]byte, 0, p.total)
	for i := 1; i <= int(p.count); i++ { // an int: a byte counter never passes 255
		out = append(out, p.parts[byte(i)]...)
	}
	return out
}

// pngICC inflates the first iCCP chunk found before the image data: a
// profile name (1–79 bytes), NUL, compression method 0, then zlib data,
// read through the chunk walker's cursor and inflated into at most maxICC
// bytes (a profile that inflates to more is nil: a PNG's iCCP can inflate
// to gigabytes).
func pngICC(r io.ReaderAt, size int64) []byte {
	var prof []byte
	pngChunks(r, size, func(typ string, n int64, body *cursor) bool {
		if typ == "IDAT" {
			return false
		}
		if typ != "iCCP" {
			return true
		}
		var head [81]byte
		k := min(n, int64(len(head)))
		if body.read(head[:k]) != nil {
			return false
		}
		i := bytes.IndexByte(head[:k], 0)
		if i < 1 || int64(i+2) > k || head[i+1] != 0 {
			return false
		}
		// What of the zlib data was read with the name goes first.
		z := io.MultiReader(bytes.NewReader(head[i+2:k]), io.LimitReader(body, n-k))
		zr, err := zlib.NewReader(z)
		if err != nil {
			return false
		}
		buf := make([]byte, maxICC+1)
		m, err := io.ReadFull(zr, buf)
		if m > maxICC || (err != nil && !errors.Is(err, io.ErrUnexpectedEOF)) {
			return false
		}
		prof = buf[:m]
		return false
	})
	return prof
}

// webpLayout is what the pipeline reads of a WebP's chunks before
// decoding it.
type webpLayout struct {
	// icc is the ICCP chunk, nil if none or over maxICC.
	icc []byte
	// vp8 is the length of a lossy image's VP8 chunk, which
	// x/image/webp reads whole into memory to decode; 0 for a lossless
	// one.
	vp8 int64
	// packedAlpha: the alpha plane (ALPH) is compressed, which the
	// decoder unpacks through a full NRGBA image of its own.
	packedAlpha bool
}

// webpMeta walks a WebP's chunks up to its image data (VP8 or VP8L):
// the profile comes before it, and ALPH right before VP8.
func webpMeta(r io.ReaderAt, size int64) webpLayout {
	var w webpLayout
	riffChunks(r, size, func(fourCC string, n int64, body *cursor) bool {
		switch fourCC {
		case "ICCP":
			if w.icc == nil && n <= maxICC {
				prof := make([]byte, n)
				if body.read(prof) == nil {
					w.icc = prof
				}
			}
		case "ALPH":
			b, err := body.byte1()
			w.packedAlpha = err == nil && b&0x03 == 1
		case "VP8 ":
			w.vp8 = n
			return false
		case "VP8L", "ANIM":
			return false
		}
		return true
	})
	return w
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
