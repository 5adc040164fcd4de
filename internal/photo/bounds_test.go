package photo

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	stddraw "image/draw"
	"image/jpeg"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/image/draw"

	"ndiro/internal/photo/phototest"
)

// fixture reads a file of testdata/photos.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "photos", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// countingReader is an io.ReaderAt that counts the bytes it hands out.
type countingReader struct {
	r    *bytes.Reader
	mu   sync.Mutex
	read int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.mu.Lock()
	c.read += int64(n)
	c.mu.Unlock()
	return n, err
}

// allocated returns the bytes the heap allocated while fn ran (the
// second of two runs, so one-time set-up does not count): what fn held
// at its peak is at most that.
func allocated(fn func()) uint64 {
	fn()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// heavyFile is an upload whose metadata or padding an unbounded reader
// would hold whole: at least unbounded bytes.
type heavyFile struct {
	name      string
	format    Format
	data      []byte
	unbounded int64
	// read bounds what the header readers may read of it, in bytes (0:
	// no bound: the standard DecodeConfig reads the segments before the
	// frame, through its own 4 KiB buffer).
	read int64
}

func heavyFiles(t testing.TB) []heavyFile {
	small := fixture(t, "small.jpg")
	webp := fixture(t, "photo.webp")
	return []heavyFile{
		// What found the unbounded EXIF reader: no EXIF, then 24 MB
		// without a 0xFF byte. Nothing past the first scan is read.
		{"padded JPEG", JPEG, phototest.PaddedJPEG(small, 24<<20), 24 << 20, 64 << 10},
		// A 64 KB APP1 and a 16 MB profile in 255 APP2 segments.
		{"JPEG with a full APP1 and 255 APP2", JPEG, phototest.MetadataJPEG(small, 255), 255 * phototest.MaxSegment, 0},
		// 4 MB tEXt and zTXt, an iCCP inflating to 16 MB, 5,000 IDATs:
		// nothing after the iCCP is read.
		{"PNG with huge chunks", PNG, phototest.HeavyPNG(400, 300, phototest.PNGParts{Text: 4 << 20, ZText: 4 << 20, ICCInflated: 16 << 20, IDATs: 5_000}), 16 << 20, 1 << 20},
		// A 4 MB ICCP chunk (not read: over maxICC) and EXIF chunk.
		{"WebP with huge chunks", WebP, phototest.HeavyWebP(webp, 4<<20, 4<<20, 0), 4 << 20, 64 << 10},
		// 100,000 boxes before a meta box padded to 512 KB, a 3 MB Exif
		// item (over maxHEIFExif: not read), a 4 MB box.
		{"HEIF with many and large boxes", HEIC, phototest.HeavyHEIF(phototest.HEIFParts{FreeBoxes: 100_000, Free: 4 << 20, Exif: 3 << 20, MetaPadding: 512 << 10}), 3 << 20, 2 << 20},
	}
}

// TestHeaderReadersBounded: for each format, a file that would make an
// unbounded reader hold its metadata or padding (megabytes) is read by
// the header readers (readHeader: size, EXIF, ICC, HEIF boxes) while they
// allocate at most MetaBound(format) in all, and read no more of the file
// than they need. Not parallel: it counts the heap's allocations.
func TestHeaderReadersBounded(t *testing.T) {
	for _, f := range heavyFiles(t) {
		t.Run(f.name, func(t *testing.T) {
			if got, _ := Sniff(f.data); got != f.format {
				t.Fatalf("Sniff = %q, want %q", got, f.format)
			}
			var err error
			var src *countingReader
			alloc := allocated(func() {
				src = &countingReader{r: bytes.NewReader(f.data)}
				_, err = readHeader(src, int64(len(f.data)), f.format)
			})
			if err != nil {
				t.Fatalf("readHeader = %v", err)
			}
			if bound := MetaBound(f.format); alloc > uint64(bound) || bound >= f.unbounded {
				t.Errorf("readHeader allocated %d bytes; want at most MetaBound = %d, under the %d an unbounded reader holds", alloc, bound, f.unbounded)
			}
			if f.read > 0 && src.read > f.read {
				t.Errorf("readHeader read %d bytes of the %d-byte file, want at most %d", src.read, len(f.data), f.read)
			}
			t.Logf("%d-byte file: %d bytes read, %d allocated (MetaBound %d)", len(f.data), src.read, alloc, MetaBound(f.format))
		})
	}
}

// TestMetadataOverBoundIgnored: metadata past its bound is not read and
// does not refuse the photo: a profile over maxICC is sRGB, a HEIF Exif
// item over maxHEIFExif gives no capture time, a HEIF meta box over
// maxHEIFMeta is a damaged file.
func TestMetadataOverBoundIgnored(t *testing.T) {
	small := fixture(t, "small.jpg")
	over := maxICC/phototest.MaxSegment + 1 // parts: more than maxICC in all
	for _, tc := range []struct {
		name string
		data []byte
		icc  bool
	}{
		{"JPEG profile within maxICC", iccJPEG(small, displayP3, 1), true},
		// The most parts a profile can have: 255 (a byte counting them
		// would never stop).
		{"JPEG profile in 255 parts", iccJPEG(small, displayP3, 255), true},
		{"JPEG profile over maxICC", phototest.MetadataJPEG(small, over), false},
		{"PNG iCCP within maxICC", iccPNG(displayP3), true},
		{"PNG iCCP inflating over maxICC", phototest.HeavyPNG(8, 8, phototest.PNGParts{ICCInflated: maxICC + 1}), false},
		{"WebP ICCP over maxICC", phototest.HeavyWebP(fixture(t, "photo.webp"), maxICC+1, 0, 0), false},
	} {
		f, _ := Sniff(tc.data)
		if got := readICC(bytes.NewReader(tc.data), int64(len(tc.data)), f); (got != nil) != tc.icc {
			t.Errorf("%s: readICC = %d bytes, want a profile: %v", tc.name, len(got), tc.icc)
		}
	}
	withExif := func(n int) []byte { return phototest.HeavyHEIF(phototest.HEIFParts{Exif: n}) }
	for _, tc := range []struct {
		name string
		data []byte
		exif bool
	}{
		{"Exif item within maxHEIFExif", withExif(maxHEIFExif - 16), true},
		{"Exif item over maxHEIFExif", withExif(maxHEIFExif + 1), false},
	} {
		info, err := parseHEIF(bytes.NewReader(tc.data), int64(len(tc.data)))
		if err != nil || (info.Exif != nil) != tc.exif {
			t.Errorf("%s: parseHEIF = Exif of %d bytes, %v; want Exif: %v", tc.name, len(info.Exif), err, tc.exif)
		}
	}
	big := phototest.HeavyHEIF(phototest.HEIFParts{MetaPadding: maxHEIFMeta})
	if _, err := parseHEIF(bytes.NewReader(big), int64(len(big))); !errors.Is(err, errHEIF) {
		t.Errorf("parseHEIF of a meta box over maxHEIFMeta = %v, want errHEIF", err)
	}
}

// iccJPEG is jpg with profile p in n APP2 segments after its SOI.
func iccJPEG(jpg, p []byte, n int) []byte {
	out := append([]byte{}, jpg[:2]...)
	for i := range n {
		part := p[i*len(p)/n : (i+1)*len(p)/n]
		out = append(out, phototest.Segment(0xE2, append(append([]byte("ICC_PROFILE\x00"), byte(i+1), byte(n)), part...))...)
	}
	return append(out, jpg[2:]...)
}

// iccPNG is a 4×4 PNG with profile p in an iCCP chunk.
func iccPNG(p []byte) []byte {
	src := phototest.HeavyPNG(4, 4, phototest.PNGParts{})
	out := append([]byte{}, src[:33]...) // signature and IHDR
	out = phototest.Chunk(out, "iCCP", append([]byte("P3\x00\x00"), phototest.Deflate(p)...))
	return append(out, src[33:]...)
}

// TestHeaderShareHeld: the header is read holding MetaBound of the
// budget, so an upload refused from its header (a decompression bomb)
// waits for that share like any other: with less free it is ErrBusy,
// with exactly that free it is refused for what it is.
func TestHeaderShareHeld(t *testing.T) {
	t.Parallel()
	bomb := fixture(t, "bomb.png")
	const budget = 16 << 20
	for _, tc := range []struct {
		free int64
		wait time.Duration // waited out when refused; long when it fits, so load cannot end it first
		want error
	}{
		{MetaBound(PNG) + int64(len(bomb)) - 1, 20 * time.Millisecond, ErrBusy},
		{MetaBound(PNG) + int64(len(bomb)), time.Minute, ErrTooLarge},
	} {
		p := NewPipeline(budget, tc.wait)
		release, err := p.Hold(context.Background(), budget-tc.free)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Process(context.Background(), bomb); !errors.Is(err, tc.want) {
			t.Errorf("Process(bomb.png) with %d bytes free = %v, want %v", tc.free, err, tc.want)
		}
		release()
	}
}

// TestInMemoryUploadCounted: an upload held in memory (Process's bytes)
// counts against the budget with its decode; the same file read from
// disk does not.
func TestInMemoryUploadCounted(t *testing.T) {
	t.Parallel()
	small := fixture(t, "small.jpg")
	path := filepath.Join(t.TempDir(), "small.jpg")
	if err := os.WriteFile(path, small, 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	h, err := readHeader(bytes.NewReader(small), int64(len(small)), JPEG)
	if err != nil {
		t.Fatal(err)
	}
	cost, _ := decodeCost(h)
	// A budget with room for the decode but not for the decode and the
	// upload's bytes together: the upload spooled to a file fits, the same
	// bytes held in memory need more than the whole budget and are refused
	// at once, whatever the machine's load (the wait is long and unused).
	budget := cost + int64(len(small))/2
	p := NewPipeline(budget, time.Minute)
	if _, err := p.ProcessAt(context.Background(), file, int64(len(small))); err != nil {
		t.Errorf("ProcessAt(file) in a budget of its decode's %d bytes and %d more = %v, want success", cost, len(small)/2, err)
	}
	var memErr *MemoryError
	if _, err := p.Process(context.Background(), small); !errors.As(err, &memErr) || memErr.Need != cost+int64(len(small)) {
		t.Errorf("Process(bytes) in that budget = %v, want a *MemoryError needing %d bytes (the %d bytes in memory count too)", err, cost+int64(len(small)), len(small))
	}
}

// TestWebPChunkCounted: a lossy WebP's VP8 chunk, which the decoder reads
// whole, is part of its decode cost; a packed alpha plane adds the NRGBA
// image the decoder unpacks it through. (make memory stores such a file:
// x/image/webp reads the extra bytes as part of the last partition.)
func TestWebPChunkCounted(t *testing.T) {
	t.Parallel()
	webp := fixture(t, "photo.webp")
	plain, heavy := phototest.HeavyWebP(webp, 0, 0, 0), phototest.HeavyWebP(webp, 0, 0, 6<<20)
	cost := func(b []byte) int64 {
		h, err := readHeader(bytes.NewReader(b), int64(len(b)), WebP)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := decodeCost(h)
		return c
	}
	if d := cost(heavy) - cost(plain); d != 6<<20 {
		t.Errorf("6 MB more in the VP8 chunk adds %d bytes to the cost, want %d", d, 6<<20)
	}
	h := &header{format: WebP, cfg: image.Config{ColorModel: color.NYCbCrAModel, Width: 100, Height: 100}}
	base, _ := decodeCost(h)
	h.webp.packedAlpha = true
	if packed, _ := decodeCost(h); packed-base != 4*100*100 {
		t.Errorf("packed alpha adds %d bytes, want %d", packed-base, 4*100*100)
	}
}

// TestJPEGSegmentsStrict: the segment walker follows markers as the
// format lays them out and never searches for the next 0xFF: a byte
// where a marker must be ends the walk (errNotJPEG), and a segment
// running past the end is errShort.
func TestJPEGSegmentsStrict(t *testing.T) {
	t.Parallel()
	soi := []byte{0xFF, 0xD8}
	app0 := phototest.Segment(0xE0, []byte("JFIF\x00"))
	for _, tc := range []struct {
		name    string
		data    []byte
		want    error
		markers []byte
	}{
		{"segments then SOS", bytes.Join([][]byte{soi, app0, phototest.Segment(0xE1, []byte("x")), {0xFF, 0xDA}}, nil), nil, []byte{0xE0, 0xE1}},
		{"fill bytes before a marker", bytes.Join([][]byte{soi, {0xFF, 0xFF, 0xFF}, app0[1:], {0xFF, 0xD9}}, nil), nil, []byte{0xE0}},
		{"padding where a marker must be", bytes.Join([][]byte{soi, app0, phototest.Padding(1000)}, nil), errNotJPEG, []byte{0xE0}},
		{"segment past the end", bytes.Join([][]byte{soi, phototest.Segment(0xE1, make([]byte, 100))[:50]}, nil), errShort, nil},
		{"length below its own two bytes", bytes.Join([][]byte{soi, {0xFF, 0xE1, 0, 1}}, nil), errNotJPEG, nil},
		{"no SOI", app0, errNotJPEG, nil},
	} {
		var got []byte
		err := jpegSegments(bytes.NewReader(tc.data), int64(len(tc.data)), func(byte) bool { return true }, func(m byte, body []byte) bool {
			got = append(got, m)
			return true
		})
		if !errors.Is(err, tc.want) || !bytes.Equal(got, tc.markers) {
			t.Errorf("%s: jpegSegments = %v, markers % X; want %v, % X", tc.name, err, got, tc.want, tc.markers)
		}
	}
}

// TestOrientations: every EXIF orientation (1–8) of an APP1 segment is
// applied, mirrors included: a picture stored as a camera held each way
// comes out as it was seen. The stored pixels are laid out from the
// TIFF/EXIF definition of each value (where the stored first row and
// column go), not from orient.
func TestOrientations(t *testing.T) {
	t.Parallel()
	// The scene as seen, 64×48: red, green / blue, yellow quadrants.
	r, g, b, y := color.RGBA{255, 0, 0, 255}, color.RGBA{0, 255, 0, 255}, color.RGBA{0, 0, 255, 255}, color.RGBA{255, 255, 0, 255}
	seen := [4]color.RGBA{r, g, b, y}
	// stored[o] is the stored image's quadrants (top left, top right,
	// bottom left, bottom right) for orientation o.
	stored := map[int][4]color.RGBA{
		1: {r, g, b, y},
		2: {g, r, y, b}, // mirrored left to right
		3: {y, b, g, r}, // turned 180°
		4: {b, y, r, g}, // mirrored top to bottom
		5: {r, b, g, y}, // transposed: first row is the left column
		6: {g, y, r, b}, // turned 90° anticlockwise: turn clockwise to show
		7: {y, g, b, r}, // transversed: first row is the right column, upside down
		8: {b, r, y, g}, // turned 90° clockwise: turn anticlockwise to show
	}
	p := NewPipeline(DefaultBudget, time.Minute)
	for o := 1; o <= 8; o++ {
		w, h := 64, 48
		if o >= 5 {
			w, h = 48, 64
		}
		img := image.NewRGBA(image.Rect(0, 0, w, h))
		for yy := range h {
			for x := range w {
				img.SetRGBA(x, yy, stored[o][2*(2*yy/h)+2*x/w])
			}
		}
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 95}); err != nil {
			t.Fatal(err)
		}
		app1 := phototest.Segment(0xE1, append([]byte(exifHeader), phototest.TIFF(uint16(o), 64)...))
		data := append(append(append([]byte{}, buf.Bytes()[:2]...), app1...), buf.Bytes()[2:]...)
		out, err := p.Process(context.Background(), data)
		if err != nil {
			t.Fatalf("orientation %d: Process = %v", o, err)
		}
		shown, err := jpeg.Decode(bytes.NewReader(out.Display))
		if err != nil {
			t.Fatal(err)
		}
		if sz := shown.Bounds().Size(); sz != (image.Point{64, 48}) {
			t.Errorf("orientation %d: shown %v, want 64×48", o, sz)
			continue
		}
		for i, pt := range []image.Point{{16, 12}, {48, 12}, {16, 36}, {48, 36}} {
			cr, cg, cb, _ := shown.At(pt.X, pt.Y).RGBA()
			want := seen[i]
			if d := max(absDiff(cr>>8, uint32(want.R)), absDiff(cg>>8, uint32(want.G)), absDiff(cb>>8, uint32(want.B))); d > 40 {
				t.Errorf("orientation %d: quadrant %d is (%d,%d,%d), want %v", o, i, cr>>8, cg>>8, cb>>8, want)
			}
		}
	}
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}

