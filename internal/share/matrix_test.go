package share_test

import (
	"context"
	"image/color"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"ndiro/internal/apptest"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/share"
	"ndiro/internal/token"
)

// world is an app with three people and their meals: the owner's meal on
// 2 Sep (inside the shared 1–14 Sep) and on 20 Sep (outside), another
// owner's meal on 3 Sep, and the owner's links in every state.
type world struct {
	app                 *apptest.App
	owner, other, admin *apptest.Client
	inRange, outOfRange meal.Meal
	othersMeal          meal.Meal
	valid, expired      string
	revoked, unknown    string
	// commenting is a valid link that takes comments; expired and
	// revoked took them too, so that only their state refuses.
	commenting string
}

func newWorld(t *testing.T, opts ...apptest.Options) *world {
	t.Helper()
	app := apptest.New(t, opts...)
	w := &world{app: app}
	w.owner = signUp(t, app, ownerEmail, ownerName)
	w.other = signUp(t, app, otherEmail, "Bruno")
	w.admin = app.Client()
	w.admin.SignIn(adminEmail)
	w.inRange = addMeal(t, app, w.owner, ownerEmail, "2026-09-02", "12:30", "lunch", jpegOf(t, 64, 48, color.RGBA{200, 40, 40, 255}), "notes", "in range")
	w.outOfRange = addMeal(t, app, w.owner, ownerEmail, "2026-09-20", "19:00", "dinner", jpegOf(t, 64, 48, color.RGBA{40, 200, 40, 255}), "notes", "out of range")
	w.othersMeal = addMeal(t, app, w.other, otherEmail, "2026-09-03", "08:15", "breakfast", jpegOf(t, 64, 48, color.RGBA{40, 40, 200, 255}), "notes", "someone else's")
	w.valid = createShare(t, w.owner, shareForm())
	w.commenting = createShare(t, w.owner, shareForm("label", "commenting", "comments", "1"))
	w.expired = createShare(t, w.owner, shareForm("label", "expires", "expiry", "7", "comments", "1"))
	w.revoked = createShare(t, w.owner, shareForm("label", "revoked", "comments", "1"))
	if resp := w.owner.PostForm("/shares/"+w.revoked+"/revoke", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke = %d, want 303", resp.StatusCode)
	}
	w.unknown = token.New()
	app.Clock.Advance(8 * 24 * time.Hour) // the 7-day link is now expired
	return w
}

