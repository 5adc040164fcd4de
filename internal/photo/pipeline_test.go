package photo_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/jpeg"
	"math"
	"os"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/photo"
)

// Verdict is how the pipeline must treat one fixture
// (testdata/photos/README.md).
type verdict struct {
	file     string
	err      error
	portrait bool // displayed taller than wide
	maxW     int  // display width cap (no upscaling)
	taken    string
	upright  bool // the "↑ TOP" card is at the top left
	// whiteCorner: the top-left pixel was transparent and must come out
	// white, not black.
	whiteCorner bool
	// p3: the source is Display P3; both copies carry our profile.
	p3 bool
	// ref, if set, is a stored copy to compare with its reference.
	ref *reference
	// slow: a 12-megapixel decode, seconds of CPU under the race
	// detector; run by make slow (slowEnv), not make test.
	slow bool
}

// slowEnv runs the tests whose point is a full-size phone photo through
// the whole pipeline (make slow; CI runs it).
const slowEnv = "NDIRO_TEST_SLOW"

// reference is a copy as the pipeline made it with its former resizer
// (disintegration/imaging's Lanczos, testdata/photos/reference): the new
// one must match it within maxMean levels (mean absolute difference per
// channel, 0–255) and minPSNR dB. The copies of the photo fixtures come
// out the same to the byte; the screenshot's, flattened from transparent
// pixels, within 0.003 levels (68 dB).
type reference struct {
	copy, file       string // copy: "display" or "thumb"
	maxMean, minPSNR float64
}

// fixtures are decoded in full under the race detector, which makes a
// 12-megapixel decode cost seconds: phone-portrait.jpg is the full-size
// case, run by make slow; phone-landscape.jpg's EXIF (little-endian, as Android writes it) is
// checked on its quarter-size copy, which keeps that segment byte for byte.
var fixtures = []verdict{
	{file: "phone-portrait.jpg", portrait: true, taken: "2024-06-14 12:31:07", upright: true,
		ref: &reference{"thumb", "reference/phone-portrait.thumb.jpg", 0.05, 60}, slow: true},
	{file: "phone-portrait-small.jpg", portrait: true, taken: "2024-06-14 12:31:07", upright: true},
	{file: "phone-landscape-small.jpg", taken: "2024-09-02 19:47:55", upright: true},
	{file: "small.jpg", maxW: 640, upright: true, ref: &reference{"thumb", "reference/small.thumb.jpg", 0.05, 60}},
	{file: "progressive.jpg", upright: true},
	{file: "screenshot.png", portrait: true, whiteCorner: true, ref: &reference{"display", "reference/screenshot.display.jpg", 0.05, 60}},
	{file: "photo.webp", upright: true, ref: &reference{"thumb", "reference/photo-webp.thumb.jpg", 0.05, 60}},
	{file: "wide-gamut-p3.jpg", p3: true, taken: "2025-05-17 12:41:03"},
	{file: "not-an-image.jpg", err: photo.ErrUnsupported},
	{file: "truncated.jpg", err: photo.ErrDamaged},
	{file: "empty.jpg", err: photo.ErrEmpty},
	{file: "bomb.png", err: photo.ErrTooLarge},
	// HEIC needs the worker: a pipeline without one refuses it clearly
	// (decoding is TestHEICFixtures, make heic).
	{file: "photo.heic", err: photo.ErrHEICUnavailable},
}