// TestResizeBandsSeamless: the banded two-pass resize gives exactly what
// the same two passes give over the whole image at once (each a single
// Scale, with scratch for every row or column): no seam, no shifted or
// missing band.
func TestResizeBandsSeamless(t *testing.T) {
	t.Parallel()
	const sw, sh, dw, dh = 500, 300, 214, 128
	src := image.NewNRGBA(image.Rect(0, 0, sw, sh))
	for y := range sh {
		for x := range sw {
			src.SetNRGBA(x, y, color.NRGBA{uint8(x * 7 % 256), uint8(y * 13 % 256), uint8((x*y)%251 + 3), uint8(128 + (x+y)%128)})
		}
	}
	// Several bands each way, the last one short.
	if rows, cols := resizeBand/(32*dw), resizeBand/(32*sh); rows >= sh || cols >= dw || sh%rows == 0 || dw%cols == 0 {
		t.Fatalf("bands of %d rows and %d columns: the test needs several of each, the last one short", rows, cols)
	}
	got := resize(src, dw, dh)
	// resize converts the source to RGBA (premultiplied, 8 bits) first.
	rgba := image.NewRGBA(src.Rect)
	stddraw.Draw(rgba, rgba.Rect, src, image.Point{}, stddraw.Src)
	mid := image.NewRGBA(image.Rect(0, 0, dw, sh))
	lanczos3.Scale(rounding{mid}, mid.Rect, rgba, rgba.Rect, draw.Src, nil)
	want := image.NewRGBA(image.Rect(0, 0, dw, dh))
	lanczos3.Scale(rounding{want}, want.Rect, mid, mid.Rect, draw.Src, nil)
	differ := 0
	for i := range got.Pix {
		if got.Pix[i] != want.Pix[i] {
			differ++
		}
	}
	if differ > 0 {
		t.Errorf("banded resize differs from the whole-image passes in %d of %d bytes, want 0", differ, len(got.Pix))
	}
}