// checkRecipientHeaders checks what every response under /s/ must carry,
// whatever its status, and that it sets no cookie.
func checkRecipientHeaders(t *testing.T, resp *apptest.Response) {
	t.Helper()
	for h, want := range map[string]string{"Referrer-Policy": "no-referrer", "X-Robots-Tag": "noindex, nofollow"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if sc := resp.Header.Values("Set-Cookie"); len(sc) != 0 {
		t.Errorf("Set-Cookie = %q, want none on a share response", sc)
	}
}

// TestAuthorizationMatrix runs every recipient route against every kind of
// token and target, as every kind of viewer. The viewer never matters (the
// routes read no session); the token and the day decide. Refusals carry
// not one byte of a photo; a 200 photo is exactly the stored copy.
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	app := w.app

	type target struct {
		name string
		path func(tok string) string
		// want is the status for a valid link; expired links are 410,
		// revoked and unknown ones 404, on every target.
		want int
		// photo is the meal whose bytes a 200 must be, with its size.
		photo *meal.Meal
		size  photo.Size
		// absent is a meal ID that must not appear in a 200 page.
		absent string
	}
	targets := []target{
		{name: "page", path: func(tok string) string { return "/s/" + tok }, want: 200, absent: w.outOfRange.ID},
		{name: "page on a day outside", path: func(tok string) string { return "/s/" + tok + "?from=2026-09-20" }, want: 404},
		{name: "page on another owner's day", path: func(tok string) string { return "/s/" + tok + "?from=2026-09-03" }, want: 200, absent: w.othersMeal.ID},
		{name: "week", path: func(tok string) string { return "/s/" + tok + "/week?start=2026-09-01" }, want: 200, absent: w.othersMeal.ID},
		{name: "week outside", path: func(tok string) string { return "/s/" + tok + "/week?start=2026-09-20" }, want: 404},
		{name: "photo", path: func(tok string) string { return photoPath(tok, w.inRange, photo.SizeDisplay) }, want: 200, photo: &w.inRange, size: photo.SizeDisplay},
		{name: "thumbnail", path: func(tok string) string { return photoPath(tok, w.inRange, photo.SizeThumb) }, want: 200, photo: &w.inRange, size: photo.SizeThumb},
		{name: "owner's real photo outside the range", path: func(tok string) string { return photoPath(tok, w.outOfRange, photo.SizeDisplay) }, want: 404},
		{name: "owner's real thumbnail outside the range", path: func(tok string) string { return photoPath(tok, w.outOfRange, photo.SizeThumb) }, want: 404},
		{name: "another owner's real photo in the range", path: func(tok string) string { return photoPath(tok, w.othersMeal, photo.SizeDisplay) }, want: 404},
		{name: "meal page", path: func(tok string) string { return mealPath(tok, w.inRange) }, want: 200, absent: w.outOfRange.ID},
		{name: "owner's real meal page outside the range", path: func(tok string) string { return mealPath(tok, w.outOfRange) }, want: 404},
		{name: "another owner's real meal in the range", path: func(tok string) string { return mealPath(tok, w.othersMeal) }, want: 404},
		{name: "meal page with a malformed id", path: func(tok string) string { return "/s/" + tok + "/meals/2026-09-02/bad" }, want: 404},
		{name: "print", path: func(tok string) string { return "/s/" + tok + "/print" }, want: 200, absent: w.outOfRange.ID},
	}
	tokens := []struct {
		name string
		tok  string
		want func(valid int) int
	}{
		{"valid", w.valid, func(v int) int { return v }},
		{"valid, taking comments", w.commenting, func(v int) int { return v }},
		{"expired", w.expired, func(int) int { return http.StatusGone }},
		{"revoked", w.revoked, func(int) int { return http.StatusNotFound }},
		{"unknown", w.unknown, func(int) int { return http.StatusNotFound }},
	}
	viewers := []struct {
		name string
		c    *apptest.Client
	}{
		{"anonymous", app.Client()},
		{"signed-in owner", w.owner},
		{"signed-in other user", w.other},
		{"admin", w.admin},
	}
	// Every stored photo, so no refusal can carry one.
	var stored []string
	for _, m := range []meal.Meal{w.inRange, w.outOfRange, w.othersMeal} {
		for _, size := range []photo.Size{photo.SizeDisplay, photo.SizeThumb} {
			stored = append(stored, string(object(t, app, photo.Key(m.UserID, m.Date, m.ID, size))))
		}
	}

	var failed []string
	cells := 0
	for _, v := range viewers {
		for _, tk := range tokens {
			// Unknown and revoked tokens spend the address's allowance of
			// misses; give each a fresh one.
			app.Clock.Advance(share.MissBurst * share.MissEvery)
			for _, tg := range targets {
				name := v.name + "/" + tk.name + "/" + tg.name
				cells++
				ok := t.Run(name, func(t *testing.T) {
					path := tg.path(tk.tok)
					resp := v.c.Get(path)
					want := tk.want(tg.want)
					if resp.StatusCode != want {
						t.Fatalf("GET %s = %d, want %d; body %.200q", tg.name, resp.StatusCode, want, resp.Body)
					}
					checkRecipientHeaders(t, resp)
					if resp.StatusCode == http.StatusOK && tg.photo != nil {
						wantBody := object(t, app, photo.Key(tg.photo.UserID, tg.photo.Date, tg.photo.ID, tg.size))
						if resp.Body != string(wantBody) {
							t.Errorf("photo body is %d bytes, want the stored %d", len(resp.Body), len(wantBody))
						}
						if got := resp.Header.Get("Cache-Control"); got != "private, no-cache" {
							t.Errorf("photo Cache-Control = %q, want %q", got, "private, no-cache")
						}
						if etag := resp.Header.Get("ETag"); !strings.HasPrefix(etag, `"`) {
							t.Errorf("photo ETag = %q, want a strong ETag", etag)
						}
						return
					}
					// A page or a refusal: HTML, never stored, no photo.
					if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
						t.Errorf("Content-Type = %q, want text/html", ct)
					}
					if got := resp.Header.Get("Cache-Control"); got != "no-store" {
						t.Errorf("Cache-Control = %q, want no-store", got)
					}
					if strings.Contains(resp.Body, "\xff\xd8\xff") {
						t.Error("response holds JPEG bytes")
					}
					for _, s := range stored {
						if strings.Contains(resp.Body, s[len(s)/2:len(s)/2+64]) {
							t.Error("response holds bytes of a stored photo")
						}
					}
					for _, id := range []string{tg.absent, w.othersMeal.ID} {
						if id != "" && strings.Contains(resp.Body, id) {
							t.Errorf("page names meal %s, which the link does not cover", id)
						}
					}
				})
				if !ok {
					failed = append(failed, name)
				}
			}
		}
	}
	checkCells(t, cells, failed)
}

