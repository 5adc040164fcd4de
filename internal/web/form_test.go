package web

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
)

// repeat is an endless stream of one byte, for bodies of any size that
// take no memory.
type repeat byte

func (b repeat) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// urlencoded is a url-encoded body: n fields "fI=v", then, if pad > 0, a
// field "notes" of pad bytes.
func urlencoded(n int, pad int64) io.Reader {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "f%d=v&", i)
	}
	b.WriteString("notes=")
	return io.MultiReader(strings.NewReader(b.String()), io.LimitReader(repeat('x'), pad))
}

// multipartBody is a multipart/form-data body with boundary "B": n value
// parts, then a file part "photo" of pad bytes.
func multipartBody(n int, pad int64) io.Reader {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "--B\r\nContent-Disposition: form-data; name=\"f%d\"\r\n\r\nv\r\n", i)
	}
	b.WriteString("--B\r\nContent-Disposition: form-data; name=\"photo\"; filename=\"a.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n")
	return io.MultiReader(strings.NewReader(b.String()), io.LimitReader(repeat('x'), pad), strings.NewReader("\r\n--B--\r\n"))
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestFormLimits: a body over the limit is a 413 and too many fields a
// 400, whatever the content type, with or without a declared length; the
// handler never runs for either.
func TestFormLimits(t *testing.T) {
	t.Parallel()
	const mb = 1 << 20
	upload := FormLimits{MaxBytes: 25 * mb, MaxFields: MaxFormFields, MaxMemory: 8 * mb, TooLarge: "The form was larger than 25 MB. Choose a smaller photo."}
	small := FormLimits{MaxBytes: MaxFormBytes, MaxFields: MaxFormFields}
	const form, multi = "application/x-www-form-urlencoded", "multipart/form-data; boundary=B"
	for _, tc := range []struct {
		name     string
		limits   FormLimits
		ct       string
		body     func() io.Reader
		declared bool // send Content-Length; otherwise chunked
		// one byte a read, so a boundary is split across reads
		oneByte bool
		status  int
		msg     string
	}{
		{"26 MB url-encoded, chunked", upload, form, func() io.Reader { return urlencoded(1, 26*mb) }, false, false, 413, "The form was larger than 25 MB. Choose a smaller photo."},
		{"26 MB multipart, chunked", upload, multi, func() io.Reader { return multipartBody(1, 26*mb) }, false, false, 413, "The form was larger than 25 MB. Choose a smaller photo."},
		{"26 MB text/plain, chunked", upload, "text/plain", func() io.Reader { return io.LimitReader(repeat('x'), 26*mb) }, false, false, 413, "The form was larger than 25 MB. Choose a smaller photo."},
		{"26 MB with no content type, declared", upload, "", func() io.Reader { return io.LimitReader(repeat('x'), 26*mb) }, true, false, 413, "The form was larger than 25 MB. Choose a smaller photo."},
		{"65 KB url-encoded to a small form", small, form, func() io.Reader { return urlencoded(1, 65<<10) }, false, false, 413, "The form was larger than 64 KB, the most this page accepts."},
		{"10,000 url-encoded fields", upload, form, func() io.Reader { return urlencoded(10_000, 0) }, false, false, 400, "The form had more than 50 fields, the most this page accepts."},
		{"10,000 multipart fields", upload, multi, func() io.Reader { return multipartBody(10_000, 0) }, false, false, 400, "The form had more than 50 fields, the most this page accepts."},
		{"1,000 url-encoded fields to a small form", small, form, func() io.Reader { return urlencoded(1_000, 0) }, true, false, 400, "The form had more than 50 fields, the most this page accepts."},
		{"50 multipart parts, one byte a read", small, multi, func() io.Reader { return multipartBody(50, 10) }, false, true, 400, "The form had more than 50 fields, the most this page accepts."},
		{"small text/plain", small, "text/plain", func() io.Reader { return strings.NewReader("hello") }, true, false, 415, "This page accepts a web form (application/x-www-form-urlencoded or multipart/form-data) and nothing else."},
		{"multipart without a boundary", small, "multipart/form-data", func() io.Reader { return multipartBody(1, 1) }, true, false, 400, "The form could not be read. Please try again."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := testPages(t, io.Discard)
			ran := false
			h := p.Form(tc.limits)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }))
			body := &countingReader{r: tc.body()}
			var r io.Reader = body
			if tc.oneByte {
				r = iotest.OneByteReader(body)
			}
			req := httptest.NewRequest(http.MethodPost, "/x", r)
			req.ContentLength = -1
			if tc.declared {
				n, _ := io.Copy(io.Discard, tc.body())
				req.ContentLength = n
			}
			if tc.ct != "" {
				req.Header.Set("Content-Type", tc.ct)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Errorf("status = %d, want %d", rec.Code, tc.status)
			}
			if got := errorMessage(rec.Body.String()); got != tc.msg {
				t.Errorf("message = %q, want %q", got, tc.msg)
			}
			if ran {
				t.Error("the handler ran")
			}
			if body.n > tc.limits.MaxBytes+64<<10 {
				t.Errorf("read %d bytes of the body, want at most the limit (%d) and a buffer", body.n, tc.limits.MaxBytes)
			}
			if tc.declared && tc.status == 413 && body.n != 0 {
				t.Errorf("read %d bytes of a body declared too large, want 0", body.n)
			}
		})
	}
}

