package meal

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"ndiro/internal/photo"
	"ndiro/internal/web"
)

// OfferAfter is how far a photo's capture time must be from the meal's date
// and time before moving the meal there is offered: a photo taken just now
// is the meal being logged.
const OfferAfter = time.Hour

// farFrom reports whether the camera time taken (zero if unknown) is more
// than OfferAfter from the meal's date and time, both wall clocks.
func farFrom(taken time.Time, date, tod string) bool {
	if taken.IsZero() {
		return false
	}
	at, err := time.Parse("2006-01-02 15:04:05", date+" "+tod)
	if err != nil {
		return false
	}
	d := taken.Sub(at)
	return d > OfferAfter || d < -OfferAfter
}

// processUpload runs the chosen photo, if any, through the pipeline. A
// refused file becomes the form's "photo" message; only failures of ours,
// and a pipeline too busy to take the photo in time (a 503 with
// Retry-After, errBusy), are returned as errors. It returns nil, nil when
// no photo was chosen.
func (h *Handler) processUpload(w http.ResponseWriter, r *http.Request, f *Form) (*photo.Processed, error) {
	if r.MultipartForm == nil {
		return nil, nil
	}
	for _, fh := range r.MultipartForm.File["photo"] {
		if fh.Filename == "" {
			continue // an input left empty
		}
		// A photo over parseForm's memory share is a temp file: the
		// pipeline reads it from there, so uploads waiting for their turn
		// to decode hold no memory.
		file, err := fh.Open()
		if err != nil {
			return nil, err
		}
		proc, err := h.pipeline.ProcessAt(r.Context(), file, fh.Size)
		file.Close()
		if errors.Is(err, photo.ErrBusy) {
			return nil, errBusy(w)
		}
		if err != nil {
			msg, ok := photoMessage(err)
			if !ok {
				return nil, err
			}
			if f.Errors == nil {
				f.Errors = map[string]string{}
			}
			f.Errors["photo"] = msg
			return nil, nil
		}
		return proc, nil
	}
	return nil, nil
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
		msg := mem.Error()
		return strings.ToUpper(msg[:1]) + msg[1:] + ".", true
	}
	for _, e := range []error{photo.ErrEmpty, photo.ErrUnsupported, photo.ErrHEIFBrand, photo.ErrTooLarge, photo.ErrDamaged,
		photo.ErrHEICUnavailable, photo.ErrHEICTimeout, photo.ErrHEICMemory, photo.ErrHEICFailed} {
		if errors.Is(err, e) {
			msg := e.Error()
			return strings.ToUpper(msg[:1]) + msg[1:] + ".", true
		}
	}
	return "", false
}

// setPhoto records a processed upload of version v on m.
func setPhoto(m *Meal, p *photo.Processed, v photo.Version) {
	m.PhotoV, m.PhotoW, m.PhotoH, m.ThumbW, m.ThumbH = v, p.Width, p.Height, p.ThumbWidth, p.ThumbHeight
	m.PhotoTaken = ""
	if !p.Taken.IsZero() {
		m.PhotoTaken = p.Taken.Format("2006-01-02T15:04:05")
	}
}

// putPhoto stores both copies of p under m's keys, carrying m.PhotoV, and
// drops any cached bytes of those keys. If the second put fails the first
// is removed again.
func (h *Handler) putPhoto(ctx context.Context, m *Meal, p *photo.Processed) error {
	keys := m.PhotoKeys()
	if err := h.photos.Put(ctx, keys[0], p.Display, m.PhotoV); err != nil {
		return err
	}
	if err := h.photos.Put(ctx, keys[1], p.Thumb, m.PhotoV); err != nil {
		h.deletePhoto(ctx, m.UserID, keys[:1])
		return err
	}
	for _, k := range keys {
		h.server.Cache().Forget(k)
	}
	return nil
}

