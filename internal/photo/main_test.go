package photo_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"ndiro/internal/photo"
)

func TestMain(m *testing.M) {
	photo.MaybeHEICWorker()
	if len(os.Args) > 1 && os.Args[1] == "fake-heic-worker" {
		fakeHEICWorker()
		os.Exit(0)
	}
	code := m.Run()
	if webpStarted {
		webpEncoder().Close()
	}
	os.Exit(code)
}

// webpEncoder is the WebP encoder the package's tests of sized copies
// share (newWebPPipeline): each worker process compiles libwebp's
// WebAssembly once, seconds of CPU under the race detector. Its encodes
// run one at a time, as in the server.
var webpEncoder = sync.OnceValue(func() *photo.WebPEncoder {
	webpStarted = true
	return photo.NewWebPEncoder(nil, photo.WebPLimits(), time.Minute, slog.New(slog.DiscardHandler))
})

// webpStarted says webpEncoder has made its encoder (TestMain closes it).
var webpStarted bool

// fakeHEICWorker speaks the worker protocol without decoding: it answers
// the first request 'D' with a message of 10,000 bytes, every later one
// 'D' with "short".
func fakeHEICWorker() {
	out := bufio.NewWriter(os.Stdout)
	out.WriteString("ndiro heic-worker 1\n")
	out.Flush()
	in := bufio.NewReader(os.Stdin)
	for n := 0; ; n++ {
		var hdr [10]byte
		if _, err := io.ReadFull(in, hdr[:]); err != nil {
			return
		}
		if _, err := io.CopyN(io.Discard, in, int64(binary.BigEndian.Uint64(hdr[2:]))); err != nil {
			return
		}
		msg := "short"
		if n == 0 {
			msg = strings.Repeat("x", 10_000)
		}
		out.WriteByte('D')
		out.Write(binary.BigEndian.AppendUint32(nil, uint32(len(msg))))
		out.WriteString(msg)
		out.Flush()
	}
}
