package account_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"
	"github.com/oauth2-proxy/mockoidc"

	"ndiro/internal/account"
	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/photo"
	"ndiro/internal/user"
)

// waitImport waits for the import of uid on app to end and returns the
// users row's import.
func waitImport(t *testing.T, app *apptest.App, uid string) *user.Import {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := app.Imports.Wait(ctx, uid); err != nil {
		t.Fatal(err)
	}
	u, err := app.Users.Get(t.Context(), uid)
	if err != nil {
		t.Fatal(err)
	}
	return u.Import
}

// TestImportPartGoneBeforeTheRun: an import stopped after two meals (as a
// crash would stop it) whose staged parts are gone when start-up resumes
// it (local mode's sweep, the bucket's lifecycle rule) ends as failed,
// without trying again,
// with the message that asks for the zip again, and adds nothing to the
// two meals it had imported whole.
func TestImportPartGoneBeforeTheRun(t *testing.T) {
	t.Parallel()
	body, _ := sourceZip(t)

	dir := t.TempDir()
	a := apptest.New(t, apptest.Options{DataDir: dir})
	a.Objects.SetStagePartSize(1 << 10)
	c := a.Client()
	c.SignIn(adminEmail)
	killed := make(chan struct{})
	var once sync.Once
	a.Imports.SetPace(3, func(ctx context.Context, i int) {
		if i == 1 {
			once.Do(func() { close(killed) })
			<-ctx.Done()
		}
	})
	if resp := postImport(c, body); resp.StatusCode != 303 {
		t.Fatalf("POST %s = %d; %s", account.ImportPath, resp.StatusCode, resp.Text("main"))
	}
	<-killed
	uid := localenv.Subject(adminEmail)
	before, err := a.Meals.All(t.Context(), uid)
	if err != nil || len(before) != 2 {
		t.Fatalf("meals when the import is stopped = %d, %v; want 2", len(before), err)
	}
	a.Stop()

	b := apptest.New(t, apptest.Options{DataDir: dir})
	u, err := b.Users.Get(t.Context(), uid)
	if err != nil || !u.Import.Running() || (photo.Staged{Size: u.Import.Size, PartSize: u.Import.PartSize}).Parts() < 2 {
		t.Fatalf("users row after the stop: %+v, %v; want the import running, its zip in parts", u.Import, err)
	}
	if err := b.Objects.DeleteStaged(t.Context(), uid, u.Import.Prefix); err != nil {
		t.Fatal(err)
	}
	if n, err := b.Imports.ResumeAll(t.Context()); err != nil || n != 1 {
		t.Fatalf("ResumeAll = %d, %v; want 1", n, err)
	}
	imp := waitImport(t, b, uid)
	if imp.State != user.ImportFailed || !strings.Contains(imp.Error, "zip was removed before the import finished") {
		t.Errorf("import = %s %q; want failed, saying the zip was removed", imp.State, imp.Error)
	}
	after, err := b.Meals.All(t.Context(), uid)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(contents(before), contents(after)); d != "" {
		t.Errorf("meals after the failed resume (-before +after):\n%s", d)
	}
	noPending(t, b, uid, "the staged parts removed")
}