// checkCells fails a matrix whose cells (subtests) did not all pass,
// naming them: each cell's own failure says what it saw, this says that
// the matrix as a whole does not hold.
func checkCells(t *testing.T, cells int, failed []string) {
	t.Helper()
	if len(failed) > 0 {
		t.Fatalf("%d of %d cells of the matrix failed: %s", len(failed), cells, strings.Join(failed, ", "))
	}
}

// TestRecipientRefusalsCarryHeaders: responses under /s/ that no handler
// chose (a wrong method, a path that does not exist) carry the recipient
// headers and no cookie too.
func TestRecipientRefusalsCarryHeaders(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"POST", "/s/" + w.valid, http.StatusMethodNotAllowed},
		{"DELETE", "/s/" + w.valid + "/photo/2026-09-02/" + w.inRange.ID, http.StatusMethodNotAllowed},
		{"GET", "/s/" + w.valid + "/nothing", http.StatusNotFound},
		{"GET", "/s/" + w.valid + "/photo/2026-09-02", http.StatusNotFound},
	} {
		resp := request(t, w.owner, w.app.URL, tc.method, tc.path)
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
		checkRecipientHeaders(t, resp)
	}
}

// TestOwnerRoutesMatrix: the owner's and the admin's share routes by
// viewer. Only the owner sees, revokes or draws the QR code of their
// link; only admins open the admin list; nobody signed out gets anything.
func TestOwnerRoutesMatrix(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	app := w.app
	spare := createShare(t, w.owner, shareForm("label", "spare"))
	anon := app.Client()

	type check struct {
		viewer string
		c      *apptest.Client
		method string
		path   string
		want   int
	}
	checks := []check{
		{"anonymous", anon, "GET", "/shares", 303},
		{"anonymous", anon, "GET", "/shares/" + w.valid + "/qr.svg", 303},
		{"anonymous", anon, "POST", "/shares/" + w.valid + "/revoke", 303},
		{"anonymous", anon, "GET", "/admin/shares", 303},
		{"anonymous", anon, "POST", "/admin/shares/" + w.valid + "/revoke", 303},
		{"owner", w.owner, "GET", "/shares", 200},
		{"owner", w.owner, "GET", "/shares/" + w.valid + "/qr.svg", 200},
		{"owner", w.owner, "GET", "/shares/" + w.unknown + "/qr.svg", 404},
		{"owner", w.owner, "POST", "/shares/" + w.unknown + "/revoke", 404},
		{"owner", w.owner, "GET", "/admin/shares", 403},
		{"owner", w.owner, "POST", "/admin/shares/" + w.valid + "/revoke", 403},
		{"other user", w.other, "GET", "/shares", 200},
		{"other user", w.other, "GET", "/shares/" + w.valid + "/qr.svg", 404},
		{"other user", w.other, "POST", "/shares/" + w.valid + "/revoke", 404},
		{"other user", w.other, "GET", "/admin/shares", 403},
		{"other user", w.other, "POST", "/admin/shares/" + w.valid + "/revoke", 403},
		{"admin", w.admin, "GET", "/shares/" + w.valid + "/qr.svg", 404},
		{"admin", w.admin, "POST", "/shares/" + w.valid + "/revoke", 404},
		{"admin", w.admin, "GET", "/admin/shares", 200},
		{"admin", w.admin, "POST", "/admin/shares/" + w.unknown + "/revoke", 404},
		{"admin", w.admin, "POST", "/admin/shares/" + spare + "/revoke", 303},
	}
	// The checks after the table read the state its cells left (the
	// admin's revoke of the spare link): they run only if every cell ran
	// (none left out by -run) and passed.
	var failed []string
	ran := 0
	for _, tc := range checks {
		name := tc.viewer + "/" + tc.method + " " + strings.Replace(tc.path, w.valid, "{valid}", 1)
		ok := t.Run(name, func(t *testing.T) {
			ran++
			var resp *apptest.Response
			if tc.method == "POST" {
				resp = tc.c.PostForm(tc.path, url.Values{})
			} else {
				resp = tc.c.Get(tc.path)
			}
			if resp.StatusCode != tc.want {
				t.Fatalf("%s %s = %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
			}
			if tc.want == 303 && tc.viewer == "anonymous" && !strings.HasPrefix(resp.Location(), "/login") {
				t.Errorf("signed-out %s %s redirects to %q, want /login", tc.method, tc.path, resp.Location())
			}
		})
		if !ok {
			failed = append(failed, name)
		}
	}
	checkCells(t, len(checks), failed)
	if ran < len(checks) {
		t.Skipf("%d of %d cells left out by -run: the state they leave is not there to check", len(checks)-ran, len(checks))
	}
	// Nobody but the owner revoked the valid link: it still opens. The
	// admin's revoke of the spare one took effect.
	if resp := anon.Get("/s/" + w.valid); resp.StatusCode != http.StatusOK {
		t.Errorf("valid link after others' revoke attempts = %d, want 200", resp.StatusCode)
	}
	if resp := anon.Get("/s/" + spare); resp.StatusCode != http.StatusNotFound {
		t.Errorf("link revoked by an admin = %d, want 404", resp.StatusCode)
	}
	// The other user's list does not show the owner's link.
	if n := w.other.Get("/shares").Doc().Find("li.share").Length(); n != 0 {
		t.Errorf("other user's list shows %d shares, want 0", n)
	}
}

// mealPath is the recipient's page of m under tok.
func mealPath(tok string, m meal.Meal) string {
	return "/s/" + tok + "/meals/" + m.Date + "/" + m.ID
}

// TestWriteMatrix runs the recipient's two writes (a comment on a meal,
// a week marked reviewed) against every kind of link and target, as every
// kind of viewer: only a valid link that takes comments, on its own
// owner's meal in its range, writes, and then exactly once per request;
// everything else is refused with nothing written, on the meals or the
// share, and no cookie. A POST from another site is refused before any
// of it.
func TestWriteMatrix(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	app := w.app
	type target struct {
		name string
		path func(tok string) string
		// form is what is posted; want the status on the commenting link.
		form url.Values
		want int
	}
	comment := url.Values{"text": {"Good portion."}}
	targets := []target{
		{"comment in range", func(tok string) string { return mealPath(tok, w.inRange) + "/comments" }, comment, http.StatusSeeOther},
		{"comment outside the range", func(tok string) string { return mealPath(tok, w.outOfRange) + "/comments" }, comment, http.StatusNotFound},
		{"comment on another owner's meal", func(tok string) string { return mealPath(tok, w.othersMeal) + "/comments" }, comment, http.StatusNotFound},
		{"comment on a meal that is not there", func(tok string) string { return "/s/" + tok + "/meals/2026-09-02/120000-abcdef/comments" }, comment, http.StatusNotFound},
		{"week reviewed", func(tok string) string { return "/s/" + tok + "/weeks/2026-09-01/reviewed" }, url.Values{"reviewed": {"1"}}, http.StatusSeeOther},
		{"week outside the range", func(tok string) string { return "/s/" + tok + "/weeks/2026-09-15/reviewed" }, url.Values{"reviewed": {"1"}}, http.StatusNotFound},
		{"a day that starts no week", func(tok string) string { return "/s/" + tok + "/weeks/2026-09-02/reviewed" }, url.Values{"reviewed": {"1"}}, http.StatusNotFound},
	}
	tokens := []struct {
		name string
		tok  string
		want func(valid int) int
	}{
		{"taking comments", w.commenting, func(v int) int { return v }},
		{"comments off", w.valid, func(int) int { return http.StatusForbidden }},
		{"expired", w.expired, func(int) int { return http.StatusGone }},
		{"revoked", w.revoked, func(int) int { return http.StatusNotFound }},
		{"unknown", w.unknown, func(int) int { return http.StatusNotFound }},
	}
	viewers := []struct {
		name string
		c    *apptest.Client
	}{{"anonymous", app.Client()}, {"signed-in owner", w.owner}, {"signed-in other user", w.other}, {"admin", w.admin}}
	accepted := 0
	for _, v := range viewers {
		app.Clock.Advance(share.MissBurst*share.MissEvery + share.CommentBurst*share.CommentEvery)
		for _, tk := range tokens {
			for _, tg := range targets {
				t.Run(v.name+"/"+tk.name+"/"+tg.name, func(t *testing.T) {
					resp := v.c.PostForm(tg.path(tk.tok), tg.form)
					if want := tk.want(tg.want); resp.StatusCode != want {
						t.Fatalf("POST = %d, want %d; %q", resp.StatusCode, want, resp.Text("main p"))
					}
					checkRecipientHeaders(t, resp)
					if resp.StatusCode == http.StatusSeeOther && strings.HasSuffix(tg.name, "in range") {
						accepted++
						if loc := resp.Location(); !strings.HasPrefix(loc, mealPath(tk.tok, w.inRange)+"#comment-") {
							t.Errorf("comment answered with %q, want the meal's page", loc)
						}
					}
				})
			}
		}
	}
	// From another site: refused, nothing written.
	req, _ := http.NewRequest(http.MethodPost, app.URL+mealPath(w.commenting, w.inRange)+"/comments", strings.NewReader("text=from+elsewhere"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if resp := app.Client().Do(req); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site comment = %d, want 403", resp.StatusCode)
	}

	ctx := context.Background()
	for _, m := range []meal.Meal{w.inRange, w.outOfRange, w.othersMeal} {
		got, err := app.Meals.Get(ctx, m.UserID, mustDate(t, m.Date), m.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if m.ID == w.inRange.ID {
			want = accepted
		}
		if len(got.Comments) != want {
			t.Errorf("meal %s has %d comments, want %d", m.Date, len(got.Comments), want)
		}
		for _, c := range got.Comments {
			if c.ShareID != share.ID(w.commenting) || c.Label != "commenting" || c.Text != "Good portion." || strings.Contains(c.ShareID, w.commenting) {
				t.Errorf("stored comment %+v: want the commenting link's ID and label, never its token", c)
			}
		}
	}
	if accepted != len(viewers) {
		t.Errorf("%d comments accepted, want one per viewer (%d)", accepted, len(viewers))
	}
	for _, tk := range []string{w.valid, w.commenting, w.expired} {
		sh, err := app.Shares.Get(ctx, tk)
		if err != nil {
			t.Fatal(err)
		}
		wantNew, wantReviewed := 0, []string(nil)
		if tk == w.commenting {
			wantNew, wantReviewed = accepted, []string{"2026-09-01"}
		}
		if int(sh.NewComments) != wantNew || !cmp.Equal(sh.Reviewed, wantReviewed, cmpopts.EquateEmpty()) {
			t.Errorf("share %s: %d new comments, reviewed %v; want %d, %v", sh.Label, sh.NewComments, sh.Reviewed, wantNew, wantReviewed)
		}
	}
}

func mustDate(t *testing.T, s string) meal.Date {
	t.Helper()
	d, err := meal.ParseDate(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
