package meal

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"ndiro/internal/dynamo"
	"ndiro/internal/photo"
	"ndiro/internal/user"
)

// OrphanKind is one kind of disagreement between the users table, the
// meals table and the photo bucket (DESIGN.md, account deletion: what a
// deletion or a crash half-way can leave). Its value names it in URLs and
// pages ("photos-without-meal").
type OrphanKind string

// The kinds of orphan, in the order OrphanKinds lists them.
const (
	// MealsWithoutUser are meals rows whose users row is gone.
	MealsWithoutUser OrphanKind = "meals-without-user"
	// PhotosWithoutUser are photo objects whose users row is gone.
	PhotosWithoutUser OrphanKind = "photos-without-user"
	// PhotosWithoutMeal are photo objects (of a living user, when users
	// are compared) that no meal row's photo names.
	PhotosWithoutMeal OrphanKind = "photos-without-meal"
	// MissingPhotos are meals whose photo names a copy that is not in the
	// bucket or, when versions are compared, carries another version.
	MissingPhotos OrphanKind = "missing-photos"
	// ForeignObjects are objects under "users/" whose key no user ID
	// makes (photo.OwnerOfKey): written outside ndiro. Reported, never
	// cleaned up: no owner's delete may touch them (ErrForeign).
	ForeignObjects OrphanKind = "foreign-objects"
	// SessionKeysWithoutSession are session key items of the users table
	// that no row lists (user.DanglingKey): an end or an account
	// deletion whose key delete failed. Found only when users are
	// compared.
	SessionKeysWithoutSession OrphanKind = "session-keys-without-session"
)

// OrphanKinds lists every OrphanKind, rows before objects, the users
// table's own last.
var OrphanKinds = []OrphanKind{MealsWithoutUser, PhotosWithoutUser, PhotosWithoutMeal, MissingPhotos, ForeignObjects, SessionKeysWithoutSession}

// ErrForeign is returned by Orphans.Clean for ForeignObjects: written
// outside ndiro, they are not its to delete.
var ErrForeign = errors.New("meal: objects written outside ndiro are not cleaned up")

// Orphan is one thing Find found: a meals row (the meal kinds) or an
// object (the object kinds).
type Orphan struct {
	// Key is the object's key; "" for a meals row.
	Key string
	// UserID is whose it is: the row's user_id, or the user ID the key is
	// under; "" for a foreign object.
	UserID string
	// Meal is the row as scanned, for the meal kinds; nil for objects.
	Meal *Meal
	// Copies, for MissingPhotos, are the keys of the meal's copies that
	// the listing had: once the meal's photo is cleared, no meal names
	// them.
	Copies []string
}

// Label names o in a list: its key, or "user_id sk" for a row.
func (o Orphan) Label() string {
	if o.Meal != nil {
		return o.Meal.UserID + " " + o.Meal.SK
	}
	return o.Key
}

// Found is what one Find saw.
type Found struct {
	// Meals and Objects are how many meals rows and objects under
	// "users/" were compared.
	Meals, Objects int
	// Of holds the orphans of each kind, sorted by Label; a kind with
	// none has no entry.
	Of map[OrphanKind][]Orphan
}

// Rows is the meals table as Orphans reads and repairs it; *Store is one.
type Rows interface {
	ScanPhotos(ctx context.Context, pace dynamo.Pace, fn func(*Meal) error) error
	Get(ctx context.Context, userID string, d Date, id string) (*Meal, error)
	Update(ctx context.Context, m *Meal) error
	DeleteKeys(ctx context.Context, userID string, sks []string) (int, error)
}

// Objects is the photo bucket as Orphans lists and cleans it;
// *photo.Store is one.
type Objects interface {
	List(ctx context.Context, prefix string, pace func(context.Context, int) error, fn func(photo.ObjectInfo) error) error
	Head(ctx context.Context, ownerID, key string) (photo.Version, time.Time, error)
	Delete(ctx context.Context, ownerID string, keys ...string) error
}