// TestImportPartGoneMidRun: the staged parts deleted while the import
// runs (after its first meal) end it as failed when the next meal's photo
// is read, with the zip-removed message; the meal whose claim was made
// is kept without its photo and noted so, and no meal after it is
// imported. Importing the zip again gives that claim its photo, adds
// the rest, and leaves the first meal's photo as it was.
func TestImportPartGoneMidRun(t *testing.T) {
	t.Parallel()
	body, want := sourceZip(t)

	app := apptest.New(t)
	// Parts of 1 KiB: the block cache (16 blocks, one part each) holds
	// 16 KiB of the zip, less than a photo.
	app.Objects.SetStagePartSize(1 << 10)
	c := app.Client()
	c.SignIn(adminEmail)
	uid := localenv.Subject(adminEmail)
	var once sync.Once
	app.Imports.SetPace(1, func(ctx context.Context, i int) {
		once.Do(func() {
			u, err := app.Users.Get(ctx, uid)
			if err != nil {
				t.Error(err)
				return
			}
			if err := app.Objects.DeleteStaged(ctx, uid, u.Import.Prefix); err != nil {
				t.Error(err)
			}
		})
	})
	if resp := postImport(c, body); resp.StatusCode != 303 {
		t.Fatalf("POST %s = %d; %s", account.ImportPath, resp.StatusCode, resp.Text("main"))
	}
	imp := waitImport(t, app, uid)
	if imp.State != user.ImportFailed || !strings.Contains(imp.Error, "zip was removed before the import finished") {
		t.Errorf("import = %s %q; want failed, saying the zip was removed", imp.State, imp.Error)
	}
	// Meal 0 (12:30, with its photo) whole; meal 1 (19:05) claimed, its
	// photo never read, and noted.
	ms, err := app.Meals.All(t.Context(), uid)
	if err != nil {
		t.Fatal(err)
	}
	wantNow := []string{"2026-09-01 12:30:00 lunch lentil soup\nand bread photo", "2026-09-01 19:05:00 dinner risotto no photo"}
	if d := cmp.Diff(wantNow, contents(ms)); d != "" {
		t.Errorf("meals after the failed import (-want +got):\n%s", d)
	}
	if len(imp.Notes) != 1 || imp.Notes[0].Index != 1 || imp.Notes[0].Kind != "photo" || !strings.Contains(imp.Notes[0].Msg, "zip was removed") {
		t.Errorf("notes = %+v; want one photo note on meal 1 saying the zip was removed", imp.Notes)
	}
	noPending(t, app, uid, "none")
	page := c.Get(account.ImportPath)
	if text := page.Text("main"); !strings.Contains(text, "zip was removed before the import finished") {
		t.Errorf("import page does not say why it failed:\n%s", text)
	}
	lunch := photoETags(t, app, ms[:1])

	// The same zip again: 19:05's claim gets its photo, the other two are
	// added, and 12:30's photo is not touched.
	app.Imports.SetPace(1, nil)
	importAndWait(t, app, c, body)
	got, err := app.Meals.All(t.Context(), uid)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(contents(want), contents(got)); d != "" {
		t.Errorf("meals after importing the zip again (-zip +diary):\n%s", d)
	}
	if got[1].ID != ms[1].ID {
		t.Errorf("19:05 after importing again is meal %s, want the claim %s given its photo", got[1].ID, ms[1].ID)
	}
	if d := cmp.Diff(lunch, photoETags(t, app, got[:1])); d != "" {
		t.Errorf("12:30's photo objects after importing again (-before +after):\n%s", d)
	}
	u, err := app.Users.Get(t.Context(), uid)
	if err != nil {
		t.Fatal(err)
	}
	if imp := u.Import; imp.State != user.ImportDone || imp.Imported != 3 || imp.Skipped != 1 {
		t.Errorf("second import = %s, %d imported, %d skipped; want done, 3 imported (19:05's photo, 08:00, 16:00), 1 skipped", imp.State, imp.Imported, imp.Skipped)
	}
}

// TestImportLeavesTheOwnersMealsPhotoless: a meal the owner wrote, the
// same as one of the zip's but without its photo, is skipped and not
// given the zip's photo: only an import's own claim is.
func TestImportLeavesTheOwnersMealsPhotoless(t *testing.T) {
	t.Parallel()
	body, _ := sourceZip(t)

	app := apptest.New(t)
	c := app.Client()
	c.SignIn(adminEmail)
	uid := localenv.Subject(adminEmail)
	lunch := url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}, "notes": {"lentil soup\nand bread"}, "kcal": {"512.5"}, "protein_g": {"21"}, "carbs_g": {"60.5"}, "fat_g": {"9"}, "hunger": {"4"}, "fullness": {"2"}}
	if resp := c.PostMultipart("/meals", lunch); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("add meal = %d; %s", resp.StatusCode, resp.Text("main"))
	}
	importAndWait(t, app, c, body)
	ms, err := app.Meals.All(t.Context(), uid)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 4 || ms[0].Time != "12:30:00" || ms[0].HasPhoto() || ms[0].ImportID != "" {
		t.Errorf("meals after the import = %v; want the owner's 12:30 still without a photo, and 3 imported", contents(ms))
	}
}

