package auth_test

import (
	"image/color"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/alexedwards/scs/v2"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/user"
)

// owner is a signed-up owner of the app with one meal that has a photo.
type owner struct {
	c     *apptest.Client
	id    string
	token string // the session cookie's value
	thumb string // the meal's thumbnail URL
}

// newOwner signs up email through an invite from the admin client and
// adds a meal with a photo.
func newOwner(t *testing.T, app *apptest.App, admin *apptest.Client, email string) owner {
	t.Helper()
	c := app.Client()
	if r := c.SignInVia("/login?invite="+admin.CreateInvite(url.Values{"role": {"owner"}}), email); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-up of %s = %d", email, r.StatusCode)
	}
	form := url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}}
	if r := c.PostMultipart("/meals", form, apptest.File{Field: "photo", Name: "p.jpg", Body: apptest.JPEG(t, 32, 24, color.RGBA{G: 200})}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("add meal = %d", r.StatusCode)
	}
	id := localenv.Subject(email)
	ms, err := app.Meals.All(t.Context(), id)
	if err != nil || len(ms) != 1 {
		t.Fatalf("meals = %v, %v", ms, err)
	}
	return owner{c: c, id: id, token: sessionCookie(t, c, app.URL), thumb: ms[0].ThumbURL()}
}

// getWith sends GET path with only the session cookie tok, as a copy of
// the cookie replayed from anywhere would come.
func getWith(t *testing.T, app *apptest.App, path, tok string) *apptest.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, app.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: "ndiro_session", Value: tok})
	return app.Client().Do(req)
}

// wantSignIn checks that resp sends its request to sign in (303 to
// /login, back to path afterwards).
func wantSignIn(t *testing.T, what string, resp *apptest.Response, path string) {
	t.Helper()
	if want := "/login?next=" + url.QueryEscape(path); resp.StatusCode != http.StatusSeeOther || resp.Location() != want {
		t.Errorf("%s = %d %q, want 303 to %s", what, resp.StatusCode, resp.Location(), want)
	}
}

// TestGuardEndsInactiveSessions holds the guard's rule on both of its
// routes, the pages (RequireUser, with the session manager) and the
// owner's photos (UserFromStore, reading the session store): once the
// users row is disabled, marked deleting or deleted through the users
// store, the very next request, with the row cached and the clock
// standing still (so only the store's invalidation can tell), is sent to
// sign in and its session is gone from the store, so the cookie is
// refused from then on. The photo route sets no cookie doing it.
func TestGuardEndsInactiveSessions(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	admin := app.Client()
	admin.SignIn("admin@example.com")
	changes := []struct {
		name string
		do   func(id string) error
	}{
		{"disabled", func(id string) error { return app.Users.SetDisabled(t.Context(), id, true) }},
		{"deleting", func(id string) error {
			_, err := app.Users.MarkDeleting(t.Context(), id, "photos", app.Clock.Now())
			return err
		}},
		{"row deleted", func(id string) error { return app.Users.Delete(t.Context(), id) }},
	}
	for i, change := range changes {
		for _, route := range []string{"page", "photo"} {
			t.Run(change.name+"/"+route, func(t *testing.T) {
				o := newOwner(t, app, admin, "owner"+string(rune('a'+i))+route+"@example.com")
				path := "/meals"
				if route == "photo" {
					path = o.thumb
				}
				if r := o.c.Get(path); r.StatusCode != http.StatusOK {
					t.Fatalf("GET %s before the change = %d, want 200", route, r.StatusCode)
				}
				app.Calls.Reset()
				if r := o.c.Get(path); r.StatusCode != http.StatusOK {
					t.Fatalf("GET %s before the change = %d, want 200", route, r.StatusCode)
				}
				if n := app.Calls.Counts()["GetItem"]; n != 0 {
					t.Fatalf("the guard made %d GetItems on a warm request, want 0: the row is not cached, so the test shows nothing", n)
				}
				if err := change.do(o.id); err != nil {
					t.Fatal(err)
				}
				resp := o.c.Get(path)
				wantSignIn(t, "GET "+route+" after the change", resp, path)
				if route == "photo" && resp.Header.Get("Set-Cookie") != "" {
					t.Errorf("the photo guard set a cookie: %q", resp.Header.Values("Set-Cookie"))
				}
				if _, found, err := app.Sessions.Store.Find(o.token); err != nil || found {
					t.Errorf("session store Find = found %v, %v; want the session deleted", found, err)
				}
				wantSignIn(t, "GET /meals with the old cookie", getWith(t, app, "/meals", o.token), "/meals")
			})
		}
	}
}

