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
	"strings"
	"time"

	"github.com/disintegration/imaging"
	"github.com/rwcarlsen/goexif/exif"
	_ "golang.org/x/image/webp"
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
	ErrUnsupported = errors.New("this file is not a JPEG, PNG or WebP image; those are the formats ndiro accepts")
	ErrHEIC        = errors.New("HEIC photos (the iPhone camera's default) can't be read; ndiro accepts JPEG, PNG and WebP. On an iPhone, share or export the photo as JPEG, or set Settings → Camera → Formats to Most Compatible")
	ErrTooLarge    = errors.New("the image is too large: ndiro accepts photos up to 50 megapixels and 12000 pixels on a side")
	ErrDamaged     = errors.New("the image is damaged or incomplete and can't be read; try exporting it again")
)

// Format is an accepted image format, judged from the file's bytes.
type Format string

const (
	JPEG Format = "jpeg"
	PNG  Format = "png"
	WebP Format = "webp"
)

// Sniff returns the format of data from its magic bytes, never from a file
// name or Content-Type. It returns ErrEmpty, ErrHEIC or ErrUnsupported for
// what it refuses.
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
	case len(data) >= 12 && string(data[4:8]) == "ftyp" && isHEIFBrand(string(data[8:12])):
		return "", ErrHEIC
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
	// ThumbSide. Neither is ever larger than the upload. Both carry no
	// metadata at all: they are freshly encoded pixels.
	Display, Thumb []byte
	// Width and Height are Display's, ThumbWidth and ThumbHeight Thumb's, in
	// pixels, as displayed (after orientation).
	Width, Height, ThumbWidth, ThumbHeight int
	// Taken is the EXIF capture time as the camera's wall clock (its date
	// and time fields in UTC, zone unknown), or the zero time if none.
	Taken time.Time
}

// Pipeline turns uploads into stored copies, with at most a fixed number
// of decodes at once so that memory stays bounded under parallel uploads
// (a 12-megapixel decode holds about 50 MB).
type Pipeline struct {
	sem chan struct{}
}

// NewPipeline returns a pipeline running at most concurrent decodes at once
// (at least 1).
func NewPipeline(concurrent int) *Pipeline {
	return &Pipeline{sem: make(chan struct{}, max(1, concurrent))}
}

// Process checks and converts one upload: the format from its bytes; the
// declared size from its header, before decoding (ErrTooLarge); a full
// decode (ErrDamaged for truncated or corrupt data); the EXIF orientation
// applied; transparent pixels flattened onto white; then both copies encoded
// as JPEG. It waits for a decode slot or ctx.
func (p *Pipeline) Process(ctx context.Context, data []byte) (*Processed, error) {
	format, err := Sniff(data)
	if err != nil {
		return nil, err
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, ErrDamaged
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, ErrDamaged
	}
	if cfg.Width > MaxSide || cfg.Height > MaxSide || int64(cfg.Width)*int64(cfg.Height) > MaxPixels {
		return nil, ErrTooLarge
	}

	var orientation int
	var taken time.Time
	if format == JPEG {
		orientation, taken = readEXIF(data)
	}

	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-p.sem }()

	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, ErrDamaged
	}
	// Resize before turning: the box is square, so the order does not change
	// the result, and turning the small copy is cheap.
	display := imaging.Fit(img, DisplaySide, DisplaySide, imaging.Lanczos)
	img = nil // let the full-size decode go before the next allocation
	display = flatten(orient(display, orientation))
	thumb := imaging.Fit(display, ThumbSide, ThumbSide, imaging.Lanczos)

	out := &Processed{Taken: taken}
	if out.Display, err = encode(display); err != nil {
		return nil, err
	}
	if out.Thumb, err = encode(thumb); err != nil {
		return nil, err
	}
	out.Width, out.Height = display.Bounds().Dx(), display.Bounds().Dy()
	out.ThumbWidth, out.ThumbHeight = thumb.Bounds().Dx(), thumb.Bounds().Dy()
	return out, nil
}

func encode(img image.Image) ([]byte, error) {
	var buf bytes.Buffer
	if err := imaging.Encode(&buf, img, imaging.JPEG, imaging.JPEGQuality(jpegQuality)); err != nil {
		return nil, fmt.Errorf("photo: encode: %w", err)
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
// if none) from a JPEG's EXIF segment. Damaged EXIF is ignored: the pixels
// still count.
func readEXIF(data []byte) (orientation int, taken time.Time) {
	x, err := exif.Decode(bytes.NewReader(data))
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
