package meal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"ndiro/internal/photo"
	"ndiro/internal/storage"
	"ndiro/internal/user"
)

// The stores a meal write spans, as small interfaces naming only what a
// write uses: *Store and *photo.Store are the real ones.
type (
	rows interface {
		Get(ctx context.Context, userID string, d Date, id string) (*Meal, error)
		Create(ctx context.Context, m *Meal) error
		Update(ctx context.Context, m *Meal) error
		DeleteVersion(ctx context.Context, m *Meal) error
		DeleteVersionOnce(ctx context.Context, m *Meal) error
		CopyComments(ctx context.Context, m *Meal, cs map[string]Comment) error
	}
	objects interface {
		Put(ctx context.Context, key string, body []byte, v photo.Version) error
		Copy(ctx context.Context, ownerID, from, to string) error
		Delete(ctx context.Context, ownerID string, keys ...string) error
		AdoptPending(ctx context.Context, userID, tok string, keys []string, v photo.Version) error
		DropPending(ctx context.Context, userID, tok string) error
	}
)

// writer saves meals across the meals table and the photo bucket in an
// order that keeps a failure clean (DESIGN.md, photos): objects are put
// before the row that names them and deleted after the row that named them
// is gone, so a failure part-way leaves at worst objects no row names
// (which the admin monitor finds), never a row whose photo is missing.
// A photo replaced in place is the one exception to the order: its keys
// are the ones the row names, so a failure after the new bytes went in
// leaves the row naming an older version than its objects carry, which
// the photo route follows (replace says how that is kept rare).
type writer struct {
	rows    rows
	objects objects
	// forget drops a key's bytes from the photo cache.
	forget func(key string)
	// kick asks the variant job to make a saved photo's sized copies
	// (Variants.Kick); nil makes none.
	kick func(m *Meal)
	// usage adds to an account's user.Usage (user.Store.AddUsage); nil
	// counts nothing.
	usage func(ctx context.Context, id string, add user.Usage) (user.Usage, error)
	log   *slog.Logger
}

// count adds add to userID's usage right after the write that changed
// it, past a cancelled request too (the write is done). A failure is
// logged: the admin monitor's recount repairs the count.
func (w *writer) count(ctx context.Context, userID string, add user.Usage) {
	if w.usage == nil {
		return
	}
	if _, err := w.usage(context.WithoutCancel(ctx), userID, add); err != nil {
		w.log.Warn("usage not counted", "user_id", userID, "err", err)
	}
}

// made tells the variant job about m, a meal just saved with a photo.
func (w *writer) made(m *Meal) {
	if w.kick != nil && m.HasPhoto() {
		w.kick(m)
	}
}

// stale returns the keys of old that cur does not name: the sized copies
// of a photo just replaced under the same meal, which still hold the old
// photo's pixels.
func stale(old, cur []string) []string {
	var out []string
	for _, k := range old {
		if !slices.Contains(cur, k) {
			out = append(out, k)
		}
	}
	return out
}

// upload is the photo a save brings: bytes just processed, or an upload
// kept from an earlier submission of the form. The zero value is none.
type upload struct {
	proc    *photo.Processed
	pending *photo.Pending
	// taken overrides the photo's own capture time when it has none (the
	// browser downscaled it, dropping EXIF, and sent the time apart).
	taken time.Time
	// sum is the hex SHA-256 of the photo's bytes as sent, kept with it
	// as a pending upload (requestDigest's photoSum); "" when the form
	// has no idempotency key, or for no photo.
	sum string
}

func (u upload) present() bool { return u.proc != nil || u.pending != nil }

// takenAt returns the photo's capture time, the camera's wall clock: from
// the photo itself, else the one sent apart; zero if unknown or no photo.
func (u upload) takenAt() time.Time {
	var taken time.Time
	switch {
	case u.proc != nil:
		taken = u.proc.Taken
	case u.pending != nil:
		taken = u.pending.Taken
	default:
		return time.Time{}
	}
	if taken.IsZero() {
		taken = u.taken
	}
	return taken
}

