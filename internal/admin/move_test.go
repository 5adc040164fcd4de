package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/oauth2-proxy/mockoidc"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/user"
)

// lockedBuffer collects the app's log lines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the log lines whose msg is msg.
func (b *lockedBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// TestMarkToMove: an admin marks an account to move to a new sign-in
// provider after a page saying what will happen, and unmarks it; each
// refusal is a page saying why; each change is an audit line.
func TestMarkToMove(t *testing.T) {
	t.Parallel()
	var log lockedBuffer
	app := apptest.New(t, apptest.Options{Log: &log})
	ctx := t.Context()
	adm := app.Client()
	adm.SignIn(adminEmail)
	inv := adm.CreateInvite(url.Values{"role": {"owner"}})
	keeper := app.Client()
	keeper.SignInVia("/login?invite="+inv, keepEmail)
	keep := localenv.Subject(keepEmail)
	path := "/admin/users/" + url.PathEscape(keep)

	list := adm.Get("/admin/users")
	if href, _ := list.Doc().Find(`tr[data-user="` + keep + `"] a[href$="/move"]`).Attr("href"); href != path+"/move" {
		t.Errorf("users page links %q to mark the account, want %s/move", href, path)
	}
	page := adm.Get(path + "/move")
	if page.StatusCode != http.StatusOK || page.Text("h1") != "Move "+keepEmail+" to a new sign-in provider" {
		t.Fatalf("confirmation page = %d %q", page.StatusCode, page.Text("h1"))
	}
	if action, _ := page.Doc().Find("form").Attr("action"); action != path+"/move" {
		t.Errorf("confirmation form posts to %q, want %s/move", action, path)
	}
	if what := page.Text("#what"); !strings.Contains(what, "share links") || !strings.Contains(what, "old sign-in stops working") {
		t.Errorf("confirmation page says %q, want what moves and that the old sign-in stops", what)
	}
	if u, _ := app.Users.Get(ctx, keep); u.AwaitingOwner != nil {
		t.Fatal("opening the confirmation page marked the account")
	}

	// A cross-origin POST is refused like every POST.
	req, _ := http.NewRequest(http.MethodPost, app.URL+path+"/move", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if r := adm.Do(req); r.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin mark = %d, want 403", r.StatusCode)
	}
	// Owners cannot mark anyone.
	if r := keeper.PostForm(path+"/move", nil); r.StatusCode != http.StatusForbidden {
		t.Errorf("owner marking = %d, want 403", r.StatusCode)
	}
	if u, _ := app.Users.Get(ctx, keep); u.AwaitingOwner != nil {
		t.Fatal("a refused POST marked the account")
	}

	if r := adm.PostForm(path+"/move", nil); r.StatusCode != http.StatusSeeOther || r.Location() != "/admin/users" {
		t.Fatalf("mark = %d %q, want 303 to /admin/users", r.StatusCode, r.Location())
	}
	got, err := app.Users.FindAwaitingOwner(ctx, keepEmail)
	if err != nil || got.ID != keep {
		t.Fatalf("after the mark FindAwaitingOwner = %+v, %v, want the account", got, err)
	}
	// The mark records the admin, the configured lifetime and the
	// issuer the account signed up through (the app's).
	want := user.OwnerMark{By: localenv.Subject(adminEmail), Expires: app.Clock.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second), Issuer: app.Env.OIDC.Issuer()}
	if got.OwnerMark == nil || *got.OwnerMark != want {
		t.Errorf("the admin's mark = %+v, want %+v", got.OwnerMark, want)
	}
	lines := log.lines(t, "admin marked account to move")
	if len(lines) != 1 || lines[0]["user_id"] != keep || lines[0]["admin_id"] != localenv.Subject(adminEmail) {
		t.Errorf("audit lines = %v, want one naming the account and the admin", lines)
	}
	for _, l := range lines {
		for k, v := range l {
			if s, _ := v.(string); strings.Contains(s, "@") {
				t.Errorf("audit line holds an email in %s: %q", k, s)
			}
		}
	}
	// Nothing changes for the owner until a new sign-in comes.
	if r := keeper.Get("/meals"); r.StatusCode != http.StatusOK {
		t.Errorf("marked owner's diary = %d, want 200", r.StatusCode)
	}
	list = adm.Get("/admin/users")
	row := list.Doc().Find(`table.users tr[data-user="` + keep + `"]`)
	marked := list.Doc().Find(`#marked tr[data-user="` + keep + `"]`)
	if !strings.Contains(row.Find(".status").Text(), "marked to move since") || marked.Find(`form[action="`+path+`/move/cancel"]`).Length() != 1 {
		t.Errorf("users page of the marked account: status %q, unmark forms %d", row.Find(".status").Text(), marked.Find(`form[action="`+path+`/move/cancel"]`).Length())
	}
	if r := adm.Get(path + "/move"); r.StatusCode != http.StatusConflict || r.Text("h1") != "Already marked" {
		t.Errorf("confirmation page of a marked account = %d %q, want 409 Already marked", r.StatusCode, r.Text("h1"))
	}

	// A second account with the same email cannot be marked too.
	if err := app.Users.Create(ctx, &user.User{ID: "twin", Email: strings.ToUpper(keepEmail), Role: user.RoleOwner, Status: user.StatusActive}); err != nil {
		t.Fatal(err)
	}
	if r := adm.PostForm("/admin/users/twin/move", nil); r.StatusCode != http.StatusConflict || r.Text("h1") != "Email already waiting" {
		t.Errorf("mark of a second account with the email = %d %q, want 409 Email already waiting", r.StatusCode, r.Text("h1"))
	}
	// A disabled account cannot be marked; an unknown one is 404.
	if err := app.Users.SetDisabled(ctx, "twin", true); err != nil {
		t.Fatal(err)
	}
	if r := adm.PostForm("/admin/users/twin/move", nil); r.StatusCode != http.StatusConflict || r.Text("h1") != "Not possible now" {
		t.Errorf("mark of a disabled account = %d %q, want 409 Not possible now", r.StatusCode, r.Text("h1"))
	}
	for _, p := range []string{"/admin/users/nobody/move", "/admin/users/nobody/move/cancel"} {
		if r := adm.PostForm(p, nil); r.StatusCode != http.StatusNotFound {
			t.Errorf("POST %s = %d, want 404", p, r.StatusCode)
		}
	}

	// Unmark.
	if r := adm.PostForm(path+"/move/cancel", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("unmark = %d, want 303", r.StatusCode)
	}
	if _, err := app.Users.FindAwaitingOwner(ctx, keepEmail); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("after the unmark FindAwaitingOwner = %v, want ErrNotFound", err)
	}
	// Both halves of the mark go: the row's and the email item.
	if u, err := app.Users.Get(ctx, keep); err != nil || u.AwaitingOwner != nil || u.OwnerMark != nil {
		t.Errorf("after the unmark the row = %+v, %v; want no mark", u, err)
	}
	if named, ok := emailItem(t, app, keepEmail); ok {
		t.Errorf("after the unmark the email item still names %q", named)
	}
	if n := len(log.lines(t, "admin unmarked account to move")); n != 1 {
		t.Errorf("%d unmark audit lines, want 1", n)
	}
	// An admin marks their own account too: they change provider as well.
	self := "/admin/users/" + url.PathEscape(localenv.Subject(adminEmail))
	if r := adm.PostForm(self+"/move", nil); r.StatusCode != http.StatusSeeOther {
		t.Errorf("admin marking their own account = %d, want 303", r.StatusCode)
	}
	if r := adm.Get("/admin/users"); r.StatusCode != http.StatusOK {
		t.Errorf("admin after marking themselves = %d, want 200", r.StatusCode)
	}
}

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
	v, _ := out.Item["marked_user_id"].(*types.AttributeValueMemberS)
	if out.Item == nil || v == nil {
		return "", out.Item != nil
	}
	return v.Value, true
}

