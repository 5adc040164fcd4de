package admin_test

import (
	"image/color"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
)

// TestUserManagement: each admin action on /admin/users, taking effect on
// the user's very next request, and the rules that keep an admin from
// locking themselves out.
func TestUserManagement(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	adm := app.Client()
	adm.SignIn(adminEmail)
	inv := adm.CreateInvite(url.Values{"role": {"owner"}})
	keeper := app.Client()
	keeper.SignInVia("/login?invite="+inv, keepEmail)
	keep := localenv.Subject(keepEmail)
	form := url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}}
	keeper.PostMultipart("/meals", form, apptest.File{Field: "photo", Name: "p.jpg", Body: apptest.JPEG(t, 64, 48, color.RGBA{G: 200})})
	ms, err := app.Meals.All(t.Context(), keep)
	if err != nil || len(ms) != 1 {
		t.Fatalf("meals = %v, %v", ms, err)
	}
	share := keeper.CreateShare(url.Values{"label": {"x"}, "from": {"2026-09-01"}, "to": {"2026-09-02"}, "expiry": {"never"}})
	path := "/admin/users/" + url.PathEscape(keep)
	post := func(action string, form url.Values) *apptest.Response {
		t.Helper()
		return adm.PostForm(path+"/"+action, form)
	}

	// Role.
	if r := keeper.Get("/admin/users"); r.StatusCode != http.StatusForbidden {
		t.Fatalf("owner at /admin/users = %d, want 403", r.StatusCode)
	}
	if r := post("role", url.Values{"role": {"admin"}}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("make admin = %d", r.StatusCode)
	}
	if r := keeper.Get("/admin/users"); r.StatusCode != http.StatusOK {
		t.Errorf("after make admin, /admin/users = %d, want 200 at once", r.StatusCode)
	}
	if r := post("role", url.Values{"role": {"owner"}}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("remove admin = %d", r.StatusCode)
	}
	if r := keeper.Get("/admin/users"); r.StatusCode != http.StatusForbidden {
		t.Errorf("after remove admin, /admin/users = %d, want 403 at once", r.StatusCode)
	}
	if r := post("role", url.Values{"role": {"root"}}); r.StatusCode != http.StatusBadRequest {
		t.Errorf("role root = %d, want 400", r.StatusCode)
	}

	// Disable: the session, photos and share links stop on the next request.
	second := app.Client()
	second.SignIn(keepEmail)
	if r := post("disable", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("disable = %d", r.StatusCode)
	}
	for _, tc := range []struct {
		name string
		c    *apptest.Client
		path string
		want int
	}{
		{"session", keeper, "/meals", http.StatusSeeOther},
		{"photo", second, ms[0].ThumbURL(), http.StatusSeeOther},
		{"share page", app.Client(), "/s/" + share, http.StatusNotFound},
		{"share photo", app.Client(), strings.Replace(ms[0].ThumbURL(), "/photo/", "/s/"+share+"/photo/", 1), http.StatusNotFound},
	} {
		if r := tc.c.Get(tc.path); r.StatusCode != tc.want || (tc.want == http.StatusSeeOther && !strings.HasPrefix(r.Location(), "/login")) {
			t.Errorf("%s of a disabled account = %d %q, want %d", tc.name, r.StatusCode, r.Location(), tc.want)
		}
	}
	if r := app.Client().SignInVia("/login", keepEmail); r.StatusCode != http.StatusForbidden || r.Text("h1") != "Account disabled" {
		t.Errorf("sign-in of a disabled account = %d %q, want 403 Account disabled", r.StatusCode, r.Text("h1"))
	}
	if r := post("disable", nil); r.StatusCode != http.StatusConflict {
		t.Errorf("disabling twice = %d, want 409", r.StatusCode)
	}
	if r := post("enable", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("enable = %d", r.StatusCode)
	}
	back := app.Client()
	back.SignIn(keepEmail)
	if r := app.Client().Get("/s/" + share); r.StatusCode != http.StatusOK {
		t.Errorf("share after enable = %d, want 200", r.StatusCode)
	}
	if r := post("enable", nil); r.StatusCode != http.StatusConflict {
		t.Errorf("enabling an active account = %d, want 409", r.StatusCode)
	}

	// An admin cannot act on themselves here.
	self := "/admin/users/" + url.PathEscape(localenv.Subject(adminEmail))
	for _, a := range []struct{ path, role string }{{"/role", "owner"}, {"/disable", ""}, {"/delete", ""}} {
		if r := adm.PostForm(self+a.path, url.Values{"role": {a.role}, "email": {adminEmail}}); r.StatusCode != http.StatusForbidden {
			t.Errorf("admin POST own %s = %d, want 403", a.path, r.StatusCode)
		}
	}
	if r := adm.Get("/admin/users"); r.StatusCode != http.StatusOK || !r.Doc().Find(`tr[data-user="`+localenv.Subject(adminEmail)+`"]`).Is("tr") {
		t.Fatalf("admin users page = %d", r.StatusCode)
	} else if n := r.Doc().Find(`tr[data-user="` + localenv.Subject(adminEmail) + `"] form`).Length(); n != 0 {
		t.Errorf("the admin's own row offers %d actions, want none", n)
	}
	// An admin by ADMIN_EMAILS cannot be demoted or disabled by another.
	if r := post("role", url.Values{"role": {"admin"}}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("make admin = %d", r.StatusCode)
	}
	for _, a := range []struct{ path, role string }{{"/role", "owner"}, {"/disable", ""}} {
		if r := back.PostForm(self+a.path, url.Values{"role": {a.role}}); r.StatusCode != http.StatusForbidden || r.Text("h1") != "Admin by configuration" {
			t.Errorf("another admin POST %s on the ADMIN_EMAILS admin = %d %q, want 403", a.path, r.StatusCode, r.Text("h1"))
		}
	}
	if r := adm.Get("/admin/users"); r.StatusCode != http.StatusOK {
		t.Errorf("the ADMIN_EMAILS admin after the attempts = %d, want 200", r.StatusCode)
	}
	if r := adm.PostForm("/admin/users/nobody/disable", nil); r.StatusCode != http.StatusNotFound {
		t.Errorf("disable an unknown user = %d, want 404", r.StatusCode)
	}
	// A non-admin cannot use these routes at all.
	if r := post("role", url.Values{"role": {"owner"}}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("remove admin = %d", r.StatusCode)
	}
	if r := back.PostForm("/admin/users/"+url.PathEscape(localenv.Subject(adminEmail))+"/disable", nil); r.StatusCode != http.StatusForbidden || r.Text("h1") == "Admin by configuration" {
		t.Errorf("owner disabling the admin = %d %q, want 403 for admins only", r.StatusCode, r.Text("h1"))
	}
	// An account being deleted takes no role change.
	if _, err := app.Users.MarkDeleting(t.Context(), keep, "photos", app.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	if r := post("role", url.Values{"role": {"admin"}}); r.StatusCode != http.StatusConflict {
		t.Errorf("role change while deleting = %d, want 409", r.StatusCode)
	}
}
