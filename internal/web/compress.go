package web

import (
	"compress/gzip"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5/middleware"
)

// compressedTypes are the response types Compress gzips: the pages, the
// styles and scripts, the manifest and SVG icons. Photos (already JPEG), the export
// zip and anything else go as they are.
var compressedTypes = []string{
	"text/html", "text/css", "text/javascript", "application/manifest+json", "image/svg+xml",
}

// Compress gzips responses of compressedTypes for clients that accept it
// (chi's compressor, with Vary: Accept-Encoding): a 90-meal month page of
// 40 KB goes as 4.3 KB, which is what a phone on a slow network waits for
// before the first thumbnail. gzip.BestSpeed: it costs the month page
// about 0.1 ms more than no gzip (BenchmarkMonthPage/app-gzip); the default
// level would save 0.7 KB more for 0.3 ms. A request
// with a Range header is answered uncompressed, so a partial answer always
// matches its Content-Range; so are a client that refuses gzip (q=0) and a
// HEAD (whose Content-Length would otherwise be that of an empty gzip
// stream). Every answer says Vary: Accept-Encoding. ETags of what may go
// gzipped must be weak (Static's are): the two encodings' bytes differ.
//
// Compressing pages that hold secrets (share and invite links) next to
// text an attacker chose could leak the secrets through the compressed
// size (BREACH). It needs the attacker to make the victim's browser send
// many signed-in requests and to see their sizes; the session cookie is
// SameSite=Lax, so another site cannot send signed-in requests other than
// top-level navigations, and pages hold no other secret of the session.
func Compress() func(http.Handler) http.Handler {
	gz := middleware.Compress(gzip.BestSpeed, compressedTypes...)
	return func(next http.Handler) http.Handler {
		zipped := gz(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Add("Vary", "Accept-Encoding") // a 304 and a plain answer too
			if r.Method == http.MethodHead || r.Header.Get("Range") != "" || !acceptsGzip(r.Header.Values("Accept-Encoding")) {
				next.ServeHTTP(w, r)
				return
			}
			zipped.ServeHTTP(varyOnce{w}, r)
		})
	}
}

// acceptsGzip reports whether Accept-Encoding values (RFC 9110 12.5.3)
// accept gzip: named, or by "*", with a q above 0.
func acceptsGzip(values []string) bool {
	star := false
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(item, ";")
			name = strings.TrimSpace(name)
			isStar := name == "*"
			if !isStar && !strings.EqualFold(name, "gzip") && !strings.EqualFold(name, "x-gzip") {
				continue
			}
			ok := true
			for p := range strings.SplitSeq(params, ";") {
				k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(k, "q") {
					if q, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil && q <= 0 {
						ok = false
					}
				}
			}
			if !isStar {
				return ok
			}
			star = ok
		}
	}
	return star
}

// varyOnce is the ResponseWriter under the compressor, which adds its own
// Vary: Accept-Encoding when it compresses: the header goes out once.
type varyOnce struct{ http.ResponseWriter }

func (w varyOnce) WriteHeader(code int) {
	h := w.Header()
	if v := h.Values("Vary"); len(v) > 1 {
		h["Vary"] = slices.Compact(slices.Sorted(slices.Values(v)))
	}
	w.ResponseWriter.WriteHeader(code)
}

// Flush passes a flush on (the export streams through here).
func (w varyOnce) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap gives http.ResponseController the writer underneath.
func (w varyOnce) Unwrap() http.ResponseWriter { return w.ResponseWriter }
