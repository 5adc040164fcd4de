// Package photo owns meal photos: the upload pipeline (type sniffing, size
// limits, EXIF orientation, re-encoding without metadata), the S3 keys and
// object access, the byte-budgeted in-process cache, and serving with
// versioned URLs, ETag and 304.
package photo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	_ "image/jpeg" // decoders, registered for image.Decode
	_ "image/png"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/disintegration/imaging"
	"github.com/rwcarlsen/goexif/exif"
	_ "golang.org/x/image/webp"
	"golang.org/x/sync/semaphore"
)

// Limits of the pipeline (DESIGN.md, photos).
const (
	// MaxPixels refuses decompression bombs: width × height is read from the
	// header before anything is decoded.
	MaxPixels = 50_000_000
	// MaxSide is the longest side accepted, in pixels.
	MaxSide = 12_000
	// DisplaySide and ThumbSide bound the long edge of the stored copies.
	DisplaySide = 2048
	ThumbSide   = 480
	// jpegQuality of both stored copies.
	jpegQuality = 82
)

// Errors of Process. Their text is written for the person uploading.
var (
	ErrEmpty       = errors.New("the photo file is empty; choose the photo again")
	ErrUnsupported = errors.New("this file is not a JPEG, PNG, WebP or HEIC image; those are the formats ndiro accepts")
	// ErrHEIFBrand: a HEIF file of a brand the decoder cannot read
	// (IsHEICBrand says which it can).
	ErrHEIFBrand = errors.New("this HEIF image is of a kind ndiro can't read: it reads HEIC photos as phones save them, and JPEG, PNG and WebP. Export the image as JPEG and choose it again")
	ErrTooLarge  = errors.New("the image is too large: ndiro accepts photos up to 50 megapixels and 12000 pixels on a side")
	ErrDamaged   = errors.New("the image is damaged or incomplete and can't be read; try exporting it again")
	errNotJPEG   = errors.New("photo: not a JPEG")
)

// Format is an accepted image format, judged from the file's bytes
// (Sniff). What is read of each is what its decoder reads:
//   - JPEG through image/jpeg: baseline, extended sequential and
//     progressive, 8-bit samples (grey, YCbCr, or CMYK/YCCK with Adobe's
//     APP14); arithmetic-coded, lossless and 12-bit JPEGs are refused as
//     damaged (ErrDamaged);
//   - PNG through image/png: every bit depth and colour type, interlaced
//     too; of an animated PNG, only the default image;
//   - WebP through golang.org/x/image/webp: lossy, lossless, and extended
//     (VP8X) with alpha; an animated WebP is refused as damaged;
//   - HEIC: a HEIF file of the brands IsHEICBrand accepts, decoded in the
//     worker process (HEICDecoder); other HEIF brands are ErrHEIFBrand.
//
// A JPEG's EXIF orientation and capture time are applied and kept, and a
// HEIC's capture time (its rotation is the container's irot); a PNG's or
// WebP's EXIF is not read.
type Format string

const (
	JPEG Format = "jpeg"
	PNG  Format = "png"
	WebP Format = "webp"
	// HEIC is a HEIF file of a brand IsHEICBrand accepts, decoded in the worker
	// process (HEICDecoder).
	HEIC Format = "heic"
)

// Sniff returns the format of data (its first 12 bytes or more) from its
// magic bytes, never from a file name or Content-Type. It returns
// ErrEmpty, ErrHEIFBrand (a HEIF brand the decoder cannot read) or
// ErrUnsupported for what it refuses.
func Sniff(data []byte) (Format, error) {
	switch {
	case len(data) == 0:
		return "", ErrEmpty
	case bytes.HasPrefix(data, []byte{0xFF, 0xD8, 0xFF}):
		return JPEG, nil
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return PNG, nil
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return WebP, nil
	case len(data) >= 12 && string(data[4:8]) == "ftyp" && IsHEICBrand(string(data[8:12])):
		return HEIC, nil
	case len(data) >= 12 && string(data[4:8]) == "ftyp" && isHEIFBrand(string(data[8:12])):
		return "", ErrHEIFBrand
	}
	return "", ErrUnsupported
}

func isHEIFBrand(b string) bool {
	switch b {
	case "heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1", "avif":
		return true
	}
	return false
}

