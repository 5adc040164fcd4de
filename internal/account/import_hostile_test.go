package account_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"ndiro/internal/account"
	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
)

// entry is one file of a zip a test builds.
type entry struct {
	name string
	body []byte
	// deflate compresses it (JPEG and the base's files are stored).
	deflate bool
}

// buildZip writes entries as a zip, in order, duplicates included.
func buildZip(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.BestCompression) })
	for _, e := range entries {
		m := zip.Store
		if e.deflate {
			m = zip.Deflate
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: m})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// hostileMeals is a meals.json of format 1 (no format field, no
// manifest) with one meal whose photo is photos/2026-09-01/p.jpg, and
// meal as its meal's JSON if not "".
func hostileMeals(meal string) entry {
	if meal == "" {
		meal = `{"id":"123000-aaaaaa","date":"2026-09-01","time":"12:30:00","kind":"lunch","notes":"soup","kcal":500,"photo":{"file":"photos/2026-09-01/p.jpg","width":96,"height":64}}`
	}
	return entry{name: "meals.json", body: []byte(`{"meals":[` + meal + `]}`)}
}

// TestImportRefusesHostileZips sends, through HTTP, zips that are no
// sound export: each is a 422 with the reason on the page before any
// 303, and leaves no meal, no import on the users row and no object under
// the owner's keys. A sound zip built the same way imports (the control).
func TestImportRefusesHostileZips(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	c.SignIn(adminEmail)
	uid := localenv.Subject(adminEmail)
	photoEntry := entry{name: "photos/2026-09-01/p.jpg", body: fixture(t, "small.jpg")}
	sound := buildZip(t, hostileMeals(""), photoEntry)
	zeros := make([]byte, 8<<20)
	for _, tc := range []struct {
		name string
		body []byte
		// reason is a part of the page's message naming what is wrong.
		reason string
	}{
		{"not a zip", bytes.Repeat([]byte("not a zip at all "), 1000), "zip"},
		{"cut off", sound[:len(sound)/2], "zip"},
		{"a name climbing out with ..", buildZip(t, hostileMeals(""), photoEntry, entry{name: "photos/../../etc/cron.d/x", body: []byte("x")}), ".."},
		{"an absolute name", buildZip(t, hostileMeals(""), photoEntry, entry{name: "/etc/passwd", body: []byte("x")}), "/etc/passwd"},
		{"a backslash in a name", buildZip(t, hostileMeals(""), photoEntry, entry{name: `photos\evil.jpg`, body: []byte("x")}), "backslash"},
		{"a NUL in a name", buildZip(t, hostileMeals(""), photoEntry, entry{name: "photos/a\x00.jpg", body: []byte("x")}), "NUL"},
		{"meals.json twice", buildZip(t, hostileMeals(""), photoEntry, hostileMeals("")), "meals.json"},
		{"names equal but for case", buildZip(t, hostileMeals(""), photoEntry, entry{name: "PHOTOS/2026-09-01/P.JPG", body: []byte("x")}), "P.JPG"},
		{"a zip bomb", buildZip(t, hostileMeals(""), photoEntry, entry{name: "photos/bomb.bin", body: zeros, deflate: true}), "bomb.bin"},
		{"no meals.json", buildZip(t, photoEntry), "meals.json"},
		{"a number as a string", buildZip(t, hostileMeals(`{"id":"123000-aaaaaa","date":"2026-09-01","time":"12:30:00","kind":"lunch","kcal":"500"}`), photoEntry), "kcal"},
		{"a photo not in the zip", buildZip(t, hostileMeals("")), "photos/2026-09-01/p.jpg"},
		{"a kind this diary has not", buildZip(t, hostileMeals(`{"id":"123000-aaaaaa","date":"2026-09-01","time":"12:30:00","kind":"brunch"}`)), "brunch"},
		{"a date out of range", buildZip(t, hostileMeals(`{"id":"123000-aaaaaa","date":"1066-10-14","time":"12:30:00","kind":"lunch"}`)), "date"},
		{"an empty file", nil, "empty"},
	} {
		app.Clock.Advance(account.ImportEvery)
		resp := postImport(c, tc.body)
		msg := resp.Text("main")
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(msg, tc.reason) {
			t.Errorf("%s: POST = %d %q; want 422 naming %q", tc.name, resp.StatusCode, msg, tc.reason)
		}
		t.Logf("%s: %s", tc.name, strings.Join(strings.Fields(resp.Doc().Find("main .error, main p").First().Text()), " "))
		if ms, err := app.Meals.All(t.Context(), uid); err != nil || len(ms) != 0 {
			t.Errorf("%s: meals after the refusal = %d, %v; want none", tc.name, len(ms), err)
		}
		if keys := objectsOf(t, app, uid); len(keys) != 0 {
			t.Errorf("%s: objects left: %v", tc.name, keys)
		}
		if u := row(t, app); u.Import != nil {
			t.Errorf("%s: users row has an import: %+v", tc.name, u.Import)
		}
	}

	// The control: the same zip without its flaw imports.
	app.Clock.Advance(account.ImportEvery)
	page := importAndWait(t, app, c, sound)
	if got := page.Text("#imported"); got != "1" {
		t.Errorf("sound zip: imported = %q; want 1\n%s", got, page.Text("main"))
	}
}