// photo returns the upload as the photo of version v: sizes from the
// processed or kept copies, the capture time as takenAt gives it.
func (u upload) photo(v photo.Version) Photo {
	w, h, tw, th, size := 0, 0, 0, 0, int64(0)
	if u.proc != nil {
		w, h, tw, th, size = u.proc.Width, u.proc.Height, u.proc.ThumbWidth, u.proc.ThumbHeight, u.proc.Size()
	} else if u.pending != nil {
		w, h, tw, th, size = u.pending.Width, u.pending.Height, u.pending.ThumbWidth, u.pending.ThumbHeight, u.pending.Bytes
	}
	return newPhoto(v, w, h, tw, th, size, u.takenAt())
}

// put stores the upload as m's photo (m.PhotoV must be set) under
// m.PhotoKeys(), and drops any cached bytes of those keys. fresh says that
// no row names those keys yet (a new meal, or one moving to a new key): a
// failure then deletes what put wrote there. Otherwise the keys hold the
// photo the meal's row still names, and a failure deletes nothing: the
// row keeps a photo, though a failure between the two copies leaves the
// display copy at the new version (the photo route follows the version an
// object carries).
func (w *writer) put(ctx context.Context, m *Meal, u upload, fresh bool) error {
	keys := m.PhotoKeys()
	err := w.putKeys(ctx, m, u, keys)
	if err != nil && fresh {
		w.drop(ctx, m.UserID, keys)
		return err
	}
	for _, k := range keys {
		w.forget(k)
	}
	return err
}

// putKeys writes the upload's two copies to keys, display first.
func (w *writer) putKeys(ctx context.Context, m *Meal, u upload, keys []string) error {
	if u.pending != nil {
		return w.objects.AdoptPending(ctx, m.UserID, u.pending.Token, keys, m.PhotoV)
	}
	if err := w.objects.Put(ctx, keys[0], u.proc.Display, m.PhotoV); err != nil {
		return err
	}
	return w.objects.Put(ctx, keys[1], u.proc.Thumb, m.PhotoV)
}

// done drops the kept copies of an upload that is now a meal's photo. A
// failure is logged: the bucket's lifecycle rule expires them anyway.
func (w *writer) done(ctx context.Context, userID string, u upload) {
	if u.pending == nil {
		return
	}
	if err := w.objects.DropPending(context.WithoutCancel(ctx), userID, u.pending.Token); err != nil {
		w.log.Warn("pending upload not dropped", "user_id", userID, "err", err)
	}
}

// drop deletes photo objects and their cache entries. A failure is logged,
// not returned: the change it follows has happened or been undone, and the
// admin monitor finds objects no row names.
func (w *writer) drop(ctx context.Context, ownerID string, keys []string) {
	if err := w.objects.Delete(context.WithoutCancel(ctx), ownerID, keys...); err != nil {
		w.log.Error("photo delete failed", "user_id", ownerID, "err", err)
	}
	for _, k := range keys {
		w.forget(k)
	}
}

// create writes m (UserID, Date, Time and fields set; ID too if an
// idempotency claim chose it) as a new meal with the upload, if any, as
// its photo of version v.
func (w *writer) create(ctx context.Context, m *Meal, u upload, v photo.Version) error {
	if u.present() {
		tod, err := ParseTimeOfDay(m.Time)
		if err != nil {
			return fmt.Errorf("meal: create: %w", err)
		}
		if m.ID == "" { // else chosen by an idempotency claim
			m.ID = NewID(tod)
		}
		m.Photo = u.photo(v)
		if err := w.put(ctx, m, u, true); err != nil {
			return err
		}
	}
	if err := w.rows.Create(ctx, m); err != nil {
		// A row refused for its key (ErrExists) is another write's, which
		// names these very keys (a repeat of an idempotency key, or a
		// clash of random IDs): dropping them would delete its photo.
		if u.present() && !unanswered(err) && !errors.Is(err, ErrExists) {
			w.drop(ctx, m.UserID, m.PhotoKeys())
		}
		return err
	}
	w.count(ctx, m.UserID, user.Usage{Meals: 1, PhotoBytes: m.PhotoBytes})
	w.done(ctx, m.UserID, u)
	w.made(m)
	return nil
}

// unanswered reports whether a row write failed without an answer
// (storage.ErrUnavailable): DynamoDB may have applied it all the same, so
// the photo objects the row names stay. At worst they are objects no row
// names, which the orphan check finds; never a row whose photo is gone.
func unanswered(err error) bool { return errors.Is(err, storage.ErrUnavailable) }

