package photo_test

import (
	"context"
	"io"
	"mime/multipart"
	"os"
	"runtime"
	"runtime/debug"
	"testing"

	"ndiro/internal/dynamo"
	"ndiro/internal/localenv"
	"ndiro/internal/photo"
)

// zeros is an endless body of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// heapWatch passes reads through and records the heap in use at every
// MiB read: its peak is what the heap reached while the reader was
// consumed, short of what was freed between two samples.
type heapWatch struct {
	r         io.Reader
	read      int64
	next      int64
	base      uint64
	peak      uint64
	samplesAt int64
}

func newHeapWatch(r io.Reader) *heapWatch {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return &heapWatch{r: r, base: ms.HeapInuse, peak: ms.HeapInuse, samplesAt: 1 << 20}
}

func (h *heapWatch) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.read += int64(n)
	if h.read >= h.next {
		h.sample()
		h.next = h.read + h.samplesAt
	}
	return n, err
}

func (h *heapWatch) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.peak = max(h.peak, ms.HeapInuse)
}

// grew is the peak's growth over the heap in use at the start, in bytes.
func (h *heapWatch) grew() int64 { return int64(h.peak) - int64(h.base) }

// startLocal starts local mode's backends on a data dir of the test's,
// as `ndiro` runs them: photos in s3.bolt, through gofakes3.
func startLocal(t *testing.T) *localenv.Env {
	t.Helper()
	env, err := localenv.Start(context.Background(), localenv.Options{DataDir: t.TempDir(), Tables: dynamo.NewTables("t-"), Bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

// serviceGC runs the test with the service's GOGC (deploy/README.md:
// GOGC=50), as make memory does, and puts the setting back after.
func serviceGC(t *testing.T) {
	old := debug.SetGCPercent(50)
	t.Cleanup(func() { debug.SetGCPercent(old) })
}

// importMemoryBound is what staging may add to the heap in use,
// whatever the zip's length: one part's buffer in Stage, the SDK's copy
// and gofakes3's copies of that one part on its way into s3.bolt, and
// garbage the collector has not reached yet.
const importMemoryBound = 128 << 20

// TestImportUploadMemory streams a 200 MB import form (multipart, the
// zip's part read as it arrives, as POST /account/import reads it)
// through Stage into local mode's own S3 (gofakes3 on s3.bolt in a data
// dir), and checks that the heap in use, sampled at every MiB the form
// gives, grows by at most importMemoryBound while the zip is 200 MB.
// Staged as one multipart object, as before part objects, it grew by
// 1000 MiB, five times the zip: gofakes3 keeps every part in memory until
// the upload completes, then joins them and writes the whole into bolt.
// With parts it grows by about 97 MiB, the same for 400 MB: bolt's pages,
// gofakes3's and bson's copies of the one part being written, and their
// garbage. Run with NDIRO_TEST_IMPORT_MEMORY=1
// (make import-memory); it streams 200 MB.
func TestImportUploadMemory(t *testing.T) {
	if os.Getenv("NDIRO_TEST_IMPORT_MEMORY") == "" {
		t.Skip("set NDIRO_TEST_IMPORT_MEMORY=1 (make import-memory)")
	}
	const size = 200 << 20
	serviceGC(t)
	env := startLocal(t)
	store := photo.NewStore(env.S3, "b")

	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		part, err := mw.CreateFormFile("archive", "big.zip")
		if err == nil {
			_, err = io.Copy(part, io.LimitReader(zeros{}, size))
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	watch := newHeapWatch(pr)
	part, err := multipart.NewReader(watch, mw.Boundary()).NextPart()
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Stage(context.Background(), "u1", photo.StagedPrefix("u1", "big"), part, size+1)
	if err != nil || st.Size != size || st.Parts() != size/photo.StagePartSize {
		t.Fatalf("Stage = %+v, %v; want %d bytes in %d parts", st, err, size, size/photo.StagePartSize)
	}
	watch.sample()
	t.Logf("200 MB staged in %d parts: heap in use %d MiB before, at most %d MiB during (%+d MiB; bound %d MiB)",
		st.Parts(), watch.base>>20, watch.peak>>20, watch.grew()>>20, importMemoryBound>>20)
	if watch.grew() > importMemoryBound {
		t.Errorf("heap in use grew by %d MiB while staging 200 MB; want at most %d MiB", watch.grew()>>20, importMemoryBound>>20)
	}
	// Read back, the parts are the zip: its last bytes, across the end.
	r, err := store.OpenStaged(context.Background(), "u1", st)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 10)
	if n, err := r.ReadAt(p, size-5); n != 5 || err != io.EOF {
		t.Errorf("ReadAt 5 bytes before the end = %d, %v; want 5, io.EOF", n, err)
	}
}
