package photo

import (
	"image"
	"image/color"
	stddraw "image/draw"
	"math"
	"runtime"
	"sync"

	"golang.org/x/image/draw"
)

// lanczos3 is the Lanczos filter with three lobes, the stored copies'
// resampling filter. It is exactly 0 at every non-zero integer, so an
// axis that keeps its size is copied unchanged (resize relies on it).
var lanczos3 = &draw.Kernel{Support: 3, At: func(t float64) float64 {
	switch {
	case t == 0:
		return 1
	case t >= 3 || t == math.Trunc(t):
		return 0
	}
	pt := math.Pi * t
	return 3 * math.Sin(pt) * math.Sin(pt/3) / (pt * pt)
}}

// resizeBand is the most bytes of scratch one band of a resize takes in
// x/image/draw's kernel scaler, which holds 32 bytes (four float64) for
// every destination column and source row it is given: for a 12 MP photo
// in one call that would be 200 MB. resize hands it bands that keep to
// this.
const resizeBand = 1 << 20

// resizeWorkers is how many bands resize works on at once (the service
// runs on two cores).
const resizeWorkers = 2

// resizeScratch is the scratch a resize holds at most, besides its
// intermediate and its result (decodeCost counts it): for each worker,
// the scaler's band and the band of source rows converted to RGBA (at
// most 3/4 of the former: a source is at most MaxSide/ThumbSide times as
// wide as its copy, and a row band is resizeBand/32 over the copy's
// width).
const resizeScratch = resizeWorkers * 2 * resizeBand

// fit returns img scaled with Lanczos-3 to fit in a side × side box
// (fitted), as a new *image.RGBA; an image that fits already is copied
// unscaled.
func fit(img image.Image, side int) *image.RGBA {
	b := img.Bounds()
	w, h := fitted(b.Dx(), b.Dy(), side)
	if w == b.Dx() && h == b.Dy() {
		dst := image.NewRGBA(image.Rect(0, 0, w, h))
		stddraw.Draw(dst, dst.Rect, img, b.Min, stddraw.Src)
		return dst
	}
	return resize(img, w, h)
}

// resize scales img to w × h in two passes, each in bands that keep
// x/image/draw's scratch within resizeBand: first each band of
// source rows (converted to RGBA first unless it is RGBA: the scaler
// would convert a YCbCr pixel once for every tap that reads it) is scaled
// across, its height kept (which lanczos3 leaves exact), into a w-wide
// intermediate of the source's height; then each band of its columns is
// scaled down, its width kept. The result is what the two passes give
// over the whole image at once, and resize holds, besides img and the
// result, the 4 × w × source-height intermediate and resizeScratch.
func resize(img image.Image, w, h int) *image.RGBA {
	sb := img.Bounds()
	sw, sh := sb.Dx(), sb.Dy()
	mid := image.NewRGBA(image.Rect(0, 0, w, sh))
	// A scaler per pass keeps its weights and a pool of scratch for its
	// bands of full size.
	rows := min(sh, max(1, resizeBand/(32*w)))
	across := lanczos3.NewScaler(w, rows, sw, rows)
	inBands(sh, rows, func() func(lo, hi int) {
		src, direct := img.(*image.RGBA)
		var band *image.RGBA
		if !direct {
			band = image.NewRGBA(image.Rect(0, 0, sw, rows))
		}
		return func(y0, y1 int) {
			sr := image.Rect(sb.Min.X, sb.Min.Y+y0, sb.Max.X, sb.Min.Y+y1)
			if !direct {
				r := image.Rect(0, 0, sw, y1-y0) // the last band may be short
				stddraw.Draw(band, r, img, sr.Min, stddraw.Src)
				src, sr = band, r
			}
			across.Scale(rounding{mid}, image.Rect(0, y0, w, y1), src, sr, draw.Src, nil)
		}
	})
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	cols := min(w, max(1, resizeBand/(32*sh)))
	down := lanczos3.NewScaler(cols, h, cols, sh)
	inBands(w, cols, func() func(lo, hi int) {
		return func(x0, x1 int) {
			down.Scale(rounding{dst}, image.Rect(x0, 0, x1, h), mid, image.Rect(x0, 0, x1, sh), draw.Src, nil)
		}
	})
	return dst
}

