package account_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"ndiro/internal/apptest"
	"ndiro/internal/dynamo"
	"ndiro/internal/localenv"
	"ndiro/internal/photo"
	"ndiro/internal/user"
)

// usageOf returns the owner's usage as the users table holds it (read
// past the store's cache) and what storage holds: the meals counted and
// the bytes of every object under the owner's prefix.
func usageOf(t *testing.T, app *apptest.App, email string) (row, truth user.Usage) {
	t.Helper()
	ctx := context.Background()
	id := localenv.Subject(email)
	u, found, err := dynamo.GetItem[user.User](ctx, app.Env.DynamoDB, app.Tables.Users.Name, "user_id", id)
	if err != nil || !found {
		t.Fatalf("users row of %s: found %v, %v", id, found, err)
	}
	free := func(context.Context, int) error { return nil }
	meals, err := app.Meals.CountByOwner(ctx, free)
	if err != nil {
		t.Fatal(err)
	}
	truth.Meals = meals[id]
	err = app.Objects.List(ctx, photo.UserPrefix(id), free, func(o photo.ObjectInfo) error {
		truth.PhotoBytes += o.Size
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return u.Usage, truth
}

// TestImportCountsItsMeals: an import adds its meals and their photos'
// bytes to the account's usage, with the state it saves every few meals
// and at the end, so the users row ends holding what storage holds.
func TestImportCountsItsMeals(t *testing.T) {
	t.Parallel()
	zipA, _ := sourceZip(t)
	b := apptest.New(t)
	b.Imports.SetPace(3, nil) // a save part-way too
	cb := b.Client()
	cb.SignIn(adminEmail)
	page := importAndWait(t, b, cb, zipA)
	if got := page.Text("#imported"); got != "4" {
		t.Fatalf("imported %s, want 4; %s", got, page.Text("main"))
	}
	row, truth := usageOf(t, b, adminEmail)
	if truth.Meals != 4 || truth.PhotoBytes == 0 || row != truth {
		t.Errorf("after the import the users row counts %+v, storage holds %+v; want them equal, 4 meals with photos", row, truth)
	}
}

// TestImportStopsAtTheQuota: an import into an account that reaches its
// meals' bound part-way stops there, failed, saying so and what to do;
// the meals imported stay and are counted. A second import into the
// full account is refused before its zip is read: nothing is staged.
func TestImportStopsAtTheQuota(t *testing.T) {
	t.Parallel()
	zipA, _ := sourceZip(t)
	b := apptest.New(t, apptest.Options{Env: map[string]string{"NDIRO_QUOTA_MEALS": "3"}})
	cb := b.Client()
	cb.SignIn(adminEmail)
	page := importAndWait(t, b, cb, zipA)
	if got := page.Text("#imported"); got != "3" {
		t.Errorf("imported %s, want 3 (the quota)", got)
	}
	msg := page.Text("main")
	for _, want := range []string{"The import stopped before meal 4 of 4", "your diary is full, it holds 3 meals", "upload the zip again"} {
		if !strings.Contains(msg, want) {
			t.Errorf("result page does not say %q:\n%s", want, msg)
		}
	}
	uid := localenv.Subject(adminEmail)
	u, err := b.Users.Get(t.Context(), uid)
	if err != nil || u.Import == nil || u.Import.State != user.ImportFailed {
		t.Fatalf("import on the row = %+v, %v; want failed", u.Import, err)
	}
	row, truth := usageOf(t, b, adminEmail)
	if truth.Meals != 3 || row != truth {
		t.Errorf("after the stopped import the users row counts %+v, storage holds %+v; want them equal, 3 meals", row, truth)
	}
	noPending(t, b, uid, "the stopped import's end")

	b.Clock.Advance(user.CacheTTL)
	resp := postImport(cb, zipA)
	if resp.StatusCode != http.StatusForbidden || resp.Text("h1") != "Your diary is full" || !strings.Contains(resp.Text("main p"), "it holds 3 meals") {
		t.Errorf("an import into the full account = %d %q %q, want 403 saying it is full", resp.StatusCode, resp.Text("h1"), resp.Text("main p"))
	}
	noPending(t, b, uid, "nothing staged for a refused import")
	if u, err := b.Users.Get(t.Context(), uid); err != nil || u.Import == nil || u.Import.State != user.ImportFailed {
		t.Errorf("import on the row after the refusal = %+v, %v; want the failed one kept", u.Import, err)
	}
}
