package server

import (
	"io"
	"net/http"

	"ndiro/internal/meal"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// refuseFull returns middleware for the routes that add meals (a new
// meal, an import): an account at a bound of quota (user.Quota.Refuse:
// its meals, or its photos' bytes) gets the 403 page before the route
// reads the body, so nothing is spooled, decoded or written. The check
// reads the users row the guard put in the request's context: no
// storage call. An unread body of at most a meal form's size is drained,
// as refuseWrites does, so that the client hears the answer.
func refuseFull(pages *web.Pages, quota user.Quota) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var err error
			if u := user.FromContext(r.Context()); u != nil {
				err = quota.Refuse(u.Usage, false)
			}
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
