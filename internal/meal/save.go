package meal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"ndiro/internal/photo"
	"ndiro/internal/storage"
)

// The stores a meal write spans, as small interfaces naming only what a
// write uses: *Store and *photo.Store are the real ones.
type (
	rows interface {
		Create(ctx context.Context, m *Meal) error
		Update(ctx context.Context, m *Meal) error
		DeleteVersion(ctx context.Context, m *Meal) error
		DeleteVersionOnce(ctx context.Context, m *Meal) error
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
// the photo route follows (save says how that is kept rare).
type writer struct {
	rows    rows
	objects objects
	// forget drops a key's bytes from the photo cache.
	forget func(key string)
	log    *slog.Logger
}

// upload is the photo a save brings: bytes just processed, or an upload
// kept from an earlier submission of the form. The zero value is none.
type upload struct {
	proc    *photo.Processed
	pending *photo.Pending
	// taken overrides the photo's own capture time when it has none (the
	// browser downscaled it, dropping EXIF, and sent the time apart).
	taken time.Time
}

func (u upload) present() bool { return u.proc != nil || u.pending != nil }

// record writes the upload's sizes and capture time on m as the photo of
// version v.
func (u upload) record(m *Meal, v photo.Version) {
	taken := u.taken
	if u.proc != nil {
		m.PhotoW, m.PhotoH, m.ThumbW, m.ThumbH = u.proc.Width, u.proc.Height, u.proc.ThumbWidth, u.proc.ThumbHeight
		if !u.proc.Taken.IsZero() {
			taken = u.proc.Taken
		}
	} else {
		m.PhotoW, m.PhotoH, m.ThumbW, m.ThumbH = u.pending.Width, u.pending.Height, u.pending.ThumbWidth, u.pending.ThumbHeight
		if !u.pending.Taken.IsZero() {
			taken = u.pending.Taken
		}
	}
	m.PhotoV, m.PhotoTaken = v, ""
	if !taken.IsZero() {
		m.PhotoTaken = taken.Format("2006-01-02T15:04:05")
	}
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

// create writes m (UserID, Date, Time and fields set) as a new meal with
// the upload, if any, as its photo of version v.
func (w *writer) create(ctx context.Context, m *Meal, u upload, v photo.Version) error {
	if u.present() {
		tod, err := ParseTimeOfDay(m.Time)
		if err != nil {
			return fmt.Errorf("meal: create: %w", err)
		}
		m.ID = NewID(tod)
		u.record(m, v)
		if err := w.put(ctx, m, u, true); err != nil {
			return err
		}
	}
	if err := w.rows.Create(ctx, m); err != nil {
		if u.present() && !unanswered(err) {
			w.drop(ctx, m.UserID, m.PhotoKeys())
		}
		return err
	}
	w.done(ctx, m.UserID, u)
	return nil
}

// unanswered reports whether a row write failed without an answer
// (storage.ErrUnavailable): DynamoDB may have applied it all the same, so
// the photo objects the row names stay. At worst they are objects no row
// names, which the photo check and the monitor find; never a row whose
// photo is gone.
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

// moves reports whether the edit changes cur's date or time, which are
// part of its key.
func (c change) moves(cur *Meal) bool {
	return c.edited.Date != cur.Date || c.edited.Time != cur.Time
}

// save applies c to cur, read at cur.Version, and returns the meal as
// saved. Without a new date or time it is one conditional write in place:
// ErrConflict if the meal changed since cur was read, ErrNotFound if it is
// gone. A new date or time moves it: the photo is put (or copied,
// server-side) under the new keys, the new row created, then the old row
// deleted on the condition that it is still cur, then the old objects. If
// the old row changed or is gone at that step (another window edited,
// moved or deleted the meal), the new row and objects are undone, so the
// other change stands: ErrConflict or ErrNotFound. A failure to get an
// answer there is tried once more: the old row then gone means this very
// delete went through, and the new row stays; still no answer keeps both
// rows, the meal at worst in two places, never in none.
func (w *writer) save(ctx context.Context, cur *Meal, c change) (*Meal, error) {
	if c.moves(cur) {
		return w.move(ctx, cur, c)
	}
	m := *cur
	c.apply(&m)
	oldKeys := cur.PhotoKeys()
	if c.upload.present() {
		c.upload.record(&m, photo.Version(max(c.now.UnixNano(), int64(cur.PhotoV)+1)))
		// The new bytes replace the old under the same keys, each tagged
		// with its version: the photo route sends a URL of the old version
		// to the version the object carries. The row still names these
		// keys, so a failure here must not delete them.
		if err := w.put(ctx, &m, c.upload, false); err != nil {
			return nil, err
		}
	} else if c.remove {
		m.clearPhoto()
	}
	err := w.rows.Update(ctx, &m)
	if err != nil && c.upload.present() && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrNotFound) {
		// The objects already carry the new version, and the row must name
		// it: try once more, past a cancelled request (a browser gone
		// mid-save) too.
		w.log.Warn("meal row not updated after its photo was replaced, retrying", "user_id", cur.UserID, "err", err)
		// A first write that went through, its answer lost, is found by
		// the store (Update) and is no conflict.
		err = w.rows.Update(context.WithoutCancel(ctx), &m)
	}
	if errors.Is(err, ErrConflict) && c.upload.present() {
		// Changed between reading and writing, after the new photo's bytes
		// replaced the old: the bytes stand, and the row must name them, so
		// the caller reads the latest version and records the photo there.
		return &m, errPhotoReplaced
	}
	switch {
	case errors.Is(err, ErrNotFound):
		if c.upload.present() {
			w.drop(ctx, cur.UserID, oldKeys)
		}
		return nil, err
	case err != nil && c.upload.present():
		// The row still names the old version and sizes: the photo route
		// sends its URLs on to the version the objects carry, so the meal
		// shows the new photo, framed by the old sizes until its next
		// photo change.
		w.log.Error("meal photo replaced but its row not updated", "user_id", cur.UserID, "err", err)
		return nil, err
	case err != nil:
		return nil, err
	}
	if c.remove && cur.HasPhoto() {
		w.drop(ctx, cur.UserID, oldKeys)
	}
	w.done(ctx, cur.UserID, c.upload)
	return &m, nil
}

// errPhotoReplaced: an edit bringing a photo met a newer version of the
// meal after the photo's bytes had replaced the old ones.
var errPhotoReplaced = errors.New("meal changed meanwhile, after its photo was replaced")

// move is save for an edit that changes the meal's date or time.
func (w *writer) move(ctx context.Context, cur *Meal, c change) (*Meal, error) {
	tod, err := ParseTimeOfDay(c.edited.Time)
	if err != nil {
		return nil, fmt.Errorf("meal: move: %w", err)
	}
	moved := *cur
	c.apply(&moved)
	moved.Date, moved.Time, moved.ID = c.edited.Date, tod.String(), NewID(tod)
	switch {
	case c.upload.present():
		c.upload.record(&moved, photo.Version(max(c.now.UnixNano(), int64(cur.PhotoV)+1)))
		if err := w.put(ctx, &moved, c.upload, true); err != nil {
			return nil, err
		}
	case c.remove:
		moved.clearPhoto()
	case cur.HasPhoto():
		from, to := cur.PhotoKeys(), moved.PhotoKeys()
		for i := range from {
			if err := w.objects.Copy(ctx, cur.UserID, from[i], to[i]); err != nil {
				w.drop(ctx, cur.UserID, to[:i])
				return nil, err
			}
		}
	}
	if err := w.rows.Create(ctx, &moved); err != nil {
		if moved.HasPhoto() && !unanswered(err) {
			w.drop(ctx, cur.UserID, moved.PhotoKeys())
		}
		return nil, err
	}
	// One attempt without the SDK's retries, so that "not found" means
	// another writer took the old row, not that a lost attempt of this
	// very delete did.
	err = w.rows.DeleteVersionOnce(ctx, cur)
	retried := false
	if err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrNotFound) {
		// Whether the old row went is unknown: ask again, past a cancelled
		// request too. A delete that went through the first time is
		// ErrNotFound now.
		w.log.Warn("old meal row not deleted after a move, retrying", "user_id", cur.UserID, "err", err)
		err, retried = w.rows.DeleteVersion(context.WithoutCancel(ctx), cur), true
	}
	switch {
	case errors.Is(err, ErrConflict), errors.Is(err, ErrNotFound) && !retried:
		// The old meal changed, moved or was deleted (another window)
		// while it was copied: undo the copy, so the other change stands
		// and the meal is neither doubled nor brought back. The undo is a
		// delete of what this request just wrote, past a cancelled request
		// too.
		// ("Not found" there is an attempt of this undo that went through.)
		bg := context.WithoutCancel(ctx)
		if derr := w.rows.DeleteVersion(bg, &moved); derr != nil && !errors.Is(derr, ErrNotFound) {
			w.log.Error("moved meal not undone", "user_id", cur.UserID, "err", derr)
		} else if moved.HasPhoto() {
			w.drop(bg, cur.UserID, moved.PhotoKeys())
		}
		return nil, err
	case errors.Is(err, ErrNotFound):
		// Asked again, the old row is gone: the first delete went through,
		// only its answer was lost. The new row is the meal.
	case err != nil:
		// Still unknown: keep the new row, so the meal is at worst in
		// both places, never in neither.
		w.log.Error("meal moved but its old row not deleted", "user_id", cur.UserID, "err", err)
		return nil, fmt.Errorf("meal: move: old row not deleted, the meal may be in both places: %w", err)
	}
	if cur.HasPhoto() {
		w.drop(ctx, cur.UserID, cur.PhotoKeys())
	}
	w.done(ctx, cur.UserID, c.upload)
	return &moved, nil
}