// TestUsersPageListsMarks: the users page lists every marked account
// under "Waiting for their owner", the soonest to expire first: who
// marked it, the issuer it signs in through now, and how long it stays
// claimable, or that it expired, or that it claims nothing (a mark made
// by an earlier version); with extend and unmark buttons.
func TestUsersPageListsMarks(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	ctx := t.Context()
	adm := app.Client()
	adm.SignIn(adminEmail)
	if r := adm.Get("/admin/users"); r.Doc().Find("#marked").Length() != 0 {
		t.Error("the users page lists marked accounts while none is")
	}
	for _, id := range []string{"ana", "bo", "cy", "dee"} {
		if err := app.Users.Create(ctx, &user.User{ID: id, Email: id + "@example.com", Role: user.RoleOwner, Status: user.StatusActive, Issuer: apptest.OldIssuer, CreatedAt: app.Clock.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	start := app.Clock.Now()
	if r := adm.PostForm("/admin/users/ana/move", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("mark ana = %d", r.StatusCode)
	}
	if err := app.Users.MarkAwaitingOwner(ctx, "bo", start, user.OwnerMark{By: user.MarkedByMigrate, Expires: start.Add(10 * 24 * time.Hour), Issuer: apptest.OldIssuer}); err != nil {
		t.Fatal(err)
	}
	if err := app.Users.MarkAwaitingOwner(ctx, "dee", start, user.OwnerMark{By: "gone-admin", Expires: start.Add(time.Hour), Issuer: apptest.OldIssuer}); err != nil {
		t.Fatal(err)
	}
	// cy: a mark made by an earlier version, which records no maker.
	if _, err := app.Env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(app.Tables.Users.Name),
		Key:                       map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: "cy"}},
		UpdateExpression:          aws.String("SET awaiting_owner = :t"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberS{Value: start.UTC().Format(time.RFC3339)}},
	}); err != nil {
		t.Fatal(err)
	}
	app.Clock.Advance(2 * time.Hour)

	page := adm.Get("/admin/users")
	rows := page.Doc().Find("#marked tbody tr")
	var order []string
	rows.Each(func(_ int, r *goquery.Selection) { order = append(order, r.AttrOr("data-user", "")) })
	if strings.Join(order, " ") != "bo ana dee cy" {
		t.Errorf("marked accounts listed %v, want bo ana dee cy (soonest expiry first, expired, then inert)", order)
	}
	day := func(d time.Duration) string { return start.Add(d).UTC().Format("2 Jan 2006") }
	for _, tc := range []struct {
		id, by, left string
		extend       string // the extend button's label, "" for none
	}{
		{"bo", "ndiro migrate", "10 days left, until " + day(10*24*time.Hour), "Extend mark"},
		{"ana", adminEmail, "30 days left, until " + day(30*24*time.Hour), "Extend mark"},
		{"dee", "gone-admin", "expired on " + day(time.Hour), "Renew mark"},
		{"cy", "unknown", "never: marked by an earlier version of ndiro", ""},
	} {
		row := page.Doc().Find(`#marked tr[data-user="` + tc.id + `"]`)
		if by := strings.Join(strings.Fields(row.Find(".by").Text()), " "); !strings.HasPrefix(by, tc.by+", ") {
			t.Errorf("%s marked by %q, want it to start with %q", tc.id, by, tc.by)
		}
		if tc.extend != "" && !strings.Contains(row.Find(".by").Text(), "signs in now through "+apptest.OldIssuer) {
			t.Errorf("%s: %q does not name the issuer it signs in through", tc.id, row.Find(".by").Text())
		}
		if left := strings.Join(strings.Fields(row.Find(".left").Text()), " "); !strings.HasPrefix(left, tc.left) {
			t.Errorf("%s claimable %q, want %q", tc.id, left, tc.left)
		}
		if got := row.Find(`form[action="/admin/users/` + tc.id + `/move/extend"] button`).Text(); got != tc.extend {
			t.Errorf("%s extend button %q, want %q", tc.id, got, tc.extend)
		}
		if row.Find(`form[action="/admin/users/`+tc.id+`/move/cancel"]`).Length() != 1 {
			t.Errorf("%s has no unmark button", tc.id)
		}
	}
}