// Processed is an upload turned into the two stored JPEG copies.
type Processed struct {
	// Display has a long edge of at most DisplaySide; Thumb at most
	// ThumbSide. Neither is ever larger than the upload. Both are freshly
	// encoded pixels with no metadata, except, for a Display P3 source,
	// our own Display P3 profile (DisplayP3Segment) right after SOI.
	Display, Thumb []byte
	// Width and Height are Display's, ThumbWidth and ThumbHeight Thumb's, in
	// pixels, as displayed (after orientation).
	Width, Height, ThumbWidth, ThumbHeight int
	// Taken is the EXIF capture time as the camera's wall clock (its date
	// and time fields in UTC, zone unknown), or the zero time if none.
	Taken time.Time
	// Gamut is what the upload's ICC profile said (GamutSRGB if none).
	Gamut Gamut
}

// Defaults of the pipeline's memory admission (DESIGN.md, photos: admit
// decodes by decoded bytes against a memory budget).
const (
	// DefaultBudget is how many bytes all decodes in progress may hold
	// together: two 12-megapixel phone photos (about 56 MB each), or one
	// 48-megapixel one. The server's GOMEMLIMIT (deploy/ndiro.service)
	// leaves room for it above the photo cache.
	DefaultBudget = 160 << 20
	// DefaultWait is the longest an upload waits for its share of the
	// budget before it is refused with ErrBusy (a 503 with Retry-After).
	DefaultWait = 30 * time.Second
)

// ErrBusy is returned by Process when the upload waited DefaultWait (the
// pipeline's wait) for memory to decode in and did not get it.
var ErrBusy = errors.New("photo: too many photos are being read right now")

// ErrNeedsTooMuchMemory is matched (errors.Is) by every *MemoryError.
var ErrNeedsTooMuchMemory = errors.New("photo: the image needs more memory to read than ndiro allows for one photo")

// MemoryError refuses an image whose decode alone would need more than the
// whole budget, whatever else is going on: its text is written for the
// person uploading.
type MemoryError struct {
	Width, Height int
	// Depth describes the pixels, e.g. "16-bit colour with transparency".
	Depth string
	// Need and Budget are in bytes.
	Need, Budget int64
}

// Error words the refusal for the person uploading, with the numbers.
func (e *MemoryError) Error() string {
	return fmt.Sprintf("this image is too large to read: at %d × %d pixels with %s it needs %d MB of memory, and ndiro reads photos that need up to %d MB. Save it as a JPEG, or at a smaller size",
		e.Width, e.Height, e.Depth, (e.Need+(1<<20)-1)>>20, e.Budget>>20)
}

// Is makes errors.Is(err, ErrNeedsTooMuchMemory) true.
func (e *MemoryError) Is(target error) bool { return target == ErrNeedsTooMuchMemory }

// Pipeline turns uploads into stored copies. Decodes are admitted by the
// memory they will hold (decodeCost: the decoded image from its declared
// size and colour model, plus the resize buffers), not by count, against
// a byte budget shared by all uploads (a weighted semaphore): so memory
// stays bounded with any mix of images at any concurrency, and an image
// that alone needs more than the budget is refused before any decoding.
type Pipeline struct {
	sem    *semaphore.Weighted
	budget int64
	wait   time.Duration
	heic   *HEICDecoder // nil: HEIC uploads get ErrHEICUnavailable
}

// WithHEIC makes p decode HEIC uploads with d, and returns p.
func (p *Pipeline) WithHEIC(d *HEICDecoder) *Pipeline {
	p.heic = d
	return p
}

// NewPipeline returns a pipeline whose decodes hold at most budget bytes
// together, each upload waiting at most wait for its share (ErrBusy).
func NewPipeline(budget int64, wait time.Duration) *Pipeline {
	return &Pipeline{sem: semaphore.NewWeighted(budget), budget: budget, wait: wait}
}

// Hold takes n bytes of the budget as a decode would, waiting at most the
// pipeline's wait (ErrBusy), and returns the function that gives them
// back: for tests that need the budget spent.
func (p *Pipeline) Hold(ctx context.Context, n int64) (release func(), err error) {
	wctx, cancel := context.WithTimeout(ctx, p.wait)
	defer cancel()
	if err := p.sem.Acquire(wctx, n); err != nil {
		return nil, ErrBusy
	}
	var once sync.Once
	return func() { once.Do(func() { p.sem.Release(n) }) }, nil
}

