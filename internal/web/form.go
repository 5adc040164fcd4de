package web

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
)

// Limits of an ordinary form (everything but a photo upload): a meal's
// 2,000-character notes, url-encoded, fit many times over.
const (
	// MaxFormBytes is the largest body of an ordinary form, in bytes.
	MaxFormBytes = 64 << 10
	// MaxFormFields is the most fields any form may send (values and
	// files alike); the largest form, the meal form, has about 15.
	MaxFormFields = 50
)

// FormLimits bound what one form request may send. ReadForm and
// Pages.Form enforce them whatever the body's content type.
type FormLimits struct {
	// MaxBytes is the largest body accepted, in bytes; a larger one is
	// refused with 413, whether or not it declares its length.
	MaxBytes int64
	// MaxFields is the most fields accepted: url-encoded pairs, or
	// multipart parts (files included). More is refused with 400.
	MaxFields int
	// MaxMemory is how many bytes of multipart files are kept in memory;
	// the rest go to temporary files (http.Request.ParseMultipartForm).
	// 0 means MaxBytes.
	MaxMemory int64
	// TooLarge is the 413 page's message; "" says the limit in KB or MB.
	TooLarge string
}

// errTooManyFields is what a multipart body's reader returns once it has
// passed more parts than FormLimits.MaxFields.
var errTooManyFields = errors.New("web: too many form fields")

// ReadForm reads r's body as a form, within l, filling r.Form and
// r.PostForm (and r.MultipartForm for multipart/form-data), so a
// handler's own r.ParseForm afterwards is a no-op. It returns a *Error:
// 413 for a body over l.MaxBytes (a declared Content-Length is refused
// before reading; an undeclared one, chunked, at the byte that passes the
// limit), 400 for more than l.MaxFields fields or a body that is not a
// well-formed form, and 415 for a non-empty body of any other content
// type. A multipart form's temporary files are the caller's to remove
// (Pages.Form does).
func ReadForm(w http.ResponseWriter, r *http.Request, l FormLimits) error {
	tooLarge := &Error{Status: http.StatusRequestEntityTooLarge, Title: "Too large", Msg: l.TooLarge}
	if tooLarge.Msg == "" {
		tooLarge.Msg = "The form was larger than " + size(l.MaxBytes) + ", the most this page accepts."
	}
	tooMany := &Error{Status: http.StatusBadRequest, Title: "Too many fields",
		Msg: fmt.Sprintf("The form had more than %d fields, the most this page accepts.", l.MaxFields)}
	unreadable := func(err error) error {
		var mb *http.MaxBytesError
		switch {
		case errors.As(err, &mb), errors.Is(err, multipart.ErrMessageTooLarge):
			return tooLarge
		case errors.Is(err, errTooManyFields):
			return tooMany
		}
		return &Error{Status: http.StatusBadRequest, Title: "Form not readable", Msg: "The form could not be read. Please try again.", Err: err}
	}
	if r.ContentLength > l.MaxBytes {
		return tooLarge
	}
	r.Body = http.MaxBytesReader(w, r.Body, l.MaxBytes)
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		if params["boundary"] == "" {
			return unreadable(errors.New("multipart form without a boundary"))
		}
		r.Body = &partCounter{ReadCloser: r.Body, delim: []byte("\n--" + params["boundary"]), tail: []byte("\n"), max: l.MaxFields + 1}
		mem := l.MaxMemory
		if mem <= 0 {
			mem = l.MaxBytes
		}
		if err := r.ParseMultipartForm(mem); err != nil {
			return unreadable(err)
		}
		return nil
	case "application/x-www-form-urlencoded":
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return unreadable(err)
		}
		if len(b) > 0 && bytes.Count(b, []byte("&"))+1 > l.MaxFields {
			return tooMany
		}
		// Parsed here, not by r.ParseForm, which caps a body it did not
		// wrap itself at 10 MB with an error of its own.
		vals, err := url.ParseQuery(string(b))
		if err != nil {
			return unreadable(err)
		}
		r.PostForm, r.Form = vals, url.Values{}
		for k, v := range vals {
			r.Form[k] = append(r.Form[k], v...)
		}
		for k, v := range r.URL.Query() {
			r.Form[k] = append(r.Form[k], v...)
		}
		return nil
	}
	// Anything else is no form: read it to its end all the same, so an
	// oversized body is a 413 here too, and refuse it if it held anything.
	n, err := io.Copy(io.Discard, r.Body)
	if err != nil {
		return unreadable(err)
	}
	if n > 0 {
		return &Error{Status: http.StatusUnsupportedMediaType, Title: "Not a form",
			Msg: "This page accepts a web form (application/x-www-form-urlencoded or multipart/form-data) and nothing else."}
	}
	if err := r.ParseForm(); err != nil {
		return unreadable(err)
	}
	return nil
}

// Form returns middleware that reads the form of every POST, PUT, PATCH
// and DELETE request with ReadForm within l before the handler runs, and
// answers a refusal with its error page; the handler never sees a body
// over the limit. Multipart temporary files are removed when the handler
// returns. routes.go puts it on every route that takes a body.
func (p *Pages) Form(l FormLimits) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.Method {
			case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			default:
				next.ServeHTTP(w, r)
				return
			}
			err := ReadForm(w, r, l)
			if r.MultipartForm != nil {
				defer r.MultipartForm.RemoveAll()
			}
			if err != nil {
				p.Error(w, r, err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// size writes a byte count as "64 KB" or "25 MB" (powers of 1024).
func size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MB", n>>20)
	}
	return fmt.Sprintf("%d KB", (n+1023)>>10)
}

// partCounter passes a multipart body through and counts its boundary
// delimiters ("\n--" + boundary; the body's first delimiter counts through
// the "\n" tail it starts with). A body with more than max delimiters (max
// - 1 parts and the closing one) fails with errTooManyFields, before any
// more of it is read. The boundary never occurs inside a well-formed
// part, so the count is exact.
type partCounter struct {
	io.ReadCloser
	delim []byte
	// tail is the end of what was read so far, shorter than delim: a
	// delimiter split across two reads is found in tail + the next read.
	tail []byte
	n    int
	max  int
}

func (c *partCounter) Read(p []byte) (int, error) {
	if c.n > c.max {
		return 0, errTooManyFields
	}
	n, err := c.ReadCloser.Read(p)
	b := p[:n]
	// Delimiters that start in the tail and end in b, then those wholly in b.
	k := min(len(b), len(c.delim)-1)
	joined := append(append([]byte(nil), c.tail...), b[:k]...)
	for i := range len(c.tail) {
		if bytes.HasPrefix(joined[i:], c.delim) {
			c.n++
		}
	}
	c.n += bytes.Count(b, c.delim)
	keep := len(c.delim) - 1
	if len(b) >= keep {
		c.tail = append(c.tail[:0], b[len(b)-keep:]...)
	} else {
		c.tail = append(c.tail, b...)
		if len(c.tail) > keep {
			c.tail = c.tail[len(c.tail)-keep:]
		}
	}
	if c.n > c.max {
		return 0, errTooManyFields
	}
	return n, err
}
