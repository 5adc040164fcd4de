package photo

import (
	"image"
	"io"
)

// DecodeCost exposes decodeCost to the tests: the cost of an image of
// cfg whose other header facts (a JPEG's frame, a WebP's layout) are
// read from src.
func DecodeCost(f Format, cfg image.Config, src io.ReaderAt, size int64) int64 {
	h := &header{format: f, cfg: cfg}
	switch f {
	case JPEG:
		h.jpeg = jpegMeta(src, size)
	case WebP:
		h.webp = webpMeta(src, size)
	}
	n, _ := decodeCost(h)
	return n
}

// ReadICC and ClassifyICC expose the profile reading to the tests.
var (
	ReadICC     = readICC
	ClassifyICC = classifyICC
	DisplayP3   = displayP3
)

// MuxICC, VariantsCost and Variant names expose the sized copies to the
// tests.
var (
	MuxICC       = muxICC
	VariantsCost = variantsCost
)

// VariantSizes lists every variant's size, in Set bit order.
func VariantSizes() []Size {
	out := make([]Size, len(variants))
	for i, v := range variants {
		out[i] = v.size
	}
	return out
}