// Process is ProcessAt for an upload held in memory.
func (p *Pipeline) Process(ctx context.Context, data []byte) (*Processed, error) {
	return p.ProcessAt(ctx, bytes.NewReader(data), int64(len(data)))
}

// ProcessAt checks and converts one upload of size bytes read from src
// (a multipart file spooled to disk, so only what the decoder buffers is
// in memory): the format from its bytes; the declared size from its
// header, before decoding (ErrTooLarge); the memory its decode needs
// against the budget (*MemoryError if more than all of it; otherwise it
// waits for its share, at most the pipeline's wait: ErrBusy, or ctx's
// error); the ICC profile classified (Gamut); a full decode (ErrDamaged
// for truncated or corrupt data); a JPEG's EXIF orientation applied;
// transparent pixels flattened onto white; then both copies encoded as
// JPEG, a Display P3 source's tagged with our profile. The full-size image
// is dropped, and its share of the budget given back, as soon as the
// display copy is made.
func (p *Pipeline) ProcessAt(ctx context.Context, src io.ReaderAt, size int64) (*Processed, error) {
	var head [16]byte
	n, _ := src.ReadAt(head[:], 0)
	format, err := Sniff(head[:n])
	if err != nil {
		return nil, err
	}
	if format == HEIC {
		return p.processHEIC(ctx, src, size)
	}
	cfg, _, err := image.DecodeConfig(io.NewSectionReader(src, 0, size))
	if err != nil {
		return nil, ErrDamaged
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, ErrDamaged
	}
	if cfg.Width > MaxSide || cfg.Height > MaxSide || int64(cfg.Width)*int64(cfg.Height) > MaxPixels {
		return nil, ErrTooLarge
	}
	cost, depth := decodeCost(format, cfg, src, size)
	if cost > p.budget {
		return nil, &MemoryError{Width: cfg.Width, Height: cfg.Height, Depth: depth, Need: cost, Budget: p.budget}
	}

	out := &Processed{Gamut: classifyICC(readICC(src, size, format))}
	var orientation int
	if format == JPEG {
		orientation, out.Taken = readEXIF(io.NewSectionReader(src, 0, size))
	}

	wctx, cancel := context.WithTimeout(ctx, p.wait)
	err = p.sem.Acquire(wctx, cost)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, ErrBusy
	}
	held := cost
	defer func() { p.sem.Release(held) }()

	img, _, err := image.Decode(io.NewSectionReader(src, 0, size))
	if err != nil {
		return nil, ErrDamaged
	}
	copies, err := finish(img, orientation, out.Gamut, func(display *image.NRGBA) {
		// The full-size decode is garbage now: give its share back.
		if rest := afterResizeCost(display); rest < held {
			p.sem.Release(held - rest)
			held = rest
		}
	})
	if err != nil {
		return nil, err
	}
	copies.Taken = out.Taken
	return copies, nil
}

// finish makes the two stored copies of a decoded image: the display copy
// (resized before turning: the box is square, so the order does not change
// the result, and turning the small copy is cheap), the EXIF orientation
// applied, transparent pixels flattened onto white, the thumbnail, both
// encoded and tagged for g. The full-size img is dropped as soon as the
// display copy exists; resized, if not nil, is called then. Taken is left
// zero.
func finish(img image.Image, orientation int, g Gamut, resized func(*image.NRGBA)) (*Processed, error) {
	display := imaging.Fit(img, DisplaySide, DisplaySide, imaging.Lanczos)
	img = nil
	if resized != nil {
		resized(display)
	}
	display = flatten(orient(display, orientation))
	thumb := imaging.Fit(display, ThumbSide, ThumbSide, imaging.Lanczos)
	out := &Processed{Gamut: g}
	out.Width, out.Height = display.Bounds().Dx(), display.Bounds().Dy()
	out.ThumbWidth, out.ThumbHeight = thumb.Bounds().Dx(), thumb.Bounds().Dy()
	var err error
	if out.Display, err = encode(display, g); err != nil {
		return nil, err
	}
	display = nil
	if out.Thumb, err = encode(thumb, g); err != nil {
		return nil, err
	}
	return out, nil
}

