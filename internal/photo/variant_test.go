package photo_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"slices"
	"testing"
	"time"

	xwebp "golang.org/x/image/webp"

	"ndiro/internal/apptest"
	"ndiro/internal/config"
	"ndiro/internal/photo"
)

func TestVariantKeys(t *testing.T) {
	sizes := photo.VariantSizes()
	if len(sizes) != 2+2*(len(photo.ThumbSides)+len(photo.DisplaySides)) {
		t.Fatalf("%d variants, want the two legacy copies and each size in two formats", len(sizes))
	}
	seen := map[string]bool{}
	for _, size := range sizes {
		got, ok := photo.ParseSize(string(size))
		if !ok || got != size {
			t.Errorf("ParseSize(%q) = %q, %v, want it back", size, got, ok)
		}
		key := photo.Key("sub/1", "2026-09-01", "120000-abcdef", size)
		if seen[key] {
			t.Errorf("Key(%q) = %q, the key of another size too", size, key)
		}
		seen[key] = true
		owner, date, id, back, ok := photo.ParseKey(key)
		if !ok || owner != "sub/1" || date != "2026-09-01" || id != "120000-abcdef" || back != size {
			t.Errorf("ParseKey(%q) = %q %q %q %q %v, want sub/1 2026-09-01 120000-abcdef %q", key, owner, date, id, back, ok, size)
		}
	}
	for _, c := range []struct {
		size photo.Size
		key  string
		typ  string
	}{
		{photo.SizeDisplay, "users/u/meals/2026-09-01/120000-abcdef.jpg", "image/jpeg"},
		{photo.SizeThumb, "users/u/meals/2026-09-01/120000-abcdef.thumb.jpg", "image/jpeg"},
		{"t320.webp", "users/u/meals/2026-09-01/120000-abcdef.t320.webp", "image/webp"},
		{"d1080.jpg", "users/u/meals/2026-09-01/120000-abcdef.d1080.jpg", "image/jpeg"},
	} {
		if got := photo.Key("u", "2026-09-01", "120000-abcdef", c.size); got != c.key {
			t.Errorf("Key(%q) = %q, want %q", c.size, got, c.key)
		}
		if got := photo.ContentType(c.size); got != c.typ {
			t.Errorf("ContentType(%q) = %q, want %q", c.size, got, c.typ)
		}
	}
	for _, bad := range []string{"t999.webp", "t320", "t320.avif", "../x", "display.webp", "thumb.webp", "D720.JPG"} {
		if got, ok := photo.ParseSize(bad); ok {
			t.Errorf("ParseSize(%q) = %q, true, want false", bad, got)
		}
	}
	if _, _, _, _, ok := photo.ParseKey("users/u/meals/2026-09-01/120000-abcdef.t999.webp"); ok {
		t.Error("ParseKey accepted a size that does not exist")
	}
}

func TestFullSet(t *testing.T) {
	for _, c := range []struct {
		name string
		have photo.Set
		w, h int
		want []photo.Size
	}{
		{"phone photo", photo.LegacySet, 2048, 1536, []photo.Size{"display", "thumb",
			"t160.jpg", "t240.jpg", "t320.jpg", "t480.jpg", "d720.jpg", "d1080.jpg", "d1600.jpg",
			"t160.webp", "t240.webp", "t320.webp", "t480.webp", "d720.webp", "d1080.webp", "d1600.webp"}},
		{"row of before photo_set", 0, 1536, 2048, []photo.Size{"display", "thumb",
			"t160.jpg", "t240.jpg", "t320.jpg", "t480.jpg", "d720.jpg", "d1080.jpg", "d1600.jpg",
			"t160.webp", "t240.webp", "t320.webp", "t480.webp", "d720.webp", "d1080.webp", "d1600.webp"}},
		// Never upscaled: nothing larger than the display copy, and no
		// display size equal to it (the display copy is that size).
		{"small photo", photo.LegacySet, 1080, 300, []photo.Size{"display", "thumb",
			"t160.jpg", "t240.jpg", "d720.jpg", "t160.webp", "t240.webp", "d720.webp"}},
		{"tiny photo", photo.LegacySet, 100, 100, []photo.Size{"display", "thumb"}},
		{"display copy only", 1, 480, 480, []photo.Size{"display",
			"t160.jpg", "t240.jpg", "t320.jpg", "t480.jpg", "t160.webp", "t240.webp", "t320.webp", "t480.webp"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := photo.Full(c.have, c.w, c.h)
			if !slices.Equal(got.Sizes(), c.want) {
				t.Errorf("Full(%b, %d, %d).Sizes() = %q, want %q", c.have, c.w, c.h, got.Sizes(), c.want)
			}
			if m := got.Missing(got); m != 0 {
				t.Errorf("Missing of itself = %b, want 0", m)
			}
			if !got.Has(photo.SizeDisplay) {
				t.Error("the full set lacks the display copy")
			}
		})
	}
	if got := photo.Set(0).Sizes(); !slices.Equal(got, []photo.Size{"display", "thumb"}) {
		t.Errorf("Set(0).Sizes() = %q, want the legacy copies", got)
	}
}

