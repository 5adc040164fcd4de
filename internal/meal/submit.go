package meal

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"ndiro/internal/photo"
	"ndiro/internal/storage"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// finish ends a successful write: flash, then the page at loc (a 303, or
// for the page script the JSON of web.ScriptedHeader, so that it opens the
// page itself: the flash and the #meal anchor arrive, which a followed
// redirect would use up or lose). One of a batch gets no flash: its pages
// are not opened one by one.
func finish(w http.ResponseWriter, r *http.Request, loc, flash string) error {
	if flash != "" && r.Header.Get(web.ScriptedHeader) != "2" {
		web.SetFlash(w, flash)
	}
	if !web.Scripted(r) {
		web.Redirect(w, r, loc)
		return nil
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(w).Encode(map[string]string{"location": loc})
}

// mealLink is the month page scrolled to m.
func mealLink(m *Meal) string { return "/meals?month=" + m.Date[:7] + "#meal-" + m.ID }

// Create logs a new meal, with its photo (chosen now, or kept from an
// earlier submission of the form) if any, and shows its month. The
// route's web.Form has read the form (multipart or url-encoded) within
// MaxFormBytes. A form with
// an error is shown again with 422, every field as typed, and the photo
// kept as a pending upload.
func (h *Handler) Create(w http.ResponseWriter, r *http.Request) error {
	if r.Form == nil {
		return errFormNotRead
	}
	ctx := r.Context()
	u := user.FromContext(ctx)
	idem, err := idemKey(r)
	if err != nil {
		return err
	}
	if err := h.allowUpload(w, r, u.ID); err != nil {
		return err
	}
	now := h.now()
	today := DateOf(now.In(u.Location()))
	f := FormFrom(r.Form)
	m, _ := f.Validate(today)
	up, err := h.readUpload(w, r, &f, now)
	if err != nil {
		return err
	}
	if len(f.Errors) == 0 && !up.present() && m.Empty() {
		f.Errors["meal"] = MsgEmpty
	}
	if len(f.Errors) > 0 {
		if err := h.keep(r, &f, &up); err != nil {
			return err
		}
		return h.renderForm(w, r, http.StatusUnprocessableEntity, &formPage{Form: f, Action: "/meals", AskTZ: u.TimeZone == "", Kept: up.pending})
	}
	digest := ""
	if idem != "" {
		digest = requestDigest(&m, &f, up.sum)
	}
	// Date and time left as the form showed them: the photo says when.
	byPhoto := fileByPhoto(&f, &m, up.takenAt(), today)
	m.UserID, m.CreatedAt, m.UpdatedAt = u.ID, now.UTC(), now.UTC()
	var claim *Claim
	if idem != "" {
		// Claimed before any photo object is written: a repeat of the
		// key gets the first meal, whose photo it never touches.
		first, c, err := h.claim(ctx, idem, digest, &m, now)
		var reused *keyReused
		switch {
		case errors.As(err, &reused):
			return h.reused(w, r, reused, &formPage{Form: f, Action: "/meals", AskTZ: u.TimeZone == ""}, &up)
		case err != nil:
			return err
		case first != nil && first.gone:
			h.w.done(ctx, u.ID, up)
			return finish(w, r, monthLinkSK(first.sk), MsgSavedThenGone)
		case first != nil:
			h.w.done(ctx, u.ID, up)
			return finish(w, r, mealLinkSK(first.sk), savedFlash(r))
		}
		claim = c
	}
	err = h.w.create(ctx, &m, up, photo.Version(now.UnixNano()))
	h.settle(ctx, claim, err)
	if claim != nil && errors.Is(err, ErrExists) {
		// The dead attempt whose claim this took over wrote its row
		// after all: that is the meal.
		return finish(w, r, mealLink(&m), savedFlash(r))
	}
	if pendingGone(err, &f) {
		// The kept photo went between the check and its copy into place
		// (the same form sent twice): nothing was saved.
		return h.renderForm(w, r, http.StatusUnprocessableEntity, &formPage{Form: f, Action: "/meals", AskTZ: u.TimeZone == ""})
	} else if errors.Is(err, storage.ErrUnavailable) {
		return h.unavailable(w, r, err, &formPage{Form: f, Action: "/meals", AskTZ: u.TimeZone == ""}, &up)
	} else if err != nil {
		return err
	}
	h.adoptTimeZone(r, u)
	if byPhoto && farFrom(up.takenAt(), f.DefaultDate, f.DefaultTime) {
		// The month says so itself, with a way back to the form's time.
		setFiled(w, &m, f.DefaultDate, f.DefaultTime)
		return finish(w, r, mealLink(&m), "")
	}
	return finish(w, r, mealLink(&m), savedFlash(r))
}

// MaxBatch is the most photos one "several photos at once" may send, as
// the flash of its last meal counts them.
const MaxBatch = 100

// savedFlash is the flash after a new meal: "Meal saved.", or for the last
// of several photos sent at once (the page script sends batch=N with it,
// 2 ≤ N ≤ MaxBatch) "N meals saved.".
func savedFlash(r *http.Request) string {
	if n, err := strconv.Atoi(r.Form.Get("batch")); err == nil && n >= 2 && n <= MaxBatch {
		return strconv.Itoa(n) + " meals saved."
	}
	return "Meal saved."
}

// adoptTimeZone saves the device's time zone (sent by the page script) as
// the account's, if the account has none yet: "default from the browser".
func (h *Handler) adoptTimeZone(r *http.Request, u *user.User) {
	tz := r.Form.Get("tz")
	if u.TimeZone != "" || !user.ValidTimeZone(tz) {
		return
	}
	if err := h.users.SetTimeZone(r.Context(), u.ID, tz); err != nil {
		h.log.Warn("could not save time zone", "user_id", u.ID, "err", err)
	}
}

// Update saves the edit form: the fields, the date and time (a new one
// moves the meal, keeping the other edits), and a new photo or "remove
// photo". It is conditional on the version the form was opened on: a meal
// changed in another window gets the form again (409) with this window's
// text kept and the other version shown; a meal deleted or moved meanwhile
// gets a page saying so. How the stores are written, and what a failure
// part-way leaves, is the writer's (writer.save).
func (h *Handler) Update(w http.ResponseWriter, r *http.Request) error {
	if r.Form == nil {
		return errFormNotRead
	}
	if err := h.allowUpload(w, r, user.ID(r.Context())); err != nil {
		return err
	}
	f := FormFrom(r.Form)
	cur, found, err := h.load(w, r, &f)
	if !found {
		return err
	}
	c, err := h.readEdit(w, r, cur, &f)
	if err != nil {
		return err
	}
	if len(f.Errors) > 0 {
		if err := h.keep(r, &f, &c.upload); err != nil {
			return err
		}
		p := h.editPage(cur, f)
		p.Kept = c.upload.pending
		return h.renderForm(w, r, http.StatusUnprocessableEntity, p)
	}
	if r.Form.Get("version") != strconv.FormatInt(cur.Version, 10) {
		return h.conflict(w, r, cur, f, c.upload, "")
	}
	saved, err := h.w.save(r.Context(), cur, c)
	if err != nil {
		return h.notSaved(w, r, cur, f, c.upload, err)
	}
	// Every save says "Meal saved", as a new meal's does.
	flash := "Meal saved."
	if saved.Date != cur.Date || saved.Time != cur.Time {
		flash = "Meal saved, moved to " + saved.DateTime().Format("Monday 2 January 2006, 15:04") + "."
	}
	return finish(w, r, mealLink(saved), flash)
}

// readEdit reads the edit form f of cur into the change to save, at the
// handler's clock. What the owner got wrong goes into f.Errors; only
// failures of ours (and a pipeline too busy for the photo) are errors.
func (h *Handler) readEdit(w http.ResponseWriter, r *http.Request, cur *Meal, f *Form) (change, error) {
	u := user.FromContext(r.Context())
	now := h.now()
	edited, _ := f.Validate(DateOf(now.In(u.Location())))
	if f.Date == cur.Date && f.Errors["date"] == MsgFuture {
		delete(f.Errors, "date") // confirmed when the meal was saved there
	}
	if t, err := ParseTimeOfDay(f.Time); err == nil && t.HHMM() == cur.HHMM() {
		// The form shows minutes; a meal at 12:31:07 left at 12:31 keeps
		// its seconds, and so its key.
		edited.Time = cur.Time
	}
	var up upload
	if msg := h.quota.Message(u.Usage, true); msg != "" && (hasPhoto(r) || f.Pending != "") {
		// Refused before the photo is read, and a kept one let go: the
		// rest of the edit is shown again, to save without it.
		f.Errors["photo"], f.Pending = msg, ""
	} else {
		var err error
		if up, err = h.readUpload(w, r, f, now); err != nil {
			return change{}, err
		}
	}
	c := change{edited: edited, upload: up, remove: r.Form.Get("remove_photo") == "1" && !up.present(), now: now}
	if len(f.Errors) == 0 && !up.present() && (c.remove || !cur.HasPhoto()) && edited.Empty() {
		f.Errors["meal"] = MsgEmpty
	}
	return c, nil
}

// notSaved answers an edit of cur that the writer refused with err: the
// form again for a kept photo gone meanwhile (422) or a meal another
// window changed (409, with the latest version, and a note if the new
// photo was saved all the same), the page for a meal gone meanwhile, the
// form again (503) when storage did not answer.
func (h *Handler) notSaved(w http.ResponseWriter, r *http.Request, cur *Meal, f Form, up upload, err error) error {
	var changed *changedError
	switch {
	case pendingGone(err, &f):
		// The kept photo went between the check and its copy into place:
		// nothing was saved, and the meal keeps the photo it had.
		return h.renderForm(w, r, http.StatusUnprocessableEntity, h.editPage(cur, f))
	case errors.As(err, &changed) && changed.photoSaved:
		return h.conflict(w, r, changed.latest, f, upload{}, "Your new photo was saved.")
	case errors.As(err, &changed):
		return h.conflict(w, r, changed.latest, f, up, "")
	case errors.Is(err, ErrNotFound):
		return h.gone(w, r, mustDate(cur.Date), &f)
	case errors.Is(err, storage.ErrUnavailable):
		return h.unavailable(w, r, err, h.editPage(cur, f), &up)
	}
	return err
}

// conflict shows the edit form again (409) for a meal another window
// changed: the fields as this window typed them, ready to save over the
// latest version, and that version's own values beside them. A photo that
// came along is kept as a pending upload. note, if set, says what was
// saved all the same.
func (h *Handler) conflict(w http.ResponseWriter, r *http.Request, latest *Meal, f Form, up upload, note string) error {
	if err := h.keep(r, &f, &up); err != nil {
		return err
	}
	p := h.editPage(latest, f)
	p.Kept, p.Conflict, p.ConflictNote = up.pending, latest, note
	return h.renderForm(w, r, http.StatusConflict, p)
}

// Move moves a meal to the date and time of the form (the month's "Move
// to now" for a meal just filed at its photo's capture time), keeping
// everything else.
func (h *Handler) Move(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return web.BadRequest("The form could not be read.")
	}
	cur, found, err := h.load(w, r, nil)
	if !found {
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
	edited := *cur
	edited.Date, edited.Time = d.String(), tod.String()
	moved, err := h.w.save(r.Context(), cur, change{edited: edited, now: h.now()})
	switch {
	case errors.Is(err, ErrConflict):
		return errChanged
	case errors.Is(err, ErrNotFound):
		return h.gone(w, r, mustDate(cur.Date), nil)
	case err != nil:
		return err
	}
	return finish(w, r, mealLink(moved), "Meal moved to "+moved.DateTime().Format("Monday 2 January 2006, 15:04")+".")
}

var errChanged = &web.Error{Status: http.StatusConflict, Title: "Meal changed meanwhile", Msg: "This meal was changed in another window after you opened it, so nothing was saved. Open it again to see the latest version."}

// Delete removes a meal and shows its month.
func (h *Handler) Delete(w http.ResponseWriter, r *http.Request) error {
	d, id, ok := keyFromURL(r)
	if !ok {
		return errNoMeal
	}
	old, err := h.store.Delete(r.Context(), user.ID(r.Context()), d, id)
	if errors.Is(err, ErrNotFound) {
		return h.gone(w, r, d, nil)
	} else if err != nil {
		return err
	}
	h.w.count(r.Context(), old.UserID, user.Usage{Meals: -1, PhotoBytes: -old.PhotoBytes})
	if old.HasPhoto() {
		h.w.drop(r.Context(), old.UserID, old.PhotoKeys())
	}
	web.SetFlash(w, "Meal deleted.")
	web.Redirect(w, r, "/meals?month="+d.Month().String())
	return nil
}

// load reads the signed-in owner's meal named by the URL. If there is
// none (moved, deleted, never there), it has answered with the page that
// says so, showing typed (the edit that came for it) if not nil, and found
// is false; err is then what the handler returns.
func (h *Handler) load(w http.ResponseWriter, r *http.Request, typed *Form) (m *Meal, found bool, err error) {
	d, id, ok := keyFromURL(r)
	if !ok {
		return nil, false, errNoMeal
	}
	m, err = h.store.Get(r.Context(), user.ID(r.Context()), d, id)
	if errors.Is(err, ErrNotFound) {
		return nil, false, h.gone(w, r, d, typed)
	}
	if err != nil {
		return nil, false, err
	}
	return m, true, nil
}

type gonePage struct {
	web.Base
	Day     Date
	DayLink string
	// Typed is the edit that came for the meal, shown so that nothing
	// typed is lost; nil if none.
	Typed *Form
}

// gone answers 404 for a meal of day d that is not there: moved (a meal's
// date and time are its key, and no tombstone is kept: it would cost reads
// on every month page) or deleted. It links to that day, and shows typed,
// the edit that came for the meal, if any.
func (h *Handler) gone(w http.ResponseWriter, r *http.Request, d Date, typed *Form) error {
	return h.pages.Render(w, r, http.StatusNotFound, "meal/gone", &gonePage{
		Base: web.Base{Title: "Meal moved or deleted"}, Day: d,
		DayLink: dayURL(d), Typed: typed,
	})
}

var errNoMeal = &web.Error{Status: http.StatusNotFound, Title: "Meal not found", Msg: "There is no such meal in your diary."}
