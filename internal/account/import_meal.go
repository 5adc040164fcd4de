package account

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	"ndiro/internal/archive"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/user"
)

// importJob is one run of an import over its opened archive.
type importJob struct {
	im     *Importer
	userID string
	imp    *user.Import
	a      *archive.Archive
	// used is the account's usage as its row held it at the run's last
	// read or save; imp.Unsaved is what the run added since (usage).
	used user.Usage
	// days holds the meals of each date read so far (one Query a date,
	// whatever its number of meals), with the run's own claims added.
	days map[string][]meal.Meal
}

// usage is the account's usage with what the run has added.
func (j *importJob) usage() user.Usage {
	return user.Usage{Meals: j.used.Meals + j.imp.Unsaved.Meals, PhotoBytes: j.used.PhotoBytes + j.imp.Unsaved.PhotoBytes}
}

// quotaMessage is the failure of a run stopped by the quota before meal
// i of total, for the result page.
func (j *importJob) quotaMessage(i, total int) string {
	why, _ := j.im.d.Quota.Reached(j.usage(), false)
	return fmt.Sprintf("The import stopped before meal %d of %d: your diary is full, %s. The meals imported so far stay. Delete meals or photos you no longer need, or ask whoever runs this server to raise the limit, then upload the zip again: the meals imported so far are skipped.", i+1, total, why)
}

// claimSalts is how many derived IDs a meal tries (meal.DerivedID of the
// import's ID, the meal's index and a salt): a row of another write at
// the first, a 1 in 16 million clash at the same second, moves the claim
// to the next.
const claimSalts = 4

// Notes' kinds (user.ImportNote.Kind).
const (
	noteConflict = "conflict"
	notePhoto    = "photo"
	noteFailed   = "failed"
)

// one imports meal i of the archive, inside the account's write gate
// (errStopped once a deletion has closed it), in an order that never
// touches a photo the import did not write:
//
//  1. its own claim: a meals row at one of its derived IDs that this
//     import wrote (meal.Meal.ImportID) is a meal a stopped run got to;
//     the run goes on with its photo;
//  2. the same meal in the diary already (same date, time and
//     archive.ContentKey, not claimed by this import): skipped, so an
//     archive imported twice adds nothing, unless it is an earlier
//     import's claim (meal.Meal.ImportID set) still without the photo the
//     archive has (that import failed between claim and photo): the run
//     goes on with its photo, as in 1; a meal the owner wrote is never
//     given one. A different meal at the same date and time is a
//     conflict, noted, and both are kept;
//  3. the claim: the meals row, with no photo, created conditionally at
//     the first free derived ID;
//  4. only then its photo's objects, under the claimed row's keys, and
//     the photo's fields on the row (j.photo).
//
// A meal that cannot be made is counted Failed and noted; storage
// errors are returned for the run to try again.
func (j *importJob) one(ctx context.Context, i int, am *archive.Meal) error {
	release, err := j.im.d.Gate.Enter(j.userID)
	if errors.Is(err, user.ErrClosed) {
		return errStopped
	}
	if err != nil {
		return err
	}
	defer release()
	d, derr := meal.ParseDate(am.Date)
	tod, terr := meal.ParseTimeOfDay(am.Time)
	if derr != nil || terr != nil {
		j.note(i, am, noteFailed, "Its date or time cannot be a meal's in this diary; it was not imported.")
		j.imp.Failed++
		return nil
	}
	own, free, err := j.own(ctx, d, tod, i)
	if err != nil {
		return err
	}
	if own != nil {
		j.imp.Imported++
		return j.photo(ctx, i, own, am)
	}
	day, err := j.day(ctx, d)
	if err != nil {
		return err
	}
	key, conflict := am.ContentKey(), false
	for k := range day {
		other := &day[k]
		if other.Time != am.Time || other.ImportID == j.imp.ID {
			continue
		}
		if contentKey(other) == key {
			if other.ImportID != "" && !other.HasPhoto() && am.Photo != nil && !am.Photo.Missing {
				// An earlier import's claim of this meal whose photo step
				// failed: the claim is there, so its photo goes in now.
				claim := *other
				j.imp.Imported++
				return j.photo(ctx, i, &claim, am)
			}
			j.imp.Skipped++
			return nil
		}
		conflict = true
	}
	if free == "" {
		j.note(i, am, noteFailed, "Every key this import could give it was taken; it was not imported.")
		j.imp.Failed++
		return nil
	}
	m, err := j.claim(ctx, i, am, free)
	if err != nil {
		return err
	}
	j.imp.Unsaved.Meals++
	j.days[am.Date] = append(j.days[am.Date], *m)
	j.imp.Imported++
	if conflict {
		j.note(i, am, noteConflict, "A different meal was in the diary at this date and time already; both are kept.")
	}
	return j.photo(ctx, i, m, am)
}

