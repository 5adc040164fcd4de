package server

import (
	"io"
	"net/http"

	"ndiro/internal/meal"
	"ndiro/internal/web"
)

// refuseWrites returns middleware that refuses every unsafe request (POST
// and the like) while health reports an error (local mode's storage
// refusing writes, localenv.Env.WriteHealth), with the 507 page of
// web.Pages.Error, before the route reads the form: an upload is neither
// spooled, decoded nor written, and nothing is half-done. The unread body
// is drained, up to the largest form a route takes (meal.MaxFormBytes), so
// that the client hears the answer instead of a reset mid-upload. Reads
// pass. A nil health refuses nothing (AWS mode).
func refuseWrites(pages *web.Pages, health func() error) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if health == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.Method {
			case http.MethodGet, http.MethodHead, http.MethodOptions:
				next.ServeHTTP(w, r)
				return
			}
			err := health()
			if err == nil {
				next.ServeHTTP(w, r)
				return
			}
			if r.ContentLength <= meal.MaxFormBytes {
				io.Copy(io.Discard, io.LimitReader(r.Body, meal.MaxFormBytes))
			}
			pages.Error(w, r, err)
		})
	}
}