// TestImportStagedByAnOlderVersion: an import a version staging the zip
// as one object left running (its state has Key, no Prefix) ends, when
// resumed, as failed with a message asking for the zip again, and its
// object is deleted.
func TestImportStagedByAnOlderVersion(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	c.SignIn(adminEmail)
	uid := localenv.Subject(adminEmail)
	key := photo.ImportPrefix(uid) + "old1.zip"
	if _, err := app.Env.S3.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(importBucket), Key: aws.String(key), Body: bytes.NewReader([]byte("PK"))}); err != nil {
		t.Fatal(err)
	}
	old := user.Import{ID: "old1", Key: key, Size: 2, State: user.ImportRunning, Total: 3, StartedAt: app.Clock.Now().UTC()}
	if err := app.Users.StartImport(t.Context(), uid, old); err != nil {
		t.Fatal(err)
	}
	if n, err := app.Imports.ResumeAll(t.Context()); err != nil || n != 1 {
		t.Fatalf("ResumeAll = %d, %v; want 1", n, err)
	}
	imp := waitImport(t, app, uid)
	if imp.State != user.ImportFailed || !strings.Contains(imp.Error, "older version of ndiro") || !strings.Contains(imp.Error, "Upload it again") {
		t.Errorf("import = %s %q; want failed, naming the older version and asking for the zip again", imp.State, imp.Error)
	}
	noPending(t, app, uid, "the old staged zip deleted")
}

// TestMoveEndsTheImport: an account moved to a new subject while its
// import runs stops the import before the move copies anything, and the
// new account's import page shows it failed, saying the account moved and
// to import again, with the counts of its last save; importing the
// zip again there ends with exactly the zip's meals.
func TestMoveEndsTheImport(t *testing.T) {
	t.Parallel()
	body, want := sourceZip(t)

	app := apptest.New(t)
	app.Moves.SetRetry(1, time.Millisecond)
	c := app.Client()
	c.SignIn(adminEmail)
	oldID := localenv.Subject(adminEmail)
	first := make(chan struct{})
	var once sync.Once
	app.Imports.SetPace(1, func(ctx context.Context, i int) {
		if i == 1 { // meal 0 saved, meal 1 done but not yet saved
			once.Do(func() { close(first) })
			<-ctx.Done() // until something stops the run
		}
	})
	if resp := postImport(c, body); resp.StatusCode != 303 {
		t.Fatalf("POST %s = %d; %s", account.ImportPath, resp.StatusCode, resp.Text("main"))
	}
	<-first
	app.FromOldProvider(t, oldID)
	if err := app.Users.MarkAwaitingOwner(t.Context(), oldID, app.Clock.Now(), apptest.AdminMark(app.Clock.Now())); err != nil {
		t.Fatal(err)
	}
	app.Env.NextSignIn(&mockoidc.MockUser{Subject: newSub, Email: adminEmail, EmailVerified: true})
	nc := app.Client()
	if resp := nc.SignInVia("/login", "ignored@example.com"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in of the new subject = %d; %s", resp.StatusCode, resp.Body)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := app.Moves.Wait(ctx, newSub); err != nil {
		t.Fatal(err)
	}
	if err := app.Imports.Wait(ctx, oldID); err != nil {
		t.Fatalf("the old account's import still runs after the move: %v", err)
	}
	u, err := app.Users.Get(t.Context(), newSub)
	if err != nil || !u.Active() {
		t.Fatalf("new row after the move = %+v, %v; want active", u, err)
	}
	if imp := u.Import; imp == nil || imp.State != user.ImportFailed || imp.Imported != 1 || imp.Next != 1 ||
		!strings.Contains(imp.Error, "account moved to a new sign-in") || !strings.Contains(imp.Error, "Import the zip again") {
		t.Errorf("import on the new row = %+v; want failed as last saved, after 1 meal, saying the account moved and to import again", imp)
	}
	if keys := objectsOf(t, app, oldID); len(keys) != 0 {
		t.Errorf("objects of the old account after the move: %v; want none (its staged zip too)", keys)
	}
	if ms, err := app.Meals.All(t.Context(), newSub); err != nil || len(ms) != 2 {
		t.Errorf("meals of the new account = %v, %v; want the two imported before the move", contents(ms), err)
	}
	if text := nc.Get(account.ImportPath).Text("main"); !strings.Contains(text, "account moved to a new sign-in") {
		t.Errorf("import page of the new account does not say the move stopped it:\n%s", text)
	}

	app.Imports.SetPace(1, nil)
	resp := postImport(nc, body)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST %s again = %d; %s", account.ImportPath, resp.StatusCode, resp.Text("main"))
	}
	if imp := waitImport(t, app, newSub); imp.State != user.ImportDone || imp.Skipped != 2 || imp.Imported != 2 {
		t.Errorf("import again = %+v; want done, 2 skipped, 2 imported", imp)
	}
	got, err := app.Meals.All(t.Context(), newSub)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(contents(want), contents(got)); d != "" {
		t.Errorf("meals after importing again (-zip +diary):\n%s", d)
	}
}