// rounding is an *image.RGBA that x/image/draw writes through
// SetRGBA64, which rounds each 16-bit value to 8 bits: its own *image.RGBA
// path keeps the top 8 bits, which darkens every resized copy by half a
// level on average (a level at each of resize's two passes).
type rounding struct{ *image.RGBA }

// SetRGBA64 stores c (premultiplied, as every *image.RGBA) at x, y,
// rounded to 8 bits a channel.
func (m rounding) SetRGBA64(x, y int, c color.RGBA64) {
	if !(image.Point{x, y}.In(m.Rect)) {
		return
	}
	i := m.PixOffset(x, y)
	s := m.Pix[i : i+4 : i+4]
	s[0] = uint8((uint32(c.R) + 128) / 257)
	s[1] = uint8((uint32(c.G) + 128) / 257)
	s[2] = uint8((uint32(c.B) + 128) / 257)
	s[3] = uint8((uint32(c.A) + 128) / 257)
}

// inBands calls a worker's function for [0, band), [band, 2·band), … up
// to n, on up to resizeWorkers goroutines at once (fewer if GOMAXPROCS
// is lower), each from its own call of worker (for scratch of its own),
// and returns when every band is done. Only the last band may be
// narrower (its scaler call then makes scratch of its own, once).
func inBands(n, band int, worker func() func(lo, hi int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(resizeWorkers, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			fn := worker()
			for lo := range next {
				fn(lo, min(n, lo+band))
			}
		})
	}
	for lo := 0; lo < n; lo += band {
		next <- lo
	}
	close(next)
	wg.Wait()
}

// fitted is the size fit gives a w × h image in a side × side box: the
// long edge side, the other rounded, at least 1; unchanged if it fits.
func fitted(w, h, side int) (int, int) {
	if w <= side && h <= side {
		return w, h
	}
	if w >= h {
		return side, max(1, int(float64(h)*float64(side)/float64(w)+0.5))
	}
	return max(1, int(float64(w)*float64(side)/float64(h)+0.5)), side
}

// orient applies an EXIF orientation (1–8) so the pixels stand the way the
// camera was held: 6 is "turn 90° clockwise to display", as phones write
// portraits; 2, 4, 5 and 7 also mirror. Others return img.
func orient(img *image.RGBA, o int) *image.RGBA {
	if o < 2 || o > 8 {
		return img
	}
	w, h := img.Rect.Dx(), img.Rect.Dy()
	dw, dh := w, h
	if o >= 5 {
		dw, dh = h, w
	}
	// from maps a pixel of the result to the pixel of img it shows.
	from := map[int]func(x, y int) (int, int){
		2: func(x, y int) (int, int) { return w - 1 - x, y },
		3: func(x, y int) (int, int) { return w - 1 - x, h - 1 - y },
		4: func(x, y int) (int, int) { return x, h - 1 - y },
		5: func(x, y int) (int, int) { return y, x },
		6: func(x, y int) (int, int) { return y, h - 1 - x },
		7: func(x, y int) (int, int) { return w - 1 - y, h - 1 - x },
		8: func(x, y int) (int, int) { return w - 1 - y, x },
	}[o]
	dst := image.NewRGBA(image.Rect(0, 0, dw, dh))
	for y := range dh {
		row := dst.Pix[y*dst.Stride:]
		for x := range dw {
			sx, sy := from(x, y)
			copy(row[4*x:4*x+4], img.Pix[img.PixOffset(img.Rect.Min.X+sx, img.Rect.Min.Y+sy):])
		}
	}
	return dst
}

// flatten composes img over white, so transparent areas (a screenshot's
// rounded corners) become white in the JPEG rather than black.
func flatten(img *image.RGBA) *image.RGBA {
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
	bg := image.NewRGBA(img.Bounds())
	stddraw.Draw(bg, bg.Bounds(), &image.Uniform{color.White}, image.Point{}, stddraw.Src)
	stddraw.Draw(bg, bg.Bounds(), img, img.Bounds().Min, stddraw.Over)
	return bg
}
