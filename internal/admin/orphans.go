package admin

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/user"
)

// Kind is one kind of orphan the check finds (DESIGN.md, account
// deletion: what a deletion or a crash half-way can leave).
type Kind string

// The kinds of orphan, in the order the page lists them.
const (
	// MealsWithoutUser: meals rows whose users row is gone.
	MealsWithoutUser Kind = "meals-without-user"
	// PhotosWithoutUser: photo objects whose users row is gone.
	PhotosWithoutUser Kind = "photos-without-user"
	// PhotosWithoutMeal: photo objects of an existing user that no meal
	// row's photo names.
	PhotosWithoutMeal Kind = "photos-without-meal"
	// MissingPhotos: meals whose photo_v names an object that is missing
	// or carries another version.
	MissingPhotos Kind = "missing-photos"
	// ForeignObjects: objects under users/ whose key no user ID makes
	// (photo.OwnerOfKey): written outside ndiro. Reported, never cleaned
	// up here: no owner's delete may touch them.
	ForeignObjects Kind = "foreign-objects"
)

// Kinds lists every Kind in page order.
var Kinds = []Kind{MealsWithoutUser, PhotosWithoutUser, PhotosWithoutMeal, MissingPhotos, ForeignObjects}

// Grace is how old an object or a meal's last change must be before the
// check calls it an orphan, unless MonitorDeps.Grace says otherwise: an
// upload puts its objects before its meal row, and a replace or move
// changes objects and row one after the other, so something younger may
// simply be half-way through a write.
const Grace = time.Hour

// grace is the monitor's Grace.
func (m *Monitor) grace() time.Duration {
	if m.d.Grace > 0 {
		return m.d.Grace
	}
	return Grace
}

// SampleSize is how many keys of each kind the page lists.
const SampleSize = 5

// Finding is what the check found of one kind.
type Finding struct {
	Kind  Kind
	Count int
	// Sample is the first SampleSize keys found, sorted.
	Sample []string
	items  []orphan
}

// orphan is one thing to repair: a meal row (user, sort key), an object
// (user, key), or a meal whose photo is dangling.
type orphan struct {
	userID, sk, key string
	date, mealID    string
}

// Report is the result of one check, or of one clean-up.
type Report struct {
	Findings map[Kind]*Finding
	At       time.Time
	Took     time.Duration
	// Cleaned, after a clean-up: the kind and how many were repaired.
	Cleaned      Kind
	CleanedCount int
}

// orphanState is the check's job: at most one runs at a time.
type orphanState struct {
	running  bool
	phase    string // what the running job does now
	scanned  int    // rows and objects read so far
	report   *Report
	lastErr  string
	finished time.Time
}

// OrphanStatus is the check's state as the page shows it.
type OrphanStatus struct {
	Running bool
	Phase   string
	Scanned int
	Report  *Report
	Err     string
}

// Orphans returns the state of the orphan check.
func (m *Monitor) Orphans() OrphanStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.orphans
	return OrphanStatus{Running: o.running, Phase: o.phase, Scanned: o.scanned, Report: o.report, Err: o.lastErr}
}

// ErrBusy is returned when a check or clean-up is asked for while one runs.
var ErrBusy = errors.New("admin: the orphan check is already running")

// ErrClosed is returned when a check or clean-up is asked for after Close.
var ErrClosed = errors.New("admin: the monitor is stopped")

// StartCheck starts the orphan check in the background, or returns ErrBusy.
func (m *Monitor) StartCheck() error {
	return m.startJob("starting", func(ctx context.Context) (*Report, error) { return m.check(ctx) })
}

// ErrNotOurs is returned by StartClean for ForeignObjects: written
// outside ndiro, they are not its to delete.
var ErrNotOurs = errors.New("admin: objects written outside ndiro are not cleaned up here")

// StartClean repairs the orphans of kind the last check found, in the
// background, each checked again first, or returns ErrBusy (or ErrNotOurs
// for ForeignObjects). Repairing deletes orphan rows and objects, and
// clears a dangling photo_v.
func (m *Monitor) StartClean(kind Kind) error {
	if kind == ForeignObjects {
		return ErrNotOurs
	}
	m.mu.Lock()
	rep := m.orphans.report
	m.mu.Unlock()
	if rep == nil || rep.Findings[kind] == nil {
		return fmt.Errorf("admin: no findings of kind %q to clean", kind)
	}
	items := rep.Findings[kind].items
	return m.startJob("cleaning", func(ctx context.Context) (*Report, error) {
		n, err := m.clean(ctx, kind, items)
		if err != nil {
			return nil, err
		}
		// What was repaired is gone from the findings; the rest stays until
		// the next check.
		out := &Report{Findings: map[Kind]*Finding{}, At: rep.At, Cleaned: kind, CleanedCount: n}
		for k, f := range rep.Findings {
			if k == kind {
				f = &Finding{Kind: k}
			}
			out.Findings[k] = f
		}
		return out, nil
	})
}