func TestProcessFixtures(t *testing.T) {
	t.Parallel()
	p := photo.NewPipeline(photo.DefaultBudget, time.Minute)
	for _, tc := range fixtures {
		t.Run(tc.file, func(t *testing.T) {
			if tc.slow && os.Getenv(slowEnv) != "1" {
				t.Skip("a 12-megapixel phone photo: run by make slow (" + slowEnv + "=1)")
			}
			t.Parallel()
			out, err := p.Process(context.Background(), apptest.Photo(t, tc.file))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Process = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Process = %v, want success", err)
			}
			for _, c := range []struct {
				name string
				b    []byte
				w, h int
				side int
			}{{"display", out.Display, out.Width, out.Height, photo.DisplaySide}, {"thumb", out.Thumb, out.ThumbWidth, out.ThumbHeight, photo.ThumbSide}} {
				checkNoMetadata(t, c.name, c.b, tc.p3)
				img, err := jpeg.Decode(bytes.NewReader(c.b))
				if err != nil {
					t.Fatalf("%s does not decode as JPEG: %v", c.name, err)
				}
				b := img.Bounds()
				if b.Dx() != c.w || b.Dy() != c.h {
					t.Errorf("%s is %dx%d, reported %dx%d", c.name, b.Dx(), b.Dy(), c.w, c.h)
				}
				if max(b.Dx(), b.Dy()) > c.side {
					t.Errorf("%s long edge %d > %d", c.name, max(b.Dx(), b.Dy()), c.side)
				}
				if (b.Dy() > b.Dx()) != tc.portrait {
					t.Errorf("%s is %dx%d, want portrait=%v", c.name, b.Dx(), b.Dy(), tc.portrait)
				}
				if tc.upright {
					checkUpright(t, c.name, img)
				}
				if r, g, bl, _ := img.At(b.Min.X, b.Min.Y).RGBA(); tc.whiteCorner && (r>>8 < 240 || g>>8 < 240 || bl>>8 < 240) {
					t.Errorf("%s: transparent corner became (%d,%d,%d), want white", c.name, r>>8, g>>8, bl>>8)
				}
			}
			if want := map[bool]photo.Gamut{false: photo.GamutSRGB, true: photo.GamutDisplayP3}[tc.p3]; out.Gamut != want {
				t.Errorf("gamut = %v, want %v", out.Gamut, want)
			}
			if tc.ref != nil {
				b := map[string][]byte{"display": out.Display, "thumb": out.Thumb}[tc.ref.copy]
				checkReference(t, tc.ref, b)
			}
			if tc.maxW > 0 && out.Width > tc.maxW {
				t.Errorf("display width %d > %d: upscaled", out.Width, tc.maxW)
			}
			got := ""
			if !out.Taken.IsZero() {
				got = out.Taken.Format(time.DateTime)
			}
			if got != tc.taken {
				t.Errorf("capture time = %q, want %q", got, tc.taken)
			}
		})
	}
}

// checkReference compares copy b, pixel by pixel, with its reference.
func checkReference(t *testing.T, ref *reference, b []byte) {
	t.Helper()
	got, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	want, err := jpeg.Decode(bytes.NewReader(apptest.Photo(t, ref.file)))
	if err != nil {
		t.Fatal(err)
	}
	if got.Bounds() != want.Bounds() {
		t.Fatalf("%s is %v, its reference %s %v", ref.copy, got.Bounds(), ref.file, want.Bounds())
	}
	var sum, sq float64
	r := got.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			r1, g1, b1, _ := got.At(x, y).RGBA()
			r2, g2, b2, _ := want.At(x, y).RGBA()
			for _, d := range []float64{float64(r1>>8) - float64(r2>>8), float64(g1>>8) - float64(g2>>8), float64(b1>>8) - float64(b2>>8)} {
				sum += math.Abs(d)
				sq += d * d
			}
		}
	}
	n := float64(3 * r.Dx() * r.Dy())
	mean, psnr := sum/n, math.Inf(1)
	if sq > 0 {
		psnr = 10 * math.Log10(255*255/(sq/n))
	}
	if mean > ref.maxMean || psnr < ref.minPSNR {
		t.Errorf("%s differs from %s by %.3f levels on average, PSNR %.1f dB; want at most %.2f, at least %.0f dB", ref.copy, ref.file, mean, psnr, ref.maxMean, ref.minPSNR)
	}
}

