package meal

import (
	"context"
	"errors"
	"fmt"

	"ndiro/internal/user"
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
		if moved.HasPhoto() && !unanswered(err) {
			w.drop(ctx, cur.UserID, moved.PhotoKeys())
		}
		return nil, err
	}
	if err := w.retire(ctx, cur, &moved); err != nil {
		return nil, err
	}
	// The same meal, at a new key: only a new or removed photo counts.
	w.count(ctx, cur.UserID, user.Usage{PhotoBytes: moved.PhotoBytes - cur.PhotoBytes})
	if cur.HasPhoto() {
		w.drop(ctx, cur.UserID, cur.PhotoKeys())
	}
	w.done(ctx, cur.UserID, c.upload)
	w.made(&moved)
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
//
// Comments written on the old row while it was copied (its comment_rev
// moved on, its version did not) are copied onto the new row too, and the
// old row deleted at its new comment_rev: a move never loses a comment.
func (w *writer) retire(ctx context.Context, cur, moved *Meal) error {
	// One attempt without the SDK's retries, so that "not found" means
	// another writer took the old row, not that a lost attempt of this
	// very delete did.
	old := *cur
	err := w.rows.DeleteVersionOnce(ctx, &old)
	var cc *commentsChanged
	for range commentAttempts {
		if !errors.As(err, &cc) {
			break
		}
		if cerr := w.rows.CopyComments(ctx, moved, cc.latest.Comments); cerr != nil {
			// The old row keeps its comments; keep both rows.
			w.log.Error("comments not copied to a moved meal", "user_id", cur.UserID, "err", cerr)
			return fmt.Errorf("meal: move: comments not copied, the meal may be in both places: %w", cerr)
		}
		old.Comments, old.CommentRev = cc.latest.Comments, cc.latest.CommentRev
		err = w.rows.DeleteVersionOnce(ctx, &old)
	}
	retried := false
	if err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrNotFound) {
		// Whether the old row went is unknown: ask again, past a cancelled
		// request too. A delete that went through the first time is
		// ErrNotFound now.
		w.log.Warn("old meal row not deleted after a move, retrying", "user_id", cur.UserID, "err", err)
		err, retried = w.rows.DeleteVersion(context.WithoutCancel(ctx), &old), true
	}
	switch {
	case errors.Is(err, ErrConflict), errors.Is(err, ErrNotFound) && !retried:
		// The old meal changed, moved or was deleted (another window)
		// while it was copied: undo the copy, so the other change stands
		// and the meal is neither doubled nor brought back.
		w.undoMove(ctx, cur, moved)
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
// that went through. A comment written on the new row meanwhile is copied
// back to cur's row first, if it is still there.
func (w *writer) undoMove(ctx context.Context, cur, moved *Meal) {
	bg := context.WithoutCancel(ctx)
	undo := *moved
	err := w.rows.DeleteVersion(bg, &undo)
	var cc *commentsChanged
	for range commentAttempts {
		if !errors.As(err, &cc) {
			break
		}
		if cerr := w.rows.CopyComments(bg, cur, cc.latest.Comments); cerr != nil {
			w.log.Error("comments of an undone move not copied back", "user_id", cur.UserID, "err", cerr)
		}
		undo.CommentRev = cc.latest.CommentRev
		err = w.rows.DeleteVersion(bg, &undo)
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		w.log.Error("moved meal not undone", "user_id", moved.UserID, "err", err)
		return
	}
	if moved.HasPhoto() {
		w.drop(bg, moved.UserID, moved.PhotoKeys())
	}
}