// change describes an edit: the new fields, the new date and time (which
// may move the meal), and what happens to the photo.
type change struct {
	edited Meal // Kind, Notes, numbers, Date, Time
	upload upload
	remove bool // remove the photo (no upload)
	now    time.Time
}

// apply copies the edit's fields onto m.
func (c change) apply(m *Meal) {
	m.Kind, m.Notes = c.edited.Kind, c.edited.Notes
	m.Kcal, m.ProteinG, m.CarbsG, m.FatG = c.edited.Kcal, c.edited.ProteinG, c.edited.CarbsG, c.edited.FatG
	m.Hunger, m.Fullness = c.edited.Hunger, c.edited.Fullness
	m.UpdatedAt = c.now.UTC()
}

// nextVersion is the photo_v of a new photo for cur, made at now: the
// clock's nanoseconds, but always above cur's, so a clock that stands
// still or steps back still changes every URL.
func nextVersion(cur *Meal, now time.Time) photo.Version {
	return photo.Version(max(now.UnixNano(), int64(cur.PhotoV)+1))
}

// moves reports whether the edit changes cur's date or time, which are
// part of its key.
func (c change) moves(cur *Meal) bool {
	return c.edited.Date != cur.Date || c.edited.Time != cur.Time
}

// save applies c to cur, read at cur.Version, and returns the meal as
// saved. Without a new date or time it is one conditional write in place
// (update). A new date or time moves it (move). Either way, a meal gone
// meanwhile is ErrNotFound, and one another window changed meanwhile is a
// *changedError (errors.Is ErrConflict) holding the latest version, read
// here, for the form to be shown beside; if the edit's new photo had
// already replaced the old copies by then, the error says that the photo
// was recorded on that latest version all the same.
func (w *writer) save(ctx context.Context, cur *Meal, c change) (*Meal, error) {
	var (
		saved *Meal
		err   error
	)
	if c.moves(cur) {
		saved, err = w.move(ctx, cur, c)
	} else {
		saved, err = w.update(ctx, cur, c)
	}
	var ch *changedError
	if errors.Is(err, ErrConflict) && !errors.As(err, &ch) {
		return nil, w.changed(ctx, cur)
	}
	return saved, err
}

// changedError is save's answer for a meal another window changed after
// the edit read it.
type changedError struct {
	// latest is the meal as it is now.
	latest *Meal
	// photoSaved: the edit's new photo replaced the old copies before the
	// change was found, and is recorded on latest (recordPhoto); the rest
	// of the edit was not saved.
	photoSaved bool
}

func (e *changedError) Error() string {
	if e.photoSaved {
		return "meal changed meanwhile; its new photo was saved"
	}
	return "meal changed meanwhile"
}

func (e *changedError) Unwrap() error { return ErrConflict }

// changed reads the latest version of cur after a write was refused
// because the meal changed: a *changedError holding it, or ErrNotFound if
// the meal has gone since.
func (w *writer) changed(ctx context.Context, cur *Meal) error {
	latest, err := w.rows.Get(ctx, cur.UserID, mustDate(cur.Date), cur.ID)
	if err != nil {
		return err
	}
	return &changedError{latest: latest}
}

// update is save for an edit that keeps the meal's date and time: one
// conditional write in place, ErrConflict if the meal changed since cur
// was read, ErrNotFound if it is gone. A new photo is written first, over
// the old copies (their keys do not change); a removed photo's copies are
// deleted after the row no longer names them.
func (w *writer) update(ctx context.Context, cur *Meal, c change) (*Meal, error) {
	m := *cur
	c.apply(&m)
	if c.upload.present() {
		return w.replace(ctx, cur, &m, c)
	}
	if c.remove {
		m.Photo = Photo{}
	}
	if err := w.rows.Update(ctx, &m); err != nil {
		return nil, err
	}
	if c.remove && cur.HasPhoto() {
		w.count(ctx, cur.UserID, user.Usage{PhotoBytes: -cur.PhotoBytes})
		w.drop(ctx, cur.UserID, cur.PhotoKeys())
	}
	return &m, nil
}

