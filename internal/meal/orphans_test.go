package meal_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"ndiro/internal/apptest"
	"ndiro/internal/dynamo"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/user"
)

const (
	live  = "sub-live"  // has a users row
	ghost = "sub-ghost" // has none
	grace = time.Hour
)

// orphanWorld is one of everything the orphan check tells apart, planted
// in fresh in-process backends. Objects are dated by S3's clock (the real
// one): start is taken before they are written, and the check's clock is
// set relative to it.
type orphanWorld struct {
	t      *testing.T
	start  time.Time
	meals  *meal.Store
	photos *photo.Store
	users  *user.Store
	// db and tables reach the rows beneath the stores (TestFindPaced
	// asks the server what reading them costs).
	db     *dynamodb.Client
	tables dynamo.Tables
	// now is the check's clock; set moves it.
	mu  sync.Mutex
	now time.Time
}

func (w *orphanWorld) clock() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

func (w *orphanWorld) set(t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.now = t
}

// Meal IDs of the planted meals, by what they are.
const (
	healthyID  = "120000-aaaaaa" // live, both copies at its version
	otherVerID = "121500-bbbbbb" // live, its display copy of another version
	noCopiesID = "123000-cccccc" // live, no copies at all, settled
	recentID   = "124500-dddddd" // live, no copies, changed within the grace period
	ghostID    = "130000-eeeeee" // ghost, no photo
	oneCopyID  = "131500-ffffff" // live, its thumbnail only
	mealDate   = "2026-09-01"
)

const v1, v2 photo.Version = 1_790_000_000_000_000_001, 1_790_000_000_000_000_002

func key(owner, id string, size photo.Size) string { return photo.Key(owner, mealDate, id, size) }

var (
	ghostObject   = key(ghost, "140000-ababab", photo.SizeDisplay)
	unnamedObject = key(live, "141500-cdcdcd", photo.SizeThumb)
	strayObject   = photo.UserPrefix(live) + "stray.bin"
	foreignObject = "users/a%b/meals/2026-09-01/123000-abcdef.jpg"
	pendingObject = photo.PendingPrefix(live) + "0123abcd.jpg"
)

