package meal

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"

	"ndiro/internal/photo"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// allowUpload spends one of owner's uploads (UploadBurst) if the form
// carries a chosen photo, before anything is decoded; a form without one
// (a photo kept from before included) costs nothing. Out of uploads, it
// returns the 429 with Retry-After.
func (h *Handler) allowUpload(w http.ResponseWriter, r *http.Request, owner string) error {
	if !hasPhoto(r) {
		return nil
	}
	if ok, wait := h.uploads.Allow(owner); !ok {
		return web.TooManyRequests(w, wait, fmt.Sprintf("Photos came faster than ndiro takes them (%d at once, then one every %d seconds), so this one was not saved.", UploadBurst, int(UploadEvery/time.Second)))
	}
	return nil
}

// hasPhoto reports whether r's multipart form carries a chosen photo.
func hasPhoto(r *http.Request) bool {
	if r.MultipartForm == nil {
		return false
	}
	for _, fh := range r.MultipartForm.File["photo"] {
		if fh.Filename != "" {
			return true
		}
	}
	return false
}

// readUpload returns the photo a submitted form brings: a chosen file run
// through the pipeline, or else the upload kept from an earlier submission
// (f.Pending). A refused file, or a kept upload that has expired, becomes
// the form's "photo" message; only failures of ours, and a pipeline too
// busy to take the photo in time (a 503 with Retry-After, errBusy), are
// errors. The zero upload means no photo.
func (h *Handler) readUpload(w http.ResponseWriter, r *http.Request, f *Form, now time.Time) (upload, error) {
	up := upload{taken: f.TakenAt(now)}
	if r.MultipartForm != nil {
		for _, fh := range r.MultipartForm.File["photo"] {
			if fh.Filename == "" {
				continue // an input left empty
			}
			// A photo over parseForm's memory share is a temp file: the
			// pipeline reads it from there, so uploads waiting for their
			// turn to decode hold no memory.
			file, err := fh.Open()
			if err != nil {
				return up, err
			}
			if f.Idem != "" {
				up.sum, err = sum(file, fh.Size)
				if err != nil {
					file.Close()
					return up, err
				}
			}
			proc, err := h.pipeline.ProcessAt(r.Context(), file, fh.Size)
			file.Close()
			if errors.Is(err, photo.ErrBusy) {
				return up, errBusy(w)
			}
			if err != nil {
				msg, ok := photoMessage(err)
				if !ok {
					return up, err
				}
				f.Errors["photo"] = msg
				return up, nil
			}
			// A new photo replaces one kept from before.
			f.Pending = ""
			up.proc = proc
			return up, nil
		}
	}
	if f.Pending == "" {
		return up, nil
	}
	p, err := h.photos.LookPending(r.Context(), user.ID(r.Context()), f.Pending, now)
	if pendingGone(err, f) {
		return up, nil
	}
	if err != nil {
		return up, err
	}
	up.pending, up.sum = p, p.Sum
	return up, nil
}