// TestImportListsProblemsAndConflicts: a photo that does not decode is a
// listed problem of its meal, imported without it, not the end of the
// import; a different meal already at a meal's date and time is a listed
// conflict, and both are kept.
func TestImportListsProblemsAndConflicts(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	c.SignIn(adminEmail)
	uid := localenv.Subject(adminEmail)
	if resp := c.PostMultipart("/meals", map[string][]string{"date": {"2026-09-02"}, "time": {"08:00"}, "kind": {"breakfast"}, "notes": {"toast"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("add meal = %d", resp.StatusCode)
	}
	body := buildZip(t,
		hostileMeals(`{"id":"123000-aaaaaa","date":"2026-09-01","time":"12:30:00","kind":"lunch","notes":"soup","photo":{"file":"photos/2026-09-01/p.jpg","width":96,"height":64}},`+
			`{"id":"080000-bbbbbb","date":"2026-09-02","time":"08:00:00","kind":"breakfast","notes":"porridge"},`+
			`{"id":"190000-cccccc","date":"2026-09-02","time":"19:00:00","kind":"dinner","notes":"pasta","photo":{"file":"photos/2026-09-02/q.jpg","width":96,"height":64}}`),
		entry{name: "photos/2026-09-01/p.jpg", body: fixture(t, "not-an-image.jpg")},
		entry{name: "photos/2026-09-02/q.jpg", body: fixture(t, "small.jpg")},
	)
	page := importAndWait(t, app, c, body)
	if got := page.Text("#imported") + " " + page.Text("#skipped") + " " + page.Text("#failed"); got != "3 0 0" {
		t.Errorf("imported, skipped, failed = %s; want 3 0 0", got)
	}
	problems := page.Doc().Find("#import-problems li")
	if problems.Length() != 1 || !strings.Contains(problems.Text(), "2026-09-01 12:30:00") || !strings.Contains(problems.Text(), "without it") {
		t.Errorf("problems listed = %d %q; want 2026-09-01 12:30's photo", problems.Length(), problems.Text())
	}
	conflicts := page.Doc().Find("#import-conflicts li")
	if conflicts.Length() != 1 || !strings.Contains(conflicts.Text(), "2026-09-02 08:00:00") {
		t.Errorf("conflicts listed = %d %q; want 2026-09-02 08:00", conflicts.Length(), conflicts.Text())
	}
	ms, err := app.Meals.All(t.Context(), uid)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"2026-09-01 12:30:00 lunch soup no photo",
		"2026-09-02 08:00:00 breakfast porridge no photo",
		"2026-09-02 08:00:00 breakfast toast no photo",
		"2026-09-02 19:00:00 dinner pasta photo",
	}
	if d := cmp.Diff(want, contents(ms)); d != "" {
		t.Errorf("meals (-want +got):\n%s", d)
	}
}
