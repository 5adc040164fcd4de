package photo_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/photo"
)

// TestConcurrentRequestsOneGetObject sends 50 simultaneous requests for one
// cold photo through the server: S3 sees one GetObject, and every request
// gets the bytes.
func TestConcurrentRequestsOneGetObject(t *testing.T) {
	t.Parallel()
	env, _ := apptest.Local(t)
	calls := &apptest.Calls{}
	store := photo.NewStore(localenv.NewS3Client(env.S3Endpoint, calls.S3Option()), "test-photos")
	key := photo.Key("owner", "2026-09-01", "123000-abcdef", photo.SizeThumb)
	body := apptest.Photo(t, "small.jpg")
	v := photo.Version(42)
	if err := store.Put(context.Background(), key, body, v); err != nil {
		t.Fatal(err)
	}
	srv := photo.NewServer(store, photo.NewCache(1<<20))
	calls.Reset()

	var wg sync.WaitGroup
	codes := make([]int, 50)
	sizes := make([]int, 50)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, "/photo/2026-09-01/123000-abcdef?v="+v.Tag()+"&size=thumb", nil)
			if err := srv.Serve(rec, req, "owner", key, v.Tag(), photo.OwnerCacheControl); err != nil {
				t.Error(err)
			}
			codes[i], sizes[i] = rec.Code, rec.Body.Len()
		}()
	}
	wg.Wait()
	for i := range codes {
		if codes[i] != http.StatusOK || sizes[i] != len(body) {
			t.Errorf("request %d: %d with %d bytes, want 200 with %d", i, codes[i], sizes[i], len(body))
		}
	}
	if n := calls.Counts()["GetObject"]; n != 1 {
		t.Errorf("%d GetObject calls for 50 concurrent requests, want 1", n)
	}
	// Another owner's reader refuses the key before asking S3.
	if _, err := store.Get(context.Background(), "intruder", key); !photo.IsNotFound(err) {
		t.Errorf("Get outside the owner's prefix = %v, want refused", err)
	}
}
