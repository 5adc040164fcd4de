package admin_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

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
	if got, err := app.Users.FindAwaitingOwner(ctx, keepEmail); err != nil || got.ID != keep {
		t.Errorf("after the mark FindAwaitingOwner = %+v, %v, want the account", got, err)
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
	row := list.Doc().Find(`tr[data-user="` + keep + `"]`)
	if !strings.Contains(row.Find(".status").Text(), "marked to move since") || row.Find(`form[action="`+path+`/move/cancel"]`).Length() != 1 {
		t.Errorf("users page row of the marked account: status %q, unmark forms %d", row.Find(".status").Text(), row.Find(`form[action="`+path+`/move/cancel"]`).Length())
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
