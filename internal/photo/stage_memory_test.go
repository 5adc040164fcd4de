package photo_test

import (
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sync"
	"testing"

	"ndiro/internal/localenv"
	"ndiro/internal/photo"
)

// discardS3 answers the calls of a multipart upload as S3 does and keeps
// nothing of the parts, recording the heap in use after each part.
type discardS3 struct {
	mu   sync.Mutex
	peak uint64
	read int64
}

func (d *discardS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodPost && q.Has("uploads"):
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>up1</UploadId></InitiateMultipartUploadResult>`)
	case r.Method == http.MethodPut && q.Has("partNumber"):
		n, _ := io.Copy(io.Discard, r.Body)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		d.mu.Lock()
		d.read += n
		d.peak = max(d.peak, ms.HeapInuse)
		d.mu.Unlock()
		w.Header().Set("ETag", `"e`+q.Get("partNumber")+`"`)
	case r.Method == http.MethodPost && q.Has("uploadId"):
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><ETag>"e"</ETag></CompleteMultipartUploadResult>`)
	default:
		http.Error(w, "not in this test", http.StatusNotImplemented)
	}
}

// zeros is an endless body of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestImportUploadMemory streams a 200 MB import form (multipart, the
// zip's part read as it arrives, as POST /account/import reads it)
// through Stage into a bucket that keeps nothing, and checks that the
// heap in use, read after every part, grows by at most 32 MiB: one
// StagePartSize buffer and the SDK's, whatever the body's length. Run
// with NDIRO_TEST_IMPORT_MEMORY=1 (make import-memory); it streams 200 MB.
func TestImportUploadMemory(t *testing.T) {
	if os.Getenv("NDIRO_TEST_IMPORT_MEMORY") == "" {
		t.Skip("set NDIRO_TEST_IMPORT_MEMORY=1 (make import-memory)")
	}
	const size = 200 << 20
	fake := &discardS3{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	store := photo.NewStore(localenv.NewS3Client(srv.URL), "b")

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
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	part, err := multipart.NewReader(pr, mw.Boundary()).NextPart()
	if err != nil {
		t.Fatal(err)
	}
	n, err := store.Stage(context.Background(), "u1", photo.ImportKey("u1", "big"), part, size+1)
	if err != nil || n != size {
		t.Fatalf("Stage = %d, %v; want %d", n, err, size)
	}
	if fake.read != size {
		t.Fatalf("the bucket received %d bytes, want %d", fake.read, size)
	}
	grew := int64(fake.peak) - int64(before.HeapInuse)
	t.Logf("200 MB staged: heap in use %d MiB before, at most %d MiB during (%+d MiB)", before.HeapInuse>>20, fake.peak>>20, grew>>20)
	if grew > 32<<20 {
		t.Errorf("heap in use grew by %d MiB while staging 200 MB; want at most 32 MiB", grew>>20)
	}
}