// errorMessage is the message of an error page of testPages.
func errorMessage(body string) string {
	_, after, _ := strings.Cut(body, "<p>")
	msg, _, _ := strings.Cut(after, "</p>")
	return msg
}

// TestFormWithinLimits: forms at the limits reach the handler with every
// field and file, and multipart temporary files are gone afterwards.
func TestFormWithinLimits(t *testing.T) {
	t.Parallel()
	const multi = "multipart/form-data; boundary=B"
	for _, tc := range []struct {
		name, ct string
		body     func() io.Reader
		oneByte  bool
		fields   int
		notes    int
	}{
		{"url-encoded: 49 fields and notes up to 64 KB", "application/x-www-form-urlencoded", func() io.Reader { return urlencoded(49, MaxFormBytes-600) }, false, 50, MaxFormBytes - 600},
		{"multipart: 49 fields and a file, one byte a read", multi, func() io.Reader { return multipartBody(49, 1000) }, true, 49, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := testPages(t, io.Discard)
			var got *http.Request
			h := p.Form(FormLimits{MaxBytes: MaxFormBytes, MaxFields: MaxFormFields, MaxMemory: 100})(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r }))
			r := tc.body()
			if tc.oneByte {
				r = iotest.OneByteReader(r)
			}
			req := httptest.NewRequest(http.MethodPost, "/x?q=1", r)
			req.ContentLength = -1
			req.Header.Set("Content-Type", tc.ct)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if got == nil {
				t.Fatalf("status = %d, want the handler to run", rec.Code)
			}
			if n := len(got.PostForm); n != tc.fields {
				t.Errorf("len(PostForm) = %d, want %d", n, tc.fields)
			}
			if got.Form.Get("q") != "1" || got.PostForm.Get("f48") != "v" {
				t.Errorf("Form q = %q, PostForm f48 = %q; want 1 and v", got.Form.Get("q"), got.PostForm.Get("f48"))
			}
			if n := len(got.PostForm.Get("notes")); n != tc.notes {
				t.Errorf("len(notes) = %d, want %d", n, tc.notes)
			}
			if got.ParseForm() != nil {
				t.Error("ParseForm after Form = error, want a no-op")
			}
			if tc.ct != multi {
				return
			}
			fh := got.MultipartForm.File["photo"]
			if len(fh) != 1 || fh[0].Size != 1000 {
				t.Fatalf("files = %v, want one photo of 1000 bytes", fh)
			}
			if _, err := fh[0].Open(); err == nil {
				t.Error("the upload's temporary file is still there after the handler returned")
			}
		})
	}
}
