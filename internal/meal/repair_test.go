package meal_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"ndiro/internal/apptest"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
)

// planted is a meal row written straight into the table, with or without
// a photo_v, for the photo check to compare with the objects.
type planted struct {
	user, date, id string
	photo          bool
}

// photoState is what the check may change on a meal.
type photoState struct {
	ID                             string
	PhotoV                         photo.Version
	PhotoW, PhotoH, ThumbW, ThumbH int
	PhotoTaken                     string
	Version                        int64
}

func stateOf(m meal.Meal) photoState {
	return photoState{m.ID, m.PhotoV, m.PhotoW, m.PhotoH, m.ThumbW, m.ThumbH, m.PhotoTaken, m.Version}
}

// plant writes the meals and objects into fresh in-process backends and
// returns the stores on them.
func plant(t *testing.T, meals []planted, objects []string) (*meal.Store, *photo.Store) {
	t.Helper()
	ctx := context.Background()
	env, tables := apptest.Local(t)
	store, photos := meal.NewStore(env.DynamoDB, tables.Meals.Name), photo.NewStore(env.S3, "test-photos")
	for _, p := range meals {
		m := &meal.Meal{UserID: p.user, Date: p.date, Time: p.id[:2] + ":" + p.id[2:4] + ":" + p.id[4:6], ID: p.id, Kind: meal.Lunch, Notes: "planted"}
		if p.photo {
			m.PhotoV, m.PhotoW, m.PhotoH, m.ThumbW, m.ThumbH, m.PhotoTaken = 1_790_000_000_000_000_000, 640, 480, 320, 240, "2026-09-01T12:00:00"
		}
		if err := store.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range objects {
		if err := photos.Put(ctx, k, []byte("jpeg bytes of "+k), 1); err != nil {
			t.Fatal(err)
		}
	}
	return store, photos
}

func TestRepairPhotos(t *testing.T) {
	t.Parallel()
	const a, b = "sub-a", "sub-b"
	copies := func(user, date, id string) []string {
		return []string{photo.Key(user, date, id, photo.SizeDisplay), photo.Key(user, date, id, photo.SizeThumb)}
	}
	healthy := planted{a, "2026-09-01", "120000-aaaaaa", true}
	healthyKeys := copies(a, "2026-09-01", "120000-aaaaaa")
	for _, tc := range []struct {
		name        string
		meals       []planted
		objects     []string
		wantOrphans []string
		wantMissing []string // meal IDs whose photo is cleared
		wantObjects []string // every key in the bucket afterwards
	}{
		{
			name:        "rows and objects agree",
			meals:       []planted{healthy, {a, "2026-09-01", "130000-bbbbbb", false}},
			objects:     healthyKeys,
			wantObjects: healthyKeys,
		},
		{
			name:        "objects of a create whose row never came",
			meals:       []planted{healthy},
			objects:     append(copies(a, "2026-09-02", "080000-cccccc"), healthyKeys...),
			wantOrphans: copies(a, "2026-09-02", "080000-cccccc"),
			wantObjects: healthyKeys,
		},
		{
			name:        "old objects of a move",
			meals:       []planted{{a, "2026-10-05", "091500-dddddd", true}},
			objects:     append(copies(a, "2026-10-05", "091500-dddddd"), healthyKeys...),
			wantOrphans: healthyKeys,
			wantObjects: copies(a, "2026-10-05", "091500-dddddd"),
		},
		{
			name:        "a thumbnail alone",
			objects:     copies(b, "2026-09-03", "070000-eeeeee")[1:],
			wantOrphans: copies(b, "2026-09-03", "070000-eeeeee")[1:],
		},
		{
			name:        "same date and id under another owner",
			meals:       []planted{healthy},
			objects:     append(copies(b, "2026-09-01", "120000-aaaaaa")[:1], healthyKeys...),
			wantOrphans: copies(b, "2026-09-01", "120000-aaaaaa")[:1],
			wantObjects: healthyKeys,
		},
		{
			name:        "a row whose objects are missing",
			meals:       []planted{healthy},
			wantMissing: []string{"120000-aaaaaa"},
		},
		{
			name:        "a row with its display copy only",
			meals:       []planted{healthy},
			objects:     healthyKeys[:1],
			wantOrphans: healthyKeys[:1],
			wantMissing: []string{"120000-aaaaaa"},
		},
		{
			name:        "pending uploads are never touched",
			objects:     []string{"pending/" + a + "/0123abcd"},
			wantObjects: []string{"pending/" + a + "/0123abcd"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store, photos := plant(t, tc.meals, tc.objects)
			before := mealsOf(t, store)

			r, err := meal.RepairPhotos(ctx, store, photos)
			if err != nil {
				t.Fatalf("RepairPhotos = %v", err)
			}
			if d := cmp.Diff(sorted(tc.wantOrphans), r.Orphans, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("report's orphans (-want +got):\n%s", d)
			}
			var missing []string
			for _, m := range r.Missing {
				missing = append(missing, m.ID)
			}
			if d := cmp.Diff(tc.wantMissing, missing, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("report's missing photos (-want +got):\n%s", d)
			}
			if r.Meals != len(tc.meals) || r.Objects != countUnder(tc.objects, "users/") {
				t.Errorf("report compared %d meals and %d objects, want %d and %d", r.Meals, r.Objects, len(tc.meals), countUnder(tc.objects, "users/"))
			}

			if d := cmp.Diff(sorted(tc.wantObjects), keys(t, photos, ""), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("objects after repair (-want +got):\n%s", d)
			}
			var want []photoState
			for _, m := range before {
				if slices.Contains(tc.wantMissing, m.ID) {
					m.PhotoV, m.PhotoW, m.PhotoH, m.ThumbW, m.ThumbH, m.PhotoTaken, m.Version = 0, 0, 0, 0, 0, "", m.Version+1
				}
				want = append(want, stateOf(m))
			}
			if d := cmp.Diff(want, states(t, store)); d != "" {
				t.Errorf("meals after repair (-want +got):\n%s", d)
			}

			// Repaired, the two agree.
			if r, err := meal.RepairPhotos(ctx, store, photos); err != nil || !r.Clean() {
				t.Errorf("second RepairPhotos = %+v, %v; want a clean report", r, err)
			}
		})
	}
}

// failingRows is the meals table with every Update failing.
type failingRows struct{ *meal.Store }

func (failingRows) Update(context.Context, *meal.Meal) error { return errors.New("throttled") }

// TestRepairClearsRowsBeforeDeleting fails the row update of a meal with
// one surviving copy: the copy is not deleted while the row names it.
func TestRepairClearsRowsBeforeDeleting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	display := photo.Key("sub-a", "2026-09-01", "120000-aaaaaa", photo.SizeDisplay)
	store, photos := plant(t, []planted{{"sub-a", "2026-09-01", "120000-aaaaaa", true}}, []string{display})
	_, err := meal.RepairPhotos(ctx, failingRows{store}, photos)
	if err == nil || !strings.Contains(err.Error(), "throttled") {
		t.Fatalf("RepairPhotos with failing updates = %v, want the update's error", err)
	}
	if got := keys(t, photos, "users/"); !cmp.Equal(got, []string{display}) {
		t.Errorf("objects after a failed repair = %v, want %v kept", got, display)
	}
}

// states returns the photo state of every meal of the test's owners.
func states(t *testing.T, s *meal.Store) []photoState {
	t.Helper()
	var out []photoState
	for _, m := range mealsOf(t, s) {
		out = append(out, stateOf(m))
	}
	return out
}

// mealsOf returns every meal of the owners the tests plant, in full.
func mealsOf(t *testing.T, s *meal.Store) []meal.Meal {
	t.Helper()
	var all []meal.Meal
	for _, owner := range []string{"sub-a", "sub-b"} {
		ms, err := s.All(context.Background(), owner)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ms...)
	}
	return all
}

// keys lists every object in the bucket under prefix.
func keys(t *testing.T, photos *photo.Store, prefix string) []string {
	t.Helper()
	out := []string{}
	err := photos.List(context.Background(), prefix, func(context.Context, int) error { return nil }, func(o photo.ObjectInfo) error {
		out = append(out, o.Key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sorted(keys []string) []string { return slices.Sorted(slices.Values(keys)) }

func countUnder(keys []string, prefix string) int {
	n := 0
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}
