package web

import (
	"compress/gzip"
	"net/http"

	"github.com/go-chi/chi/v5/middleware"
)

// CompressedTypes are the response types Compress gzips: the pages, the
// styles and scripts, the manifest and SVG icons. Photos (already JPEG), the export
// zip and anything else go as they are.
var CompressedTypes = []string{
	"text/html", "text/css", "text/javascript", "application/manifest+json", "image/svg+xml",
}

// Compress gzips responses of CompressedTypes for clients that accept it
// (chi's compressor, with Vary: Accept-Encoding): a 90-meal month page of
// 40 KB goes as 4.3 KB, which is what a phone on a slow network waits for
// before the first thumbnail. gzip.BestSpeed: it costs the month page
// about 0.1 ms more than no gzip (BenchmarkMonthPage/app-gzip); the default
// level would save 0.7 KB more for 0.3 ms. A request
// with a Range header is answered uncompressed, so a partial answer always
// matches its Content-Range.
//
// Compressing pages that hold secrets (share and invite links) next to
// text an attacker chose could leak the secrets through the compressed
// size (BREACH). It needs the attacker to make the victim's browser send
// many signed-in requests and to see their sizes; the session cookie is
// SameSite=Lax, so another site cannot send signed-in requests other than
// top-level navigations, and pages hold no other secret of the session.
func Compress() func(http.Handler) http.Handler {
	gz := middleware.Compress(gzip.BestSpeed, CompressedTypes...)
	return func(next http.Handler) http.Handler {
		zipped := gz(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Range") != "" {
				next.ServeHTTP(w, r)
				return
			}
			zipped.ServeHTTP(w, r)
		})
	}
}