// processHEIC checks a HEIC upload from its container's boxes (the
// decoder's own DecodeConfig fails on real photos): the primary image's
// size against the pixel limits (ErrTooLarge), its colour from the colr
// box (as a JPEG's profile), its capture time from the Exif item; then the
// worker decodes it and makes the copies (HEICDecoder). The file's bytes
// are held against the budget while it waits and decodes; the decode's
// own memory is the worker's. No EXIF orientation is applied: the decoded
// pixels are already upright (irot).
func (p *Pipeline) processHEIC(ctx context.Context, src io.ReaderAt, size int64) (*Processed, error) {
	info, err := parseHEIF(src, size)
	if err != nil {
		return nil, ErrDamaged
	}
	if info.Width > MaxSide || info.Height > MaxSide || int64(info.Width)*int64(info.Height) > MaxPixels {
		return nil, ErrTooLarge
	}
	var taken time.Time
	if info.Exif != nil {
		_, taken = readEXIF(bytes.NewReader(info.Exif))
	}
	if p.heic == nil {
		return nil, ErrHEICUnavailable
	}
	wctx, cancel := context.WithTimeout(ctx, p.wait)
	err = p.sem.Acquire(wctx, size)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, ErrBusy
	}
	defer p.sem.Release(size)
	data := make([]byte, size)
	if _, err := src.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("photo: read upload: %w", err)
	}
	out, err := p.heic.decode(ctx, data, info.gamut())
	if err != nil {
		return nil, err
	}
	out.Taken = taken
	return out, nil
}

// decodeCost returns the bytes ProcessAt holds at its peak for an image
// of cfg, and words its pixel depth for MemoryError: the decoded image
// (width × height × bytes per pixel of the colour model DecodeConfig
// reports; for a JPEG, its real chroma subsampling read from the frame
// header, and the coefficients a progressive JPEG keeps while decoding),
// plus the resize to the display copy (imaging resizes horizontally first:
// a display-wide, full-height NRGBA, then the display copy itself; an
// image within the box is copied once to NRGBA).
func decodeCost(f Format, cfg image.Config, src io.ReaderAt, size int64) (int64, string) {
	px := float64(cfg.Width) * float64(cfg.Height)
	bpp, depth := bytesPerPixel(cfg.ColorModel)
	if f == JPEG {
		if fr, ok := jpegFrameOf(src, size); ok {
			if cfg.ColorModel == color.YCbCrModel {
				bpp = fr.ycc
			}
			if fr.progressive {
				bpp += 4 * fr.samples // int32 coefficients of every sample
			}
		}
	}
	if f == WebP && cfg.ColorModel == color.NRGBAModel {
		bpp = 8 // lossless: ARGB words, then the NRGBA image
	}
	w, h := fitted(cfg.Width, cfg.Height, DisplaySide)
	work := 4*float64(w)*float64(cfg.Height) + 4*float64(w)*float64(h)
	if w == cfg.Width && h == cfg.Height {
		work = 4 * px // no resize: one NRGBA copy
	}
	return int64(px*bpp + work), depth
}

// afterResizeCost is what ProcessAt holds once the display copy is made:
// that copy, a turned one and a flattened one at most, and the thumbnail.
func afterResizeCost(display *image.NRGBA) int64 {
	return 3*int64(len(display.Pix)) + 4*ThumbSide*ThumbSide
}

// fitted is the size imaging.Fit gives a w × h image in a side × side box.
func fitted(w, h, side int) (int, int) {
	if w <= side && h <= side {
		return w, h
	}
	if w >= h {
		return side, max(1, int(float64(h)*float64(side)/float64(w)+0.5))
	}
	return max(1, int(float64(w)*float64(side)/float64(h)+0.5)), side
}

// bytesPerPixel is the memory one pixel of a decoded image of model m
// takes, and how to word it.
func bytesPerPixel(m color.Model) (float64, string) {
	switch m {
	case color.RGBA64Model, color.NRGBA64Model:
		return 8, "16-bit colour with transparency"
	case color.RGBAModel, color.NRGBAModel:
		return 4, "8-bit colour"
	case color.CMYKModel:
		return 8, "CMYK colour" // decoded as YCbCr and black, then converted
	case color.YCbCrModel:
		return 3, "8-bit colour"
	case color.NYCbCrAModel:
		return 4, "8-bit colour with transparency"
	case color.Gray16Model, color.Alpha16Model:
		return 2, "16-bit grey"
	case color.GrayModel, color.AlphaModel:
		return 1, "8-bit grey"
	}
	if _, ok := m.(color.Palette); ok {
		return 1, "a palette"
	}
	return 8, "its colour depth"
}

