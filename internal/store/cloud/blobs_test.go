package cloud

import (
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
		return NewBlobs(localenv.NewS3Client(inProcess(t, "s3.test", gofakes3.New(backend).Server())), "b")
	})
}
