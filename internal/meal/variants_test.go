package meal_test

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/user"
)

// variantJob is a variant job on app's stores, with a gate of its own
// and a Sleep that records its rests instead of waiting.
type variantJob struct {
	*meal.Variants
	gate  *user.Gate
	mu    sync.Mutex
	rests []time.Duration
}

func newVariantJob(t testing.TB, app *apptest.App, objects func(*photo.Store) objectsFor) *variantJob {
	t.Helper()
	pipeline := photo.NewPipeline(photo.DefaultBudget, 5*time.Minute).WithWebP(webpEncoder())
	store := photo.NewStore(app.Env.S3, "test-photos")
	var obj objectsFor = store
	if objects != nil {
		obj = objects(store)
	}
	j := &variantJob{gate: &user.Gate{}}
	j.Variants = meal.NewVariants(meal.VariantDeps{
		Rows: app.Meals, Objects: obj, Make: pipeline.MakeVariants, Gate: j.gate,
		Forget: app.Photos.Cache().Forget, Usage: app.Users.AddUsage, Log: slog.New(slog.DiscardHandler), Duty: 0.25,
		Sleep: func(_ context.Context, d time.Duration) error {
			j.mu.Lock()
			defer j.mu.Unlock()
			j.rests = append(j.rests, d)
			return nil
		},
	})
	return j
}

type objectsFor interface {
	Get(ctx context.Context, ownerID, key string) (*photo.Object, error)
	Put(ctx context.Context, key string, body []byte, v photo.Version) error
	Delete(ctx context.Context, ownerID string, keys ...string) error
}

// keysOf is every key of m's photo with set.
func keysOf(m meal.Meal, set photo.Set) []string {
	m.PhotoSet = set
	k := m.PhotoKeys()
	slices.Sort(k)
	return k
}

