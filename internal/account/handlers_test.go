package account_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/user"
)

const admin = "admin@example.com"

func row(t *testing.T, app *apptest.App) *user.User {
	t.Helper()
	u, err := app.Users.Get(context.Background(), localenv.Subject(admin))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestDisplayName follows the name from the provider's name claim until
// the owner sets one on the account page; from then on sign-in keeps it.
func TestDisplayName(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	c.SignInNamed(admin, "Ana Lima")
	if u := row(t, app); u.Name != "Ana Lima" || u.NameSet {
		t.Fatalf("after sign-up: name %q, set %v; want %q from the claim, not set", u.Name, u.NameSet, "Ana Lima")
	}
	if got, _ := c.Get("/account").Doc().Find("#name").Attr("value"); got != "Ana Lima" {
		t.Errorf("account page name field = %q, want Ana Lima", got)
	}

	app.Client().SignInNamed(admin, "Ana Lima-Sousa")
	if u := row(t, app); u.Name != "Ana Lima-Sousa" {
		t.Fatalf("after a sign-in with a new claim: name %q, want Ana Lima-Sousa", u.Name)
	}
	// A provider that sends no name leaves the last one.
	app.Client().SignIn(admin)
	if u := row(t, app); u.Name != "Ana Lima-Sousa" {
		t.Fatalf("after a sign-in without a name claim: name %q, want Ana Lima-Sousa kept", u.Name)
	}

	resp := c.PostForm("/account/name", url.Values{"name": {"  Ana  "}})
	if resp.StatusCode != http.StatusSeeOther || resp.Location() != "/account" {
		t.Fatalf("POST /account/name = %d %q, want 303 /account", resp.StatusCode, resp.Location())
	}
	if u := row(t, app); u.Name != "Ana" || !u.NameSet {
		t.Fatalf("after saving: name %q, set %v; want Ana, set", u.Name, u.NameSet)
	}
	app.Client().SignInNamed(admin, "Someone Else")
	if u := row(t, app); u.Name != "Ana" {
		t.Errorf("sign-in replaced the chosen name with %q, want Ana", u.Name)
	}

	// An empty name is a choice too: it stays empty.
	if resp := c.PostForm("/account/name", url.Values{"name": {""}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST empty name = %d, want 303", resp.StatusCode)
	}
	app.Client().SignInNamed(admin, "Someone Else")
	if u := row(t, app); u.Name != "" || !u.NameSet {
		t.Errorf("after clearing and signing in: name %q, set %v; want empty, set", u.Name, u.NameSet)
	}
}

func TestDisplayNameBadInput(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	c.SignInNamed(admin, "Ana Lima")
	const shown = "; the field holds it as it can be saved."
	for _, tc := range []struct{ name, value, msg, shown string }{
		{"too long", strings.Repeat("a", 10_000), "A name may have at most 80 characters" + shown, strings.Repeat("a", user.MaxNameLen)},
		{"line break", "Ana\nLima", "A name may not hold a line break (nor line breaks, control or invisible formatting characters)" + shown, "AnaLima"},
		{"bidi override", "Ana \u202eamiL", "A name may not hold the text-direction character U+202E (right-to-left override) (nor line breaks, control or invisible formatting characters)" + shown, "Ana amiL"},
		{"bidi isolate", "Ana \u2067Lima", "A name may not hold the text-direction character U+2067 (right-to-left isolate) (nor line breaks, control or invisible formatting characters)" + shown, "Ana Lima"},
		{"long with a tab", strings.Repeat("b", 90) + "\t", "A name may have at most 80 characters" + shown, strings.Repeat("b", user.MaxNameLen)},
		{"long with a bidi override", "\u202e" + strings.Repeat("c", 90), "A name may not hold the text-direction character U+202E (right-to-left override) (nor line breaks, control or invisible formatting characters) and may have at most 80 characters" + shown, strings.Repeat("c", user.MaxNameLen)},
		{"not UTF-8", "An\xe1", "A name may hold only text (some bytes were not)" + shown, "An"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := c.PostForm("/account/name", url.Values{"name": {tc.value}})
			if resp.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("POST /account/name %q = %d, want 422", tc.value, resp.StatusCode)
			}
			if msg := resp.Text("#name-err"); msg != tc.msg {
				t.Errorf("message = %q, want %q", msg, tc.msg)
			}
			if got := resp.Doc().Find("#name").AttrOr("value", ""); got != tc.shown {
				t.Errorf("name shown = %q, want %q", got, tc.shown)
			}
			if u := row(t, app); u.Name != "Ana Lima" || u.NameSet {
				t.Errorf("after a refused name: name %q, set %v; want Ana Lima unchanged", u.Name, u.NameSet)
			}
		})
	}
}

// TestTimeZoneByCity: the time zone field suggests every zone with its
// city in words, and a typed city saves its zone, also without the
// suggestions (no JS, any browser).
func TestTimeZoneByCity(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	c.SignIn(admin)
	doc := c.Get("/account").Doc()
	list, _ := doc.Find("#tz").Attr("list")
	opts := doc.Find("datalist#" + list + " option")
	if list == "" || opts.Length() < 400 {
		t.Fatalf("time zone field list=%q with %d options, want every zone", list, opts.Length())
	}
	berlin := doc.Find(`datalist option[value="Europe/Berlin"]`)
	if label, _ := berlin.Attr("label"); !strings.Contains(label, "Berlin") {
		t.Errorf("Europe/Berlin's label = %q, want it to name the city", label)
	}
	if label, _ := doc.Find(`datalist option[value="America/Los_Angeles"]`).Attr("label"); !strings.Contains(label, "Los Angeles") {
		t.Errorf("America/Los_Angeles's label = %q, want Los Angeles in words", label)
	}
	if doc.Find(`button[data-fill-tz="tz"]`).Length() != 1 {
		t.Error("no button offering the device's zone")
	}
	for _, tc := range []struct{ typed, want string }{
		{"Berlin", "Europe/Berlin"},
		{" los angeles ", "America/Los_Angeles"},
		{"Asia/Tokyo", "Asia/Tokyo"},
	} {
		if resp := c.PostForm("/account/timezone", url.Values{"tz": {tc.typed}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("tz %q = %d, want 303", tc.typed, resp.StatusCode)
		}
		if u := row(t, app); u.TimeZone != tc.want {
			t.Errorf("tz %q saved as %q, want %q", tc.typed, u.TimeZone, tc.want)
		}
	}
	resp := c.PostForm("/account/timezone", url.Values{"tz": {"Indianapolis"}})
	if msg := resp.Text("#tz-err"); resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(msg, "America/Indiana/Indianapolis") {
		t.Errorf("ambiguous city = %d %q, want 422 naming the zones", resp.StatusCode, msg)
	}
	if v, _ := resp.Doc().Find("#tz").Attr("value"); v != "Indianapolis" {
		t.Errorf("the field kept %q, want what was typed", v)
	}
	if u := row(t, app); u.TimeZone != "Asia/Tokyo" {
		t.Errorf("a refused zone changed the saved one to %q", u.TimeZone)
	}
}
