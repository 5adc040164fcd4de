package server_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
)

// TestCompression: pages, styles, scripts and the manifest go gzipped to a
// client that accepts it, and unzip to exactly what a client that does not
// gets; photos, the export zip and a Range request go as they are.
func TestCompression(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	c.SignIn("admin@example.com")
	form := url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}, "notes": {"soup"}}
	if r := c.PostMultipart("/meals", form, apptest.File{Field: "photo", Name: "s.jpg", Body: apptest.Photo(t, "small.jpg")}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("add meal = %d", r.StatusCode)
	}
	ms, err := app.Meals.All(t.Context(), localenv.Subject("admin@example.com"))
	if err != nil || len(ms) != 1 {
		t.Fatalf("meals = %v, %v", ms, err)
	}
	c.Get("/meals?month=2026-09") // shows "Meal saved." once
	tok := c.CreateShare(url.Values{"label": {"x"}, "from": {"2026-09-01"}, "to": {"2026-09-02"}, "expiry": {"never"}})
	m := ms[0]
	get := func(path, encoding string, header ...string) *apptest.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, app.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept-Encoding", encoding) // set, so the client does not unzip
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		r := c.Do(req)
		if r.StatusCode != http.StatusOK && r.StatusCode != http.StatusPartialContent {
			t.Fatalf("GET %s = %d", path, r.StatusCode)
		}
		return r
	}
	for _, tc := range []struct {
		path   string
		zipped bool
	}{
		{"/meals?month=2026-09", true},
		{ms[0].DetailURL(), true},
		{"/static/app.css", true},
		{"/static/upload.js", true},
		{"/manifest.webmanifest", true},
		{"/s/" + tok, true},
		{"/s/" + tok + "/photo/" + m.Date + "/" + m.ID + "?v=" + m.PhotoV.Tag() + "&size=thumb", false},
		{ms[0].ThumbURL(), false},
		{ms[0].DisplayURL(), false},
		{"/static/icon-192.png", false},
		{"/account/export.zip", false},
	} {
		plain := get(tc.path, "identity")
		r := get(tc.path, "gzip, deflate, br")
		if plain.Header.Get("Content-Encoding") != "" {
			t.Errorf("%s to a client without gzip: Content-Encoding %q", tc.path, plain.Header.Get("Content-Encoding"))
		}
		if !tc.zipped {
			if ce := r.Header.Get("Content-Encoding"); ce != "" {
				t.Errorf("%s: Content-Encoding %q, want none", tc.path, ce)
			}
			continue
		}
		if ce, vary := r.Header.Get("Content-Encoding"), r.Header.Values("Vary"); ce != "gzip" || !slices.Contains(vary, "Accept-Encoding") {
			t.Errorf("%s: Content-Encoding %q, Vary %q; want gzip, Accept-Encoding", tc.path, ce, vary)
			continue
		}
		zr, err := gzip.NewReader(bytes.NewReader([]byte(r.Body)))
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		body, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%s: unzip: %v", tc.path, err)
		}
		if string(body) != plain.Body {
			t.Errorf("%s: unzips to %d bytes that differ from the %d plain ones", tc.path, len(body), len(plain.Body))
		}
		if len(r.Body) >= len(plain.Body) {
			t.Errorf("%s: %d bytes gzipped, %d plain", tc.path, len(r.Body), len(plain.Body))
		}
	}
	// Both encodings carry the same weak ETag, and revalidating either
	// gets a 304 with that ETag and Vary, as a 200 would have.
	plain, zipped := get("/static/app.css", "identity"), get("/static/app.css", "gzip")
	etag := plain.Header.Get("ETag")
	if !strings.HasPrefix(etag, `W/"`) || zipped.Header.Get("ETag") != etag {
		t.Errorf("ETags: plain %q, gzipped %q; want one weak ETag", etag, zipped.Header.Get("ETag"))
	}
	for _, enc := range []string{"gzip", "identity"} {
		req, _ := http.NewRequest(http.MethodGet, app.URL+"/static/app.css", nil)
		req.Header.Set("Accept-Encoding", enc)
		req.Header.Set("If-None-Match", etag)
		r := c.Do(req)
		if r.StatusCode != http.StatusNotModified || r.Header.Get("ETag") != etag || !slices.Equal(r.Header.Values("Vary"), []string{"Accept-Encoding"}) {
			t.Errorf("%s revalidation = %d, ETag %q, Vary %q; want 304, %q, Accept-Encoding", enc, r.StatusCode, r.Header.Get("ETag"), r.Header.Values("Vary"), etag)
		}
	}
	if v := zipped.Header.Values("Vary"); len(v) != 1 || v[0] != "Accept-Encoding" {
		t.Errorf("gzipped Vary = %q, want Accept-Encoding once", v)
	}
	// HEAD is answered plain: its Content-Length is the plain one's.
	head, _ := http.NewRequest(http.MethodHead, app.URL+"/static/app.css", nil)
	head.Header.Set("Accept-Encoding", "gzip")
	if r := c.Do(head); r.Header.Get("Content-Encoding") != "" || r.ContentLength != int64(len(plain.Body)) {
		t.Errorf("HEAD: Content-Encoding %q, Content-Length %d; want none and %d", r.Header.Get("Content-Encoding"), r.ContentLength, len(plain.Body))
	}
	// A client that refuses gzip gets it plain.
	if r := get("/meals?month=2026-09", "gzip;q=0, identity"); r.Header.Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0: Content-Encoding %q, want none", r.Header.Get("Content-Encoding"))
	}
	// A Range request gets the bytes its Content-Range names.
	r := get("/static/app.css", "gzip", "Range", "bytes=0-9")
	if r.StatusCode != http.StatusPartialContent || r.Header.Get("Content-Encoding") != "" || len(r.Body) != 10 {
		t.Errorf("Range request = %d, Content-Encoding %q, %d bytes; want 206, none, 10", r.StatusCode, r.Header.Get("Content-Encoding"), len(r.Body))
	}
}

// TestStaticNotFound: an unknown static file gets the app's error page,
// not Go's plain-text 404.
func TestStaticNotFound(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	r := app.Client().Get("/static/nope.css")
	if r.StatusCode != http.StatusNotFound || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") || r.Text("main p") != "There is no such file." {
		t.Errorf("GET /static/nope.css = %d %q, %q; want 404 with the error page", r.StatusCode, r.Header.Get("Content-Type"), r.Text("main p"))
	}
}
