package photo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"time"

	"github.com/gen2brain/webp"
)

// WebP copies are encoded by libwebp compiled to WebAssembly
// (github.com/gen2brain/webp, run by wazero, so the binary stays static)
// in a worker process of the same binary ("ndiro webp-worker"), never in
// the server. Measured on the 2-core machine (phone-landscape.jpg resized
// with Lanczos, quality 78, method 2): 1600 px ~300 ms, 1080 px ~150–330
// ms, 720 px ~100 ms, 480 px ~70 ms, 320 px and below ~15 ms: close to a
// second of CPU for a photo's set. A wasm call cannot be preempted, so in
// the server each would hold up every stop-the-world of the garbage
// collector, and with it every request, for as long as it runs; and the
// runtime's memory grew by ~200 MB (wazero's compiled module and its
// linear memories). In the worker the server holds only the pixels it
// sends (counted in the pipeline's admission, MakeVariants), the worker
// can be killed past its limits, and its memory is not the server's.
//
// AVIF (github.com/gen2brain/avif v0.4.4, libaom) is left out: at speed 8
// it took 1.9 s for 1600 px and 0.6 s for 720 px, about four times
// WebP's CPU, for copies 35 % (1600 px) to 13 % (320 px) smaller than
// WebP's, and a Display P3 AVIF needs a colr box muxed into its item
// properties (ipco, ipma), which its encoder does not write.

// WebPLimits are the default limits of one encode in the WebP worker: 60
// s and 384 MiB (a 2048 px encode peaks near 120 MB in it).
func WebPLimits() HEICLimits { return HEICLimits{Timeout: 60 * time.Second, Memory: 384 << 20} }

// webpHello is the WebP worker's greeting.
const webpHello = "ndiro webp-worker 1\n"

// WebPEncoder encodes WebP copies in the worker process, one at a time.
type WebPEncoder struct{ p *HEICDecoder }

// NewWebPEncoder returns an encoder that runs command() as its worker
// (nil: this executable with the argument "webp-worker"), waits at most
// wait for its turn (ErrBusy after), kills an encode past limits, and
// logs to log.
func NewWebPEncoder(command func() *exec.Cmd, limits HEICLimits, wait time.Duration, log *slog.Logger) *WebPEncoder {
	return &WebPEncoder{p: newWorkerProcess("webp", webpHello, command, limits, wait, log)}
}

// Status returns the encoder's worker state (as HEICDecoder's).
func (e *WebPEncoder) Status() HEICStatus { return e.p.Status() }

// Close stops the worker, if it runs.
func (e *WebPEncoder) Close() error { return e.p.Close() }

// Encode returns img (opaque, as every copy is) as a lossy WebP at
// webpQuality, with our Display P3 profile muxed in (VP8X and ICCP
// chunks) when g is GamutDisplayP3. Errors are the worker's (ErrBusy,
// ErrHEICUnavailable, ErrHEICTimeout, ErrHEICMemory, ErrHEICFailed) or
// ctx's.
func (e *WebPEncoder) Encode(ctx context.Context, img *image.RGBA, g Gamut) ([]byte, error) {
	out, err := e.p.run(ctx, func(w *heicWorker) (any, error) { return w.encodeTrip(img) })
	if err != nil {
		return nil, fmt.Errorf("photo: webp: %w", err)
	}
	b := out.([]byte)
	if g == GamutDisplayP3 {
		return muxICC(b, displayP3, img.Rect.Dx(), img.Rect.Dy())
	}
	return b, nil
}

// The WebP worker's protocol: a request is 'W', the quality (one byte),
// width and height (two uint32, big-endian) and the RGBA pixels (width ×
// height × 4 bytes, rows packed); an answer is 'K' and the WebP (a uint64
// length and its bytes) or, as the HEIC worker's, 'D' or 'E' and a
// message.
const maxWebPSide = DisplaySide

// encodeTrip sends img to the worker and reads the WebP back.
func (w *heicWorker) encodeTrip(img *image.RGBA) ([]byte, error) {
	dx, dy := img.Rect.Dx(), img.Rect.Dy()
	hdr := []byte{'W', webpQuality}
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(dx))
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(dy))
	if _, err := w.in.Write(hdr); err != nil {
		return nil, fmt.Errorf("write to worker: %w", err)
	}
	for y := range dy {
		i := img.PixOffset(img.Rect.Min.X, img.Rect.Min.Y+y)
		if _, err := w.in.Write(img.Pix[i : i+4*dx]); err != nil {
			return nil, fmt.Errorf("write to worker: %w", err)
		}
	}
	kind, err := w.out.ReadByte()
	if err != nil {
		return nil, fmt.Errorf("read from worker: %w", err)
	}
	switch kind {
	case 'K':
		b, err := readBlob(w.out)
		if err != nil {
			return nil, err
		}
		if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
			return nil, errors.New("worker answered something that is not a WebP")
		}
		return b, nil
	case 'D', 'E':
		msg, err := readMessage(w.out)
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("worker: %s", msg)
	}
	return nil, fmt.Errorf("worker answered %q", kind)
}

