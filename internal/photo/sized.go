package photo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
)

// ErrNoEncoder is returned by MakeVariants for WebP copies when the
// pipeline has no WebP encoder (WithWebP).
var ErrNoEncoder = errors.New("photo: no webp encoder")

// WithWebP makes p encode WebP copies with e (MakeVariants), and returns p.
func (p *Pipeline) WithWebP(e *WebPEncoder) *Pipeline {
	p.webp = e
	return p
}

// MakeVariants makes the copies of want (variant.go) from display, a
// photo's display copy as stored (a JPEG; Display P3 if it carries our
// profile), and returns their bytes by size. Square thumbnails are
// centred crops; nothing is made larger than display (Full leaves such
// sizes out; asked for anyway, they are skipped). JPEG copies are encoded
// here, WebP ones in the WebP worker (ErrNoEncoder without one), every
// copy of a Display P3 photo tagged with our profile. Its memory (the
// decode, the RGBA copy, the largest resize) is admitted against the
// pipeline's budget as an upload's is, waiting at most the pipeline's
// wait (ErrBusy, or ctx's error), and from the resizes on only the
// resized copies stay held: the encodes, most of its time, leave the rest
// to uploads. A display copy that is not a readable JPEG is ErrDamaged.
func (p *Pipeline) MakeVariants(ctx context.Context, display []byte, want Set) (map[Size][]byte, error) {
	src := bytes.NewReader(display)
	h, err := readHeader(src, int64(len(display)), JPEG)
	if err != nil {
		return nil, err
	}
	w, hh := h.cfg.Width, h.cfg.Height
	if w > DisplaySide || hh > DisplaySide {
		return nil, ErrTooLarge
	}
	wctx, cancel := context.WithTimeout(ctx, p.wait)
	defer cancel()
	held := min(p.budget, variantsCost(w, hh)+int64(len(display)))
	if err := p.sem.Acquire(wctx, held); err != nil {
		return nil, p.refused(ctx)
	}
	defer func() { p.sem.Release(held) }()
	img, err := jpeg.Decode(bytes.NewReader(display))
	if err != nil {
		return nil, ErrDamaged
	}
	full := fit(img, DisplaySide) // an RGBA copy: it fits already
	img = nil
	// Every copy's pixels first, then the encodes: once the decode and
	// the full-size copy are dropped, only the resized copies are held,
	// and the rest of the budget goes back to uploads for the encodes'
	// time (most of the job's, the WebP ones in the worker).
	made := map[[2]int]*image.RGBA{} // by square and side: JPEG and WebP share the pixels
	pixels := map[int]*image.RGBA{}  // by index in variants
	for i, v := range variants {
		if want&(1<<i) != 0 && v.side != 0 {
			if px := sizedPixels(full, v, made); px != nil {
				pixels[i] = px
			}
		}
	}
	full = nil
	kept := int64(len(display)) // held by the caller throughout
	for _, px := range made {
		kept += int64(len(px.Pix))
	}
	if kept < held {
		p.sem.Release(held - kept)
		held = kept
	}
	out := map[Size][]byte{}
	for i, v := range variants {
		px := pixels[i]
		if px == nil {
			continue
		}
		var b []byte
		switch v.format {
		case JPEG:
			b, err = encode(px, h.gamut)
		case WebP:
			if p.webp == nil {
				return nil, ErrNoEncoder
			}
			b, err = p.webp.Encode(ctx, px, h.gamut)
		}
		if err != nil {
			return nil, fmt.Errorf("photo: make %s: %w", v.size, err)
		}
		out[v.size] = b
	}
	return out, nil
}

// sizedPixels returns full resized for v: a centred square crop of v.side
// for a thumbnail, the whole photo v.side on its long edge for a display
// size; nil if that would be larger than full. made keeps what was
// resized, so the second format of a size costs no second resize.
func sizedPixels(full *image.RGBA, v variant, made map[[2]int]*image.RGBA) *image.RGBA {
	sq := 0
	if v.square {
		sq = 1
	}
	if px, ok := made[[2]int{sq, v.side}]; ok {
		return px
	}
	b := full.Rect
	short, long := min(b.Dx(), b.Dy()), max(b.Dx(), b.Dy())
	var px *image.RGBA
	switch {
	case v.square && v.side <= short:
		x0, y0 := b.Min.X+(b.Dx()-short)/2, b.Min.Y+(b.Dy()-short)/2
		crop := full.SubImage(image.Rect(x0, y0, x0+short, y0+short))
		px = fit(crop, v.side)
	case !v.square && v.side < long:
		px = fit(full, v.side)
	default:
		return nil
	}
	made[[2]int{sq, v.side}] = px
	return px
}

// variantsCost is the memory MakeVariants holds at its peak for a w × h
// display copy, in bytes: the decoded JPEG (YCbCr 4:4:4 at most, 3 bytes
// a pixel), its RGBA copy, every resized copy kept for its second format
// (at most the sum of ThumbSides² and of the DisplaySides' boxes), and
// the largest resize's intermediate (DisplaySides' largest wide, the
// photo's height tall) and scratch.
func variantsCost(w, h int) int64 {
	px := int64(w) * int64(h)
	kept := int64(0)
	for _, s := range ThumbSides {
		kept += 4 * int64(s) * int64(s)
	}
	for _, s := range DisplaySides {
		fw, fh := fitted(w, h, s)
		kept += 4 * int64(fw) * int64(fh)
	}
	widest := int64(DisplaySides[len(DisplaySides)-1])
	return 3*px + 4*px + kept + 4*widest*int64(max(w, h)) + resizeScratch
}
