package meal_test

import (
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"ndiro/internal/photo"
)

func TestMain(m *testing.M) {
	photo.MaybeHEICWorker()
	code := m.Run()
	if webpStarted {
		webpEncoder().Close()
	}
	os.Exit(code)
}

// webpEncoder is the WebP encoder every test of the package that makes
// sized copies shares (newVariantJob): each worker process compiles
// libwebp's WebAssembly once, seconds of CPU under the race detector, so
// one worker for the package keeps make test from paying that per test.
// Its encodes run one at a time, as in the server.
var webpEncoder = sync.OnceValue(func() *photo.WebPEncoder {
	webpStarted = true
	return photo.NewWebPEncoder(nil, photo.WebPLimits(), 5*time.Minute, slog.New(slog.DiscardHandler))
})

// webpStarted says webpEncoder has made its encoder (TestMain closes it).
var webpStarted bool