// RunWebPWorker is the WebP worker process ("ndiro webp-worker"): it
// compiles the encoder, greets on out, then encodes one request from in
// at a time until in closes (nil).
func RunWebPWorker(in io.Reader, out *os.File) error {
	webp.Init()
	return serveRequests(in, out, webpHello, "webp worker", func(hdr [10]byte, br *bufio.Reader, bw *bufio.Writer) error {
		dx, dy := int(binary.BigEndian.Uint32(hdr[2:])), int(binary.BigEndian.Uint32(hdr[6:]))
		if hdr[0] != 'W' || dx < 1 || dy < 1 || dx > maxWebPSide || dy > maxWebPSide {
			return fmt.Errorf("webp worker: bad request")
		}
		img := image.NewRGBA(image.Rect(0, 0, dx, dy))
		if _, err := io.ReadFull(br, img.Pix); err != nil {
			return fmt.Errorf("webp worker: read: %w", err)
		}
		var buf bytes.Buffer
		if err := webp.Encode(&buf, img, webp.Options{Quality: int(hdr[1]), Method: 2}); err != nil {
			writeMessage(bw, 'E', err.Error())
			return nil
		}
		bw.WriteByte('K')
		bw.Write(binary.BigEndian.AppendUint64(nil, uint64(buf.Len())))
		bw.Write(buf.Bytes())
		return nil
	})
}

// errWebPMux: a WebP the muxer cannot tag (not RIFF/WEBP, or chunks that
// overrun it).
var errWebPMux = errors.New("photo: webp: not a WebP the profile can be muxed into")

// muxICC returns the WebP b (a w × h image) carrying the ICC profile icc:
// a simple WebP (one VP8 or VP8L chunk) gets a VP8X chunk in front with
// the ICC flag and the canvas size, then an ICCP chunk; an extended one
// (VP8X first) gets the flag set and the ICCP chunk right after its VP8X,
// where the container format puts it. An ICCP chunk already there is
// replaced.
func muxICC(b, icc []byte, w, h int) ([]byte, error) {
	if len(b) < 20 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
		return nil, errWebPMux
	}
	type chunk struct {
		fourCC string
		body   []byte
	}
	var chunks []chunk
	for rest := b[12:]; len(rest) > 0; {
		if len(rest) < 8 {
			return nil, errWebPMux
		}
		n := int(binary.LittleEndian.Uint32(rest[4:8]))
		padded := n + n&1
		if n < 0 || 8+n > len(rest) {
			return nil, errWebPMux
		}
		chunks = append(chunks, chunk{string(rest[:4]), rest[8 : 8+n]})
		rest = rest[min(len(rest), 8+padded):]
	}
	if len(chunks) == 0 {
		return nil, errWebPMux
	}
	var vp8x []byte
	if chunks[0].fourCC == "VP8X" {
		if len(chunks[0].body) < 10 {
			return nil, errWebPMux
		}
		vp8x = bytes.Clone(chunks[0].body)
		chunks = chunks[1:]
	} else {
		vp8x = make([]byte, 10)
		put24 := func(i, v int) { vp8x[i], vp8x[i+1], vp8x[i+2] = byte(v), byte(v>>8), byte(v>>16) }
		put24(4, w-1)
		put24(7, h-1)
	}
	vp8x[0] |= 0x20 // ICC profile
	out := append(make([]byte, 0, len(b)+len(icc)+40), "RIFF\x00\x00\x00\x00WEBP"...)
	add := func(fourCC string, body []byte) {
		out = append(out, fourCC...)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(body)))
		out = append(out, body...)
		if len(body)&1 == 1 {
			out = append(out, 0)
		}
	}
	add("VP8X", vp8x)
	add("ICCP", icc)
	for _, c := range chunks {
		if c.fourCC != "ICCP" {
			add(c.fourCC, c.body)
		}
	}
	binary.LittleEndian.PutUint32(out[4:8], uint32(len(out)-8))
	return out, nil
}