// claim creates meal i's row at meal ID id, with no photo (the claim of
// step 3 of one): the one place an import writes a new meal, refused with
// errQuota when the account holds its quota of meals.
func (j *importJob) claim(ctx context.Context, i int, am *archive.Meal, id string) (*meal.Meal, error) {
	if why, _ := j.im.d.Quota.Reached(j.usage(), false); why != "" {
		return nil, errQuota
	}
	m := importedMeal(j.userID, j.imp.ID, id, am, j.im.d.Now())
	if err := j.im.d.Meals.Create(ctx, m); err != nil {
		// ErrExists too: a row appeared at the ID since it was read; the
		// next try sees whose it is.
		return nil, fmt.Errorf("account: import: claim meal %d: %w", i+1, err)
	}
	return m, nil
}

// own looks at meal i's derived IDs in order: it returns the row this
// import claimed at one of them, or else the first ID no row holds ("" if
// every one is another write's).
func (j *importJob) own(ctx context.Context, d meal.Date, tod meal.TimeOfDay, i int) (*meal.Meal, string, error) {
	for salt := range claimSalts {
		id := meal.DerivedID(tod, j.imp.ID+"#"+strconv.Itoa(i)+"#"+strconv.Itoa(salt))
		m, err := j.im.d.Meals.Get(ctx, j.userID, d, id)
		if errors.Is(err, meal.ErrNotFound) {
			return nil, id, nil
		}
		if err != nil {
			return nil, "", err
		}
		if m.ImportID == j.imp.ID {
			return m, "", nil
		}
	}
	return nil, "", nil
}

// day returns the meals of date d, read once a run.
func (j *importJob) day(ctx context.Context, d meal.Date) ([]meal.Meal, error) {
	if ms, ok := j.days[d.String()]; ok {
		return ms, nil
	}
	ms, err := j.im.d.Meals.Window(ctx, j.userID, d, d)
	if err != nil {
		return nil, err
	}
	j.days[d.String()] = ms
	return ms, nil
}

// note records a conflict or problem of meal i.
func (j *importJob) note(i int, am *archive.Meal, kind, msg string) {
	j.imp.Note(user.ImportNote{Index: i, Date: am.Date, Time: am.Time, Kind: kind, Msg: msg})
}

// photo gives m, the claimed row of meal i, the archive's photo if it has
// one and m has none yet: the photo is run through the upload pipeline
// (decoded, re-encoded, both copies made), its objects put under m's
// keys, then the row updated with its fields. A photo that cannot be
// read or decoded is noted and the meal kept without it.
func (j *importJob) photo(ctx context.Context, i int, m *meal.Meal, am *archive.Meal) error {
	ref := am.Photo
	if ref == nil || m.HasPhoto() {
		return nil
	}
	if ref.Missing {
		j.note(i, am, notePhoto, "The export had no file for its photo (it was missing when the zip was made); the meal is imported without it.")
		return nil
	}
	data, err := j.read(ref)
	var refused *archive.Refusal
	if errors.Is(err, photo.ErrNotFound) {
		// A part of the staged zip is gone: the import ends here.
		j.note(i, am, notePhoto, "Its photo could not be read: the uploaded zip was removed before the import finished. The meal is imported without it; importing the zip again adds it.")
		return errZipGone
	}
	if errors.As(err, &refused) {
		j.note(i, am, notePhoto, "Its photo could not be read from the zip ("+refused.Reason+"); the meal is imported without it.")
		return nil
	}
	if err != nil {
		return err
	}
	proc, err := j.im.d.Process(ctx, data)
	switch {
	case errors.Is(err, photo.ErrBusy) || ctx.Err() != nil:
		return err
	case err != nil:
		j.note(i, am, notePhoto, "Its photo could not be used ("+err.Error()+"); the meal is imported without it.")
		return nil
	}
	v := photo.Version(j.im.d.Now().UnixNano())
	m.Photo = meal.PhotoOf(proc, v)
	m.PhotoTaken = am.PhotoTaken
	keys := m.PhotoKeys()
	for k, body := range [][]byte{proc.Display, proc.Thumb} {
		if err := j.im.d.Photos.Put(ctx, keys[k], body, v); err != nil {
			return err
		}
		j.im.d.Forget(keys[k])
	}
	if err := j.setPhoto(ctx, m); err != nil {
		return err
	}
	if j.im.d.Kick != nil {
		j.im.d.Kick(m)
	}
	return nil
}

