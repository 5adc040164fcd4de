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
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	xwebp "golang.org/x/image/webp"
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

// decoders are the decoders of the formats decoded in the server, by
// format, called by name rather than through image.Decode's registry:
// github.com/gen2brain/webp (the WebP worker's encoder) registers a WebP
// decoder of its own there, which would run libwebp's WebAssembly build
// in the server.
var decoders = map[Format]struct {
	decode func(io.Reader) (image.Image, error)
	config func(io.Reader) (image.Config, error)
}{
	JPEG: {jpeg.Decode, jpeg.DecodeConfig},
	PNG:  {png.Decode, png.DecodeConfig},
	WebP: {xwebp.Decode, xwebp.DecodeConfig},
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

// Size is the bytes of p's two copies together, as stored.
func (p *Processed) Size() int64 { return int64(len(p.Display) + len(p.Thumb)) }

// Defaults of the pipeline's memory admission (DESIGN.md, photos: admit
// decodes by decoded bytes against a memory budget).
const (
	// DefaultBudget is how many bytes all decodes in progress may hold
	// together: two 12-megapixel phone photos (about 60 MB each), or one
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

// Pipeline turns uploads into stored copies. Every step that holds memory
// is admitted by the bytes it will hold, not by count, against a byte
// budget shared by all uploads (a weighted semaphore): reading an
// upload's header (MetaBound of its format: the bounded metadata
// readers), then its decode (decodeCost: the decoded image from its
// declared size and colour model, what the decoder keeps of the file, the
// resize buffers), each with whatever of the upload sits in memory. So
// memory stays bounded with any mix of images at any concurrency, and an
// image that alone needs more than the budget is refused before any
// decoding.
type Pipeline struct {
	sem    *semaphore.Weighted
	budget int64
	wait   time.Duration
	heic   *HEICDecoder // nil: HEIC uploads get ErrHEICUnavailable
	webp   *WebPEncoder // nil: MakeVariants makes no WebP (ErrNoEncoder)

	// The admission's counters (Admission).
	waiting, admitted, waited, refusedN, waitNanos atomic.Int64
}

// AdmissionStats are the decode admission's counters since start: how
// uploads got their share of the budget (NDIRO_DECODE_BUDGET_BYTES).
type AdmissionStats struct {
	// Waiting is how many uploads wait for their share now.
	Waiting int64
	// Admitted counts shares granted (an upload asks for one for its
	// header and one for its decode); Waited those of them that had to
	// wait; Refused the waits that ended without one (ErrBusy, or the
	// upload given up).
	Admitted, Waited, Refused int64
	// WaitTime is the time spent waiting, granted or not, in all.
	WaitTime time.Duration
	// Budget is the budget in bytes.
	Budget int64
}

// Admission returns the decode admission's counters.
func (p *Pipeline) Admission() AdmissionStats {
	return AdmissionStats{
		Waiting: p.waiting.Load(), Admitted: p.admitted.Load(), Waited: p.waited.Load(), Refused: p.refusedN.Load(),
		WaitTime: time.Duration(p.waitNanos.Load()), Budget: p.budget,
	}
}

// admit takes n bytes of the budget, waiting until wctx ends, and counts
// how it went (Admission).
func (p *Pipeline) admit(wctx context.Context, n int64) error {
	if p.sem.TryAcquire(n) {
		p.admitted.Add(1)
		return nil
	}
	p.waiting.Add(1)
	start := time.Now()
	err := p.sem.Acquire(wctx, n)
	p.waitNanos.Add(int64(time.Since(start)))
	p.waiting.Add(-1)
	if err != nil {
		p.refusedN.Add(1)
		return err
	}
	p.admitted.Add(1)
	p.waited.Add(1)
	return nil
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
// in memory): the format from its bytes; then, holding MetaBound(format)
// of the budget, its header (readHeader: the declared size, ErrTooLarge
// before decoding; the ICC profile classified, Gamut; a JPEG's EXIF
// orientation and capture time), every reader bounded by what its format
// allows; then the memory its decode needs (decodeCost; *MemoryError if
// more than the whole budget), for which it waits, at most the pipeline's
// wait in all (ErrBusy, or ctx's error); a full decode (ErrDamaged for
// truncated or corrupt data); the EXIF orientation applied; transparent
// pixels flattened onto white; then both copies encoded as JPEG, a
// Display P3 source's tagged with our profile. An upload src holds in
// memory (anything but an *os.File: a small multipart part, Process's
// bytes) counts against the budget too, from start to end. The header's
// share is given back before the decode's is asked for: an upload waiting
// for its decode holds none of the budget but what it keeps in memory.
// The full-size image is dropped, and its share given back, as soon as
// the display copy is made.
func (p *Pipeline) ProcessAt(ctx context.Context, src io.ReaderAt, size int64) (*Processed, error) {
	var head [16]byte
	n, _ := src.ReadAt(head[:], 0)
	format, err := Sniff(head[:n])
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, p.wait)
	defer cancel()
	inMemory := int64(0)
	if _, onDisk := src.(*os.File); !onDisk {
		inMemory = size
	}
	release, err := p.acquire(ctx, wctx, min(p.budget, MetaBound(format)+inMemory))
	if err != nil {
		return nil, err
	}
	h, err := readHeader(src, size, format)
	release()
	if err != nil {
		return nil, err
	}
	if format == HEIC {
		return p.processHEIC(ctx, wctx, src, size, inMemory, h)
	}
	cost, depth := decodeCost(h)
	if cost += inMemory; cost > p.budget {
		return nil, &MemoryError{Width: h.cfg.Width, Height: h.cfg.Height, Depth: depth, Need: cost, Budget: p.budget}
	}
	if err := p.admit(wctx, cost); err != nil {
		return nil, p.refused(ctx)
	}
	held := cost
	defer func() { p.sem.Release(held) }()

	img, err := decoders[format].decode(io.NewSectionReader(src, 0, size))
	if err != nil {
		return nil, ErrDamaged
	}
	copies, err := finish(img, h.orientation, h.gamut, func(display *image.RGBA) {
		// The full-size decode is garbage now: give its share back.
		if rest := afterResizeCost(display) + inMemory; rest < held {
			p.sem.Release(held - rest)
			held = rest
		}
	})
	if err != nil {
		return nil, err
	}
	copies.Taken = h.taken
	return copies, nil
}

// acquire takes n bytes of the budget, waiting until wctx ends (the
// refusal: ErrBusy, or ctx's error if the upload itself was given up),
// and returns the function that gives them back, once.
func (p *Pipeline) acquire(ctx, wctx context.Context, n int64) (release func(), err error) {
	if err := p.admit(wctx, n); err != nil {
		return nil, p.refused(ctx)
	}
	var once sync.Once
	return func() { once.Do(func() { p.sem.Release(n) }) }, nil
}

// refused is the error of an upload whose wait for the budget ended:
// ctx's error if the upload was given up, else ErrBusy.
func (p *Pipeline) refused(ctx context.Context) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return ErrBusy
}

// finish makes the two stored copies of a decoded image: the display copy
// (resized before turning: the box is square, so the order does not change
// the result, and turning the small copy is cheap), the EXIF orientation
// applied, transparent pixels flattened onto white, the thumbnail, both
// encoded and tagged for g. The full-size img is dropped as soon as the
// display copy exists; resized, if not nil, is called then. Taken is left
// zero.
func finish(img image.Image, orientation int, g Gamut, resized func(*image.RGBA)) (*Processed, error) {
	display := fit(img, DisplaySide)
	img = nil
	if resized != nil {
		resized(display)
	}
	display = flatten(orient(display, orientation))
	thumb := fit(display, ThumbSide)
	out := &Processed{Gamut: g}
	out.Width, out.Height = display.Rect.Dx(), display.Rect.Dy()
	out.ThumbWidth, out.ThumbHeight = thumb.Rect.Dx(), thumb.Rect.Dy()
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

// processHEIC takes a HEIC upload whose header (its container's boxes:
// the decoder's own DecodeConfig fails on real photos) readHeader has
// checked: the primary image's size against the pixel limits, its colour
// from the colr box (as a JPEG's profile), its capture time from the Exif
// item. Then the worker decodes it and makes the copies (HEICDecoder),
// the file streamed to it from src: the server holds only the copy
// buffer, with what src holds in memory (inMemory), against the budget;
// the decode's own memory is the worker's. No EXIF orientation is
// applied: the decoded pixels are already upright (irot).
func (p *Pipeline) processHEIC(ctx, wctx context.Context, src io.ReaderAt, size, inMemory int64, h *header) (*Processed, error) {
	if p.heic == nil {
		return nil, ErrHEICUnavailable
	}
	release, err := p.acquire(ctx, wctx, min(p.budget, heicCopyBuffer+inMemory))
	if err != nil {
		return nil, err
	}
	defer release()
	out, err := p.heic.decode(ctx, io.NewSectionReader(src, 0, size), size, h.gamut)
	if err != nil {
		return nil, err
	}
	out.Taken = h.taken
	return out, nil
}

// decodeCost returns the bytes ProcessAt holds at its peak for an image
// of h, and words its pixel depth for MemoryError: the decoded image
// (width × height × bytes per pixel of the colour model DecodeConfig
// reports; for a JPEG, its real chroma subsampling read from the frame
// header, and the coefficients a progressive JPEG keeps while decoding;
// for a lossy WebP, its VP8 chunk, which the decoder reads whole, and the
// NRGBA image a packed alpha plane is unpacked through), plus the resize
// to the display copy (resize: a display-wide, full-height RGBA, the
// display copy itself and resizeScratch; an image within the box is
// copied once to RGBA).
func decodeCost(h *header) (int64, string) {
	cfg := h.cfg
	px := float64(cfg.Width) * float64(cfg.Height)
	bpp, depth := bytesPerPixel(cfg.ColorModel)
	extra := 0.0
	switch {
	case h.format == JPEG && h.jpeg.hasFrame:
		fr := h.jpeg.frame
		if cfg.ColorModel == color.YCbCrModel {
			bpp = fr.ycc
		}
		if fr.progressive {
			bpp += 4 * fr.samples // int32 coefficients of every sample
		}
	case h.format == WebP && cfg.ColorModel == color.NRGBAModel:
		bpp = 8 // lossless: ARGB words, then the NRGBA image
	case h.format == WebP:
		extra = float64(h.webp.vp8)
		if h.webp.packedAlpha {
			bpp += 4
		}
	}
	w, hh := fitted(cfg.Width, cfg.Height, DisplaySide)
	work := 4*float64(w)*float64(cfg.Height) + 4*float64(w)*float64(hh) + resizeScratch
	if w == cfg.Width && hh == cfg.Height {
		work = 4 * px // no resize: one RGBA copy
	}
	return int64(px*bpp + work + extra), depth
}

// afterResizeCost is what ProcessAt holds once the display copy is made:
// that copy, a turned one and a flattened one at most, and the
// thumbnail's resize (its intermediate, scratch and the thumbnail).
func afterResizeCost(display *image.RGBA) int64 {
	return 3*int64(len(display.Pix)) + 4*ThumbSide*int64(display.Rect.Dy()) + resizeScratch + 4*ThumbSide*ThumbSide
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

// encode writes img as a JPEG, tagged with our Display P3 profile if the
// source was Display P3 (GamutOtherRGB is written untagged: see Gamut).
func encode(img image.Image, g Gamut) ([]byte, error) {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: jpegQuality}); err != nil {
		return nil, fmt.Errorf("photo: encode: %w", err)
	}
	if g == GamutDisplayP3 {
		return tagDisplayP3(buf.Bytes()), nil
	}
	return buf.Bytes(), nil
}