// Users is the users table as Orphans compares with it; *user.Store is
// one.
type Users interface {
	IDs(ctx context.Context, pace dynamo.Pace) (map[string]bool, error)
	Get(ctx context.Context, id string) (*user.User, error)
	DanglingSessionKeys(ctx context.Context, pace dynamo.Pace) ([]user.DanglingKey, error)
	DeleteDanglingSessionKey(ctx context.Context, id string, before time.Time) (bool, error)
}

// OrphanDeps are what Orphans reads, writes and how.
type OrphanDeps struct {
	Rows    Rows
	Objects Objects
	// Users, if set, is compared too: rows and objects of a user ID with
	// no users row are MealsWithoutUser and PhotosWithoutUser. Nil
	// compares meals and objects alone (local start-up).
	Users Users
	// Grace is how old an object, or a meal's last change, must be before
	// it counts, and how old an object must still be when a clean-up
	// deletes it: a write puts a photo's objects before its row, and a
	// replace or move changes objects and row one after the other, so
	// anything younger may be half-way through a write. 0 counts
	// everything: only for when nothing else writes.
	Grace time.Duration
	// Now is the clock Grace is measured on; nil is time.Now.
	Now func() time.Time
	// Versions makes Find read each settled photo's copies (HeadObject)
	// and count a copy carrying another version than the row's as
	// missing. Off, only presence in the listing counts.
	Versions bool
	// Pace pays for DynamoDB reads (one unit per item scanned or read)
	// and ObjectPace for S3 calls (one per listing page or HeadObject);
	// nil reads as fast as the backends answer.
	Pace, ObjectPace dynamo.Pace
	// Progress, if set, is told what Find does ("users", "meals",
	// "photos", "versions") and how many rows and objects it has read.
	Progress func(phase string, scanned int)
}

// Orphans finds where users rows, meals rows and photo objects disagree,
// and repairs each kind: the one orphan check, run by local start-up
// (RepairPhotos) and by the admin monitor.
type Orphans struct {
	d OrphanDeps
}

