package demo_test

import (
	"bytes"
	"context"
	"image/jpeg"
	"os"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/demo"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/user"
)

// wantUsage fails the test unless the owner's users row counts what
// storage holds: the meals rows and the bytes of the owner's objects.
func wantUsage(t *testing.T, app *apptest.App, owner string) {
	t.Helper()
	ctx := context.Background()
	u, err := app.Users.Get(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	free := func(context.Context, int) error { return nil }
	meals, err := app.Meals.CountByOwner(ctx, free)
	if err != nil {
		t.Fatal(err)
	}
	truth := user.Usage{Meals: meals[owner]}
	err = app.Objects.List(ctx, photo.UserPrefix(owner), free, func(o photo.ObjectInfo) error {
		truth.PhotoBytes += o.Size
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if u.Usage != truth || truth.PhotoBytes == 0 {
		t.Errorf("the demo owner's row counts %+v, storage holds %+v; want them equal, with photos", u.Usage, truth)
	}
}

func deps(app *apptest.App, now time.Time) demo.Deps {
	return demo.Deps{
		Users: app.Users, Meals: app.Meals, Shares: app.Shares,
		Photos:   photo.NewStore(app.Env.S3, "test-photos"),
		Pipeline: photo.NewPipeline(photo.DefaultBudget, photo.DefaultWait),
		Now:      func() time.Time { return now },
	}
}

// TestSeed: the demo owner gets meals with photos and numbers on every
// day, a share link, and can sign in; seeding again writes nothing.
func TestSeed(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	now := time.Date(2026, 9, 14, 21, 30, 0, 0, time.UTC)
	owner := localenv.Subject(demo.Email)
	opts := demo.Options{OwnerID: owner, Days: 5, PhotoWidth: 120, PhotoHeight: 90}
	res, err := demo.Seed(context.Background(), deps(app, now), opts)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := app.Meals.All(context.Background(), owner)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Seeded || res.Meals != len(ms) || res.ShareToken == "" {
		t.Fatalf("Seed = %+v with %d meals stored", res, len(ms))
	}
	wantUsage(t, app, owner)
	days := map[string]int{}
	thumbs := map[string]bool{}
	withNumbers := 0
	for _, m := range ms {
		days[m.Date]++
		if m.Kcal != nil {
			withNumbers++
		}
		if m.HasPhoto() {
			obj, err := photo.NewStore(app.Env.S3, "test-photos").Get(context.Background(), owner, m.PhotoKeys()[1])
			if err != nil {
				t.Fatalf("thumbnail of %s: %v", m.SK, err)
			}
			if obj.Version != m.PhotoV {
				t.Errorf("thumbnail of %s has version %d, row says %d", m.SK, obj.Version, m.PhotoV)
			}
			thumbs[string(obj.Body)] = true
		}
	}
	if len(days) != 5 || days["2026-09-10"] < 2 || days["2026-09-14"] < 2 {
		t.Errorf("meals by day = %v, want 5 days from 10 to 14 September, at least two meals each", days)
	}
	if len(thumbs) < len(ms)*3/4 || withNumbers < len(ms)/2 {
		t.Errorf("%d meals: %d distinct photos, %d with numbers; want most with their own photo and numbers", len(ms), len(thumbs), withNumbers)
	}

	// The owner signs in like anyone (no invite needed: the row exists)
	// and sees the meals; the share link shows them too.
	c := app.Client()
	c.SignIn(demo.Email)
	if n := c.Get("/meals?month=2026-09").Doc().Find("li.meal").Length(); n != len(ms) {
		t.Errorf("the demo owner's month shows %d meals, want %d", n, len(ms))
	}
	if r := app.Client().Get("/s/" + res.ShareToken); r.StatusCode != 200 || r.Doc().Find("li.meal").Length() == 0 {
		t.Errorf("demo share link = %d with %d meals", r.StatusCode, r.Doc().Find("li.meal").Length())
	}

	// Again, a day later: nothing new.
	again, err := demo.Seed(context.Background(), deps(app, now.Add(24*time.Hour)), opts)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := app.Meals.All(context.Background(), owner)
	if again.Seeded || again.Meals != 0 || again.ShareToken != res.ShareToken || len(after) != len(ms) {
		t.Errorf("second Seed = %+v with %d meals, want nothing seeded, the same link, %d meals", again, len(after), len(ms))
	}
}

// TestSeedFinishesACutShortSeed: meals a cut-short seed wrote (the users
// row missing) are kept as they are, with their photos, and the rest is
// written.
func TestSeedFinishesACutShortSeed(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	now := time.Date(2026, 9, 14, 21, 30, 0, 0, time.UTC)
	owner := localenv.Subject(demo.Email)
	opts := demo.Options{OwnerID: owner, Days: 2, PhotoWidth: 96, PhotoHeight: 72}
	if _, err := demo.Seed(context.Background(), deps(app, now), opts); err != nil {
		t.Fatal(err)
	}
	first, _ := app.Meals.All(context.Background(), owner)
	if err := app.Users.Delete(context.Background(), owner); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Meals.Delete(context.Background(), owner, mustDate(t, first[0].Date), first[0].ID); err != nil {
		t.Fatal(err)
	}
	res, err := demo.Seed(context.Background(), deps(app, now.Add(time.Minute)), opts)
	if err != nil {
		t.Fatal(err)
	}
	second, _ := app.Meals.All(context.Background(), owner)
	if !res.Seeded || res.Meals != 1 || len(second) != len(first) {
		t.Fatalf("re-seed = %+v, %d meals; want the one missing meal written, %d meals", res, len(second), len(first))
	}
	for i := range first {
		if second[i].SK != first[i].SK || (i > 0 && second[i].PhotoV != first[i].PhotoV) {
			t.Errorf("meal %d: %s v%d, was %s v%d", i, second[i].SK, second[i].PhotoV, first[i].SK, first[i].PhotoV)
		}
	}
	wantUsage(t, app, owner)
	if shares, _ := app.Shares.ListByOwner(context.Background(), owner); len(shares) != 1 {
		t.Errorf("%d share links after the re-seed, want 1", len(shares))
	}
}

func mustDate(t *testing.T, s string) meal.Date {
	d, err := meal.ParseDate(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestFoodPhoto: a seed is one photo, different seeds differ, and a
// thumbnail-sized photo is the size of a real one (noise and detail, not
// flat colour).
func TestFoodPhoto(t *testing.T) {
	a, err := demo.FoodPhoto(1, 480, 360)
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := demo.FoodPhoto(1, 480, 360)
	b, _ := demo.FoodPhoto(2, 480, 360)
	if !bytes.Equal(a, a2) || bytes.Equal(a, b) {
		t.Error("FoodPhoto is not one photo per seed")
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(a))
	if err != nil || cfg.Width != 480 || cfg.Height != 360 {
		t.Errorf("FoodPhoto(1, 480, 360) decodes as %dx%d (%v)", cfg.Width, cfg.Height, err)
	}
	if len(a) < 20<<10 {
		t.Errorf("a 480x360 photo is %d bytes, want at least 20 KB like a real one", len(a))
	}
	if dir := os.Getenv("NDIRO_SCREENSHOTS"); dir != "" {
		os.WriteFile(dir+"/demo-photo.jpg", a, 0o644)
	}
}
