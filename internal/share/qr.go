package share

import (
	"bytes"
	"fmt"

	qrcode "github.com/yeqown/go-qrcode/v2"
)

// quietZone is the blank border around a QR code, in modules; the
// standard asks for 4 so scanners find the code's edge.
const quietZone = 4

// qrSVG returns an SVG image of a QR code of text (error correction level
// M, which survives a smudged screen or print): black modules on white,
// one path, a quietZone border, scaled by the viewer. The image holds
// nothing but the code.
func qrSVG(text string) ([]byte, error) {
	q, err := qrcode.NewWith(text, qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionMedium))
	if err != nil {
		return nil, fmt.Errorf("share: qr code: %w", err)
	}
	var bw bitmapWriter
	if err := q.Save(&bw); err != nil {
		return nil, fmt.Errorf("share: qr code: %w", err)
	}
	return svgOf(bw.bits), nil
}

// bitmapWriter keeps the code's modules, bits[y][x], true for dark.
type bitmapWriter struct{ bits [][]bool }

func (b *bitmapWriter) Write(m qrcode.Matrix) error { b.bits = m.Bitmap(); return nil }
func (b *bitmapWriter) Close() error                { return nil }

// svgOf draws bits[y][x] (true = dark) as an SVG with a quietZone border:
// each run of dark modules in a row is one rectangle of the path.
func svgOf(bits [][]bool) []byte {
	n := len(bits) + 2*quietZone
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" shape-rendering="crispEdges">`, n, n)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="`, n, n)
	for y, row := range bits {
		for x := 0; x < len(row); {
			if !row[x] {
				x++
				continue
			}
			run := 1
			for x+run < len(row) && row[x+run] {
				run++
			}
			fmt.Fprintf(&b, "M%d %dh%dv1h-%dz", x+quietZone, y+quietZone, run, run)
			x += run
		}
	}
	b.WriteString(`"/></svg>`)
	return b.Bytes()
}