func TestVariantsMakeCopies(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	m, _ := mealWithPhoto(t, app, c) // small.jpg: 640 × 480
	if m.PhotoSet != 0 || !slices.Equal(objects(t, app), keysOf(m, photo.LegacySet)) {
		t.Fatalf("after the upload: set %b, objects %q, want the two legacy copies", m.PhotoSet, objects(t, app))
	}
	// Before the job, the page shows the legacy thumbnail alone.
	img := c.Get("/meals?month=" + m.Date[:7]).Doc().Find("#meal-" + m.ID + " img")
	if src, _ := img.Attr("src"); src != m.ThumbURL() || img.AttrOr("srcset", "") != "" {
		t.Errorf("grid img before the job: src %q srcset %q, want the thumbnail alone", src, img.AttrOr("srcset", ""))
	}
	j := newVariantJob(t, app, nil)
	if err := j.Make(context.Background(), m.UserID, m.Date, m.ID); err != nil {
		t.Fatalf("Make: %v", err)
	}
	got := allMeals(t, app, admin)[0]
	want := photo.Full(photo.LegacySet, m.PhotoW, m.PhotoH)
	if got.PhotoSet != want || got.Version != m.Version || !got.UpdatedAt.Equal(m.UpdatedAt) {
		t.Errorf("row after Make: set %b version %d updated %v, want set %b and version and time unchanged", got.PhotoSet, got.Version, got.UpdatedAt, want)
	}
	if objs := objects(t, app); !slices.Equal(objs, keysOf(m, want)) {
		t.Errorf("objects = %q, want %q", objs, keysOf(m, want))
	}
	// The copies' bytes are counted, on the row and the account's.
	if used := wantUsage(t, app, "the sized copies made", 1, true); got.PhotoBytes != used.PhotoBytes || used.PhotoBytes <= m.PhotoBytes {
		t.Errorf("the row records %d bytes of photo, the account %d, before the copies %d: want the row's all of its copies", got.PhotoBytes, used.PhotoBytes, m.PhotoBytes)
	}
	for _, size := range want.Sizes() {
		resp := c.Get("/photo/" + m.Date + "/" + m.ID + "?v=" + m.PhotoV.Tag() + "&size=" + string(size))
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != photo.ContentType(size) ||
			resp.Header.Get("Cache-Control") != "private, max-age=31536000, immutable" ||
			resp.Header.Get("ETag") != `"`+m.PhotoV.Tag()+"-"+string(size)+`"` || resp.Header.Get("Vary") != "" {
			t.Errorf("%s: %d %q %q %q vary %q", size, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"), resp.Header.Get("ETag"), resp.Header.Get("Vary"))
		}
	}
	page := c.Get("/meals?month=" + m.Date[:7]).Doc()
	pic := page.Find("#meal-" + m.ID + " picture")
	u := "/photo/" + m.Date + "/" + m.ID + "?v=" + m.PhotoV.Tag() + "&size="
	if got, want := pic.Find(`source[type="image/webp"]`).AttrOr("srcset", ""), u+"t160.webp 160w, "+u+"t240.webp 240w, "+u+"t320.webp 320w, "+u+"t480.webp 480w"; got != want {
		t.Errorf("webp srcset = %q, want %q", got, want)
	}
	img = pic.Find("img")
	if got, want := img.AttrOr("srcset", ""), u+"t160.jpg 160w, "+u+"t240.jpg 240w, "+u+"t320.jpg 320w, "+u+"t480.jpg 480w"; got != want {
		t.Errorf("jpeg srcset = %q, want %q", got, want)
	}
	if img.AttrOr("width", "") != "480" || img.AttrOr("height", "") != "480" || img.AttrOr("fetchpriority", "") != "high" || img.AttrOr("src", "") != m.ThumbURL() {
		t.Errorf("grid img: width %q height %q fetchpriority %q src %q", img.AttrOr("width", ""), img.AttrOr("height", ""), img.AttrOr("fetchpriority", ""), img.AttrOr("src", ""))
	}
	detail := c.Get(m.DetailURL()).Doc().Find(".detail-body picture")
	if got, want := detail.Find("source").AttrOr("srcset", ""), ""; got != want {
		t.Errorf("detail webp srcset = %q, want none: the 640 px photo has no display size below it", got)
	}
	if img := detail.Find("img"); img.AttrOr("src", "") != m.DisplayURL() || img.AttrOr("width", "") != "640" || img.AttrOr("fetchpriority", "") != "high" {
		t.Errorf("detail img: src %q width %q fetchpriority %q", img.AttrOr("src", ""), img.AttrOr("width", ""), img.AttrOr("fetchpriority", ""))
	}
	// A second run has nothing to do and writes nothing.
	before := objects(t, app)
	if err := j.Make(context.Background(), m.UserID, m.Date, m.ID); err != nil || !slices.Equal(objects(t, app), before) {
		t.Errorf("second Make = %v, objects %d, want nothing new", err, len(objects(t, app)))
	}
	if len(j.rests) != 0 {
		t.Errorf("Make rested %v: only the job's loop rests", j.rests)
	}
}

// TestVariantsFollowTheMeal: once a photo has its copies, a delete, a
// move and a replace handle every one of them.
func TestVariantsFollowTheMeal(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	j := newVariantJob(t, app, nil)
	m, editURL := mealWithPhoto(t, app, c)
	if err := j.Make(context.Background(), m.UserID, m.Date, m.ID); err != nil {
		t.Fatal(err)
	}
	full := allMeals(t, app, admin)[0]
	// A replace stores the new photo's legacy copies and deletes every
	// sized copy of the old one.
	resp := upload(c, editURL, "other.jpg", otherPhoto(t), "version", strconv.FormatInt(full.Version, 10))
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("replace = %d", resp.StatusCode)
	}
	replaced := allMeals(t, app, admin)[0]
	if replaced.PhotoSet != 0 || !slices.Equal(objects(t, app), keysOf(replaced, photo.LegacySet)) {
		t.Errorf("after a replace: set %b, objects %q, want the new legacy copies alone", replaced.PhotoSet, objects(t, app))
	}
	wantUsage(t, app, "a photo with its copies replaced", 1, true)
	if err := j.Make(context.Background(), m.UserID, m.Date, m.ID); err != nil {
		t.Fatal(err)
	}
	replaced = allMeals(t, app, admin)[0]
	// A move copies every copy to the new keys and deletes the old.
	resp = c.PostForm(editURL, mealForm("time", "19:45", "version", strconv.FormatInt(replaced.Version, 10)))
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("move = %d", resp.StatusCode)
	}
	moved := allMeals(t, app, admin)[0]
	if moved.ID == replaced.ID || moved.PhotoSet != replaced.PhotoSet || !slices.Equal(objects(t, app), keysOf(moved, moved.PhotoSet)) {
		t.Errorf("after a move: id %s set %b objects %q, want %q", moved.ID, moved.PhotoSet, objects(t, app), keysOf(moved, replaced.PhotoSet))
	}
	wantUsage(t, app, "a photo with its copies moved", 1, true)
	// A delete deletes them all.
	if resp := c.PostForm(moved.DetailURL()+"/delete", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete = %d", resp.StatusCode)
	}
	if objs := objects(t, app); len(objs) != 0 {
		t.Errorf("after a delete: objects %q, want none", objs)
	}
	wantUsage(t, app, "a photo with its copies deleted", 0, false)
}