// replace is update for an edit bringing a new photo: m is cur with the
// edit applied. The new bytes replace the old under the same keys, each
// tagged with its version, and the row is written after: the photo route
// sends a URL of the old version on to the version the object carries,
// so a failure between the two still shows a photo. Once the bytes are
// replaced the row must name them: a failed write is tried once more,
// past a cancelled request (a browser gone mid-save) too; a meal changed
// meanwhile gets the photo recorded on its latest version (recordPhoto);
// a meal gone meanwhile gets the new copies deleted, as no row names them.
func (w *writer) replace(ctx context.Context, cur, m *Meal, c change) (*Meal, error) {
	m.Photo = c.upload.photo(nextVersion(cur, c.now))
	// The row still names these keys, so a failure here must not delete
	// them.
	if err := w.put(ctx, m, c.upload, false); err != nil {
		return nil, err
	}
	err := w.rows.Update(ctx, m)
	if err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrNotFound) {
		w.log.Warn("meal row not updated after its photo was replaced, retrying", "user_id", cur.UserID, "err", err)
		// A first write that went through, its answer lost, is found by
		// the store (Update) and is no conflict.
		err = w.rows.Update(context.WithoutCancel(ctx), m)
	}
	switch {
	case errors.Is(err, ErrConflict):
		return nil, w.recordReplaced(ctx, m, c)
	case errors.Is(err, ErrNotFound):
		w.drop(ctx, cur.UserID, cur.PhotoKeys())
		return nil, err
	case err != nil:
		// The row still names the old version and sizes: the photo route
		// sends its URLs on to the version the objects carry, so the meal
		// shows the new photo, framed by the old sizes until its next
		// photo change.
		w.log.Error("meal photo replaced but its row not updated", "user_id", cur.UserID, "err", err)
		return nil, err
	}
	w.count(ctx, cur.UserID, user.Usage{PhotoBytes: m.PhotoBytes - cur.PhotoBytes})
	w.done(ctx, cur.UserID, c.upload)
	if old := stale(cur.PhotoKeys(), m.PhotoKeys()); len(old) > 0 {
		w.drop(ctx, cur.UserID, old)
	}
	w.made(m)
	return m, nil
}

// recordReplaced handles an edit whose new photo (m.Photo) replaced the
// old copies just as another window saved the meal: the photo is recorded
// on the latest version, so row and objects agree, and the rest of the
// edit is left for the owner to apply again (a *changedError saying the
// photo was saved). Past a cancelled request too: the bytes are already
// replaced. A meal deleted or moved meanwhile is ErrNotFound, and the new
// copies are deleted: no row names them.
func (w *writer) recordReplaced(ctx context.Context, m *Meal, c change) error {
	latest, err := w.recordPhoto(context.WithoutCancel(ctx), m, c.now)
	if errors.Is(err, ErrNotFound) {
		w.drop(ctx, m.UserID, m.PhotoKeys())
		return err
	}
	if err != nil {
		return err
	}
	w.done(ctx, m.UserID, c.upload)
	// latest's sized copies, whichever it had, are of the photo replaced.
	every := *latest
	every.PhotoSet = photo.Full(photo.LegacySet, photo.DisplaySide, photo.DisplaySide)
	if old := stale(every.PhotoKeys(), latest.PhotoKeys()); len(old) > 0 {
		w.drop(ctx, m.UserID, old)
	}
	w.made(latest)
	return &changedError{latest: latest, photoSaved: true}
}

// recordAttempts is how many times recordPhoto reads and writes the meal
// before it gives up on one changing under it.
const recordAttempts = 3

// recordPhoto writes the photo of saved, whose copies have replaced the
// meal's old ones, on the latest version of the meal, and returns that
// version as written. A meal changing between the read and the write is
// read again, up to recordAttempts times; a meal gone is ErrNotFound.
func (w *writer) recordPhoto(ctx context.Context, saved *Meal, now time.Time) (*Meal, error) {
	var err error
	for range recordAttempts {
		var latest *Meal
		latest, err = w.rows.Get(ctx, saved.UserID, mustDate(saved.Date), saved.ID)
		if err != nil {
			return nil, fmt.Errorf("meal: record replaced photo: %w", err)
		}
		was := latest.PhotoBytes
		latest.Photo = saved.Photo
		latest.UpdatedAt = now.UTC()
		err = w.rows.Update(ctx, latest)
		if err == nil {
			w.count(ctx, saved.UserID, user.Usage{PhotoBytes: saved.PhotoBytes - was})
			return latest, nil
		}
		if !errors.Is(err, ErrConflict) {
			break
		}
	}
	return nil, fmt.Errorf("meal: record replaced photo: %w", err)
}
