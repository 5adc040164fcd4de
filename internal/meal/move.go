package meal

import (
	"context"
	"errors"
	"fmt"
)

// move is save for an edit that changes the meal's date or time, which
// are part of its key: the photo is put (or copied, server-side) under the
// new keys, the new row created, then the old row deleted on the
// condition that it is still cur, then the old objects. If the old row
// changed or is gone at that step (another window edited, moved or
// deleted the meal), the new row and objects are undone, so the other
// change stands: ErrConflict or ErrNotFound. A failure to get an answer
// there is tried once more: the old row then gone means this very delete
// went through, and the new row stays; still no answer keeps both rows,
// the meal at worst in two places, never in none.
func (w *writer) move(ctx context.Context, cur *Meal, c change) (*Meal, error) {
	tod, err := ParseTimeOfDay(c.edited.Time)
	if err != nil {
		return nil, fmt.Errorf("meal: move: %w", err)
	}
	moved := *cur
	c.apply(&moved)
	moved.Date, moved.Time, moved.ID = c.edited.Date, tod.String(), NewID(tod)
	if err := w.placePhoto(ctx, cur, &moved, c); err != nil {
		return nil, err
	}
	if err := w.rows.Create(ctx, &moved); err != nil {
		if moved.HasPhoto() {
			w.drop(ctx, cur.UserID, moved.PhotoKeys())
		}
		return nil, err
	}
	if err := w.retire(ctx, cur, &moved); err != nil {
		return nil, err
	}
	if cur.HasPhoto() {
		w.drop(ctx, cur.UserID, cur.PhotoKeys())
	}
	w.done(ctx, cur.UserID, c.upload)
	return &moved, nil
}

// placePhoto gives moved, the meal at its new key, its photo before its
// row is written: the edit's new photo, none if the edit removes it, or
// else cur's copied server-side. A failure deletes what it wrote.
func (w *writer) placePhoto(ctx context.Context, cur, moved *Meal, c change) error {
	switch {
	case c.upload.present():
		moved.Photo = c.upload.photo(nextVersion(cur, c.now))
		return w.put(ctx, moved, c.upload, true)
	case c.remove:
		moved.Photo = Photo{}
	case cur.HasPhoto():
		from, to := cur.PhotoKeys(), moved.PhotoKeys()
		for i := range from {
			if err := w.objects.Copy(ctx, cur.UserID, from[i], to[i]); err != nil {
				w.drop(ctx, cur.UserID, to[:i])
				return err
			}
		}
	}
	return nil
}

// retire deletes cur's row once moved, its copy at the new key, is
// written, on the condition that cur is unchanged. A changed or gone old
// row undoes the copy and is ErrConflict or ErrNotFound; an old row whose
// fate stays unknown keeps both (an error saying so).
func (w *writer) retire(ctx context.Context, cur, moved *Meal) error {
	// One attempt without the SDK's retries, so that "not found" means
	// another writer took the old row, not that a lost attempt of this
	// very delete did.
	err := w.rows.DeleteVersionOnce(ctx, cur)
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
		// and the meal is neither doubled nor brought back.
		w.undoMove(ctx, moved)
		return err
	case errors.Is(err, ErrNotFound):
		// Asked again, the old row is gone: the first delete went through,
		// only its answer was lost. The new row is the meal.
		return nil
	case err != nil:
		// Still unknown: keep the new row, so the meal is at worst in
		// both places, never in neither.
		w.log.Error("meal moved but its old row not deleted", "user_id", cur.UserID, "err", err)
		return fmt.Errorf("meal: move: old row not deleted, the meal may be in both places: %w", err)
	}
	return nil
}

// undoMove deletes moved, the row and objects a move just wrote, past a
// cancelled request too. "Not found" there is an attempt of this undo
// that went through.
func (w *writer) undoMove(ctx context.Context, moved *Meal) {
	bg := context.WithoutCancel(ctx)
	if err := w.rows.DeleteVersion(bg, moved); err != nil && !errors.Is(err, ErrNotFound) {
		w.log.Error("moved meal not undone", "user_id", moved.UserID, "err", err)
		return
	}
	if moved.HasPhoto() {
		w.drop(bg, moved.UserID, moved.PhotoKeys())
	}
}
