package auth_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/oauth2-proxy/mockoidc"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/migrate"
	"ndiro/internal/user"
)

// emailItem reports whether the users table holds the item naming the
// marked account of email, and which account it names.
func emailItem(t *testing.T, app *apptest.App, email string) (string, bool) {
	t.Helper()
	out, err := app.Env.DynamoDB.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName:      aws.String(app.Tables.Users.Name),
		Key:            map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: user.OwnerEmailPrefix + email}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Item == nil {
		return "", false
	}
	v, _ := out.Item["marked_user_id"].(*types.AttributeValueMemberS)
	if v == nil {
		return "", true
	}
	return v.Value, true
}

// signInAs signs a fresh browser in through the stand-in as the subject
// sub with a verified email, and returns the app's answer.
func signInAs(app *apptest.App, sub, email string) *apptest.Response {
	app.Env.NextSignIn(&mockoidc.MockUser{Subject: sub, Email: email, EmailVerified: true})
	return app.Client().SignInVia("/login", "ignored@example.com")
}

// wantNoDiary checks that a sign-in was the invite-only refusal and
// wrote no row for sub.
func wantNoDiary(t *testing.T, app *apptest.App, what string, resp *apptest.Response, sub string) {
	t.Helper()
	if resp.StatusCode != http.StatusForbidden || resp.Text("h1") != "You need an invite" {
		t.Errorf("%s: sign-in = %d %q, want 403 You need an invite", what, resp.StatusCode, resp.Text("h1"))
	}
	if u, err := app.Users.Get(t.Context(), sub); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("%s: the new subject got a row: %+v, %v", what, u, err)
	}
}