// setPhoto writes m's photo fields on its row. A row changed meanwhile
// (the owner edited the new meal) is read again and given the photo
// unless it has one by then (the owner's, which is theirs to keep); a row
// deleted meanwhile takes the objects just put with it. The bytes of a
// photo recorded join the run's usage (imp.Unsaved).
func (j *importJob) setPhoto(ctx context.Context, m *meal.Meal) error {
	err := j.im.d.Meals.Update(ctx, m)
	if errors.Is(err, meal.ErrConflict) {
		d, _ := meal.ParseDate(m.Date) // a claimed row's date
		cur, gerr := j.im.d.Meals.Get(ctx, m.UserID, d, m.ID)
		if gerr != nil {
			return gerr
		}
		if cur.HasPhoto() {
			return nil
		}
		cur.Photo = m.Photo
		err = j.im.d.Meals.Update(ctx, cur)
	}
	if errors.Is(err, meal.ErrNotFound) {
		if derr := j.im.d.Photos.Delete(context.WithoutCancel(ctx), m.UserID, m.PhotoKeys()...); derr != nil {
			j.im.d.Log.Warn("photo of an imported meal deleted meanwhile not removed", "user_id", m.UserID, "err", derr)
		}
		return nil
	}
	if err == nil {
		j.imp.Unsaved.PhotoBytes += m.PhotoBytes
	}
	return err
}

// read reads ref's photo whole (at most the archive's MaxPhotoBytes: the
// pipeline counts what it holds in memory against its budget).
func (j *importJob) read(ref *archive.PhotoRef) ([]byte, error) {
	rc, err := j.a.OpenPhoto(ref)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// importedMeal is meal am of the archive as the claim of import impID
// for userID at meal ID id: every field the format carries, its
// comments, the date and time it had and its created and updated times
// (now if the zip had none), no photo yet. The comments go in with the
// new row, marked imported (no current link's own: meal.Comment.Imported):
// no other write can have reached a row not yet created.
func importedMeal(userID, impID, id string, am *archive.Meal, now time.Time) *meal.Meal {
	m := &meal.Meal{
		UserID: userID, ID: id, Date: am.Date, Time: am.Time, Kind: meal.Kind(am.Kind), Notes: am.Notes,
		Kcal: number(am.Kcal), ProteinG: number(am.ProteinG), CarbsG: number(am.CarbsG), FatG: number(am.FatG),
		Hunger: scale(am.Hunger), Fullness: scale(am.Fullness),
		CreatedAt: am.CreatedAt, UpdatedAt: am.UpdatedAt, ImportID: impID,
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = now.UTC()
	}
	if m.UpdatedAt.IsZero() {
		m.UpdatedAt = m.CreatedAt
	}
	if len(am.Comments) > 0 {
		m.Comments = make(map[string]meal.Comment, len(am.Comments))
		for _, c := range am.Comments {
			cid := c.ID
			if _, taken := m.Comments[cid]; taken || !meal.ValidCommentID(cid) {
				cid = meal.NewCommentID(c.At)
			}
			m.Comments[cid] = meal.Comment{ID: cid, ShareID: c.ShareID, Label: c.From, Text: c.Text, At: c.At, Imported: true}
		}
		m.CommentRev = 1
	}
	return m
}

func number(d *decimal.Decimal) *meal.Number {
	if d == nil {
		return nil
	}
	n := meal.NumberOf(*d)
	return &n
}

func scale(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

// contentKey is archive.Meal.ContentKey of a meal in the diary: the one
// digest both sides of "the same meal" are compared by.
func contentKey(m *meal.Meal) string {
	am := archive.Meal{Date: m.Date, Time: m.Time, Kind: string(m.Kind), Notes: m.Notes,
		Kcal: decimalOf(m.Kcal), ProteinG: decimalOf(m.ProteinG), CarbsG: decimalOf(m.CarbsG), FatG: decimalOf(m.FatG)}
	if m.Hunger != nil {
		am.Hunger = *m.Hunger
	}
	if m.Fullness != nil {
		am.Fullness = *m.Fullness
	}
	return am.ContentKey()
}

func decimalOf(n *meal.Number) *decimal.Decimal {
	if n == nil {
		return nil
	}
	d := n.Decimal()
	return &d
}