// jpegFrame is what the frame header (SOFn) says about a JPEG's memory.
type jpegFrame struct {
	// ycc is bytes per pixel of the decoded image.YCbCr (3 for 4:4:4, 1.5
	// for 4:2:0); samples the samples per pixel over all components.
	ycc, samples float64
	progressive  bool
}

// jpegFrameOf reads the frame header: Go's decoder sizes the chroma planes
// from the luma component's sampling factors.
func jpegFrameOf(src io.ReaderAt, size int64) (jpegFrame, bool) {
	var fr jpegFrame
	ok := false
	jpegSegments(src, size, func(m byte, b []byte) bool {
		if m < 0xC0 || m > 0xC2 {
			return true
		}
		if len(b) < 6 || len(b) < 6+3*int(b[5]) || b[5] == 0 {
			return false
		}
		nc := int(b[5])
		h0, v0 := float64(b[7]>>4), float64(b[7]&0x0F)
		if h0 == 0 || v0 == 0 {
			return false
		}
		fr.progressive = m == 0xC2
		fr.ycc = 1 + 2/(h0*v0)
		fr.samples = 1
		for i := 1; i < nc; i++ {
			h, v := float64(b[7+3*i]>>4), float64(b[7+3*i]&0x0F)
			fr.samples += h * v / (h0 * v0)
		}
		ok = true
		return false
	})
	return fr, ok
}

// encode writes img as a JPEG, tagged with our Display P3 profile if the
// source was Display P3 (GamutOtherRGB is written untagged: see Gamut).
func encode(img image.Image, g Gamut) ([]byte, error) {
	var buf bytes.Buffer
	if err := imaging.Encode(&buf, img, imaging.JPEG, imaging.JPEGQuality(jpegQuality)); err != nil {
		return nil, fmt.Errorf("photo: encode: %w", err)
	}
	if g == GamutDisplayP3 {
		return tagDisplayP3(buf.Bytes()), nil
	}
	return buf.Bytes(), nil
}

// orient applies an EXIF orientation (1–8) so the pixels stand the way the
// camera was held: 6 is "turn 90° clockwise to display", as phones write
// portraits. imaging's rotations are counter-clockwise.
func orient(img *image.NRGBA, o int) *image.NRGBA {
	switch o {
	case 2:
		return imaging.FlipH(img)
	case 3:
		return imaging.Rotate180(img)
	case 4:
		return imaging.FlipV(img)
	case 5:
		return imaging.Transpose(img)
	case 6:
		return imaging.Rotate270(img)
	case 7:
		return imaging.Transverse(img)
	case 8:
		return imaging.Rotate90(img)
	}
	return img
}

// flatten composes img over white, so transparent areas (a screenshot's
// rounded corners) become white in the JPEG rather than black.
func flatten(img *image.NRGBA) *image.NRGBA {
	opaque := true
	for i := 3; i < len(img.Pix); i += 4 {
		if img.Pix[i] != 0xFF {
			opaque = false
			break
		}
	}
	if opaque {
		return img
	}
	bg := image.NewNRGBA(img.Bounds())
	draw.Draw(bg, bg.Bounds(), &image.Uniform{color.White}, image.Point{}, draw.Src)
	draw.Draw(bg, bg.Bounds(), img, img.Bounds().Min, draw.Over)
	return bg
}

// readEXIF returns the orientation (0 if none) and the capture time (zero
// if none) from the EXIF data read from r: a JPEG file (its APP1 segment)
// or bare TIFF data (a HEIC's Exif item). Damaged EXIF is ignored: the
// pixels still count.
func readEXIF(r io.Reader) (orientation int, taken time.Time) {
	x, err := exif.Decode(r)
	if err != nil {
		return 0, time.Time{}
	}
	if tag, err := x.Get(exif.Orientation); err == nil {
		if v, err := tag.Int(0); err == nil && v >= 1 && v <= 8 {
			orientation = v
		}
	}
	for _, name := range []exif.FieldName{exif.DateTimeOriginal, exif.DateTimeDigitized, exif.DateTime} {
		tag, err := x.Get(name)
		if err != nil {
			continue
		}
		s, err := tag.StringVal()
		if err != nil {
			continue
		}
		t, err := time.Parse("2006:01:02 15:04:05", strings.TrimRight(strings.TrimSpace(s), "\x00"))
		if err == nil && t.Year() >= 1990 {
			return orientation, t
		}
	}
	return orientation, time.Time{}
}
