package photo

import (
	"math/bits"
	"strconv"
	"strings"
)

// The copies of a meal photo (DESIGN.md, photos: sized for their slot).
// Every copy is a variant: a size and a format, with its own S3 key and
// its own URL (?size=), so a browser picks one through srcset and a
// <source type=…> and no response varies by Accept. variants is the one
// list of them; a meal's row says which it has (Set), and every place
// that lists a meal's objects (writes, moves, deletion, the orphan check,
// export) goes through that Set.
//
// Two variants are the copies every photo had before sizing: the display
// copy (the largest JPEG, long edge ≤ DisplaySide, "….jpg") and the
// thumbnail (long edge ≤ ThumbSide, "….thumb.jpg"), still what an upload
// stores. The rest are made from the display copy by the variant job
// (meal.Variants): centred square thumbnails of ThumbSides px and display
// copies of DisplaySides px on the long edge, each as JPEG and as WebP,
// none larger than the display copy (never upscaled).
//
// The sides come from the slots that show them (measured in Chromium at
// 390×844 and 1280×800, TestBrowserSlots): the month grid's cells are
// 114 CSS px on a phone and up to 190 on a desktop, the denser grid's
// about 80, the recipient's day strip 120–136 and the week table 112;
// the meal page's photo 358 CSS px on a phone and up to 620 on a desktop.
// At 1× to 2× density (thumbnails stop at 2×: at 3× a phone would fetch
// twice the bytes for a difference nobody sees at that size) that is
// 160–480 px square and 720–1600 px.

// ThumbSides are the sides of the square thumbnails, in px, smallest
// first.
var ThumbSides = []int{160, 240, 320, 480}

// DisplaySides are the long edges of the sized display copies, in px,
// smallest first; the display copy itself (DisplaySide) is the largest.
var DisplaySides = []int{720, 1080, 1600}

// webpQuality is the WebP encoder's quality (0–100) for every WebP copy:
// at it a phone photo's WebP is 35–45 % of its JPEG at jpegQuality with
// no difference visible at the slot's size.
const webpQuality = 78

// variant is one entry of variants.
type variant struct {
	size   Size
	suffix string // of the S3 key, after the meal ID
	format Format // JPEG or WebP
	square bool   // a centred square crop (thumbnails)
	side   int    // square side, or long edge, in px; 0: the legacy copies
}

// variants lists every copy a photo can have; a copy's bit in a Set is
// its index here, so entries are only ever added at the end.
var variants = func() []variant {
	vs := []variant{
		{size: SizeDisplay, suffix: ".jpg", format: JPEG},
		{size: SizeThumb, suffix: ".thumb.jpg", format: JPEG},
	}
	for _, f := range []Format{JPEG, WebP} {
		ext := map[Format]string{JPEG: "jpg", WebP: "webp"}[f]
		for _, s := range ThumbSides {
			n := "t" + strconv.Itoa(s) + "." + ext
			vs = append(vs, variant{size: Size(n), suffix: "." + n, format: f, square: true, side: s})
		}
		for _, s := range DisplaySides {
			n := "d" + strconv.Itoa(s) + "." + ext
			vs = append(vs, variant{size: Size(n), suffix: "." + n, format: f, side: s})
		}
	}
	return vs
}()

// variantOf returns the entry of size, and false for no such size.
func variantOf(size Size) (variant, int, bool) {
	for i, v := range variants {
		if v.size == size {
			return v, i, true
		}
	}
	return variant{}, 0, false
}

// Set is which variants of a photo are stored: bit i is variants[i]. A
// meal row keeps it (photo_set); 0 there means LegacySet, what every
// photo had before sizing.
type Set uint32

// LegacySet is the display copy and the thumbnail: what an upload stores.
const LegacySet Set = 1<<0 | 1<<1

// Of returns s, or LegacySet for the zero Set (a row written before
// photo_set existed).
func (s Set) Of() Set {
	if s == 0 {
		return LegacySet
	}
	return s
}

// Has reports whether s (Of) holds size.
func (s Set) Has(size Size) bool {
	_, i, ok := variantOf(size)
	return ok && s.Of()&(1<<i) != 0
}

// Sizes returns the sizes s (Of) holds, in the order of variants: the
// display copy first, then the thumbnail if held.
func (s Set) Sizes() []Size {
	s = s.Of()
	out := make([]Size, 0, bits.OnesCount32(uint32(s)))
	for i, v := range variants {
		if s&(1<<i) != 0 {
			out = append(out, v.size)
		}
	}
	return out
}

// Full returns the Set a photo whose display copy is w × h px should
// have once the variant job has made its copies: the legacy copies held
// in have (a photo stored since keeps its thumbnail; new ones need none
// once sized), every square thumbnail no larger than the short side and
// every display size smaller than the long edge, in both formats.
func Full(have Set, w, h int) Set {
	s := have.Of() & LegacySet
	short, long := min(w, h), max(w, h)
	for i, v := range variants {
		switch {
		case v.side == 0:
		case v.square && v.side <= short, !v.square && v.side < long:
			s |= 1 << i
		}
	}
	return s
}

// SetOf returns the Set holding sizes (unknown ones left out).
func SetOf(sizes ...Size) Set {
	var s Set
	for _, size := range sizes {
		if _, i, ok := variantOf(size); ok {
			s |= 1 << i
		}
	}
	return s
}

// Missing returns the variants of want that s (Of) lacks.
func (s Set) Missing(want Set) Set { return want &^ s.Of() }

// Largest returns the largest JPEG s holds, for the export: always the
// display copy, which every photo keeps.
func (s Set) Largest() Size { return SizeDisplay }

// ContentType returns the Content-Type of size's bytes.
func ContentType(size Size) string {
	if v, _, ok := variantOf(size); ok && v.format == WebP {
		return "image/webp"
	}
	return "image/jpeg"
}

// sizeOfKeySuffix returns the size whose key suffix ends file
// ("{mealID}" + suffix), longest suffix first, and the meal ID before it.
func sizeOfKeySuffix(file string) (Size, string, bool) {
	best := -1
	for i, v := range variants {
		if strings.HasSuffix(file, v.suffix) && (best < 0 || len(v.suffix) > len(variants[best].suffix)) {
			best = i
		}
	}
	if best < 0 {
		return "", "", false
	}
	return variants[best].size, strings.TrimSuffix(file, variants[best].suffix), true
}