// TestExtendMark: an admin extends a mark by NDIRO_MOVE_MARK_DAYS from
// now, an expired one too, which a new sign-in can then claim (it could
// not before); the extension is an audit line; an account not marked so
// is refused with a page saying why, and nothing changes.
func TestExtendMark(t *testing.T) {
	t.Parallel()
	var log lockedBuffer
	app := apptest.New(t, apptest.Options{Log: &log, Env: map[string]string{"NDIRO_MOVE_MARK_DAYS": "2"}})
	ctx := t.Context()
	adm := app.Client()
	adm.SignIn(adminEmail)
	const email = "eve@example.com"
	for _, id := range []string{"old-sub", "plain"} {
		if err := app.Users.Create(ctx, &user.User{ID: id, Email: id + "-" + email, Role: user.RoleOwner, Status: user.StatusActive, Issuer: apptest.OldIssuer, CreatedAt: app.Clock.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if r := adm.PostForm("/admin/users/old-sub/move", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("mark = %d", r.StatusCode)
	}
	app.Clock.Advance(3 * 24 * time.Hour)
	claim := func() *apptest.Response {
		app.Env.NextSignIn(&mockoidc.MockUser{Subject: "new-sub", Email: "old-sub-" + email, EmailVerified: true})
		return app.Client().SignInVia("/login", "ignored@example.com")
	}
	if r := claim(); r.StatusCode != http.StatusForbidden {
		t.Fatalf("claim of the expired mark = %d %q, want 403", r.StatusCode, r.Text("h1"))
	}
	if r := adm.Get("/admin/users"); !strings.Contains(r.Text(`#marked tr[data-user="old-sub"] .left`), "expired") {
		t.Errorf("users page before the extension says %q, want expired", r.Text(`#marked tr[data-user="old-sub"] .left`))
	}

	// Refusals first: nothing changes.
	keeper := app.Client()
	app.Env.NextSignIn(&mockoidc.MockUser{Subject: "plain", Email: "plain-" + email, EmailVerified: true})
	keeper.SignIn("ignored@example.com")
	for _, tc := range []struct {
		name   string
		c      *apptest.Client
		path   string
		status int
		title  string
	}{
		{"an owner", keeper, "/admin/users/old-sub/move/extend", http.StatusForbidden, ""},
		{"an account not marked", adm, "/admin/users/plain/move/extend", http.StatusConflict, "Not marked"},
		{"no such account", adm, "/admin/users/nobody/move/extend", http.StatusNotFound, ""},
	} {
		r := tc.c.PostForm(tc.path, nil)
		if r.StatusCode != tc.status || (tc.title != "" && r.Text("h1") != tc.title) {
			t.Errorf("extend by %s = %d %q, want %d %q", tc.name, r.StatusCode, r.Text("h1"), tc.status, tc.title)
		}
	}
	if u, _ := app.Users.Get(ctx, "plain"); u.AwaitingOwner != nil || u.OwnerMark != nil {
		t.Errorf("a refused extension marked plain: %+v", u.OwnerMark)
	}
	if u, _ := app.Users.Get(ctx, "old-sub"); u.ClaimableBy("https://new.example", app.Clock.Now()) {
		t.Error("a refused extension extended old-sub")
	}

	r := adm.PostForm("/admin/users/old-sub/move/extend", nil)
	if r.StatusCode != http.StatusSeeOther || r.Location() != "/admin/users#marked" {
		t.Fatalf("extend = %d %q, want 303 to /admin/users#marked", r.StatusCode, r.Location())
	}
	until := app.Clock.Now().Add(2 * 24 * time.Hour).UTC().Truncate(time.Second)
	if u, err := app.Users.Get(ctx, "old-sub"); err != nil || u.OwnerMark == nil || !u.OwnerMark.Expires.Equal(until) || u.OwnerMark.By != localenv.Subject(adminEmail) {
		t.Errorf("extended mark = %+v, %v; want by the admin until %v", u.OwnerMark, err, until)
	}
	lines := log.lines(t, "admin extended account's mark to move")
	if len(lines) != 1 || lines[0]["user_id"] != "old-sub" || lines[0]["admin_id"] != localenv.Subject(adminEmail) {
		t.Errorf("audit lines = %v, want one naming the account and the admin", lines)
	}
	if left := adm.Get("/admin/users").Text(`#marked tr[data-user="old-sub"] .left`); !strings.HasPrefix(left, "2 days left") {
		t.Errorf("users page after the extension says %q, want 2 days left", left)
	}
	if r := claim(); r.StatusCode != http.StatusSeeOther || r.Location() != "/meals" {
		t.Fatalf("claim of the extended mark = %d %q, want 303 to /meals", r.StatusCode, r.Text("h1"))
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := app.Moves.Wait(wctx, "new-sub"); err != nil {
		t.Fatal(err)
	}
	if u, err := app.Users.Get(ctx, "new-sub"); err != nil || u.MoveFrom != "old-sub" {
		t.Errorf("new subject's row = %+v, %v; want the account moved from old-sub", u, err)
	}
}