// sum returns the hex SHA-256 of the size bytes of src.
func sum(src io.ReaderAt, size int64) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(src, 0, size)); err != nil {
		return "", fmt.Errorf("meal: read upload: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// msgPendingGone is the form's photo message for a kept upload that has
// expired or been used up (the same form sent twice).
const msgPendingGone = "The photo kept from before has expired; choose it again."

// pendingGone reports whether err is photo.ErrPendingGone: the form's kept
// upload is gone, when the form is read or later, as a save copies it into
// place. It then drops the kept upload from f and gives f the photo
// message, for the form to be shown again (422) with everything else as
// typed.
func pendingGone(err error, f *Form) bool {
	if !errors.Is(err, photo.ErrPendingGone) {
		return false
	}
	f.Pending = ""
	f.Errors["photo"] = msgPendingGone
	return true
}

// keep stores a photo that came with a form that must be corrected as a
// pending upload, so the corrected form needs no new upload: browsers
// cannot keep a chosen file, and a camera picture is not in the library.
func (h *Handler) keep(r *http.Request, f *Form, up *upload) error {
	if up.proc == nil {
		return nil
	}
	tok, err := h.photos.KeepPending(r.Context(), user.ID(r.Context()), up.proc, up.sum)
	if err != nil {
		return err
	}
	f.Pending = tok
	up.pending = &photo.Pending{Token: tok, Width: up.proc.Width, Height: up.proc.Height, ThumbWidth: up.proc.ThumbWidth, ThumbHeight: up.proc.ThumbHeight, Taken: up.proc.Taken, Sum: up.sum, Bytes: up.proc.Size()}
	up.proc = nil
	return nil
}

// busyRetryAfter is the Retry-After of errBusy, in seconds.
const busyRetryAfter = "30"

// errBusy is the 503 for an upload that waited the pipeline's whole wait
// for memory to decode in: nothing was saved, and the page says so.
func errBusy(w http.ResponseWriter) error {
	w.Header().Set("Retry-After", busyRetryAfter)
	return &web.Error{Status: http.StatusServiceUnavailable, Title: "Too busy to read your photo",
		Msg: "ndiro is reading many photos at the moment and could not get to yours in time, so nothing was saved. Go back, wait half a minute and send the form again.",
		Err: photo.ErrBusy}
}

// photoMessage words a pipeline refusal for the form.
func photoMessage(err error) (string, bool) {
	var mem *photo.MemoryError
	if errors.As(err, &mem) {
		return capitalise(mem.Error()) + ".", true
	}
	for _, e := range []error{photo.ErrEmpty, photo.ErrUnsupported, photo.ErrHEIFBrand, photo.ErrTooLarge, photo.ErrDamaged,
		photo.ErrHEICUnavailable, photo.ErrHEICTimeout, photo.ErrHEICMemory, photo.ErrHEICFailed} {
		if errors.Is(err, e) {
			return capitalise(e.Error()) + ".", true
		}
	}
	return "", false
}

// Photo serves the signed-in owner's photo /photo/{date}/{meal_id}?v=…
// (&size=thumb) to uid, the signed-in user the guard found
// (auth.Handler.UserFromStore, server.New); date and meal ID are the
// route's path values (r.PathValue: the ServeMux pattern's wildcards).
// The key is built from uid, so another owner's
// date and meal ID name an object that does not exist: 404, even when
// that photo is in the cache. It writes nothing before it returns an
// error.
func (h *Handler) Photo(w http.ResponseWriter, r *http.Request, uid string) error {
	date, id := r.PathValue("date"), r.PathValue("meal_id")
	_, derr := ParseDate(date)
	_, ierr := ParseID(id)
	v, sizeParam := photoQuery(r.URL)
	size, sizeOK := photo.ParseSize(sizeParam)
	if derr != nil || ierr != nil || !sizeOK {
		return errNoPhoto
	}
	// The date as in the path: ParseDate accepted it, so it is canonical.
	err := h.server.Serve(w, r, photo.Ref{Owner: uid, Date: date, Meal: id, Size: size}, v, photo.OwnerCacheControl)
	if photo.IsNotFound(err) {
		return errNoPhoto
	}
	return err
}

// photoQuery returns the ?v= and ?size= parameters of a photo URL, the
// same as u.Query().Get would. The URLs ndiro writes
// ("v=0123456789ab&size=thumb") are read here without building a
// url.Values map, and so are other orders, repeats (the first value wins,
// as Get's does) and other parameters; a query with an escape ('%' or
// '+') or a ';' (which url.ParseQuery refuses, dropping that pair) goes
// through u.Query() instead. u.Query() for every photo costs 3 to 4
// allocations (the map and its slices): BenchmarkOwnerPhoto's x-bare went
// from 0.29 to 0.25 (thumbnail, 304) and from 0.69 to 0.63 (thumbnail,
// 200), medians of 5 interleaved runs on 2 shared cores.
func photoQuery(u *url.URL) (v, size string) {
	raw := u.RawQuery
	var seenV, seenSize bool
	for i := 0; i < len(raw); {
		j := i
		for j < len(raw) && raw[j] != '&' {
			switch raw[j] {
			case '%', '+', ';':
				q := u.Query()
				return q.Get("v"), q.Get("size")
			}
			j++
		}
		kv := raw[i:j]
		i = j + 1
		switch {
		case !seenV && len(kv) >= 2 && kv[:2] == "v=":
			v, seenV = kv[2:], true
		case !seenV && kv == "v":
			seenV = true
		case !seenSize && len(kv) >= 5 && kv[:5] == "size=":
			size, seenSize = kv[5:], true
		case !seenSize && kv == "size":
			seenSize = true
		}
	}
	return v, size
}

// PendingPhoto serves a copy of the signed-in owner's kept upload
// /meals/pending/{token}(?size=thumb), for the corrected form to show. It
// is short-lived: not cached anywhere.
func (h *Handler) PendingPhoto(w http.ResponseWriter, r *http.Request) error {
	size, ok := photo.ParseSize(r.URL.Query().Get("size"))
	uid := user.ID(r.Context())
	if _, err := h.photos.LookPending(r.Context(), uid, chi.URLParam(r, "token"), h.now()); !ok || err != nil {
		if err != nil && !errors.Is(err, photo.ErrPendingGone) {
			return err
		}
		return errNoPhoto
	}
	obj, err := h.photos.Get(r.Context(), uid, photo.PendingKey(uid, chi.URLParam(r, "token"), size))
	if photo.IsNotFound(err) {
		return errNoPhoto
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "image/jpeg")
	w.Header().Set("Cache-Control", "private, no-store")
	_, err = w.Write(obj.Body)
	return err
}

var errNoPhoto = &web.Error{Status: http.StatusNotFound, Title: "Photo not found", Msg: "There is no such photo in your diary."}
