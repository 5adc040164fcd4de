package web

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/go-chi/chi/v5/middleware"

	"ndiro/internal/storage"
)

// Viewer is who is looking at a page, as the layout needs it. The zero value
// is an anonymous visitor.
type Viewer struct {
	SignedIn bool
	Email    string
	IsAdmin  bool
	// UserHash stands for the signed-in user on this device, never their
	// ID or e-mail: the service worker keys its page cache by it and the
	// offline outbox binds each queued meal to it (auth.UserHash). Render
	// sends it as UserHashHeader and the layout as a meta tag.
	UserHash string
}

// Clear-Site-Data values (W3C Clear Site Data) for the end of a sign-in
// (auth.Handler.Logout, account.Handler.Deleted): the HTTP cache alone,
// or with it every storage of the origin (CacheStorage, IndexedDB,
// service worker registrations). Cookies are left: the session ends on
// the server.
const (
	ClearCache           = `"cache"`
	ClearCacheAndStorage = `"cache", "storage"`
)

// UserHashHeader carries Viewer.UserHash on every page a signed-in user
// gets, for the service worker (static/sw.js), which sees a navigation's
// headers but not its page's meta tags before it caches it. Its absence
// on an owner page's navigation means nobody is signed in.
const UserHashHeader = "X-Ndiro-User"

// Base is embedded in every page's data struct; Render fills Viewer,
// RequestID, Path, Page, Provider and Nav. Title is the page title without the
// " · ndiro" suffix.
type Base struct {
	Title     string
	Viewer    Viewer
	Flash     string
	RequestID string
	// Path is the request's path, to mark the current admin tab.
	Path string
	// Page is the template's name, e.g. "meal/list", written on <body> as
	// data-page for styles and tests.
	Page string
	// Provider is the sign-in provider's name for "Sign in with …"
	// (NDIRO_OIDC_NAME).
	Provider string
	// Unlisted marks a page reached through a secret link (a share): the
	// layout asks robots not to index or follow it, and Render neither
	// shows nor clears a flash message, so the response sets no cookie.
	Unlisted bool
	// Nav is the header's main navigation for a signed-in viewer, with the
	// link of the page's section marked current; Render fills it (nav.go).
	Nav []NavLink
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
	tmpl     map[string]*template.Template
	viewer   func(*http.Request) Viewer
	provider string
	log      *slog.Logger
	// internalError is the 500 page rendered at start, for when rendering
	// itself fails.
	internalError []byte
	// secure marks the cookies of pages and flash messages Secure.
	secure bool
}

// SecureCookies sets whether the cookies Pages writes (the flash message,
// see SetFlash) carry Secure: on (the default) everywhere but local mode,
// which serves plain http on loopback. Call it before serving.
func (p *Pages) SecureCookies(on bool) { p.secure = on }

// internalErrorMsg is what a 500 page says: nothing of the cause.
const internalErrorMsg = "Something went wrong on our side. Please try again in a moment."

// baseFuncs are the template functions: few, pure, formatting only.
var baseFuncs = template.FuncMap{
	"date": func(t time.Time) string { return t.Format("2 Jan 2006") },
	"datetime": func(t time.Time) string {
		return t.UTC().Format("2 Jan 2006 15:04 UTC")
	},
	// bytes writes a size for people (Bytes).
	"bytes": func(n any) string {
		var v float64
		switch x := n.(type) {
		case int:
			v = float64(x)
		case int64:
			v = float64(x)
		case uint64:
			v = float64(x)
		}
		return bytesOf(v)
	},
	// percent writes a ratio from 0 to 1 as "87.5 %".
	"percent": func(r float64) string { return fmt.Sprintf("%.1f %%", r*100) },
}

// NewPages parses every page under fsys (names like "invite/list" for
// invite/list.html). viewer tells the layout who is signed in; it may be nil.
// It returns an error naming the first template that does not parse.
// static gives the versioned URLs of static files ({{static "app.css"}}).
// provider is the sign-in provider's name every page gets as Base.Provider.
func NewPages(fsys fs.FS, static *Static, viewer func(*http.Request) Viewer, provider string, log *slog.Logger) (*Pages, error) {
	p := &Pages{tmpl: map[string]*template.Template{}, viewer: viewer, provider: provider, log: log, secure: true}
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
	t, ok := p.tmpl["errors/error"]
	if !ok {
		return nil, fmt.Errorf("web: template errors/error.html is missing")
	}
	var buf bytes.Buffer
	data := &errorPage{Base: Base{Title: StatusTitle(http.StatusInternalServerError), Page: "errors/error"}, Status: http.StatusInternalServerError, Message: internalErrorMsg}
	if err := t.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("web: template errors/error.html: %w", err)
	}
	p.internalError = buf.Bytes()
	return p, nil
}

// Provider returns the sign-in provider's name every page gets as
// Base.Provider, e.g. "Google" (NDIRO_OIDC_NAME).
func (p *Pages) Provider() string { return p.provider }

