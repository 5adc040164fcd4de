package photo

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"
)

// Cache-Control values of photo responses (DESIGN.md, caching). A versioned
// URL never changes its bytes, so owners keep it a year without asking
// again. Share recipients may keep the bytes but must revalidate on every
// view (a cheap 304 with the strong ETag while the share holds), so a
// revoked or expired link stops showing photos at once, even in a browser
// that cached them.
const (
	OwnerCacheControl     = "private, max-age=31536000, immutable"
	RecipientCacheControl = "private, no-cache"
)

// Server serves photo copies through the cache.
type Server struct {
	store *Store
	cache *Cache
	// Header values every photo response carries, as ready slices: a
	// cached photo's response then allocates nothing to set them.
	jpegType, webpType, ownerCC, recipientCC []string
}

// NewServer returns a Server reading through cache from store.
func NewServer(store *Store, cache *Cache) *Server {
	return &Server{store: store, cache: cache, jpegType: []string{"image/jpeg"}, webpType: []string{"image/webp"},
		ownerCC: []string{OwnerCacheControl}, recipientCC: []string{RecipientCacheControl}}
}

// Cache returns the server's cache, for the monitor's counters.
func (s *Server) Cache() *Cache { return s.cache }

// Serve writes the copy at key, which must lie under ownerID's prefix, as
// requested with ?v=wantTag:
//   - if the stored bytes are that version: 200 (or 206 for a Range, or 304
//     when If-None-Match matches, including lists and *) with a strong ETag
//     from the version and the size, cacheControl and the size's content
//     type (image/jpeg or image/webp; nosniff comes from the app's
//     security headers);
//   - if wantTag is missing or not the current version: a 302 to the
//     current version's URL, marked no-store, so an old URL never gets the
//     long cache and never gets another version's bytes;
//   - ErrNotFound if there is no such photo.
func (s *Server) Serve(w http.ResponseWriter, r *http.Request, ownerID, key, wantTag, cacheControl string) error {
	obj, ok := s.cache.Peek(key)
	if !ok {
		var err error
		if obj, err = s.cache.Get(r.Context(), key, s.fetcher(ownerID, key)); err != nil {
			return err
		}
	}
	if obj.tag != wantTag {
		// An old URL, a bad one, or a cache entry that outlived a replace:
		// S3 decides which version is current.
		fresh, err := s.fetcher(ownerID, key)(r.Context())
		if err != nil {
			return err
		}
		if fresh.Version != obj.Version {
			s.cache.Forget(key)
		}
		if fresh.Version.Tag() != wantTag {
			// The canonical URL: ?v= first, then the size, nothing else.
			to := r.URL.Path + "?v=" + fresh.Version.Tag()
			if size := r.URL.Query().Get("size"); size != "" {
				to += "&size=" + url.QueryEscape(size)
			}
			w.Header().Set("Cache-Control", "no-store")
			http.Redirect(w, r, to, http.StatusFound)
			return nil
		}
		obj = fresh
	}
	// Set by key, canonical form, as shared slices: nothing to allocate.
	// X-Content-Type-Options: nosniff comes from web.SecurityHeaders, on
	// every response of the app.
	h := w.Header()
	h["Content-Type"] = s.jpegType
	if obj.contentType == "image/webp" {
		h["Content-Type"] = s.webpType
	}
	switch cacheControl {
	case OwnerCacheControl:
		h["Cache-Control"] = s.ownerCC
	case RecipientCacheControl:
		h["Cache-Control"] = s.recipientCC
	default:
		h.Set("Cache-Control", cacheControl)
	}
	h["Etag"] = obj.etag
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(obj.Body))
	return nil
}

// fetcher reads the copy at key, under ownerID's prefix, from the bucket.
func (s *Server) fetcher(ownerID, key string) func(context.Context) (*Object, error) {
	return func(ctx context.Context) (*Object, error) { return s.store.Get(ctx, ownerID, key) }
}

// etag is the strong ETag of the copy of size under version tag:
// "tag-thumb", "tag-display", "tag-t320.webp", quotes included.
func etag(tag string, size Size) string {
	return `"` + tag + "-" + string(size) + `"`
}

// IsNotFound reports whether err means the photo does not exist (or lies
// outside the owner's prefix, which looks the same from outside).
func IsNotFound(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrOutsidePrefix)
}