// WaitOrphans blocks until no check or clean-up runs, or ctx ends (tests).
func (m *Monitor) WaitOrphans(ctx context.Context) error {
	for {
		if !m.Orphans().Running {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

func (m *Monitor) startJob(phase string, job func(context.Context) (*Report, error)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.orphans.running {
		return ErrBusy
	}
	if m.closed {
		return ErrClosed
	}
	m.orphans.running, m.orphans.phase, m.orphans.scanned = true, phase, 0
	m.goBackground(2*time.Hour, func(ctx context.Context) {
		start := m.d.Clock.Now()
		rep, err := job(ctx)
		m.mu.Lock()
		defer m.mu.Unlock()
		m.orphans.running, m.orphans.finished = false, m.d.Clock.Now()
		if err != nil {
			m.orphans.lastErr = err.Error()
			m.d.Log.Error("orphan job failed", "err", err)
			return
		}
		if rep.Cleaned == "" {
			rep.Took = m.d.Clock.Now().Sub(start)
		}
		m.orphans.report, m.orphans.lastErr = rep, ""
	})
	return nil
}

// progress records what the running job does.
func (m *Monitor) progress(phase string, scanned int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.orphans.phase, m.orphans.scanned = phase, scanned
}

// check reads every users key, every meal's photo fields and every photo
// object, all paced, and finds the orphans of each kind.
func (m *Monitor) check(ctx context.Context) (*Report, error) {
	now := m.d.Clock.Now()
	grace := m.grace()
	settled := func(t time.Time) bool { return now.Sub(t) >= grace }
	found := map[Kind]*Finding{}
	for _, k := range Kinds {
		found[k] = &Finding{Kind: k}
	}
	add := func(k Kind, o orphan, label string) {
		f := found[k]
		f.Count++
		f.items = append(f.items, o)
		f.Sample = append(f.Sample, label)
	}
	scanned := 0

	m.progress("users", scanned)
	users, err := m.d.Users.IDs(ctx, m.reads.Wait)
	if err != nil {
		return nil, err
	}
	scanned += len(users)

	// photos[user][date/id] is the version the meal names (0: none).
	m.progress("meals", scanned)
	photos := map[string]map[string]photo.Version{}
	var withPhoto []meal.Meal
	err = m.d.Meals.ScanPhotos(ctx, m.reads.Wait, func(ml *meal.Meal) error {
		scanned++
		if scanned%500 == 0 {
			m.progress("meals", scanned)
		}
		if !users[ml.UserID] {
			add(MealsWithoutUser, orphan{userID: ml.UserID, sk: ml.SK}, ml.UserID+" "+ml.SK)
			return nil
		}
		if photos[ml.UserID] == nil {
			photos[ml.UserID] = map[string]photo.Version{}
		}
		photos[ml.UserID][ml.Date+"/"+ml.ID] = ml.PhotoV
		if ml.HasPhoto() && settled(ml.UpdatedAt) {
			withPhoto = append(withPhoto, *ml)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	m.progress("photos", scanned)
	present := map[string]bool{}
	err = m.d.Photos.List(ctx, "users/", m.s3.Wait, func(o photo.ObjectInfo) error {
		scanned++
		present[o.Key] = true
		owner, date, id, _, ok := photo.ParseKey(o.Key)
		known := ok
		if !ok {
			owner, known = photo.OwnerOfKey(o.Key)
		}
		switch {
		case !known:
			add(ForeignObjects, orphan{key: o.Key}, o.Key)
		case !settled(o.Modified):
		case !users[owner]:
			add(PhotosWithoutUser, orphan{userID: owner, key: o.Key}, o.Key)
		case !ok || photos[owner][date+"/"+id] == 0:
			add(PhotosWithoutMeal, orphan{userID: owner, key: o.Key, date: date, mealID: id}, o.Key)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	// A meal's two copies must exist and carry its version: HeadObject,
	// paced, for those the listing has.
	m.progress("versions", scanned)
	for i := range withPhoto {
		ml := &withPhoto[i]
		if bad, err := m.dangling(ctx, ml, present); err != nil {
			return nil, err
		} else if bad {
			add(MissingPhotos, orphan{userID: ml.UserID, sk: ml.SK, date: ml.Date, mealID: ml.ID}, ml.UserID+" "+ml.SK)
		}
		scanned++
		if i%100 == 0 {
			m.progress("versions", scanned)
		}
	}
	for _, f := range found {
		sort.Strings(f.Sample)
		f.Sample = f.Sample[:min(len(f.Sample), SampleSize)]
	}
	return &Report{Findings: found, At: now}, nil
}

// dangling reports whether a copy of ml's photo is missing (from the
// listing present, or at S3 when present is nil) or carries another
// version.
func (m *Monitor) dangling(ctx context.Context, ml *meal.Meal, present map[string]bool) (bool, error) {
	for _, key := range ml.PhotoKeys() {
		if present != nil && !present[key] {
			return true, nil
		}
		if err := m.s3.Wait(ctx, 1); err != nil {
			return false, err
		}
		v, _, err := m.d.Photos.Head(ctx, ml.UserID, key)
		if errors.Is(err, photo.ErrNotFound) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if v != ml.PhotoV {
			return true, nil
		}
	}
	return false, nil
}

// clean repairs items of kind, checking each again first, and returns how
// many it repaired.
func (m *Monitor) clean(ctx context.Context, kind Kind, items []orphan) (int, error) {
	byUser := map[string][]orphan{}
	for _, o := range items {
		byUser[o.userID] = append(byUser[o.userID], o)
	}
	gone := func(id string) (bool, error) {
		if err := m.reads.Wait(ctx, 1); err != nil {
			return false, err
		}
		_, err := m.d.Users.Get(ctx, id)
		if errors.Is(err, user.ErrNotFound) {
			return true, nil
		}
		return false, err
	}
	n := 0
	for owner, list := range byUser {
		switch kind {
		case MealsWithoutUser, PhotosWithoutUser:
			if ok, err := gone(owner); err != nil {
				return n, err
			} else if !ok {
				continue // the user is back (signed up again): leave it
			}
			if kind == MealsWithoutUser {
				sks := make([]string, len(list))
				for i, o := range list {
					sks[i] = o.sk
				}
				d, err := m.d.Meals.DeleteKeys(ctx, owner, sks)
				n += d
				if err != nil {
					return n, err
				}
				continue
			}
			var keys []string
			for _, o := range list {
				if ok, err := m.settledObject(ctx, owner, o.key); err != nil {
					return n, err
				} else if ok {
					keys = append(keys, o.key)
				}
			}
			if err := m.d.Photos.Delete(ctx, owner, keys...); err != nil {
				return n, err
			}
			n += len(keys)
		case PhotosWithoutMeal:
			for _, o := range list {
				if o.date != "" {
					if ml, err := m.meal(ctx, o); err != nil {
						return n, err
					} else if ml != nil && ml.HasPhoto() {
						continue // a meal names it now
					}
				}
				// The meal row is written after its objects: an object
				// written since the check may be an upload on its way to
				// its row.
				if ok, err := m.settledObject(ctx, owner, o.key); err != nil {
					return n, err
				} else if !ok {
					continue
				}
				if err := m.d.Photos.Delete(ctx, owner, o.key); err != nil {
					return n, err
				}
				n++
			}
		case MissingPhotos:
			for _, o := range list {
				ml, err := m.meal(ctx, o)
				if err != nil {
					return n, err
				}
				if ml == nil || !ml.HasPhoto() {
					continue
				}
				if bad, err := m.dangling(ctx, ml, nil); err != nil {
					return n, err
				} else if !bad {
					continue
				}
				ml.PhotoV, ml.PhotoW, ml.PhotoH, ml.ThumbW, ml.ThumbH, ml.PhotoTaken = 0, 0, 0, 0, 0, ""
				ml.UpdatedAt = m.d.Clock.Now().UTC()
				if err := m.d.Meals.Update(ctx, ml); err != nil && !errors.Is(err, meal.ErrNotFound) && !errors.Is(err, meal.ErrConflict) {
					return n, err
				} else if err == nil {
					n++
				}
			}
		}
	}
	m.d.Log.Info("orphans cleaned", "kind", string(kind), "count", n)
	return n, nil
}

// settledObject reports whether the object key of owner is still there and
// was last written at least Grace ago (HeadObject, paced), so that a
// clean-up may delete it. The check saw the object settled, but it may
// have been written again since: an upload, a replace or a move puts a
// meal's objects before its row, and an object younger than Grace may be
// one of those on its way to its row. A missing object is not deleted
// (nothing to do).
func (m *Monitor) settledObject(ctx context.Context, owner, key string) (bool, error) {
	if err := m.s3.Wait(ctx, 1); err != nil {
		return false, err
	}
	_, written, err := m.d.Photos.Head(ctx, owner, key)
	if errors.Is(err, photo.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return m.d.Clock.Now().Sub(written) >= m.grace(), nil
}

// meal reads the meal an orphan names, nil if it is gone.
func (m *Monitor) meal(ctx context.Context, o orphan) (*meal.Meal, error) {
	d, err := meal.ParseDate(o.date)
	if err != nil {
		return nil, nil
	}
	if err := m.reads.Wait(ctx, 1); err != nil {
		return nil, err
	}
	ml, err := m.d.Meals.Get(ctx, o.userID, d, o.mealID)
	if errors.Is(err, meal.ErrNotFound) {
		return nil, nil
	}
	return ml, err
}
