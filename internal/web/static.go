package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// Static serves embedded static files under /static/. URLs carry a content
// digest (?v=), so a file can be cached for a year and a new build still
// reaches every browser at once.
type Static struct {
	files map[string][]byte
	sums  map[string]string
	// NotFound answers a name that is no static file; nil is
	// http.NotFound. The server sets its error page.
	NotFound http.HandlerFunc
}

// contentTypes are the types of static files Go's mime table may not
// know.
var contentTypes = map[string]string{
	".webmanifest": "application/manifest+json",
}

// NewStatic reads every file of fsys and digests it.
func NewStatic(fsys fs.FS) (*Static, error) {
	s := &Static{files: map[string][]byte{}, sums: map[string]string{}}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(name) == ".go" {
			return err
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		s.files[name] = b
		s.sums[name] = hex.EncodeToString(sum[:6])
		return nil
	})
	return s, err
}

// Add puts a file made at start among the static files, digested like the
// others (the web app manifest, which names the icons' versioned URLs).
// It must be called before the first URL of name is asked for.
func (s *Static) Add(name string, b []byte) {
	sum := sha256.Sum256(b)
	s.files[name] = b
	s.sums[name] = hex.EncodeToString(sum[:6])
}

// URL returns the versioned URL of a static file, e.g.
// "/static/app.css?v=1a2b3c4d5e6f"; an unknown name panics at template
// execution, which Render turns into a 500 in tests long before production.
func (s *Static) URL(name string) string {
	sum, ok := s.sums[name]
	if !ok {
		panic("web: no static file " + name)
	}
	return "/static/" + name + "?v=" + sum
}

// ServeHTTP serves /static/{name}. With the current ?v= it is immutable for
// a year; otherwise it must be revalidated.
func (s *Static) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, strings.TrimPrefix(r.URL.Path, "/static/"))
}

// File serves the static file name at an address of its own (the web app
// manifest at /manifest.webmanifest), cached as under /static/.
func (s *Static) File(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, name) }
}

func (s *Static) serve(w http.ResponseWriter, r *http.Request, name string) {
	b, ok := s.files[name]
	if !ok {
		if s.NotFound != nil {
			s.NotFound(w, r)
			return
		}
		http.NotFound(w, r)
		return
	}
	if r.URL.Query().Get("v") == s.sums[name] {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	// Weak: the same file goes gzipped or plain (Compress), whose bytes
	// differ, and a strong ETag promises the same bytes. If-None-Match
	// compares weakly, so revalidation gets its 304 either way.
	w.Header().Set("ETag", `W/"`+s.sums[name]+`"`)
	if ct, ok := contentTypes[path.Ext(name)]; ok {
		w.Header().Set("Content-Type", ct)
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
}