// plainStore is a session store with nothing but scs's methods: no
// FindAccount, so the photo guard reads the users row itself.
type plainStore struct{ scs.CtxStore }

// TestPhotoGuardReadsTheRowItself: on a session store that does not read
// the account with the session (any scs store), the photo guard checks
// the users row itself (user.Store.Active): a disabled account's next
// photo request is sent to sign in, its session ended.
func TestPhotoGuardReadsTheRowItself(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	app.Sessions.Store = plainStore{app.Sessions.Store.(scs.CtxStore)}
	admin := app.Client()
	admin.SignIn("admin@example.com")
	o := newOwner(t, app, admin, "plain@example.com")
	if r := o.c.Get(o.thumb); r.StatusCode != http.StatusOK {
		t.Fatalf("GET photo = %d, want 200", r.StatusCode)
	}
	if err := app.Users.SetDisabled(t.Context(), o.id, true); err != nil {
		t.Fatal(err)
	}
	wantSignIn(t, "GET photo of a disabled account", o.c.Get(o.thumb), o.thumb)
	if _, found, err := app.Sessions.Store.Find(o.token); err != nil || found {
		t.Errorf("session store Find = found %v, %v; want the session deleted", found, err)
	}
}

// TestCookieReplayAfterLogout: a copy of the session cookie taken before
// logout opens nothing afterwards, neither a page nor a photo.
func TestCookieReplayAfterLogout(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	admin := app.Client()
	admin.SignIn("admin@example.com")
	o := newOwner(t, app, admin, "owner@example.com")
	for _, p := range []string{"/meals", o.thumb} {
		if r := getWith(t, app, p, o.token); r.StatusCode != http.StatusOK {
			t.Fatalf("GET %s with the copied cookie before logout = %d, want 200", p, r.StatusCode)
		}
	}
	resp := o.c.PostForm("/logout", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Location() != "/" {
		t.Fatalf("logout = %d %q, want 303 to /", resp.StatusCode, resp.Location())
	}
	if _, found, err := app.Sessions.Store.Find(o.token); err != nil || found {
		t.Errorf("session store Find after logout = found %v, %v; want the session deleted", found, err)
	}
	for _, p := range []string{"/meals", o.thumb, "/account"} {
		wantSignIn(t, "replayed cookie: GET "+p, getWith(t, app, p, o.token), p)
	}
	if r := o.c.Get(o.thumb); r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Location(), "/login") {
		t.Errorf("the logged-out browser's photo = %d %q, want 303 to /login", r.StatusCode, r.Location())
	}
}

// TestGuardStoreFailure: when the users table cannot be read, the guard
// answers 500 on both of its routes and keeps the session: a failure of
// ours is not a reason to sign anyone out.
func TestGuardStoreFailure(t *testing.T) {
	t.Parallel()
	faults := &apptest.Faults{}
	app := apptest.New(t, apptest.Options{Faults: faults})
	admin := app.Client()
	admin.SignIn("admin@example.com")
	o := newOwner(t, app, admin, "owner@example.com")
	app.Clock.Advance(user.CacheTTL) // the cached row lapses: the guard must read the table
	faults.Fail("GetItem", app.Tables.Users.Name, 0)
	for _, p := range []string{"/meals", o.thumb} {
		if r := o.c.Get(p); r.StatusCode != http.StatusInternalServerError {
			t.Errorf("GET %s with the users table failing = %d %q, want 500", p, r.StatusCode, r.Location())
		}
	}
	faults.Clear()
	if _, found, err := app.Sessions.Store.Find(o.token); err != nil || !found {
		t.Errorf("session store Find = found %v, %v; want the session kept", found, err)
	}
	for _, p := range []string{"/meals", o.thumb} {
		if r := o.c.Get(p); r.StatusCode != http.StatusOK {
			t.Errorf("GET %s once the table answers = %d, want 200", p, r.StatusCode)
		}
	}
}