// Names returns the name of every page template, e.g. "meal/list", sorted.
func (p *Pages) Names() []string {
	names := make([]string, 0, len(p.tmpl))
	for n := range p.tmpl {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Render executes page name with data into a buffer and, only if that
// succeeds, writes it with status. A template error is returned (and becomes
// a clean 500), never half a page. A pending flash message is shown on a
// successful (status < 400) page and only then cleared.
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
	b.Page = name
	b.Provider = p.provider
	if b.Viewer.SignedIn {
		b.Nav = mainNav(b.Viewer, r)
	}
	var flashShown bool
	if b.Flash == "" && status < 400 && !b.Unlisted {
		b.Flash, flashShown = peekFlash(r)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return fmt.Errorf("web: render %s: %w", name, err)
	}
	if flashShown {
		clearFlash(w, p.secure)
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	if b.Viewer.UserHash != "" {
		h.Set(UserHashHeader, b.Viewer.UserHash)
	}
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
	// Back and BackText are the error's own way on (Error.Back); "" shows
	// the way to the diary or the start page.
	Back, BackText string
}

// Handle adapts a handler that returns an error. A *Error is shown with its
// status, heading and message; a write storage refused (storage.Refused)
// gets the 507 page saying so; any other error becomes a generic 500 page
// and is logged with the request id. If the handler had already started the
// response (a stream failing half-way), the error is only logged: a second
// body would be appended to the first. A handler that must make the client
// see a failure mid-stream panics with http.ErrAbortHandler instead.
func (p *Pages) Handle(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tw := &trackingWriter{ResponseWriter: w, secure: p.secure}
		err := h(tw, r)
		if err == nil {
			return
		}
		if !tw.started || clientGone(r, err) {
			p.Error(w, r, err) // writes nothing for a client gone
			return
		}
		p.log.Error("request failed after the response started", "request_id", middleware.GetReqID(r.Context()), "route", RoutePattern(r), "err", err)
	}
}

// trackingWriter records whether a response has started (a status or any
// body written). Unwrap keeps http.ResponseController working through it.
type trackingWriter struct {
	http.ResponseWriter
	started bool
	// secure is the Pages' cookie policy, for SetFlash.
	secure bool
}

func (w *trackingWriter) WriteHeader(code int) {
	// 1xx informational responses do not start the final response.
	if code >= 200 {
		w.started = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *trackingWriter) Write(b []byte) (int, error) {
	w.started = true
	return w.ResponseWriter.Write(b)
}

func (w *trackingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// clientGone reports whether err comes from the client having gone away:
// the request's context ended with it, or writing to the connection
// failed because the peer closed it (broken pipe, connection reset). A
// storage call that got no answer is never that, whatever reset its
// own connection.
func clientGone(r *http.Request, err error) bool {
	if ctxErr := r.Context().Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return true
	}
	if errors.Is(err, storage.ErrUnavailable) {
		return false // a reset on a backend's connection, not the client's
	}
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// Error writes the error page for err, as Handle does. A request whose
// client has gone away (clientGone) gets nothing and is logged at info;
// the access log records it as 499.
func (p *Pages) Error(w http.ResponseWriter, r *http.Request, err error) {
	if clientGone(r, err) {
		p.log.Info("client went away", "request_id", middleware.GetReqID(r.Context()), "route", RoutePattern(r))
		return
	}
	e, ok := AsError(err)
	switch {
	case ok:
	case errors.Is(err, storage.ErrUnavailable):
		e = Unavailable(w, r, err)
	default:
		e = storageRefused(w, err)
	}
	if e == nil {
		e = &Error{Status: http.StatusInternalServerError, Msg: internalErrorMsg, Err: err}
	}
	attrs := []any{"status", e.Status, "request_id", middleware.GetReqID(r.Context()), "route", RoutePattern(r)}
	if e.Err != nil {
		attrs = append(attrs, "err", e.Err)
	}
	switch {
	case errors.Is(e.Err, storage.ErrUnavailable):
		// Not a line per request: the access log has the 503, and
		// package storage logs the stall once a minute per kind.
	case e.Status == http.StatusInsufficientStorage, storage.Refused(e.Err) == storage.ErrNotWriter:
		// The backends (or the lease) logged the failure itself, once;
		// each refusal is a warning, not a new failure.
		p.log.Warn("request refused: storage cannot take writes", attrs...)
	case e.Status >= 500:
		p.log.Error("request failed", attrs...)
	case e.Err != nil:
		p.log.Info("request refused", attrs...)
	}
	title := e.Title
	if title == "" {
		title = StatusTitle(e.Status)
	}
	data := &errorPage{Base: Base{Title: title, Unlisted: e.Unlisted}, Status: e.Status, Message: e.Msg, Back: e.Back, BackText: e.BackText}
	if rerr := p.Render(w, r, e.Status, "errors/error", data); rerr != nil {
		p.log.Error("error page failed", "request_id", middleware.GetReqID(r.Context()), "err", rerr)
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusInternalServerError)
		w.Write(p.internalError)
	}
}

// ScriptedHeader marks a form the page script sends itself (to show upload
// progress) rather than the browser: "1" for one form, "2" for one of a
// batch (several photos at once), whose pages are not opened one by one.
// Such a request is answered 200 with {"location": …} where a form would
// get a 303, and 401 with {"signin": …} where it would be sent to sign in:
// a redirect followed by the script is lost on it, and a sign-in page from
// another origin is blocked.
const ScriptedHeader = "X-Ndiro-Upload"

// Scripted reports whether r was sent by the page script (ScriptedHeader).
func Scripted(r *http.Request) bool {
	v := r.Header.Get(ScriptedHeader)
	return v == "1" || v == "2"
}

// Redirect answers with 303 See Other to a local path: the right reply after
// a POST, so a reload does not resubmit.
func Redirect(w http.ResponseWriter, r *http.Request, to string) {
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// Bytes writes a size of n bytes for people: "512 B", "1.5 MB", in
// powers of 1024, as the templates' bytes function does.
func Bytes(n int64) string { return bytesOf(float64(n)) }

func bytesOf(v float64) string {
	units := []string{"B", "KB", "MB", "GB", "TB"}
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", v)
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}
