package account_test

import (
	"context"
	"errors"
	"net/url"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ndiro/internal/account"
	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/user"
)

// contents lists meals as "date time kind notes photo?", sorted: what an
// import must end with, whatever the IDs.
func contents(ms []meal.Meal) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		p := "no photo"
		if m.HasPhoto() {
			p = "photo"
		}
		out[i] = m.Date + " " + m.Time + " " + string(m.Kind) + " " + m.Notes + " " + p
	}
	sort.Strings(out)
	return out
}

// TestImportResumesAfterAKill: an import stopped after two of the zip's
// four meals, before its first save (as a crash would stop it), is
// resumed by ResumeAll on a new app over the same data dir and ends with
// exactly the zip's meals, each once, with their photos: the meals the
// stopped run had claimed are found again by their derived IDs.
func TestImportResumesAfterAKill(t *testing.T) {
	t.Parallel()
	body, want := sourceZip(t)

	dir := t.TempDir()
	a := apptest.New(t, apptest.Options{DataDir: dir})
	c := a.Client()
	c.SignIn(adminEmail)
	killed := make(chan struct{})
	var once sync.Once
	a.Imports.SetPace(3, func(ctx context.Context, i int) {
		if i == 1 {
			once.Do(func() { close(killed) })
			<-ctx.Done() // the process dies here: no more meals, no save
		}
	})
	if resp := postImport(c, body); resp.StatusCode != 303 {
		t.Fatalf("POST %s = %d; %s", account.ImportPath, resp.StatusCode, resp.Text("main"))
	}
	<-killed
	uid := localenv.Subject(adminEmail)
	if ms, err := a.Meals.All(t.Context(), uid); err != nil || len(ms) != 2 {
		t.Fatalf("meals when the import is stopped = %d, %v; want 2", len(ms), err)
	}
	a.Stop()

	b := apptest.New(t, apptest.Options{DataDir: dir})
	if u, err := b.Users.Get(t.Context(), uid); err != nil || !u.Import.Running() || u.Import.Next != 0 {
		t.Fatalf("users row after the stop: %+v, %v; want the import running from meal 0", u, err)
	}
	n, err := b.Imports.ResumeAll(t.Context())
	if err != nil || n != 1 {
		t.Fatalf("ResumeAll = %d, %v; want 1", n, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := b.Imports.Wait(ctx, uid); err != nil {
		t.Fatal(err)
	}
	got, err := b.Meals.All(t.Context(), uid)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(contents(want), contents(got)); d != "" {
		t.Errorf("meals after the resumed import (-zip +imported):\n%s", d)
	}
	u, err := b.Users.Get(t.Context(), uid)
	if err != nil {
		t.Fatal(err)
	}
	if imp := u.Import; imp == nil || imp.State != user.ImportDone || imp.Imported != 4 || imp.Skipped != 0 || imp.Failed != 0 {
		t.Errorf("import on the row = %+v; want done, 4 imported", imp)
	}
	noPending(t, b, uid, "the staged zip removed")
}

// TestImportClaimsBeforePhoto: an imported meal's row is written, with no
// photo, before the first of its photo's objects, so a photo is only ever
// written under a meal ID the import holds.
func TestImportClaimsBeforePhoto(t *testing.T) {
	t.Parallel()
	body, _ := sourceZip(t)

	faults := &apptest.Faults{}
	app := apptest.New(t, apptest.Options{Faults: faults})
	c := app.Client()
	c.SignIn(adminEmail)
	uid := localenv.Subject(adminEmail)
	first, goOn := make(chan struct{}), make(chan struct{})
	var firstOnce sync.Once
	app.Imports.SetPace(1, func(ctx context.Context, i int) {
		if i == 0 {
			firstOnce.Do(func() { close(first) })
			select {
			case <-goOn:
			case <-ctx.Done():
			}
		}
	})
	if resp := postImport(c, body); resp.StatusCode != 303 {
		t.Fatalf("POST %s = %d; %s", account.ImportPath, resp.StatusCode, resp.Text("main"))
	}
	<-first
	// Meal 1 (2026-09-01 19:05, with a photo) is next: hold its first
	// photo object's PUT.
	held, release := faults.Hold("PutObject", importBucket)
	close(goOn)
	<-held
	ms, err := app.Meals.All(t.Context(), uid)
	if err != nil {
		t.Fatal(err)
	}
	var claimed *meal.Meal
	for k := range ms {
		if ms[k].Time == "19:05:00" {
			claimed = &ms[k]
		}
	}
	if claimed == nil || claimed.HasPhoto() {
		t.Errorf("meals while the photo's first object is being written: %v; want 19:05's row there without a photo", contents(ms))
	}
	release()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := app.Imports.Wait(ctx, uid); err != nil {
		t.Fatal(err)
	}
	if ms, err := app.Meals.All(t.Context(), uid); err != nil || len(ms) != 4 || !ms[1].HasPhoto() { // All is in date and time order
		t.Errorf("meals at the end = %v, %v; want 4, 19:05's with its photo", contents(ms), err)
	}
}

// TestDeletionStopsTheImport: an account deleted while its import runs
// stops the import between two meals, and the deletion leaves nothing of
// it: no meal, no photo, no staged zip, no users row.
func TestDeletionStopsTheImport(t *testing.T) {
	t.Parallel()
	body, _ := sourceZip(t)

	app := apptest.New(t)
	c := app.Client()
	c.SignIn(adminEmail)
	uid := localenv.Subject(adminEmail)
	first := make(chan struct{})
	var once sync.Once
	app.Imports.SetPace(1, func(ctx context.Context, i int) {
		once.Do(func() { close(first) })
		<-ctx.Done() // the import waits here until the deletion stops it
	})
	if resp := postImport(c, body); resp.StatusCode != 303 {
		t.Fatalf("POST %s = %d; %s", account.ImportPath, resp.StatusCode, resp.Text("main"))
	}
	<-first
	if keys := objectsOf(t, app, "pending/"+uid); len(keys) != 1 {
		t.Fatalf("staged objects while the import runs = %v; want its zip", keys)
	}
	if resp := c.PostForm("/account/delete", url.Values{"email": {adminEmail}}); resp.StatusCode != 303 {
		t.Fatalf("POST /account/delete = %d; %s", resp.StatusCode, resp.Text("main"))
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := app.Deletions.Wait(ctx, uid); err != nil {
		t.Fatal(err)
	}
	if app.Imports.Running(uid) {
		t.Error("the import still runs after the deletion")
	}
	if keys := objectsOf(t, app, uid); len(keys) != 0 {
		t.Errorf("objects left after the deletion: %v", keys)
	}
	if ms, err := app.Meals.All(t.Context(), uid); err != nil || len(ms) != 0 {
		t.Errorf("meals after the deletion = %d, %v; want none", len(ms), err)
	}
	if _, err := app.Users.Get(t.Context(), uid); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("users row after the deletion: %v; want ErrNotFound", err)
	}
}