func newOrphanWorld(t *testing.T) *orphanWorld {
	t.Helper()
	ctx := context.Background()
	env, tables := apptest.Local(t)
	w := &orphanWorld{t: t, start: time.Now().Add(-time.Second), db: env.DynamoDB, tables: tables}
	w.now = w.start.Add(2 * grace)
	w.meals, w.photos = meal.NewStore(env.DynamoDB, tables.Meals.Name), photo.NewStore(env.S3, "test-photos")
	w.users = user.NewStore(env.DynamoDB, tables.Users.Name, w.clock)
	if err := w.users.Create(ctx, &user.User{ID: live, Email: "live@example.com", Role: user.RoleOwner, Status: user.StatusActive}); err != nil {
		t.Fatal(err)
	}
	plantMeal := func(owner, id string, v photo.Version, changed time.Time) {
		m := &meal.Meal{UserID: owner, Date: mealDate, Time: id[:2] + ":" + id[2:4] + ":" + id[4:6], ID: id, Kind: meal.Lunch, Notes: "planted", UpdatedAt: changed}
		if v != 0 {
			m.Photo = meal.Photo{PhotoV: v, PhotoW: 640, PhotoH: 480, ThumbW: 320, ThumbH: 240}
		}
		if err := w.meals.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	plantMeal(live, healthyID, v1, w.start)
	plantMeal(live, otherVerID, v1, w.start)
	plantMeal(live, noCopiesID, v1, w.start)
	plantMeal(live, recentID, v1, w.now.Add(-grace/2))
	plantMeal(ghost, ghostID, 0, w.start)
	plantMeal(live, oneCopyID, v1, w.start)
	for k, v := range map[string]photo.Version{
		key(live, healthyID, photo.SizeDisplay):  v1,
		key(live, healthyID, photo.SizeThumb):    v1,
		key(live, otherVerID, photo.SizeDisplay): v2,
		key(live, otherVerID, photo.SizeThumb):   v1,
		key(live, oneCopyID, photo.SizeThumb):    v1,
		ghostObject:                              1,
		unnamedObject:                            1,
		strayObject:                              1,
		foreignObject:                            1,
		pendingObject:                            1,
	} {
		w.put(k, v)
	}
	return w
}

func (w *orphanWorld) put(key string, v photo.Version) {
	w.t.Helper()
	if err := w.photos.Put(context.Background(), key, []byte("jpeg bytes of "+key), v); err != nil {
		w.t.Fatal(err)
	}
}

// orphans returns the check on w's stores; users says whether the users
// table is compared, versions whether copies' versions are.
func (w *orphanWorld) orphans(users, versions bool) *meal.Orphans {
	d := meal.OrphanDeps{Rows: w.meals, Objects: w.photos, Grace: grace, Now: w.clock, Versions: versions}
	if users {
		d.Users = w.users
	}
	return meal.NewOrphans(d)
}

// labels returns the labels Find gave each kind.
func labels(f *meal.Found) map[meal.OrphanKind][]string {
	out := map[meal.OrphanKind][]string{}
	for k, xs := range f.Of {
		for _, x := range xs {
			out[k] = append(out[k], x.Label())
		}
	}
	return out
}

func row(owner, id string) string { return owner + " " + mealDate + "#" + id }

// TestFindOrphans plants one of each case and checks what Find makes of
// it: with the users table and versions (the monitor), with neither
// (local start-up), and before the grace period has passed.
func TestFindOrphans(t *testing.T) {
	t.Parallel()
	w := newOrphanWorld(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name            string
		users, versions bool
		at              time.Time // the check's clock
		want            map[meal.OrphanKind][]string
		meals, objects  int
	}{
		{
			name: "users and versions", users: true, versions: true, at: w.now,
			want: map[meal.OrphanKind][]string{
				meal.MealsWithoutUser:  {row(ghost, ghostID)},
				meal.PhotosWithoutUser: {ghostObject},
				meal.PhotosWithoutMeal: sorted([]string{unnamedObject, strayObject}),
				meal.MissingPhotos:     {row(live, otherVerID), row(live, noCopiesID), row(live, oneCopyID)},
				meal.ForeignObjects:    {foreignObject},
			},
		},
		{
			// Without the users table a ghost's rows and objects are judged
			// as anyone's; without versions only presence counts.
			name: "meals and objects alone", at: w.now,
			want: map[meal.OrphanKind][]string{
				meal.PhotosWithoutMeal: sorted([]string{ghostObject, unnamedObject, strayObject}),
				meal.MissingPhotos:     {row(live, noCopiesID), row(live, oneCopyID)},
				meal.ForeignObjects:    {foreignObject},
			},
		},
		{
			// Everything was written within the grace period: only rows
			// whose user is gone, and objects no user ID makes, count.
			name: "within the grace period", users: true, versions: true, at: w.start.Add(grace / 2),
			want: map[meal.OrphanKind][]string{
				meal.MealsWithoutUser: {row(ghost, ghostID)},
				meal.ForeignObjects:   {foreignObject},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.set(tc.at)
			defer w.set(w.start.Add(2 * grace))
			f, err := w.orphans(tc.users, tc.versions).Find(ctx)
			if err != nil {
				t.Fatalf("Find = %v", err)
			}
			if d := cmp.Diff(tc.want, labels(f), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("found (-want +got):\n%s", d)
			}
			if f.Meals != 6 || f.Objects != 9 {
				t.Errorf("compared %d meals and %d objects, want 6 and 9 (the pending upload is not listed)", f.Meals, f.Objects)
			}
		})
	}
	// A missing photo's orphan names the copies left of it.
	w.set(w.now)
	f, err := w.orphans(true, true).Find(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range f.Of[meal.MissingPhotos] {
		var want []string
		switch x.Meal.ID {
		case otherVerID:
			want = []string{key(live, otherVerID, photo.SizeDisplay), key(live, otherVerID, photo.SizeThumb)}
		case oneCopyID:
			want = []string{key(live, oneCopyID, photo.SizeThumb)}
		}
		if d := cmp.Diff(want, x.Copies, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("copies left of %s (-want +got):\n%s", x.Meal.ID, d)
		}
	}
}

// TestFindPaced: every read Find makes is paid for first, table reads
// through Pace and bucket calls through ObjectPace, and a pace that
// refuses stops it with its error.
func TestFindPaced(t *testing.T) {
	t.Parallel()
	w := newOrphanWorld(t)
	var mu sync.Mutex
	units := map[string]int{}
	count := func(name string) func(context.Context, int) error {
		return func(_ context.Context, n int) error {
			mu.Lock()
			defer mu.Unlock()
			units[name] += n
			return nil
		}
	}
	o := meal.NewOrphans(meal.OrphanDeps{Rows: w.meals, Objects: w.photos, Users: w.users, Grace: grace, Now: w.clock, Versions: true,
		Pace: count("table"), ObjectPace: count("bucket")})
	if _, err := o.Find(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Table: at least what the server says reading the users row and the
	// 6 meals rows costs (DynamoDB and dynalite report consumed capacity;
	// the in-process emulator reports none, so one unit per item: 7). A
	// Scan pays for its page before it knows how full it is, so it may pay
	// more. Bucket: one listing page, and a HeadObject for each copy of
	// the two settled meals whose copies the listing has: the healthy one
	// (2) and the one of another version (its display copy answers first).
	cost := 0
	for _, name := range []string{w.tables.Users.Name, w.tables.Meals.Name} {
		out, err := w.db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(name), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		if err != nil {
			t.Fatal(err)
		}
		cost += dynamo.PageUnits(out.ConsumedCapacity, out.ScannedCount, out.Count)
	}
	if cost < 2 || units["table"] < cost || units["bucket"] != 1+2+1 {
		t.Errorf("paid %v, want table ≥ %d (the server's cost of the reads) and bucket 4", units, cost)
	}
	refused := errors.New("paced out")
	o = meal.NewOrphans(meal.OrphanDeps{Rows: w.meals, Objects: w.photos, Grace: grace, Now: w.clock,
		ObjectPace: func(context.Context, int) error { return refused }})
	if _, err := o.Find(context.Background()); !errors.Is(err, refused) {
		t.Errorf("Find with a refusing pace = %v, want its error", err)
	}
}

// TestCleanOrphansChecksAgain: each clean-up reads what it repairs again
// first and leaves what changed since the check: a user signed up again,
// a meal that names the object now, an object written again within the
// grace period, a meal whose photo is whole again. Objects no user ID
// makes are never cleaned.
func TestCleanOrphansChecksAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newOrphanWorld(t)
	o := w.orphans(true, true)
	f, err := o.Find(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clean := func(kind meal.OrphanKind, want int) {
		t.Helper()
		if n, err := o.Clean(ctx, kind, f.Of[kind]); err != nil || n != want {
			t.Errorf("Clean(%s) = %d, %v; want %d repaired", kind, n, err, want)
		}
	}
	objects := func() []string { return keys(t, w.photos, "") }

	// The ghost signs up again: their row and object stay.
	if err := w.users.Create(ctx, &user.User{ID: ghost, Email: "ghost@example.com", Role: user.RoleOwner, Status: user.StatusActive}); err != nil {
		t.Fatal(err)
	}
	clean(meal.MealsWithoutUser, 0)
	clean(meal.PhotosWithoutUser, 0)
	if ms, _ := w.meals.All(ctx, ghost); len(ms) != 1 || !slices.Contains(objects(), ghostObject) {
		t.Fatalf("a returning user's meals %d, objects %v: want both kept", len(ms), objects())
	}
	if err := w.users.Delete(ctx, ghost); err != nil {
		t.Fatal(err)
	}
	clean(meal.MealsWithoutUser, 1)
	clean(meal.PhotosWithoutUser, 1)
	if ms, _ := w.meals.All(ctx, ghost); len(ms) != 0 || slices.Contains(objects(), ghostObject) {
		t.Errorf("after clean-up the ghost has %d meals, objects %v; want none", len(ms), objects())
	}

	// The check saw both unnamed objects settled; the stray one is written
	// again (an upload on its way to its row) and the clean-up runs at
	// once, on S3's clock: every object is younger than the grace period
	// now, and nothing is deleted. Once they have settled, both go.
	w.put(strayObject, 2)
	w.set(time.Now())
	clean(meal.PhotosWithoutMeal, 0)
	if got := objects(); !slices.Contains(got, strayObject) || !slices.Contains(got, unnamedObject) {
		t.Errorf("objects after a clean-up within the grace period: %v; want both unnamed ones kept", got)
	}
	w.set(w.start.Add(2 * grace))
	clean(meal.PhotosWithoutMeal, 2)
	if got := objects(); slices.Contains(got, strayObject) || slices.Contains(got, unnamedObject) {
		t.Errorf("objects after the clean-up of photos without a meal: %v; want both unnamed ones deleted", got)
	}

	// A meal now names the object the check found unnamed: kept.
	named := key(live, "150000-efefef", photo.SizeDisplay)
	w.put(named, v1)
	found := []meal.Orphan{{Key: named, UserID: live}}
	if err := w.meals.Create(ctx, &meal.Meal{UserID: live, Date: mealDate, Time: "15:00:00", ID: "150000-efefef", Kind: meal.Snack, Photo: meal.Photo{PhotoV: v1}}); err != nil {
		t.Fatal(err)
	}
	if n, err := o.Clean(ctx, meal.PhotosWithoutMeal, found); err != nil || n != 0 || !slices.Contains(objects(), named) {
		t.Errorf("Clean of an object a meal names now = %d, %v; objects %v: want it kept", n, err, objects())
	}

	// The missing display copy of one meal comes back: that meal keeps its
	// photo, the others lose theirs.
	w.put(key(live, oneCopyID, photo.SizeDisplay), v1)
	clean(meal.MissingPhotos, 2)
	ms, err := w.meals.All(ctx, live)
	if err != nil {
		t.Fatal(err)
	}
	withPhoto := map[string]bool{}
	for _, m := range ms {
		withPhoto[m.ID] = m.HasPhoto()
		if !m.HasPhoto() && m.Photo != (meal.Photo{}) {
			t.Errorf("meal %s cleared to %+v, want the zero Photo", m.ID, m.Photo)
		}
	}
	want := map[string]bool{healthyID: true, otherVerID: false, noCopiesID: false, recentID: true, oneCopyID: true, "150000-efefef": true}
	if d := cmp.Diff(want, withPhoto); d != "" {
		t.Errorf("meals with a photo after the clean-up (-want +got):\n%s", d)
	}

	if n, err := o.Clean(ctx, meal.ForeignObjects, f.Of[meal.ForeignObjects]); !errors.Is(err, meal.ErrForeign) || n != 0 || !slices.Contains(objects(), foreignObject) {
		t.Errorf("Clean(foreign-objects) = %d, %v; want ErrForeign and the object kept", n, err)
	}
	if !slices.Contains(objects(), pendingObject) {
		t.Error("the pending upload was deleted")
	}
}

// TestRepairKeepsForeign: the start-up repair reports objects no user ID
// makes and leaves them, however old.
func TestRepairKeepsForeign(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, photos := plant(t, nil, []string{foreignObject})
	r, err := meal.RepairPhotos(ctx, store, photos)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{foreignObject}, r.Foreign); d != "" || len(r.Orphans) != 0 || r.Clean() {
		t.Errorf("report: foreign (-want +got):\n%s orphans %v, clean %v; want the foreign object reported, not clean", d, r.Orphans, r.Clean())
	}
	if got := keys(t, photos, ""); !cmp.Equal(got, []string{foreignObject}) {
		t.Errorf("objects after repair = %v, want the foreign object kept", got)
	}
}
