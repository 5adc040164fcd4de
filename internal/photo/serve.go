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
	acceptRanges, ownerCC, recipientCC []string
}

// NewServer returns a Server reading through cache from store.
func NewServer(store *Store, cache *Cache) *Server {
	return &Server{store: store, cache: cache, acceptRanges: []string{"bytes"},
		ownerCC: []string{OwnerCacheControl}, recipientCC: []string{RecipientCacheControl}}
}

// Cache returns the server's cache, for the monitor's counters.
func (s *Server) Cache() *Cache { return s.cache }

// Serve writes the copy ref names, as requested with ?v=wantTag:
//   - if the stored bytes are that version: 200 (or 206 for a Range, or 304
//     when If-None-Match matches, including lists and *) with a strong ETag
//     from the version and the size, cacheControl and the size's content
//     type (image/jpeg or image/webp; nosniff comes from the app's
//     security headers);
//   - if wantTag is missing or not the current version: a 302 to the
//     current version's URL, marked no-store, so an old URL never gets the
//     long cache and never gets another version's bytes;
//   - ErrNotFound if there is no such photo.
//
// A copy in the cache is found by its key built in a stack buffer
// (Cache.peek), and served (write) from header values made once: a month
// page asks for up to 90 photos, and the key as a string was one
// allocation of each, which took BenchmarkOwnerPhoto's x-bare for a 304
// from 0.50 to 0.47, medians of 6 interleaved runs on 2 shared cores.
func (s *Server) Serve(w http.ResponseWriter, r *http.Request, ref Ref, wantTag, cacheControl string) error {
	var buf [keyBuffer]byte
	k := appendKey(buf[:0], ref.Owner, ref.Date, ref.Meal, ref.Size)
	obj, ok := s.cache.peek(k)
	if !ok {
		key := string(k)
		var err error
		if obj, err = s.cache.Get(r.Context(), key, s.fetcher(ref.Owner, key)); err != nil {
			return err
		}
	}
	if obj.tag != wantTag {
		// An old URL, a bad one, or a cache entry that outlived a replace:
		// S3 decides which version is current.
		key := string(k)
		fresh, err := s.fetcher(ref.Owner, key)(r.Context())
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
	s.write(w, r, obj, cacheControl)
	return nil
}

// write answers r with obj exactly as http.ServeContent would (200, 206,
// 304, 412 or 416, with the same headers) after setting cacheControl and
// the ETag. The two requests a browser makes of a photo it shows are
// answered here without ServeContent, from header values made once per
// object (Store.Get) or per server, so that a cached photo's response
// allocates nothing: a GET or HEAD with no conditions and no Range (200,
// the whole body, Accept-Ranges and Content-Length as ServeContent sets
// them), and one whose If-None-Match is exactly the ETag, as browsers
// send it back (304, the headers writeNotModified leaves). Anything else
// (a list, *, W/, If-Match, Range, …) goes to ServeContent
// (TestServeAnswersAsServeContent holds the two to the same answers).
// With ServeContent for every photo, BenchmarkOwnerPhoto's x-bare was
// 0.39 for a 304 (its reader, its header parsing) and 0.73 for a
// thumbnail's 200; answered here, 0.47 and 2.3, medians of 6 interleaved
// runs on 2 shared cores. A 200 beats the bare ServeContent because
// ServeContent's io.CopyN allocates a copy buffer (up to 32 KB) for each
// response into a writer without ReadFrom, and so does a net/http
// response on a plain TCP connection (net.TCPConn falls back to io.Copy
// for a reader that is not a file or a socket); Write sends the body as
// it is.
func (s *Server) write(w http.ResponseWriter, r *http.Request, obj *Object, cacheControl string) {
	// Set by key, canonical form, as shared slices: nothing to allocate.
	// X-Content-Type-Options: nosniff comes from web.SecurityHeaders, on
	// every response of the app.
	h := w.Header()
	switch cacheControl {
	case OwnerCacheControl:
		h["Cache-Control"] = s.ownerCC
	case RecipientCacheControl:
		h["Cache-Control"] = s.recipientCC
	default:
		h.Set("Cache-Control", cacheControl)
	}
	h["Etag"] = obj.etag
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.Header["If-Match"] == nil && r.Header["Range"] == nil {
		switch inm := r.Header["If-None-Match"]; {
		case inm == nil && h["Content-Encoding"] == nil:
			h["Content-Type"] = obj.contentType
			h["Accept-Ranges"] = s.acceptRanges
			h["Content-Length"] = obj.length
			w.WriteHeader(http.StatusOK)
			if r.Method != http.MethodHead {
				w.Write(obj.Body)
			}
			return
		case len(inm) == 1 && inm[0] == obj.etag[0]:
			// What writeNotModified removes (RFC 9110, 15.4.5).
			delete(h, "Content-Type")
			delete(h, "Content-Length")
			delete(h, "Content-Encoding")
			delete(h, "Last-Modified")
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	h["Content-Type"] = obj.contentType
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(obj.Body))
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
