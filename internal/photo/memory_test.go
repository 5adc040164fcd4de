package photo_test

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/photo"
)

// pngHeader is a PNG with only its header: w × h, bitDepth, colourType
// (6: RGBA). DecodeConfig reads it; a decode fails. Enough to see what the
// pipeline decides before decoding.
func pngHeader(w, h uint32, bitDepth, colourType byte) []byte {
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = bitDepth, colourType
	b := []byte("\x89PNG\r\n\x1a\n")
	return append(pngChunk(b, "IHDR", ihdr[:]), pngChunk(nil, "IEND", nil)...)
}

func pngChunk(b []byte, typ string, body []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	b = append(b, typ...)
	b = append(b, body...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(append([]byte(typ), body...)))
}

func TestDecodeCost(t *testing.T) {
	t.Parallel()
	portrait := apptest.Photo(t, "phone-portrait.jpg")
	progressive := apptest.Photo(t, "progressive.jpg")
	const scratch = 2 * 2 << 20 // two bands of the resize at once, 1 MB of scaler scratch and up to 1 MB of rows each
	for _, tc := range []struct {
		name string
		f    photo.Format
		cfg  image.Config
		data []byte
		want int64
	}{
		// 4032×3024 4:2:0: 1.5 bytes a pixel, then 2048 × 3024 and
		// 2048 × 1536 RGBA and the bands' scratch for the resize.
		{"phone JPEG", photo.JPEG, image.Config{ColorModel: color.YCbCrModel, Width: 4032, Height: 3024}, portrait,
			4032*3024*3/2 + 4*2048*3024 + 4*2048*1536 + scratch},
		// Progressive: every sample also as an int32 coefficient.
		{"progressive JPEG", photo.JPEG, image.Config{ColorModel: color.YCbCrModel, Width: 1600, Height: 1200}, progressive,
			1600*1200*3/2 + 4*1600*1200*3/2 + 4*1600*1200},
		{"16-bit RGBA PNG", photo.PNG, image.Config{ColorModel: color.NRGBA64Model, Width: 7000, Height: 7000}, nil,
			7000*7000*8 + 4*2048*7000 + 4*2048*2048 + scratch},
		{"8-bit RGBA PNG", photo.PNG, image.Config{ColorModel: color.NRGBAModel, Width: 1170, Height: 2532}, nil,
			1170*2532*4 + 4*946*2532 + 4*946*2048 + scratch},
		// Within the display box: no resize, one RGBA copy.
		{"grey PNG", photo.PNG, image.Config{ColorModel: color.GrayModel, Width: 100, Height: 50}, nil,
			100*50 + 4*100*50},
	} {
		got := photo.DecodeCost(tc.f, tc.cfg, bytes.NewReader(tc.data), int64(len(tc.data)))
		if got != tc.want {
			t.Errorf("%s: DecodeCost = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestTooMuchMemoryRefused: a 7000×7000 16-bit RGBA PNG (inside the pixel
// limits) needs 449 MB to read: refused from its header, with the numbers.
func TestTooMuchMemoryRefused(t *testing.T) {
	t.Parallel()
	p := photo.NewPipeline(photo.DefaultBudget, time.Minute)
	_, err := p.Process(context.Background(), pngHeader(7000, 7000, 16, 6))
	var mem *photo.MemoryError
	if !errors.As(err, &mem) || !errors.Is(err, photo.ErrNeedsTooMuchMemory) {
		t.Fatalf("Process = %v, want a *MemoryError", err)
	}
	want := "this image is too large to read: at 7000 × 7000 pixels with 16-bit colour with transparency it needs 449 MB of memory, and ndiro reads photos that need up to 160 MB. Save it as a JPEG, or at a smaller size"
	if err.Error() != want {
		t.Errorf("message = %q, want %q", err.Error(), want)
	}
}

// TestBusyAfterWait: with the budget spent, an upload waits the
// pipeline's wait, then gets ErrBusy; once the budget is back it goes
// through.
func TestBusyAfterWait(t *testing.T) {
	t.Parallel()
	small := apptest.Photo(t, "small.jpg")
	for _, tc := range []struct {
		name string
		wait time.Duration // short when it is to be waited out; long when it must not run out under load
		back bool          // the budget given back before the upload
		want error
	}{
		{"budget spent", 50 * time.Millisecond, false, photo.ErrBusy},
		{"budget given back", time.Minute, true, nil},
	} {
		p := photo.NewPipeline(photo.DefaultBudget, tc.wait)
		release, err := p.Hold(context.Background(), photo.DefaultBudget)
		if err != nil {
			t.Fatal(err)
		}
		if tc.back {
			release()
		}
		if _, err := p.Process(context.Background(), small); !errors.Is(err, tc.want) {
			t.Errorf("%s: Process = %v, want %v", tc.name, err, tc.want)
		}
		release()
	}
}

// p3PNG is a small PNG tagged (iCCP) with profile.
func p3PNG(t *testing.T, profile []byte) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 4, 4))
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	var z bytes.Buffer
	zw := zlibWriter(&z)
	zw.Write(profile)
	zw.Close()
	body := append([]byte("Display P3\x00\x00"), z.Bytes()...)
	// IHDR is 8+4+4+13+4 = 33 bytes in; iCCP goes right after it.
	out := append([]byte{}, b[:33]...)
	out = pngChunk(out, "iCCP", body)
	return append(out, b[33:]...)
}

func TestClassifyProfiles(t *testing.T) {
	t.Parallel()
	p3 := photo.DisplayP3
	withColorants := func(r, g, b [3]float64) []byte {
		p := append([]byte{}, p3...)
		n := int(binary.BigEndian.Uint32(p[128:]))
		for i := 0; i < n; i++ {
			e := p[132+12*i:]
			off := int(binary.BigEndian.Uint32(e[4:]))
			var v [3]float64
			switch string(e[:4]) {
			case "rXYZ":
				v = r
			case "gXYZ":
				v = g
			case "bXYZ":
				v = b
			default:
				continue
			}
			for j := range v {
				binary.BigEndian.PutUint32(p[off+8+4*j:], uint32(int32(v[j]*65536)))
			}
		}
		return p
	}
	srgb := withColorants([3]float64{0.4361, 0.2225, 0.0139}, [3]float64{0.3851, 0.7169, 0.0971}, [3]float64{0.1431, 0.0606, 0.7141})
	adobe := withColorants([3]float64{0.6097, 0.3111, 0.0195}, [3]float64{0.2053, 0.6257, 0.0609}, [3]float64{0.1492, 0.0632, 0.7446})
	grey := append([]byte{}, p3...)
	copy(grey[16:20], "GRAY")
	for _, tc := range []struct {
		name string
		prof []byte
		want photo.Gamut
	}{
		{"ours", p3, photo.GamutDisplayP3},
		{"sRGB", srgb, photo.GamutSRGB},
		{"Adobe RGB", adobe, photo.GamutOtherRGB},
		{"grey", grey, photo.GamutSRGB},
		{"none", nil, photo.GamutSRGB},
		{"garbage", []byte(strings.Repeat("x", 200)), photo.GamutSRGB},
	} {
		if got := photo.ClassifyICC(tc.prof); got != tc.want {
			t.Errorf("ClassifyICC(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}

	jpg := apptest.Photo(t, "wide-gamut-p3.jpg")
	if got := photo.ReadICC(bytes.NewReader(jpg), int64(len(jpg)), photo.JPEG); !bytes.Equal(got, p3) {
		t.Errorf("ReadICC(wide-gamut-p3.jpg) = %d bytes, want the 532 of DisplayP3.icc", len(got))
	}
	pngP3 := p3PNG(t, p3)
	if got := photo.ReadICC(bytes.NewReader(pngP3), int64(len(pngP3)), photo.PNG); !bytes.Equal(got, p3) {
		t.Errorf("ReadICC(PNG with iCCP) = %d bytes, want the profile", len(got))
	}
	// An extended WebP: VP8X, then ICCP before the image data.
	webp := []byte("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x20\x00\x00\x00\x00\x00\x00\x00\x00\x00ICCP")
	webp = binary.LittleEndian.AppendUint32(webp, uint32(len(p3)))
	webp = append(webp, p3...)
	if got := photo.ReadICC(bytes.NewReader(webp), int64(len(webp)), photo.WebP); !bytes.Equal(got, p3) {
		t.Errorf("ReadICC(WebP with ICCP) = %d bytes, want the profile", len(got))
	}
	out, err := photo.NewPipeline(photo.DefaultBudget, time.Minute).Process(context.Background(), pngP3)
	if err != nil || out.Gamut != photo.GamutDisplayP3 || !bytes.HasPrefix(out.Thumb[2:], photo.DisplayP3Segment()) {
		t.Errorf("Process(P3 PNG) = gamut %v, err %v; want Display P3 with our profile", out.Gamut, err)
	}
}

func zlibWriter(w *bytes.Buffer) *zlib.Writer { return zlib.NewWriter(w) }