// deletePhoto removes photo objects and their cache entries. A failure is
// logged, not returned: the meal change it follows has happened, and the
// admin monitor counts objects left without a meal.
func (h *Handler) deletePhoto(ctx context.Context, ownerID string, keys []string) {
	if err := h.photos.Delete(context.WithoutCancel(ctx), ownerID, keys...); err != nil {
		h.log.Error("photo delete failed", "user_id", ownerID, "err", err)
	}
	for _, k := range keys {
		h.server.Cache().Forget(k)
	}
}

// Move moves a meal to another date and time, which are part of its key:
// the photo copies are written under the new keys, the new row is created
// (conditional), then the old row and the old objects are deleted. Each
// step's failure leaves at worst objects without a meal, which the admin
// monitor counts; never a meal without its photo.
func (h *Handler) Move(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return web.BadRequest("The form could not be read.")
	}
	ctx := r.Context()
	cur, err := h.mealFromURL(r)
	if err != nil {
		return err
	}
	if v := r.PostForm.Get("version"); v != strconv.FormatInt(cur.Version, 10) {
		return errChanged
	}
	d, err := ParseDate(r.PostForm.Get("date"))
	if err != nil {
		return web.BadRequest("The new date must be a real day written like 2026-09-01.")
	}
	tod, err := ParseTimeOfDay(r.PostForm.Get("time"))
	if err != nil {
		return web.BadRequest("The new time must be a time of day like 12:30.")
	}
	moved := *cur
	moved.Date, moved.Time, moved.ID = d.String(), tod.String(), NewID(tod)
	moved.UpdatedAt = h.now().UTC()
	if cur.HasPhoto() {
		from, to := cur.PhotoKeys(), moved.PhotoKeys()
		for i := range from {
			if err := h.photos.Copy(ctx, cur.UserID, from[i], to[i]); err != nil {
				h.deletePhoto(ctx, cur.UserID, to[:i])
				return err
			}
		}
	}
	if err := h.store.Create(ctx, &moved); err != nil {
		if cur.HasPhoto() {
			h.deletePhoto(ctx, cur.UserID, moved.PhotoKeys())
		}
		return err
	}
	if _, err := h.store.Delete(ctx, cur.UserID, mustDate(cur.Date), cur.ID); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if cur.HasPhoto() {
		h.deletePhoto(ctx, cur.UserID, cur.PhotoKeys())
	}
	web.SetFlash(w, "Meal moved to "+moved.Date+" "+moved.Time[:5]+".")
	web.Redirect(w, r, "/meals?month="+moved.Date[:7]+"#meal-"+moved.ID)
	return nil
}

// Photo serves the signed-in owner's photo /photo/{date}/{meal_id}?v=…
// (&size=thumb) to uid, the user the photo guard (auth.Handler.PhotoOwner)
// found in the session; it reads date and meal ID from r.URL.Path itself
// (the route is matched in front of the router, server.New). The key is
// built from uid, so another owner's date and meal ID name an object that
// does not exist: 404, even when that photo is in the cache.
func (h *Handler) Photo(w http.ResponseWriter, r *http.Request, uid string) error {
	rest, _ := strings.CutPrefix(r.URL.Path, "/photo/")
	date, id, _ := strings.Cut(rest, "/")
	_, derr := ParseDate(date)
	_, ierr := ParseID(id)
	v, sizeParam := photoQuery(r.URL)
	size, sizeOK := photo.ParseSize(sizeParam)
	if derr != nil || ierr != nil || !sizeOK {
		return errNoPhoto
	}
	// The date as in the path: ParseDate accepted it, so it is canonical.
	err := h.server.Serve(w, r, uid, photo.Key(uid, date, id, size), v, photo.OwnerCacheControl)
	if photo.IsNotFound(err) {
		return errNoPhoto
	}
	return err
}

// photoQuery returns the ?v= and ?size= parameters of a photo URL. The
// URLs ndiro writes ("v=0123456789ab&size=thumb") are read without
// building a url.Values map; anything else (escapes, repeats) goes
// through url.ParseQuery, so the result is the same (first value wins).
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

var errNoPhoto = &web.Error{Status: http.StatusNotFound, Title: "Photo not found", Msg: "There is no such photo in your diary."}
