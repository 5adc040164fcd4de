package web

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/go-chi/chi/v5/middleware"
)

// Viewer is who is looking at a page, as the layout needs it. The zero value
// is an anonymous visitor.
type Viewer struct {
	SignedIn bool
	Email    string
	IsAdmin  bool
}

// Base is embedded in every page's data struct; Render fills Viewer and
// RequestID. Title is the page title without the " · ndiro" suffix.
type Base struct {
	Title     string
	Viewer    Viewer
	Flash     string
	RequestID string
	// Path is the request's path, to mark the current navigation link.
	Path string
	// Unlisted marks a page reached through a secret link (a share): the
	// layout asks robots not to index or follow it, and Render neither
	// shows nor clears a flash message, so the response sets no cookie.
	Unlisted bool
}

func (b *Base) base() *Base { return b }

// Page is any data struct embedding Base, passed by pointer.
type Page interface{ base() *Base }

// Field is one form input as a partial template needs it.
type Field struct{ Name, Label, Value, Err string }

// Pages renders the templates of templates/: every page is parsed with
// base.html and partials/*.html at start, so a broken template stops
// start-up instead of failing a request.
type Pages struct {
	tmpl   map[string]*template.Template
	viewer func(*http.Request) Viewer
	log    *slog.Logger
}

// baseFuncs are the template functions: few, pure, formatting only.
var baseFuncs = template.FuncMap{
	// numfield bundles one form input's name, label, value and error for
	// the "numfield" partial.
	"numfield": func(name, label, value, err string) Field {
		return Field{Name: name, Label: label, Value: value, Err: err}
	},
	"date": func(t time.Time) string { return t.Format("2 Jan 2006") },
	"datetime": func(t time.Time) string {
		return t.UTC().Format("2 Jan 2006 15:04 UTC")
	},
}

// NewPages parses every page under fsys (names like "invite/list" for
// invite/list.html). viewer tells the layout who is signed in; it may be nil.
// It returns an error naming the first template that does not parse.
// static gives the versioned URLs of static files ({{static "app.css"}}).
func NewPages(fsys fs.FS, static *Static, viewer func(*http.Request) Viewer, log *slog.Logger) (*Pages, error) {
	p := &Pages{tmpl: map[string]*template.Template{}, viewer: viewer, log: log}
	funcs := template.FuncMap{"static": static.URL}
	for k, v := range baseFuncs {
		funcs[k] = v
	}
	partials, err := fs.Glob(fsys, "partials/*.html")
	if err != nil {
		return nil, err
	}
	err = fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || path.Ext(name) != ".html" || name == "base.html" || strings.HasPrefix(name, "partials/") {
			return nil
		}
		files := append([]string{"base.html"}, partials...)
		files = append(files, name)
		t, err := template.New("base.html").Funcs(funcs).ParseFS(fsys, files...)
		if err != nil {
			return fmt.Errorf("web: template %s: %w", name, err)
		}
		p.tmpl[strings.TrimSuffix(name, ".html")] = t
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, ok := p.tmpl["errors/error"]; !ok {
		return nil, fmt.Errorf("web: template errors/error.html is missing")
	}
	return p, nil
}

// Render executes page name with data into a buffer and, only if that
// succeeds, writes it with status. A template error is returned (and becomes
// a clean 500), never half a page.
func (p *Pages) Render(w http.ResponseWriter, r *http.Request, status int, name string, data Page) error {
	t, ok := p.tmpl[name]
	if !ok {
		return fmt.Errorf("web: no template %q", name)
	}
	b := data.base()
	if p.viewer != nil && !b.Viewer.SignedIn {
		b.Viewer = p.viewer(r)
	}
	b.RequestID = middleware.GetReqID(r.Context())
	b.Path = r.URL.Path
	if b.Flash == "" && status < 400 && !b.Unlisted {
		b.Flash = takeFlash(w, r)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return fmt.Errorf("web: render %s: %w", name, err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	_, err := buf.WriteTo(w)
	return err
}

// errorPage is the data of errors/error.html.
type errorPage struct {
	Base
	Status  int
	Message string
}

// Handle adapts a handler that returns an error. A *Error is shown with its
// status, heading and message; any other error becomes a generic 500 page and
// is logged with the request id. Errors after the response started are only
// logged.
func (p *Pages) Handle(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			p.Error(w, r, err)
		}
	}
}

// Error writes the error page for err, as Handle does.
func (p *Pages) Error(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := AsError(err)
	if !ok {
		e = &Error{Status: http.StatusInternalServerError, Msg: "Something went wrong on our side. Please try again in a moment.", Err: err}
	}
	attrs := []any{"status", e.Status, "request_id", middleware.GetReqID(r.Context()), "route", RoutePattern(r)}
	if e.Err != nil {
		attrs = append(attrs, "err", e.Err)
	}
	if e.Status >= 500 {
		p.log.Error("request failed", attrs...)
	} else if e.Err != nil {
		p.log.Info("request refused", attrs...)
	}
	title := e.Title
	if title == "" {
		title = http.StatusText(e.Status)
	}
	data := &errorPage{Base: Base{Title: title}, Status: e.Status, Message: e.Msg}
	if rerr := p.Render(w, r, e.Status, "errors/error", data); rerr != nil {
		p.log.Error("error page failed", "err", rerr)
		http.Error(w, e.Msg, e.Status)
	}
}

// Redirect answers with 303 See Other to a local path: the right reply after
// a POST, so a reload does not resubmit.
func Redirect(w http.ResponseWriter, r *http.Request, to string) {
	http.Redirect(w, r, to, http.StatusSeeOther)
}
