package static

import (
	"bytes"
	"flag"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"strconv"
	"testing"
)

var update = flag.Bool("update", false, "redraw the app icons (icon-*.png)")

// iconSizes are the PNG icons: the apple-touch-icon (180) and the web app
// manifest's two (192, 512).
var iconSizes = []int{180, 192, 512}

// drawIcon draws the app icon at size×size: a plate seen from above on
// the app's green, edge to edge, so the same image serves as a maskable
// icon (the plate stays inside the central 80 % safe zone). Edges are
// anti-aliased by 4×4 supersampling.
func drawIcon(size int) *image.NRGBA {
	green := color.NRGBA{0x2d, 0x6a, 0x4f, 0xff}
	rim := color.NRGBA{0xff, 0xff, 0xff, 0xff}
	well := color.NRGBA{0xe4, 0xf2, 0xea, 0xff}
	food := color.NRGBA{0xe9, 0xa8, 0x3b, 0xff}
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	c := float64(size) / 2
	const n = 4
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			var r, g, b float64
			for sy := 0; sy < n; sy++ {
				for sx := 0; sx < n; sx++ {
					px := (float64(x) + (float64(sx)+.5)/n - c) / float64(size)
					py := (float64(y) + (float64(sy)+.5)/n - c) / float64(size)
					d := math.Hypot(px, py)
					col := green
					switch {
					case math.Hypot(px+.06, py-.05) < .085:
						col = food
					case d < .2:
						col = well
					case d < .3:
						col = rim
					}
					r, g, b = r+float64(col.R), g+float64(col.G), b+float64(col.B)
				}
			}
			img.SetNRGBA(x, y, color.NRGBA{uint8(r/n/n + .5), uint8(g/n/n + .5), uint8(b/n/n + .5), 0xff})
		}
	}
	return img
}

// TestIcons: each committed icon-N.png is an N×N PNG, exactly as drawIcon
// draws it (run with -update to redraw after changing it).
func TestIcons(t *testing.T) {
	for _, size := range iconSizes {
		name := "icon-" + strconv.Itoa(size) + ".png"
		var buf bytes.Buffer
		enc := png.Encoder{CompressionLevel: png.BestCompression}
		if err := enc.Encode(&buf, drawIcon(size)); err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := FS.ReadFile(name)
		if err != nil {
			t.Fatalf("%s is not embedded: %v", name, err)
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(got))
		if err != nil || cfg.Width != size || cfg.Height != size {
			t.Errorf("%s decodes as %dx%d (%v), want %dx%d", name, cfg.Width, cfg.Height, err, size, size)
		}
		if !bytes.Equal(got, buf.Bytes()) {
			t.Errorf("%s differs from drawIcon(%d); run go test ./static -update", name, size)
		}
	}
}
