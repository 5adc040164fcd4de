package meal

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"ndiro/internal/dynamo"
	"ndiro/internal/photo"
)

// Rows is the meals table as CheckPhotos reads it and RepairPhotos fixes
// it; *Store is one.
type Rows interface {
	ScanPhotos(ctx context.Context, pace dynamo.Pace, fn func(*Meal) error) error
	Get(ctx context.Context, userID string, d Date, id string) (*Meal, error)
	Update(ctx context.Context, m *Meal) error
}

// Objects is the photo bucket as CheckPhotos lists it and RepairPhotos
// cleans it; *photo.Store is one.
type Objects interface {
	List(ctx context.Context, prefix string, pace func(context.Context, int) error, fn func(photo.ObjectInfo) error) error
	Delete(ctx context.Context, ownerID string, keys ...string) error
}

// PhotoReport is where meal rows and photo objects disagree. Writes put a
// photo's objects before its row and delete them after it (DESIGN.md,
// Photos), so a crash or a failed step between the two leaves objects no
// row names; a meal whose photo_v names a missing object should never
// happen, but a data dir restored from elsewhere can hold one.
type PhotoReport struct {
	// Meals and Objects are how many meal rows and objects under "users/"
	// were compared.
	Meals, Objects int
	// Orphans are the keys, sorted, of objects under "users/" that no
	// meal's photo names: neither its display copy nor its thumbnail
	// (Meal.PhotoKeys) of a meal with both copies present.
	Orphans []string
	// Missing are the meals, sorted by owner and sort key, whose photo_v
	// is set but at least one of whose two copies (Meal.PhotoKeys) is not
	// in the bucket: whole rows, as scanned. Only presence is compared,
	// not the version an object carries.
	Missing []Meal
}

// Clean reports whether rows and objects agree.
func (r *PhotoReport) Clean() bool { return len(r.Orphans) == 0 && len(r.Missing) == 0 }

// CheckPhotos compares every meal row with every object under "users/",
// which holds only meal photos (DESIGN.md, Photos), and reports where they
// disagree. It changes nothing. Objects under any other prefix, such as
// the short-lived pending uploads under "pending/", are never looked at.
// Reads are paid for through pace, one unit per listing page and per item
// scanned; nil reads as fast as the backends answer.
//
// It lists the bucket, then scans the table, each once. Uploads, moves
// and deletes running meanwhile can show up as orphans or missing copies
// for that moment, so only counts taken while the app writes are
// approximate. Missing holds the meals as scanned: whole items
// (Store.ScanPhotos), possibly older than the table by the time they are
// read, which is why RepairPhotos reads each again before writing it.
func CheckPhotos(ctx context.Context, rows Rows, objects Objects, pace dynamo.Pace) (*PhotoReport, error) {
	if pace == nil {
		pace = func(context.Context, int) error { return nil }
	}
	exists := map[string]bool{}
	var keys []string
	err := objects.List(ctx, "users/", pace, func(o photo.ObjectInfo) error {
		exists[o.Key] = true
		keys = append(keys, o.Key)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("meal: check photos: %w", err)
	}
	r := &PhotoReport{Objects: len(keys)}
	named := map[string]bool{}
	err = rows.ScanPhotos(ctx, pace, func(m *Meal) error {
		r.Meals++
		if !m.HasPhoto() {
			return nil
		}
		pk := m.PhotoKeys()
		if !exists[pk[0]] || !exists[pk[1]] {
			r.Missing = append(r.Missing, *m)
			return nil
		}
		for _, k := range pk {
			named[k] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("meal: check photos: %w", err)
	}
	for _, k := range keys {
		if !named[k] {
			r.Orphans = append(r.Orphans, k)
		}
	}
	slices.Sort(r.Orphans)
	slices.SortFunc(r.Missing, func(a, b Meal) int {
		return strings.Compare(a.UserID+"\x00"+a.SK, b.UserID+"\x00"+b.SK)
	})
	return r, nil
}

// RepairPhotos runs CheckPhotos (unpaced) and makes rows and objects
// agree again: it first clears the photo (photo_v, sizes, capture time) of
// every Missing meal, read in full and written back with a
// version-conditional Update, then deletes every orphan object, including
// the one surviving copy of a Missing meal's photo. It returns what it
// found and repaired; on error, repairs made before it stay made.
//
// Run it only while nothing else writes: local mode runs it at start-up,
// before serving (cmd/ndiro). An upload in flight has its objects before
// its row, and would lose them.
func RepairPhotos(ctx context.Context, rows Rows, objects Objects) (*PhotoReport, error) {
	r, err := CheckPhotos(ctx, rows, objects, nil)
	if err != nil {
		return nil, err
	}
	for _, found := range r.Missing {
		d, err := ParseDate(found.Date)
		if err != nil {
			return r, fmt.Errorf("meal: repair photos: %s %s: %w", found.UserID, found.SK, err)
		}
		m, err := rows.Get(ctx, found.UserID, d, found.ID)
		if err == nil {
			m.Photo = Photo{}
			err = rows.Update(ctx, m)
		}
		if err != nil {
			return r, fmt.Errorf("meal: repair photos: clear %s %s: %w", found.UserID, found.SK, err)
		}
	}
	byOwner := map[string][]string{}
	var owners []string
	for _, k := range r.Orphans {
		owner, ok := photo.OwnerOfKey(k)
		if !ok {
			continue // no user ID makes this key: not ndiro's to delete
		}
		if byOwner[owner] == nil {
			owners = append(owners, owner)
		}
		byOwner[owner] = append(byOwner[owner], k)
	}
	for _, owner := range owners {
		if err := objects.Delete(ctx, owner, byOwner[owner]...); err != nil {
			return r, fmt.Errorf("meal: repair photos: %w", err)
		}
	}
	return r, nil
}
