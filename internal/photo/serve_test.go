package photo_test

import (
	"bytes"
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
	ref := photo.Ref{Owner: "owner", Date: "2026-09-01", Meal: "123000-abcdef", Size: photo.SizeThumb}
	key := photo.Key(ref.Owner, ref.Date, ref.Meal, ref.Size)
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
			if err := srv.Serve(rec, req, ref, v.Tag(), photo.OwnerCacheControl); err != nil {
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

// TestServeAnswersAsServeContent: whatever a request asks (conditions,
// ranges, HEAD) and whatever the headers already hold, Serve answers a
// current copy with the status, headers and body http.ServeContent gives
// it under the same ETag, Cache-Control and Content-Type, including the
// requests it answers without ServeContent (a plain GET or HEAD, and an
// If-None-Match that is exactly the ETag), from the cache and cold.
func TestServeAnswersAsServeContent(t *testing.T) {
	t.Parallel()
	env, _ := apptest.Local(t)
	store := photo.NewStore(env.S3, "test-photos")
	ref := photo.Ref{Owner: "owner", Date: "2026-09-01", Meal: "123000-abcdef", Size: photo.SizeThumb}
	key := photo.Key(ref.Owner, ref.Date, ref.Meal, ref.Size)
	body := apptest.Photo(t, "small.jpg")
	v := photo.Version(42)
	if err := store.Put(t.Context(), key, body, v); err != nil {
		t.Fatal(err)
	}
	etag := `"` + v.Tag() + `-thumb"`
	reference := func(w http.ResponseWriter, r *http.Request, cacheControl string) {
		w.Header().Set("Cache-Control", cacheControl)
		w.Header().Set("ETag", etag)
		w.Header().Set("Content-Type", "image/jpeg")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	}
	for _, tc := range []struct {
		name    string
		method  string
		headers map[string][]string // of the request
		preset  map[string]string   // already in the response's headers
	}{
		{name: "plain GET"},
		{name: "plain HEAD", method: http.MethodHead},
		{name: "If-None-Match the ETag", headers: map[string][]string{"If-None-Match": {etag}}},
		{name: "HEAD If-None-Match the ETag", method: http.MethodHead, headers: map[string][]string{"If-None-Match": {etag}}},
		{name: "If-None-Match a list holding the ETag", headers: map[string][]string{"If-None-Match": {`"other", ` + etag}}},
		{name: "If-None-Match *", headers: map[string][]string{"If-None-Match": {"*"}}},
		{name: "If-None-Match weak", headers: map[string][]string{"If-None-Match": {"W/" + etag}}},
		{name: "If-None-Match another", headers: map[string][]string{"If-None-Match": {`"other"`}}},
		{name: "If-None-Match on two lines", headers: map[string][]string{"If-None-Match": {`"other"`, etag}}},
		{name: "If-None-Match the ETag on the second line", headers: map[string][]string{"If-None-Match": {etag, `"other"`}}},
		{name: "If-None-Match empty", headers: map[string][]string{"If-None-Match": {""}}},
		{name: "If-Match the ETag", headers: map[string][]string{"If-Match": {etag}}},
		{name: "If-Match another", headers: map[string][]string{"If-Match": {`"other"`}}},
		{name: "If-Match another, If-None-Match the ETag", headers: map[string][]string{"If-Match": {`"other"`}, "If-None-Match": {etag}}},
		{name: "Range", headers: map[string][]string{"Range": {"bytes=0-99"}}},
		{name: "Range past the end", headers: map[string][]string{"Range": {"bytes=999999999-"}}},
		{name: "two ranges", headers: map[string][]string{"Range": {"bytes=0-9,20-29"}}},
		{name: "Range, If-Range another", headers: map[string][]string{"Range": {"bytes=0-99"}, "If-Range": {`"other"`}}},
		{name: "Range, If-None-Match the ETag", headers: map[string][]string{"Range": {"bytes=0-99"}, "If-None-Match": {etag}}},
		{name: "If-Modified-Since", headers: map[string][]string{"If-Modified-Since": {"Mon, 01 Jan 2024 00:00:00 GMT"}}},
		{name: "If-Unmodified-Since", headers: map[string][]string{"If-Unmodified-Since": {"Mon, 01 Jan 2024 00:00:00 GMT"}}},
		{name: "POST", method: http.MethodPost},
		{name: "POST If-None-Match the ETag", method: http.MethodPost, headers: map[string][]string{"If-None-Match": {etag}}},
		{name: "Content-Encoding already set", preset: map[string]string{"Content-Encoding": "identity"}},
		{name: "304 with headers already set", headers: map[string][]string{"If-None-Match": {etag}},
			preset: map[string]string{"Content-Encoding": "identity", "Content-Length": "1", "Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT", "Content-Type": "text/plain"}},
	} {
		for _, cc := range []string{photo.OwnerCacheControl, photo.RecipientCacheControl, "no-cache"} {
			srv := photo.NewServer(store, photo.NewCache(1<<20))
			for _, cache := range []string{"cold", "cached"} {
				t.Run(tc.name+"/"+cc+"/"+cache, func(t *testing.T) {
					method := tc.method
					if method == "" {
						method = http.MethodGet
					}
					req := func() *http.Request {
						r := httptest.NewRequest(method, "/photo/2026-09-01/123000-abcdef?v="+v.Tag()+"&size=thumb", nil)
						maps.Copy(r.Header, tc.headers)
						return r
					}
					got, want := httptest.NewRecorder(), httptest.NewRecorder()
					for k, v := range tc.preset {
						got.Header().Set(k, v)
						want.Header().Set(k, v)
					}
					if err := srv.Serve(got, req(), ref, v.Tag(), cc); err != nil {
						t.Fatal(err)
					}
					reference(want, req(), cc)
					if got.Code != want.Code {
						t.Errorf("status %d, want %d", got.Code, want.Code)
					}
					gotH, gotBody := sameBoundary(got)
					wantH, wantBody := sameBoundary(want)
					if diff := cmp.Diff(wantH, gotH); diff != "" {
						t.Errorf("headers (-ServeContent +Serve):\n%s", diff)
					}
					if !bytes.Equal(gotBody, wantBody) {
						t.Errorf("body of %d bytes, want %d", len(gotBody), len(wantBody))
					}
				})
			}
		}
	}
}

// sameBoundary returns the headers and body rec recorded with the random
// boundary of a multipart/byteranges answer replaced by "BOUNDARY", so two
// such answers compare equal when their parts are.
func sameBoundary(rec *httptest.ResponseRecorder) (http.Header, []byte) {
	h, body := rec.Result().Header, rec.Body.Bytes()
	const prefix = "multipart/byteranges; boundary="
	if b, ok := strings.CutPrefix(h.Get("Content-Type"), prefix); ok {
		h.Set("Content-Type", prefix+"BOUNDARY")
		body = bytes.ReplaceAll(body, []byte(b), []byte("BOUNDARY"))
	}
	return h, body
}

// TestServeCachedAllocatesNothing: a cached copy, asked for as a browser
// shows a photo (a plain GET, a revalidation with its ETag), is found and
// answered without one allocation: a month page asks for up to 90
// (BenchmarkOwnerPhoto).
func TestServeCachedAllocatesNothing(t *testing.T) {
	env, _ := apptest.Local(t)
	store := photo.NewStore(env.S3, "test-photos")
	ref := photo.Ref{Owner: "105283345012345678901", Date: "2026-09-01", Meal: "123000-abcdef", Size: photo.SizeThumb}
	v := photo.Version(42)
	if err := store.Put(t.Context(), photo.Key(ref.Owner, ref.Date, ref.Meal, ref.Size), apptest.Photo(t, "small.jpg"), v); err != nil {
		t.Fatal(err)
	}
	srv := photo.NewServer(store, photo.NewCache(1<<20))
	tag := v.Tag()
	for _, tc := range []struct {
		name string
		inm  string
		want int
	}{{"200", "", http.StatusOK}, {"304", `"` + tag + `-thumb"`, http.StatusNotModified}} {
		req := httptest.NewRequest(http.MethodGet, "/photo/2026-09-01/123000-abcdef?v="+tag+"&size=thumb", nil)
		if tc.inm != "" {
			req.Header.Set("If-None-Match", tc.inm)
		}
		w := &discard{h: http.Header{}}
		serve := func() {
			if err := srv.Serve(w, req, ref, tag, photo.OwnerCacheControl); err != nil {
				t.Fatal(err)
			}
		}
		serve() // cached now, and w's header map holds every key it will
		if w.code != tc.want {
			t.Fatalf("%s: status %d, want %d", tc.name, w.code, tc.want)
		}
		if n := testing.AllocsPerRun(100, serve); n != 0 {
			t.Errorf("%s: %v allocations a request, want 0", tc.name, n)
		}
	}
}

// discard is a ResponseWriter that keeps one header map across requests,
// so that assigning to it allocates nothing, and drops the body.
type discard struct {
	h    http.Header
	code int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(code int)        { d.code = code }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