// createOwner writes an active owner's row keyed id, recording issuer
// ("" for a row written before rows recorded it).
func createOwner(t *testing.T, app *apptest.App, id, email, issuer string) {
	t.Helper()
	if err := app.Users.Create(t.Context(), &user.User{ID: id, Email: email, Role: user.RoleOwner, Status: user.StatusActive, Issuer: issuer, CreatedAt: app.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateMarkEndsAtOwnSignIn: an account ndiro migrate marked,
// signed in by its own subject (found directly, no sign-up), is no
// longer marked, row and email item, so a later sign-in of a new
// subject with that verified email gets no diary.
func TestMigrateMarkEndsAtOwnSignIn(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	ctx := t.Context()
	const email = "ana@example.com"
	own := localenv.Subject(email)
	createOwner(t, app, own, email, "")
	now := app.Clock.Now()
	if err := app.Users.MarkAwaitingOwner(ctx, own, now, user.OwnerMark{By: user.MarkedByMigrate, Expires: now.Add(24 * time.Hour), Issuer: migrate.LocalIssuer}); err != nil {
		t.Fatal(err)
	}
	if u, _ := app.Users.Get(ctx, own); !u.ClaimableBy(app.Env.OIDC.Issuer(), now) {
		t.Fatal("the mark is not claimable by the app's sign-in: the test shows nothing")
	}
	c := app.Client()
	c.SignIn(email) // the stand-in's subject for the email: the row's own
	u, err := app.Users.Get(ctx, own)
	if err != nil || u.AwaitingOwner != nil || u.OwnerMark != nil {
		t.Errorf("after its own subject signed in the row = %+v, %v; want it unmarked", u, err)
	}
	if named, ok := emailItem(t, app, email); ok {
		t.Errorf("email item still names %q after the own subject's sign-in", named)
	}
	wantNoDiary(t, app, "a new subject after the owner came", signInAs(app, "google-ana", email), "google-ana")
	if u, err := app.Users.Get(ctx, own); err != nil || !u.Active() || u.MovedTo != "" {
		t.Errorf("the owner's account after the new subject's sign-in = %+v, %v; want it untouched", u, err)
	}
	if r := c.Get("/meals"); r.StatusCode != http.StatusOK {
		t.Errorf("the owner's diary = %d, want 200", r.StatusCode)
	}
}

// TestAdminMarkWaitsForNewProvider: an admin's mark stays through the
// sign-in of the row's own subject, and the first sign-in of a new
// subject from another issuer than the row's (the provider the
// deployment moved to) with its verified email takes the account.
func TestAdminMarkWaitsForNewProvider(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	ctx := t.Context()
	adm := app.Client()
	adm.SignIn("admin@example.com")
	const email = "bo@example.com"
	createOwner(t, app, "old-sub", email, apptest.OldIssuer)
	if r := adm.PostForm("/admin/users/old-sub/move", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("admin's mark = %d, want 303", r.StatusCode)
	}
	// The row's own subject signs in: found directly, the mark stays.
	if r := signInAs(app, "old-sub", email); r.StatusCode != http.StatusSeeOther || r.Location() != "/meals" {
		t.Fatalf("own subject's sign-in = %d %q, want 303 to /meals", r.StatusCode, r.Location())
	}
	u, err := app.Users.Get(ctx, "old-sub")
	if err != nil || u.AwaitingOwner == nil || u.OwnerMark == nil || u.OwnerMark.Issuer != apptest.OldIssuer {
		t.Errorf("after its own subject's sign-in the row = %+v, %v; want the admin's mark kept", u, err)
	}
	if named, ok := emailItem(t, app, email); !ok || named != "old-sub" {
		t.Errorf("email item = %q, %v after the own subject's sign-in, want it naming old-sub", named, ok)
	}
	// The new provider's subject takes the account.
	r := signInAs(app, "new-sub", email)
	if r.StatusCode != http.StatusSeeOther || r.Location() != "/meals" {
		t.Fatalf("new subject's sign-in = %d %q, want 303 to /meals; body %s", r.StatusCode, r.Location(), r.Body)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := app.Moves.Wait(wctx, "new-sub"); err != nil {
		t.Fatal(err)
	}
	if u, err := app.Users.Get(ctx, "new-sub"); err != nil || u.MoveFrom != "old-sub" || u.Email != email || u.Issuer != app.Env.OIDC.Issuer() {
		t.Errorf("new subject's row = %+v, %v; want the account moved from old-sub, recording the new issuer", u, err)
	}
}

// TestSameIssuerNeverClaims: a new subject of the issuer the marked
// account's own subject came from (a second connector at the same
// provider, an account re-created there) never takes it: without an
// invite it is refused, with one it gets an account of its own, and the
// marked account stays marked and untouched.
func TestSameIssuerNeverClaims(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	ctx := t.Context()
	adm := app.Client()
	adm.SignIn("admin@example.com")
	const email = "cy@example.com"
	inv := adm.CreateInvite(url.Values{"role": {"owner"}})
	if r := app.Client().SignInVia("/login?invite="+inv, email); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("owner's sign-up = %d", r.StatusCode)
	}
	own := localenv.Subject(email)
	if r := adm.PostForm("/admin/users/"+url.PathEscape(own)+"/move", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("admin's mark = %d, want 303", r.StatusCode)
	}
	wantNoDiary(t, app, "same issuer, no invite", signInAs(app, "second-connector", email), "second-connector")

	other := adm.CreateInvite(url.Values{"role": {"owner"}})
	app.Env.NextSignIn(&mockoidc.MockUser{Subject: "second-connector", Email: email, EmailVerified: true})
	if r := app.Client().SignInVia("/login?invite="+other, "ignored@example.com"); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("same issuer with an invite = %d %q, want 303", r.StatusCode, r.Text("h1"))
	}
	if u, err := app.Users.Get(ctx, "second-connector"); err != nil || !u.Active() || u.MoveFrom != "" {
		t.Errorf("the invited newcomer's row = %+v, %v; want an account of its own", u, err)
	}
	u, err := app.Users.Get(ctx, own)
	if err != nil || !u.Active() || u.MovedTo != "" || u.AwaitingOwner == nil {
		t.Errorf("the marked account = %+v, %v; want it active, unclaimed and still marked", u, err)
	}
}

// TestExpiredMarkClaimsNothing: past its expiry a mark lets no new
// subject, of any issuer, take the account; it stays marked (an admin
// may extend it) and unclaimed.
func TestExpiredMarkClaimsNothing(t *testing.T) {
	t.Parallel()
	app := apptest.New(t, apptest.Options{Env: map[string]string{"NDIRO_MOVE_MARK_DAYS": "2"}})
	ctx := t.Context()
	adm := app.Client()
	adm.SignIn("admin@example.com")
	const email = "dee@example.com"
	createOwner(t, app, "old-sub", email, apptest.OldIssuer)
	if r := adm.PostForm("/admin/users/old-sub/move", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("admin's mark = %d, want 303", r.StatusCode)
	}
	app.Clock.Advance(2*24*time.Hour + time.Second)
	wantNoDiary(t, app, "after the expiry", signInAs(app, "new-sub", email), "new-sub")
	if u, err := app.Users.Get(ctx, "old-sub"); err != nil || !u.Active() || u.MovedTo != "" || u.AwaitingOwner == nil {
		t.Errorf("the expired account = %+v, %v; want it active, unclaimed and still marked", u, err)
	}
}

// TestMigrateMarkClearFailureFailsSignIn: when the end of a migrate mark
// cannot be written, the own subject's sign-in fails (no session, the
// mark as it was), so no mark is left behind unnoticed; the next sign-in
// ends it.
func TestMigrateMarkClearFailureFailsSignIn(t *testing.T) {
	t.Parallel()
	faults := &apptest.Faults{}
	app := apptest.New(t, apptest.Options{Faults: faults})
	ctx := t.Context()
	const email = "fay@example.com"
	own := localenv.Subject(email)
	createOwner(t, app, own, email, "")
	now := app.Clock.Now()
	if err := app.Users.MarkAwaitingOwner(ctx, own, now, user.OwnerMark{By: user.MarkedByMigrate, Expires: now.Add(24 * time.Hour), Issuer: migrate.LocalIssuer}); err != nil {
		t.Fatal(err)
	}
	faults.FailOnce("UpdateItem", app.Tables.Users.Name, 0)
	c := app.Client()
	if r := c.SignInVia("/login", email); r.StatusCode < 500 {
		t.Errorf("sign-in whose mark could not be cleared = %d %q, want a 5xx", r.StatusCode, r.Location())
	}
	if r := c.Get("/meals"); r.StatusCode != http.StatusSeeOther {
		t.Errorf("GET /meals after the failed sign-in = %d, want 303 to sign-in", r.StatusCode)
	}
	if u, _ := app.Users.Get(ctx, own); u.AwaitingOwner == nil || u.OwnerMark == nil {
		t.Errorf("after the failed clear the mark = %v, %+v; want it as it was", u.AwaitingOwner, u.OwnerMark)
	}
	c.SignIn(email)
	if u, _ := app.Users.Get(ctx, own); u.AwaitingOwner != nil {
		t.Error("the next sign-in did not end the mark")
	}
	if _, ok := emailItem(t, app, email); ok {
		t.Error("the next sign-in left the email item")
	}
}
