package server_test

import (
	"errors"
	"fmt"
	"image/color"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/storage"
	"ndiro/internal/web"
)

// TestFullStorageRefusesWritesEarly reports a full disk through the write
// health hook: every unsafe request of a signed-in user (an upload, a
// delete, an admin action, one sent by the page script) and of a share's
// recipient (a comment, a week marked reviewed) gets the 507
// page before its form is read, so nothing reaches the tables; reads
// answer as usual, and signing out and in still works. Once the hook reports
// health again, writes go through.
func TestFullStorageRefusesWritesEarly(t *testing.T) {
	t.Parallel()
	var full atomic.Pointer[error]
	app := apptest.New(t, apptest.Options{WriteHealth: func() error {
		if err := full.Load(); err != nil {
			return *err
		}
		return nil
	}})
	c := app.Client()
	c.SignIn("admin@example.com")
	form := url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}, "notes": {"Soup"}}
	if r := c.PostForm("/meals", form); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("create while healthy = %d", r.StatusCode)
	}
	ms, err := app.Meals.All(t.Context(), localenv.Subject("admin@example.com"))
	if err != nil || len(ms) != 1 {
		t.Fatalf("meals = %v, %v", ms, err)
	}
	m := ms[0]
	tok := c.CreateShare(url.Values{"label": {"Dr. Rossi"}, "from": {"2026-09-01"}, "to": {"2026-09-07"}, "expiry": {"never"}, "comments": {"1"}})
	recipient := app.Client()

	refusal := fmt.Errorf("local dynamodb refuses writes: %w: %w", storage.ErrFull, errors.New("no space left on device"))
	full.Store(&refusal)
	app.Calls.Reset()
	photo := apptest.File{Field: "photo", Name: "meal.jpg", Body: apptest.JPEG(t, 640, 480, color.RGBA{200, 80, 40, 255})}
	for _, tc := range []struct {
		name string
		send func() *apptest.Response
	}{
		{"create with a photo", func() *apptest.Response { return c.PostMultipart("/meals", form, photo) }},
		{"create sent by the page script", func() *apptest.Response {
			return scripted(t, c, app.URL+"/meals", form)
		}},
		{"edit", func() *apptest.Response {
			return c.PostForm(m.DetailURL(), url.Values{"date": {m.Date}, "time": {"12:30"}, "kind": {"dinner"}, "notes": {"Stew"}, "version": {"1"}})
		}},
		{"delete", func() *apptest.Response { return c.PostForm(m.DetailURL()+"/delete", url.Values{}) }},
		{"new invite", func() *apptest.Response { return c.PostForm("/admin/invites", url.Values{"role": {"owner"}}) }},
		{"a recipient's comment", func() *apptest.Response {
			return recipient.PostForm("/s/"+tok+"/meals/"+m.Date+"/"+m.ID+"/comments", url.Values{"text": {"Nice soup."}})
		}},
		{"a recipient's reviewed week", func() *apptest.Response {
			return recipient.PostForm("/s/"+tok+"/weeks/2026-09-01/reviewed", url.Values{"reviewed": {"1"}})
		}},
	} {
		r := tc.send()
		if r.StatusCode != http.StatusInsufficientStorage || r.Header.Get("Retry-After") != "30" {
			t.Errorf("%s on a full disk = %d, Retry-After %q; want 507 with Retry-After 30", tc.name, r.StatusCode, r.Header.Get("Retry-After"))
			continue
		}
		if got := r.Text("main h1"); got != "The server's disk is full" {
			t.Errorf("%s: heading %q", tc.name, got)
		}
		if got := r.Text("main p"); !strings.HasPrefix(got, "Nothing was saved") {
			t.Errorf("%s: message %q, want it to say nothing was saved", tc.name, got)
		}
	}
	for op, n := range app.Calls.Counts() {
		switch op {
		case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems":
			t.Errorf("%d %s calls while writes are refused, want none", n, op)
		}
	}
	for _, path := range []string{"/meals?month=2026-09", m.DetailURL(), "/account", "/admin/invites"} {
		if r := c.Get(path); r.StatusCode != http.StatusOK {
			t.Errorf("GET %s on a full disk = %d, want 200", path, r.StatusCode)
		}
	}
	if r := c.PostForm("/logout", url.Values{}); r.StatusCode != http.StatusSeeOther {
		t.Errorf("sign out on a full disk = %d, want 303", r.StatusCode)
	}
	c.SignIn("admin@example.com")

	full.Store(nil)
	if r := c.PostForm(m.DetailURL()+"/delete", url.Values{}); r.StatusCode != http.StatusSeeOther {
		t.Errorf("delete once storage takes writes again = %d, want 303", r.StatusCode)
	}
}

// scripted posts form as the page script does (web.ScriptedHeader).
func scripted(t *testing.T, c *apptest.Client, u string, form url.Values) *apptest.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(web.ScriptedHeader, "1")
	return c.Do(req)
}