// racingObjects runs during before the first Put, as a change made while
// the job makes its copies.
type racingObjects struct {
	*photo.Store
	once   sync.Once
	during func()
}

func (r *racingObjects) Put(ctx context.Context, key string, body []byte, v photo.Version) error {
	r.once.Do(r.during)
	return r.Store.Put(ctx, key, body, v)
}

// TestVariantsRaces: a photo replaced or deleted while the job makes its
// copies keeps no copy of the job's, and a closed gate stops it before
// it writes.
func TestVariantsRaces(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		during func(t *testing.T, app *apptest.App, c *apptest.Client, m meal.Meal)
		want   func(m meal.Meal) []string // the objects left; nil: none
	}{
		{"replaced", func(t *testing.T, app *apptest.App, c *apptest.Client, m meal.Meal) {
			resp := upload(c, "/meals/"+m.Date+"/"+m.ID, "other.jpg", otherPhoto(t), "version", strconv.FormatInt(m.Version, 10))
			if resp.StatusCode != http.StatusSeeOther {
				t.Errorf("replace = %d", resp.StatusCode)
			}
		}, func(m meal.Meal) []string { return keysOf(m, photo.LegacySet) }},
		{"deleted", func(t *testing.T, app *apptest.App, c *apptest.Client, m meal.Meal) {
			if resp := c.PostForm(m.DetailURL()+"/delete", nil); resp.StatusCode != http.StatusSeeOther {
				t.Errorf("delete = %d", resp.StatusCode)
			}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			app, c := signedIn(t)
			m, _ := mealWithPhoto(t, app, c)
			j := newVariantJob(t, app, func(s *photo.Store) objectsFor {
				return &racingObjects{Store: s, during: func() { tc.during(t, app, c, m) }}
			})
			if err := j.Make(context.Background(), m.UserID, m.Date, m.ID); err != nil {
				t.Fatalf("Make = %v, want nil: the photo is gone, nothing to do", err)
			}
			var want []string
			if tc.want != nil {
				want = tc.want(m)
			}
			if objs := objects(t, app); !slices.Equal(objs, want) {
				t.Errorf("objects = %q, want %q: none of the job's", objs, want)
			}
			if ms := allMeals(t, app, admin); len(ms) > 0 && ms[0].PhotoSet != 0 {
				t.Errorf("row set = %b, want none recorded", ms[0].PhotoSet)
			}
		})
	}
	t.Run("gate closed", func(t *testing.T) {
		t.Parallel()
		app, c := signedIn(t)
		m, _ := mealWithPhoto(t, app, c)
		j := newVariantJob(t, app, nil)
		if err := j.gate.Close(context.Background(), m.UserID); err != nil {
			t.Fatal(err)
		}
		if err := j.Make(context.Background(), m.UserID, m.Date, m.ID); err != nil {
			t.Errorf("Make with the gate closed = %v, want nil", err)
		}
		if objs := objects(t, app); !slices.Equal(objs, keysOf(m, photo.LegacySet)) {
			t.Errorf("objects = %q, want the upload's alone", objs)
		}
	})
}

// TestVariantsScan: a scan gives every photo without its copies its
// copies, one at a time, resting three times as long as each took (Duty
// 0.25), and skips meals without a photo and photos done already.
func TestVariantsScan(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	for _, f := range []string{"small.jpg", "phone-portrait-small.jpg"} {
		if resp := upload(c, "/meals", f, apptest.Photo(t, f)); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("upload %s = %d", f, resp.StatusCode)
		}
	}
	if resp := c.PostForm("/meals", mealForm("time", "08:00")); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("meal without photo = %d", resp.StatusCode)
	}
	j := newVariantJob(t, app, nil)
	if err := j.Scan(context.Background()); err != nil {
		t.Fatalf("Scan: %v", err)
	}
	for _, m := range allMeals(t, app, admin) {
		if m.HasPhoto() && m.PhotoSet != photo.Full(0, m.PhotoW, m.PhotoH) {
			t.Errorf("meal %s: set %b, want %b", m.ID, m.PhotoSet, photo.Full(0, m.PhotoW, m.PhotoH))
		}
	}
	if len(j.rests) != 2 {
		t.Fatalf("rests %v, want one after each of the two photos", j.rests)
	}
	for _, r := range j.rests {
		if r < 100*time.Millisecond {
			t.Errorf("rest %v: a photo's copies take far longer than a third of that", r)
		}
	}
	if err := j.Scan(context.Background()); err != nil || len(j.rests) != 2 {
		t.Errorf("a second scan: %v, rests %v, want nothing done", err, j.rests)
	}
}
