package meal

import (
	"context"
	"fmt"
	"slices"
)

// PhotoReport is what the start-up photo check found where meal rows and
// photo objects disagree. Writes put a photo's objects before its row and
// delete them after it (DESIGN.md, Photos), so a crash or a failed step
// between the two leaves objects no row names; a meal whose photo names a
// missing object should never happen, but a data dir restored from
// elsewhere can hold one.
type PhotoReport struct {
	// Meals and Objects are how many meal rows and objects under "users/"
	// were compared.
	Meals, Objects int
	// Orphans are the keys, sorted, of objects under "users/" that no
	// meal's photo names once Missing are cleared: PhotosWithoutMeal, and
	// the copies left of a Missing meal's photo.
	Orphans []string
	// Missing are the meals, sorted by owner and sort key, at least one
	// of whose two copies (Meal.PhotoKeys) is not in the bucket: whole
	// rows, as scanned. Only presence is compared, not the version an
	// object carries: a replace whose row write failed leaves newer bytes
	// than the row names, which the photo route follows.
	Missing []Meal
	// Foreign are the keys, sorted, of objects under "users/" that no
	// user ID makes (ForeignObjects): written outside ndiro, reported and
	// never deleted.
	Foreign []string
}

// Clean reports whether rows and objects agree and nothing foreign lies
// among them.
func (r *PhotoReport) Clean() bool {
	return len(r.Orphans) == 0 && len(r.Missing) == 0 && len(r.Foreign) == 0
}

// photoReport sums up f as the start-up check reports it.
func photoReport(f *Found) *PhotoReport {
	r := &PhotoReport{Meals: f.Meals, Objects: f.Objects}
	for _, x := range f.Of[PhotosWithoutMeal] {
		r.Orphans = append(r.Orphans, x.Key)
	}
	for _, x := range f.Of[MissingPhotos] {
		r.Missing = append(r.Missing, *x.Meal)
		r.Orphans = append(r.Orphans, x.Copies...)
	}
	for _, x := range f.Of[ForeignObjects] {
		r.Foreign = append(r.Foreign, x.Key)
	}
	slices.Sort(r.Orphans)
	return r
}

// CheckPhotos compares every meal row with every object under "users/",
// which holds only meal photos (DESIGN.md, Photos), with Orphans.Find (no
// grace period, no users table, presence only), and reports where they
// disagree. It changes nothing. Reads are paid for through pace, one unit
// per listing page and per item scanned; nil reads as fast as the
// backends answer.
//
// It scans the table, then lists the bucket, each once. Uploads, moves
// and deletes running meanwhile can show up as orphans or missing copies
// for that moment, so only counts taken while nothing writes are exact.
func CheckPhotos(ctx context.Context, rows Rows, objects Objects, pace func(context.Context, int) error) (*PhotoReport, error) {
	f, err := NewOrphans(OrphanDeps{Rows: rows, Objects: objects, Pace: pace, ObjectPace: pace}).Find(ctx)
	if err != nil {
		return nil, err
	}
	return photoReport(f), nil
}

// RepairPhotos runs the orphan check unpaced, with no grace period and
// without the users table, and makes rows and objects agree again: it
// first clears the photo of every Missing meal (Orphans' MissingPhotos
// repair: read again, checked again, written back with a
// version-conditional Update), then deletes every orphan object, the
// copies left of the cleared photos included (the PhotosWithoutMeal
// repair). Objects no user ID makes are reported, not deleted. It returns
// what it found; on error, repairs made before it stay made, and no copy
// is deleted while a row still names it.
//
// Run it only while nothing else writes: local mode runs it at start-up,
// before serving (cmd/ndiro). An upload in flight has its objects before
// its row, and would lose them.
func RepairPhotos(ctx context.Context, rows Rows, objects Objects) (*PhotoReport, error) {
	o := NewOrphans(OrphanDeps{Rows: rows, Objects: objects})
	f, err := o.Find(ctx)
	if err != nil {
		return nil, err
	}
	r := photoReport(f)
	cleared, err := o.clearMissing(ctx, f.Of[MissingPhotos])
	if err != nil {
		return r, fmt.Errorf("meal: repair photos: %w", err)
	}
	unnamed := f.Of[PhotosWithoutMeal]
	for _, x := range cleared {
		for _, k := range x.Copies {
			unnamed = append(unnamed, Orphan{Key: k, UserID: x.UserID})
		}
	}
	if _, err := o.deleteUnnamed(ctx, unnamed); err != nil {
		return r, fmt.Errorf("meal: repair photos: %w", err)
	}
	return r, nil
}