// checkNoMetadata walks the JPEG's segments: only the frame, tables and scan
// may be there (no APP1 EXIF/XMP, no comments), and the GPS coordinates of
// the fixtures appear nowhere. The one exception, if p3, is our own Display
// P3 profile, byte for byte, as the first segment after SOI: no other APP2,
// and not the upload's profile.
func checkNoMetadata(t *testing.T, name string, b []byte, p3 bool) {
	t.Helper()
	seg := photo.DisplayP3Segment()
	if p3 {
		if !bytes.HasPrefix(b[2:], seg) {
			t.Errorf("%s: no Display P3 profile after SOI", name)
		} else {
			b = append(b[:2:2], b[2+len(seg):]...)
		}
	}
	for i := 2; i+4 <= len(b); {
		if b[i] != 0xFF {
			t.Fatalf("%s: bad marker at %d", name, i)
		}
		m := b[i+1]
		if m == 0xDA { // start of scan: entropy-coded data follows
			break
		}
		if m == 0xE1 || m == 0xFE || (m >= 0xE2 && m <= 0xEF) {
			t.Errorf("%s has metadata segment FF%02X", name, m)
		}
		i += 2 + int(b[i+2])<<8 + int(b[i+3])
	}
	for _, s := range []string{"Exif", "GPS", "Apple", "iPhone", "samsung", "http://ns.adobe.com", "ICC_PROFILE"} {
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("%s contains %q", name, s)
		}
	}
}

// checkUpright applies the fixtures' pixel check: the light card sits in the
// top-left box and the other three corners are dark.
func checkUpright(t *testing.T, name string, img image.Image) {
	t.Helper()
	b := img.Bounds()
	luma := func(x0, x1, y0, y1 float64) float64 {
		var sum, n float64
		for y := int(y0 * float64(b.Dy())); y < int(y1*float64(b.Dy())); y++ {
			for x := int(x0 * float64(b.Dx())); x < int(x1*float64(b.Dx())); x++ {
				r, g, bl, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
				sum += (0.299*float64(r) + 0.587*float64(g) + 0.114*float64(bl)) / 257
				n++
			}
		}
		return sum / n
	}
	if l := luma(0.06, 0.20, 0.05, 0.12); l <= 150 {
		t.Errorf("%s: top-left card luma %.0f, want > 150 (not upright)", name, l)
	}
	for _, box := range [][4]float64{{0.80, 0.94, 0.05, 0.12}, {0.06, 0.20, 0.88, 0.95}, {0.80, 0.94, 0.88, 0.95}} {
		if l := luma(box[0], box[1], box[2], box[3]); l >= 110 {
			t.Errorf("%s: corner box %v luma %.0f, want < 110 (turned or mirrored)", name, box, l)
		}
	}
}

func TestSniffIgnoresName(t *testing.T) {
	t.Parallel()
	png := apptest.Photo(t, "screenshot.png")
	if f, err := photo.Sniff(png); err != nil || f != photo.PNG {
		t.Errorf("Sniff(png bytes) = %q, %v", f, err)
	}
	if _, err := photo.Sniff([]byte("GIF89a......")); !errors.Is(err, photo.ErrUnsupported) {
		t.Errorf("Sniff(gif) = %v, want ErrUnsupported", err)
	}
}

func FuzzProcess(f *testing.F) {
	for _, name := range []string{"small.jpg", "truncated.jpg", "not-an-image.jpg"} {
		b, err := os.ReadFile(apptest.PhotosDir(f) + "/" + name)
		if err == nil && len(b) < 100_000 {
			f.Add(b)
		}
	}
	f.Add([]byte{0xFF, 0xD8, 0xFF})
	p := photo.NewPipeline(photo.DefaultBudget, time.Minute)
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := p.Process(context.Background(), data)
		if err != nil {
			return
		}
		if _, err := jpeg.Decode(bytes.NewReader(out.Display)); err != nil {
			t.Fatalf("accepted input produced undecodable output: %v", err)
		}
	})
}
