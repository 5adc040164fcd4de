package photo

import (
	"image"
	"io"
)

// DecodeCost exposes decodeCost to the tests.
func DecodeCost(f Format, cfg image.Config, src io.ReaderAt, size int64) int64 {
	n, _ := decodeCost(f, cfg, src, size)
	return n
}

// ReadICC and ClassifyICC expose the profile reading to the tests.
var (
	ReadICC     = readICC
	ClassifyICC = classifyICC
	DisplayP3   = displayP3
)