// chunks returns the fourCCs of a WebP's chunks, and the body of name.
func chunks(t *testing.T, b []byte, name string) ([]string, []byte) {
	t.Helper()
	if string(b[:4]) != "RIFF" || string(b[8:12]) != "WEBP" || int(binary.LittleEndian.Uint32(b[4:])) != len(b)-8 {
		t.Fatalf("not a WebP with a right RIFF size: % x", b[:12])
	}
	var names []string
	var body []byte
	for rest := b[12:]; len(rest) >= 8; {
		n := int(binary.LittleEndian.Uint32(rest[4:]))
		names = append(names, string(rest[:4]))
		if string(rest[:4]) == name {
			body = rest[8 : 8+n]
		}
		rest = rest[min(len(rest), 8+n+n&1):]
	}
	return names, body
}

func TestMuxICC(t *testing.T) {
	src := apptest.Photo(t, "photo.webp")
	cfg, err := xwebp.DecodeConfig(bytes.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := chunks(t, src, "")
	out, err := photo.MuxICC(src, photo.DisplayP3, cfg.Width, cfg.Height)
	if err != nil {
		t.Fatalf("MuxICC: %v", err)
	}
	names, icc := chunks(t, out, "ICCP")
	if len(names) < 3 || names[0] != "VP8X" || names[1] != "ICCP" {
		t.Fatalf("chunks = %q (were %q), want VP8X, ICCP, then the image", names, before)
	}
	if !bytes.Equal(icc, photo.DisplayP3) {
		t.Errorf("ICCP holds %d bytes, want our profile's %d", len(icc), len(photo.DisplayP3))
	}
	_, vp8x := chunks(t, out, "VP8X")
	w := 1 + int(vp8x[4]) | int(vp8x[5])<<8 | int(vp8x[6])<<16
	h := 1 + int(vp8x[7]) | int(vp8x[8])<<8 | int(vp8x[9])<<16
	if vp8x[0]&0x20 == 0 || w != cfg.Width || h != cfg.Height {
		t.Errorf("VP8X flags %#x canvas %d×%d, want the ICC flag and %d×%d", vp8x[0], w, h, cfg.Width, cfg.Height)
	}
	if g := photo.ClassifyICC(photo.ReadICC(bytes.NewReader(out), int64(len(out)), photo.WebP)); g != photo.GamutDisplayP3 {
		t.Errorf("the tagged WebP reads as %v, want display-p3", g)
	}
	if _, err := xwebp.Decode(bytes.NewReader(out)); err != nil {
		t.Errorf("the tagged WebP does not decode: %v", err)
	}
	// Muxing again replaces the profile rather than adding a second.
	again, err := photo.MuxICC(out, photo.DisplayP3, cfg.Width, cfg.Height)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := chunks(t, again, ""); !slices.Equal(n, names) {
		t.Errorf("muxed twice: chunks %q, want %q", n, names)
	}
	for _, bad := range [][]byte{nil, []byte("RIFF\x04\x00\x00\x00WEBPVP8 \xff\xff\xff\x7f"), src[:20]} {
		if _, err := photo.MuxICC(bad, photo.DisplayP3, 1, 1); err == nil {
			t.Errorf("MuxICC(% x) = nil error, want one", bad[:min(len(bad), 20)])
		}
	}
}

// newWebPPipeline is a pipeline whose WebP encoder is the package's
// shared one (webpEncoder), which runs this test binary as its worker.
func newWebPPipeline(t testing.TB, budget int64) *photo.Pipeline {
	t.Helper()
	return photo.NewPipeline(budget, 2*time.Second).WithWebP(webpEncoder())
}

func TestMakeVariants(t *testing.T) {
	p := newWebPPipeline(t, photo.DefaultBudget)
	for _, c := range []struct {
		file string
		p3   bool
	}{{"phone-landscape-small.jpg", false}, {"wide-gamut-p3.jpg", true}} {
		t.Run(c.file, func(t *testing.T) {
			proc, err := p.Process(context.Background(), apptest.Photo(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			want := photo.Full(photo.LegacySet, proc.Width, proc.Height)
			got, err := p.MakeVariants(context.Background(), proc.Display, want)
			if err != nil {
				t.Fatalf("MakeVariants: %v", err)
			}
			// What an export's display copy stores, its copies all made.
			stored := proc.Size()
			for _, b := range got {
				stored += int64(len(b))
			}
			t.Logf("stored %d bytes for a display copy of %d: %.2f times", stored, len(proc.Display), float64(stored)/float64(len(proc.Display)))
			if stored > config.StoredPerExported*int64(len(proc.Display)) {
				t.Errorf("the copies of a %d-byte display copy take %d bytes, over config.StoredPerExported (%d) times", len(proc.Display), stored, config.StoredPerExported)
			}
			display, _ := jpeg.Decode(bytes.NewReader(proc.Display))
			for _, size := range photo.LegacySet.Missing(want).Sizes() {
				b := got[size]
				if b == nil {
					t.Errorf("no %s made", size)
					continue
				}
				var img image.Image
				f := photo.JPEG
				if photo.ContentType(size) == "image/webp" {
					f = photo.WebP
					img, err = xwebp.Decode(bytes.NewReader(b))
				} else {
					img, err = jpeg.Decode(bytes.NewReader(b))
				}
				if err != nil {
					t.Errorf("%s does not decode: %v", size, err)
					continue
				}
				wantW, wantH := sizedDims(size, proc.Width, proc.Height)
				if d := img.Bounds().Size(); d.X != wantW || d.Y != wantH {
					t.Errorf("%s is %d×%d, want %d×%d", size, d.X, d.Y, wantW, wantH)
				}
				// The centre of each copy shows the centre of the photo.
				if diff := colourDiff(img.At(img.Bounds().Dx()/2, img.Bounds().Dy()/2), display.At(proc.Width/2, proc.Height/2)); diff > 40 {
					t.Errorf("%s's centre is %d levels off the photo's", size, diff)
				}
				g := photo.ClassifyICC(photo.ReadICC(bytes.NewReader(b), int64(len(b)), f))
				if (g == photo.GamutDisplayP3) != c.p3 {
					t.Errorf("%s reads as %v, want Display P3 %v", size, g, c.p3)
				}
			}
			if len(got) != len(photo.LegacySet.Missing(want).Sizes()) {
				t.Errorf("made %d copies, want %d", len(got), len(photo.LegacySet.Missing(want).Sizes()))
			}
		})
	}
}

// sizedDims is the size a sized copy of a w × h display copy must have.
func sizedDims(size photo.Size, w, h int) (int, int) {
	s := string(size)
	side := 0
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			break
		}
		side = side*10 + int(c-'0')
	}
	if s[0] == 't' {
		return side, side
	}
	if w >= h {
		return side, int(float64(h)*float64(side)/float64(w) + 0.5)
	}
	return int(float64(w)*float64(side)/float64(h) + 0.5), side
}

func colourDiff(a, b interface{ RGBA() (r, g, b, a uint32) }) int {
	ar, ag, ab, _ := a.RGBA()
	br, bg, bb, _ := b.RGBA()
	d := 0
	for _, p := range [][2]uint32{{ar, br}, {ag, bg}, {ab, bb}} {
		d = max(d, abs(int(p[0]>>8)-int(p[1]>>8)))
	}
	return d
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// TestMakeVariantsAdmitted: the job's memory is admitted against the
// budget, a WebP copy needs an encoder and a display copy must be a JPEG.
// Its photo is made in the test (320 × 240: two sizes, both formats): the
// pixels are TestMakeVariants's.
func TestMakeVariantsAdmitted(t *testing.T) {
	p := newWebPPipeline(t, 64<<20)
	proc, err := p.Process(context.Background(), apptest.JPEG(t, 320, 240, color.RGBA{200, 120, 80, 255}))
	if err != nil {
		t.Fatal(err)
	}
	need := photo.VariantsCost(proc.Width, proc.Height)
	if need < 7*int64(proc.Width)*int64(proc.Height) {
		t.Errorf("VariantsCost = %d, less than the decode and its RGBA copy", need)
	}
	release, err := p.Hold(context.Background(), 64<<20-need+1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.MakeVariants(context.Background(), proc.Display, photo.Full(photo.LegacySet, proc.Width, proc.Height))
	if !errors.Is(err, photo.ErrBusy) {
		t.Errorf("MakeVariants with the budget spent = %v, want ErrBusy", err)
	}
	release()
	want := photo.Full(photo.LegacySet, proc.Width, proc.Height) & ^photo.LegacySet
	jpegOnly := photo.NewPipeline(64<<20, time.Second)
	if _, err := jpegOnly.MakeVariants(context.Background(), proc.Display, want); !errors.Is(err, photo.ErrNoEncoder) {
		t.Errorf("MakeVariants of WebP copies without an encoder = %v, want ErrNoEncoder", err)
	}
	if _, err := p.MakeVariants(context.Background(), []byte("not a jpeg"), want); err == nil {
		t.Error("MakeVariants of a non-JPEG = nil error")
	}
}