// NewOrphans returns the check on d's stores.
func NewOrphans(d OrphanDeps) *Orphans {
	unpaced := func(context.Context, int) error { return nil }
	if d.Pace == nil {
		d.Pace = unpaced
	}
	if d.ObjectPace == nil {
		d.ObjectPace = unpaced
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Progress == nil {
		d.Progress = func(string, int) {}
	}
	return &Orphans{d: d}
}

// settled reports whether something last written at t is older than the
// grace period at now.
func (o *Orphans) settled(now, t time.Time) bool {
	return o.d.Grace <= 0 || now.Sub(t) >= o.d.Grace
}

// find is one run of Find: what it has read so far.
type find struct {
	o         *Orphans
	now       time.Time
	users     map[string]bool // nil: not compared
	named     map[string]bool // keys a meal's photo names
	present   map[string]bool // keys the listing had
	withPhoto []Meal          // meals with a photo, last changed before the grace period
	scanned   int
	out       *Found
}

func (f *find) add(k OrphanKind, x Orphan) { f.out.Of[k] = append(f.out.Of[k], x) }

// Find reads every users key (with Users), every meals row and every
// object under "users/", each once, paced, and returns the orphans of
// each kind. It changes nothing. Objects under any other prefix, such as
// the pending uploads under "pending/", are never looked at: a pending
// upload is never an orphan. Objects and meals' changes younger than
// Grace are left out; rows whose user is gone and foreign objects are
// reported at once (nothing being written makes either).
//
// An object is named by a meal if the meal's photo is set, whether or
// not the meal's other copy exists: a meal with one copy left is
// MissingPhotos, and its copy is listed in the Orphan's Copies.
func (o *Orphans) Find(ctx context.Context) (*Found, error) {
	f := &find{o: o, now: o.d.Now(), named: map[string]bool{}, present: map[string]bool{}, out: &Found{Of: map[OrphanKind][]Orphan{}}}
	steps := []struct {
		phase string
		run   func(context.Context) error
	}{{"users", f.readUsers}, {"sessions", f.sessionKeys}, {"meals", f.scanMeals}, {"photos", f.listObjects}, {"versions", f.checkCopies}}
	for _, s := range steps {
		o.d.Progress(s.phase, f.scanned)
		if err := s.run(ctx); err != nil {
			return nil, fmt.Errorf("meal: find orphans: %s: %w", s.phase, err)
		}
	}
	for k := range f.out.Of {
		slices.SortFunc(f.out.Of[k], func(a, b Orphan) int { return cmp.Compare(a.Label(), b.Label()) })
	}
	return f.out, nil
}

func (f *find) readUsers(ctx context.Context) error {
	if f.o.d.Users == nil {
		return nil
	}
	ids, err := f.o.d.Users.IDs(ctx, f.o.d.Pace)
	f.users, f.scanned = ids, f.scanned+len(ids)
	return err
}

// sessionKeys finds the settled session key items no users row lists
// (with Users). An orphan's Key is the session ID, UserID the account the
// key names.
func (f *find) sessionKeys(ctx context.Context) error {
	if f.o.d.Users == nil {
		return nil
	}
	keys, err := f.o.d.Users.DanglingSessionKeys(ctx, f.o.d.Pace)
	for _, k := range keys {
		if f.o.settled(f.now, k.Created) {
			f.add(SessionKeysWithoutSession, Orphan{Key: k.ID, UserID: k.UID})
		}
	}
	return err
}

// scanMeals reads every meals row: a row of a user ID without a users
// row is MealsWithoutUser; the rest name their photo's keys.
func (f *find) scanMeals(ctx context.Context) error {
	return f.o.d.Rows.ScanPhotos(ctx, f.o.d.Pace, func(m *Meal) error {
		f.out.Meals++
		f.scanned++
		if f.scanned%500 == 0 {
			f.o.d.Progress("meals", f.scanned)
		}
		if f.users != nil && !f.users[m.UserID] {
			row := *m
			f.add(MealsWithoutUser, Orphan{UserID: m.UserID, Meal: &row})
			return nil
		}
		if !m.HasPhoto() {
			return nil
		}
		for _, k := range m.PhotoKeys() {
			f.named[k] = true
		}
		if f.o.settled(f.now, m.UpdatedAt) {
			f.withPhoto = append(f.withPhoto, *m)
		}
		return nil
	})
}

// listObjects reads every object under "users/" and sorts out those that
// no user ID makes, those whose user is gone and those no meal names.
func (f *find) listObjects(ctx context.Context) error {
	return f.o.d.Objects.List(ctx, "users/", f.o.d.ObjectPace, func(obj photo.ObjectInfo) error {
		f.out.Objects++
		f.scanned++
		f.present[obj.Key] = true
		owner, known := photo.OwnerOfKey(obj.Key)
		switch {
		case !known:
			f.add(ForeignObjects, Orphan{Key: obj.Key})
		case !f.o.settled(f.now, obj.Modified):
		case f.users != nil && !f.users[owner]:
			f.add(PhotosWithoutUser, Orphan{Key: obj.Key, UserID: owner})
		case !f.named[obj.Key]:
			f.add(PhotosWithoutMeal, Orphan{Key: obj.Key, UserID: owner})
		}
		return nil
	})
}

// checkCopies finds the settled meals whose photo is dangling.
func (f *find) checkCopies(ctx context.Context) error {
	for i := range f.withPhoto {
		m := &f.withPhoto[i]
		bad, err := f.o.dangling(ctx, m, f.present)
		if err != nil {
			return err
		}
		if bad {
			var left []string
			for _, k := range m.PhotoKeys() {
				if f.present[k] {
					left = append(left, k)
				}
			}
			f.add(MissingPhotos, Orphan{UserID: m.UserID, Meal: m, Copies: left})
		}
		f.scanned++
		if i%100 == 0 {
			f.o.d.Progress("versions", f.scanned)
		}
	}
	return nil
}

// dangling reports whether a copy of m's photo is missing (from the
// listing present, or at S3 when present is nil) or, with Versions,
// carries another version than m's.
func (o *Orphans) dangling(ctx context.Context, m *Meal, present map[string]bool) (bool, error) {
	for _, key := range m.PhotoKeys() {
		if present != nil && !present[key] {
			return true, nil
		}
		if present != nil && !o.d.Versions {
			continue
		}
		v, _, err := o.head(ctx, m.UserID, key)
		if errors.Is(err, photo.ErrNotFound) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if o.d.Versions && v != m.PhotoV {
			return true, nil
		}
	}
	return false, nil
}

// head is a paced HeadObject.
func (o *Orphans) head(ctx context.Context, owner, key string) (photo.Version, time.Time, error) {
	if err := o.d.ObjectPace(ctx, 1); err != nil {
		return 0, time.Time{}, err
	}
	return o.d.Objects.Head(ctx, owner, key)
}

// Clean repairs items, orphans of kind as a Find found them, each checked
// again first (it may have changed since), and returns how many it
// repaired; on error, repairs made before it stay made. What each kind's
// repair does and re-checks is said by its function: deleteMealRows,
// deleteUserPhotos, deleteUnnamed, clearMissing. ForeignObjects is
// ErrForeign, and the user kinds need Users.
func (o *Orphans) Clean(ctx context.Context, kind OrphanKind, items []Orphan) (int, error) {
	var (
		done []Orphan
		err  error
	)
	switch kind {
	case MealsWithoutUser:
		return o.deleteMealRows(ctx, items)
	case PhotosWithoutUser:
		done, err = o.deleteUserPhotos(ctx, items)
	case PhotosWithoutMeal:
		done, err = o.deleteUnnamed(ctx, items)
	case MissingPhotos:
		done, err = o.clearMissing(ctx, items)
	case ForeignObjects:
		return 0, ErrForeign
	case SessionKeysWithoutSession:
		return o.deleteSessionKeys(ctx, items)
	default:
		return 0, fmt.Errorf("meal: clean orphans: no kind %q", kind)
	}
	return len(done), err
}

// deleteSessionKeys repairs SessionKeysWithoutSession: each key still
// dangling and settled when read again is deleted. It returns how many.
func (o *Orphans) deleteSessionKeys(ctx context.Context, items []Orphan) (int, error) {
	if o.d.Users == nil {
		return 0, errors.New("meal: clean orphans: no users table to check against")
	}
	n := 0
	before := o.d.Now().Add(-o.d.Grace)
	for _, x := range items {
		if err := o.d.Pace(ctx, 2); err != nil {
			return n, err
		}
		deleted, err := o.d.Users.DeleteDanglingSessionKey(ctx, x.Key, before)
		if err != nil {
			return n, err
		}
		if deleted {
			n++
		}
	}
	return n, nil
}

// byOwner groups items by UserID, owners in order of first appearance.
func byOwner(items []Orphan) (owners []string, of map[string][]Orphan) {
	of = map[string][]Orphan{}
	for _, x := range items {
		if of[x.UserID] == nil {
			owners = append(owners, x.UserID)
		}
		of[x.UserID] = append(of[x.UserID], x)
	}
	return owners, of
}

// userGone reports whether id has no users row now (a paced, consistent
// read): a user signed up again since the check keeps what is theirs.
func (o *Orphans) userGone(ctx context.Context, id string) (bool, error) {
	if o.d.Users == nil {
		return false, errors.New("meal: clean orphans: no users table to check against")
	}
	if err := o.d.Pace(ctx, 1); err != nil {
		return false, err
	}
	_, err := o.d.Users.Get(ctx, id)
	if errors.Is(err, user.ErrNotFound) {
		return true, nil
	}
	return false, err
}

// deleteMealRows repairs MealsWithoutUser: the rows of each owner still
// without a users row are deleted (BatchWriteItem). It returns how many.
func (o *Orphans) deleteMealRows(ctx context.Context, items []Orphan) (int, error) {
	owners, of := byOwner(items)
	n := 0
	for _, owner := range owners {
		gone, err := o.userGone(ctx, owner)
		if err != nil {
			return n, err
		}
		if !gone {
			continue
		}
		sks := make([]string, 0, len(of[owner]))
		for _, x := range of[owner] {
			sks = append(sks, x.Meal.SK)
		}
		d, err := o.d.Rows.DeleteKeys(ctx, owner, sks)
		n += d
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// deleteUserPhotos repairs PhotosWithoutUser: the objects of each owner
// still without a users row, each still there and settled, are deleted.
func (o *Orphans) deleteUserPhotos(ctx context.Context, items []Orphan) ([]Orphan, error) {
	owners, of := byOwner(items)
	var done []Orphan
	for _, owner := range owners {
		gone, err := o.userGone(ctx, owner)
		if err != nil {
			return done, err
		}
		if !gone {
			continue
		}
		deleted, err := o.deleteSettled(ctx, owner, of[owner])
		done = append(done, deleted...)
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// deleteUnnamed repairs PhotosWithoutMeal: each object that is still
// named by no meal (the meal its key names is read again), still there
// and settled, is deleted.
func (o *Orphans) deleteUnnamed(ctx context.Context, items []Orphan) ([]Orphan, error) {
	owners, of := byOwner(items)
	var done []Orphan
	for _, owner := range owners {
		var unnamed []Orphan
		for _, x := range of[owner] {
			named, err := o.named(ctx, x.Key)
			if err != nil {
				return done, err
			}
			if !named {
				unnamed = append(unnamed, x)
			}
		}
		deleted, err := o.deleteSettled(ctx, owner, unnamed)
		done = append(done, deleted...)
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// named reports whether a meal's photo names key now: the meal the key
// is of, read again (paced), exists with its photo set.
func (o *Orphans) named(ctx context.Context, key string) (bool, error) {
	owner, date, id, _, ok := photo.ParseKey(key)
	if !ok {
		return false, nil // no photo key: no meal can name it
	}
	m, err := o.meal(ctx, owner, date, id)
	if err != nil || m == nil {
		return false, err
	}
	return m.HasPhoto() && slices.Contains(m.PhotoKeys(), key), nil
}

// deleteSettled deletes those of owner's objects items that are still
// there and were last written at least Grace ago (HeadObject, paced), in
// one Delete, and returns them. The check saw each settled, but it may
// have been written again since: an upload, a replace or a move puts a
// meal's objects before its row, and an object younger than Grace may be
// one of those on its way to its row. A missing object is nothing to do.
func (o *Orphans) deleteSettled(ctx context.Context, owner string, items []Orphan) ([]Orphan, error) {
	now := o.d.Now()
	var del []Orphan
	for _, x := range items {
		_, written, err := o.head(ctx, owner, x.Key)
		if errors.Is(err, photo.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if o.settled(now, written) {
			del = append(del, x)
		}
	}
	if len(del) == 0 {
		return nil, nil
	}
	keys := make([]string, len(del))
	for i, x := range del {
		keys[i] = x.Key
	}
	if err := o.d.Objects.Delete(ctx, owner, keys...); err != nil {
		return nil, err
	}
	return del, nil
}

// clearMissing repairs MissingPhotos: each meal, read again in full
// (paced), that still has a photo and whose photo is still dangling
// (copies checked at S3) has its photo cleared (Photo's zero value) with
// a version-conditional Update. A meal changed or gone meanwhile is left
// as it is. It returns the meals it cleared.
func (o *Orphans) clearMissing(ctx context.Context, items []Orphan) ([]Orphan, error) {
	var done []Orphan
	for _, x := range items {
		m, err := o.meal(ctx, x.Meal.UserID, x.Meal.Date, x.Meal.ID)
		if err != nil {
			return done, err
		}
		if m == nil || !m.HasPhoto() {
			continue
		}
		bad, err := o.dangling(ctx, m, nil)
		if err != nil {
			return done, err
		}
		if !bad {
			continue
		}
		m.Photo = Photo{}
		m.UpdatedAt = o.d.Now().UTC()
		err = o.d.Rows.Update(ctx, m)
		switch {
		case errors.Is(err, ErrNotFound), errors.Is(err, ErrConflict):
		case err != nil:
			return done, fmt.Errorf("meal: clear missing photo of %s %s: %w", m.UserID, m.SK, err)
		default:
			done = append(done, x)
		}
	}
	return done, nil
}

// meal reads a meal again (paced, consistent), nil if it is gone or the
// date is no date.
func (o *Orphans) meal(ctx context.Context, owner, date, id string) (*Meal, error) {
	d, err := ParseDate(date)
	if err != nil {
		return nil, nil
	}
	if err := o.d.Pace(ctx, 1); err != nil {
		return nil, err
	}
	m, err := o.d.Rows.Get(ctx, owner, d, id)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return m, err
}
