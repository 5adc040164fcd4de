package cloud

import (
	"net/http/httptest"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"ndiro/internal/localenv"
	"ndiro/internal/store"
	"ndiro/internal/store/storetest"
)

// TestBlobsConformance runs the seam's blob cases on S3 (gofakes3,
// in-process).
func TestBlobsConformance(t *testing.T) {
	storetest.RunBlobs(t, func(t *testing.T) store.Blobs {
		backend := s3mem.New()
		if err := backend.CreateBucket("b"); err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(gofakes3.New(backend).Server())
		t.Cleanup(srv.Close)
		return NewBlobs(localenv.NewS3Client(srv.URL), "b")
	})
}
