package meal_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
)

// objects lists every key in the app's bucket.
func objects(t *testing.T, app *apptest.App) []string {
	t.Helper()
	out, err := app.Env.S3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("test-photos")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, *o.Key)
	}
	return keys
}

func object(t *testing.T, app *apptest.App, key string) []byte {
	t.Helper()
	out, err := app.Env.S3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("test-photos"), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	b, _ := io.ReadAll(out.Body)
	return b
}

func upload(c *apptest.Client, path, file string, body []byte, kv ...string) *apptest.Response {
	return c.PostMultipart(path, mealForm(kv...), apptest.File{Field: "photo", Name: file, Body: body})
}

// TestUploadFixtures sends each kind of file through the add form. The
// accepted ones are small (full-size decoding is the pipeline's test): the
// phone photos at quarter size with their EXIF (orientation, GPS, camera),
// a small PNG with transparent corners, WebP; the refused ones are the
// fixtures as they are.
func TestUploadFixtures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file     string
		body     func(testing.TB) []byte // nil: the fixture file itself
		msg      string                  // the form's photo message; "" = accepted
		portrait bool
	}{
		{file: "phone-portrait-small.jpg", portrait: true},
		{file: "phone-landscape-small.jpg"},
		{file: "small.jpg"},
		{file: "screenshot.png", body: smallPNG, portrait: true},
		{file: "photo.webp"},
		{file: "wide-gamut-p3.jpg"},
		{file: "big-16bit.png", body: bigPNGHeader, msg: "too large to read: at 7000 × 7000 pixels with 16-bit colour with transparency it needs 449 MB of memory"},
		{file: "not-an-image.jpg", msg: "not a JPEG, PNG, WebP or HEIC image"},
		{file: "truncated.jpg", msg: "damaged or incomplete"},
		{file: "empty.jpg", msg: "The photo file is empty"},
		{file: "bomb.png", msg: "too large"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			app, c := signedIn(t)
			body := apptest.Photo
			if tc.body != nil {
				body = func(t testing.TB, _ string) []byte { return tc.body(t) }
			}
			resp := upload(c, "/meals", tc.file, body(t, tc.file), "notes", "with photo")
			if tc.msg != "" {
				if resp.StatusCode != http.StatusUnprocessableEntity {
					t.Fatalf("status = %d, want 422", resp.StatusCode)
				}
				if got := resp.Text("#photo-err"); !strings.Contains(got, tc.msg) {
					t.Errorf("photo message = %q, want it to say %q", got, tc.msg)
				}
				if got := strings.TrimSpace(resp.Doc().Find("#notes").Text()); got != "with photo" {
					t.Errorf("notes not kept: %q", got)
				}
				if keys := objects(t, app); len(keys) != 0 {
					t.Errorf("objects stored for a refused photo: %v", keys)
				}
				if ms := allMeals(t, app, admin); len(ms) != 0 {
					t.Errorf("meal stored for a refused photo: %+v", ms)
				}
				return
			}
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("status = %d, want 303; body %s", resp.StatusCode, resp.Body)
			}
			ms := allMeals(t, app, admin)
			if len(ms) != 1 || !ms[0].HasPhoto() {
				t.Fatalf("meals = %+v, want one with a photo", ms)
			}
			m := ms[0]
			for i, key := range m.PhotoKeys() {
				b := object(t, app, key)
				for _, s := range []string{"Exif", "GPS", "Apple", "samsung"} {
					if bytes.Contains(b, []byte(s)) {
						t.Errorf("stored %s contains %q", key, s)
					}
				}
				img, err := jpeg.Decode(bytes.NewReader(b))
				if err != nil {
					t.Fatalf("stored %s is not a JPEG: %v", key, err)
				}
				w, h := img.Bounds().Dx(), img.Bounds().Dy()
				if (h > w) != tc.portrait {
					t.Errorf("stored %s is %dx%d, want portrait=%v", key, w, h, tc.portrait)
				}
				wantW, wantH := m.PhotoW, m.PhotoH
				if i == 1 {
					wantW, wantH = m.ThumbW, m.ThumbH
				}
				if w != wantW || h != wantH {
					t.Errorf("stored %s is %dx%d, row says %dx%d", key, w, h, wantW, wantH)
				}
			}
			if want := []string{photo.Key(localenv.Subject(admin), "2026-09-01", m.ID, photo.SizeDisplay), photo.Key(localenv.Subject(admin), "2026-09-01", m.ID, photo.SizeThumb)}; strings.Join(objects(t, app), ",") != strings.Join(want, ",") {
				t.Errorf("objects = %v, want %v", objects(t, app), want)
			}
			// The month page shows the thumbnail with its size and alt text.
			img := c.Get("/meals?month=2026-09").Doc().Find("#meal-" + m.ID + " img")
			src, _ := img.Attr("src")
			w, _ := img.Attr("width")
			alt, _ := img.Attr("alt")
			if src != m.ThumbURL() || w == "" || w == "0" || !strings.Contains(alt, "with photo") {
				t.Errorf("thumbnail src=%q width=%q alt=%q", src, w, alt)
			}
		})
	}
}

// bigPNGHeader is the header of a 7000×7000 16-bit RGBA PNG (and nothing
// more): the pipeline refuses it from the memory its decode would need.
func bigPNGHeader(testing.TB) []byte {
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], 7000)
	binary.BigEndian.PutUint32(ihdr[4:], 7000)
	ihdr[8], ihdr[9] = 16, 6
	chunk := func(b []byte, typ string, body []byte) []byte {
		b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
		b = append(append(b, typ...), body...)
		return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(append([]byte(typ), body...)))
	}
	return chunk(chunk([]byte("\x89PNG\r\n\x1a\n"), "IHDR", ihdr[:]), "IEND", nil)
}

// TestUploadBusy: with the decode budget spent, an upload waits the
// configured wait and gets a 503 with Retry-After and a page saying
// nothing was saved; with the budget back, the same upload goes through.
func TestUploadBusy(t *testing.T) {
	t.Parallel()
	app := apptest.New(t, apptest.Options{Env: map[string]string{"NDIRO_UPLOAD_WAIT": "100ms"}})
	c := app.Client()
	c.SignIn(admin)
	release, err := app.Pipeline.Hold(context.Background(), photo.DefaultBudget)
	if err != nil {
		t.Fatal(err)
	}
	resp := upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg"))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "30" {
		t.Fatalf("busy upload = %d, Retry-After %q; want 503 with 30", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if got := resp.Text("h1"); got != "Too busy to read your photo" {
		t.Errorf("heading = %q", got)
	}
	if got := resp.Text("main p"); !strings.Contains(got, "nothing was saved") {
		t.Errorf("message = %q, want it to say nothing was saved", got)
	}
	if len(objects(t, app)) != 0 || len(allMeals(t, app, admin)) != 0 {
		t.Error("a busy upload stored something")
	}
	release()
	if resp := upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg")); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("upload after the budget came back = %d, want 303", resp.StatusCode)
	}
}

// smallPNG is a 117x253 RGBA PNG, a screenshot's shape, whose corner pixels
// are fully transparent.
func smallPNG(t testing.TB) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 117, 253))
	for y := 0; y < 253; y++ {
		for x := 0; x < 117; x++ {
			if (x < 6 || x > 110) && (y < 6 || y > 246) {
				continue // transparent corner
			}
			img.Set(x, y, color.NRGBA{R: uint8(x * 2), G: uint8(y), B: 90, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestUploadTooLarge(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	resp := upload(c, "/meals", "huge.jpg", bytes.Repeat([]byte{0xFF}, meal.MaxFormBytes+1))
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(resp.Text("main p"), "25 MB") {
		t.Fatalf("oversized upload = %d %q, want 413 naming the limit", resp.StatusCode, resp.Text("main p"))
	}
	if len(objects(t, app)) != 0 || len(allMeals(t, app, admin)) != 0 {
		t.Error("an oversized upload stored something")
	}
}

func TestPhotoServing(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	if resp := upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg")); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("upload = %d", resp.StatusCode)
	}
	m := allMeals(t, app, admin)[0]
	stored := object(t, app, m.PhotoKeys()[1])

	first := c.Get(m.ThumbURL())
	if first.StatusCode != http.StatusOK {
		t.Fatalf("GET thumb = %d", first.StatusCode)
	}
	h := first.Header
	for name, want := range map[string]string{
		"Content-Type": "image/jpeg",
		// A year, immutable: the browser never asks again for this URL.
		"Cache-Control":          "private, max-age=31536000, immutable",
		"X-Content-Type-Options": "nosniff",
		"Etag":                   `"` + m.PhotoV.Tag() + `-thumb"`,
		"Content-Length":         strconv.Itoa(len(stored)),
		"Set-Cookie":             "",
	} {
		if got := h.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if first.Body != string(stored) {
		t.Errorf("served %d bytes, want the %d stored", len(first.Body), len(stored))
	}

	etag := h.Get("ETag")
	for _, inm := range []string{etag, `"other", ` + etag, "*", "W/" + etag} {
		req, _ := http.NewRequest(http.MethodGet, app.URL+m.ThumbURL(), nil)
		req.Header.Set("If-None-Match", inm)
		resp := c.Do(req)
		if resp.StatusCode != http.StatusNotModified || resp.Body != "" {
			t.Errorf("If-None-Match %s = %d with %d bytes, want 304 with none", inm, resp.StatusCode, len(resp.Body))
		}
	}
	req, _ := http.NewRequest(http.MethodGet, app.URL+m.ThumbURL(), nil)
	req.Header.Set("If-None-Match", `"something-else"`)
	if resp := c.Do(req); resp.StatusCode != http.StatusOK {
		t.Errorf("non-matching If-None-Match = %d, want 200", resp.StatusCode)
	}
	req, _ = http.NewRequest(http.MethodGet, app.URL+m.ThumbURL(), nil)
	req.Header.Set("Range", "bytes=0-99")
	if resp := c.Do(req); resp.StatusCode != http.StatusPartialContent || resp.Body != string(stored[:100]) {
		t.Errorf("Range = %d with %d bytes, want 206 with the first 100", resp.StatusCode, len(resp.Body))
	}

	// Missing, stale or made-up ?v= never gets the year-long header.
	for _, bad := range []string{"/photo/2026-09-01/" + m.ID + "?size=thumb", "/photo/2026-09-01/" + m.ID + "?v=000000000000&size=thumb"} {
		resp := c.Get(bad)
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Cache-Control") != "no-store" || resp.Location() != m.ThumbURL() {
			t.Errorf("GET %s = %d %q → %q, want 302 no-store to %s", bad, resp.StatusCode, resp.Header.Get("Cache-Control"), resp.Location(), m.ThumbURL())
		}
	}

	// Another owner asking for the same date and meal ID, while the photo is
	// hot in the cache, finds nothing.
	tok := c.CreateInvite(url.Values{"role": {"owner"}})
	other := app.Client()
	other.SignInVia("/login?invite="+tok, "other@example.com")
	for _, u := range []string{m.ThumbURL(), m.DisplayURL(), "/photo/2026-09-01/" + m.ID} {
		if resp := other.Get(u); resp.StatusCode != http.StatusNotFound || strings.Contains(resp.Body, string(stored[:64])) {
			t.Errorf("other owner GET %s = %d, want 404", u, resp.StatusCode)
		}
	}
	if st := app.Photos.Cache().Stats(); st.Hits == 0 {
		t.Errorf("cache stats %+v: the photo was never served from the cache", st)
	}
	// Anonymous: sign in first.
	if resp := app.Client().Get(m.ThumbURL()); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("anonymous photo = %d, want 303 to sign-in", resp.StatusCode)
	}
	for _, bad := range []string{"/photo/2026-02-30/" + m.ID, "/photo/2026-09-01/nope", "/photo/2026-09-01/" + m.ID + "?size=huge"} {
		if resp := c.Get(bad); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", bad, resp.StatusCode)
		}
	}
}

func TestPhotoVersionFollowsBytes(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg"), "notes", "first")
	m := allMeals(t, app, admin)[0]
	oldURL := m.ThumbURL()
	oldBytes := c.Get(oldURL).Body // now hot in the cache
	editURL := "/meals/2026-09-01/" + m.ID
	// version is the current version, as the edit form would carry it.
	version := func() string { return strconv.FormatInt(allMeals(t, app, admin)[0].Version, 10) }

	// A notes-only edit keeps photo_v and so every URL.
	if resp := c.PostMultipart(editURL, mealForm("notes", "second", "version", version())); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("notes edit = %d; %s", resp.StatusCode, resp.Body)
	}
	m2 := allMeals(t, app, admin)[0]
	if m2.ThumbURL() != oldURL || m2.Notes != "second" {
		t.Errorf("notes edit changed the URL: %s → %s", oldURL, m2.ThumbURL())
	}

	// Replacing the photo changes it.
	if resp := upload(c, editURL, "other.jpg", otherPhoto(t), "notes", "third", "version", version()); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("photo replace = %d; %s", resp.StatusCode, resp.Body)
	}
	m3 := allMeals(t, app, admin)[0]
	if m3.ThumbURL() == oldURL {
		t.Fatal("photo replace kept the URL")
	}
	newResp := c.Get(m3.ThumbURL())
	if newResp.StatusCode != http.StatusOK || newResp.Body == oldBytes || newResp.Header.Get("Cache-Control") != "private, max-age=31536000, immutable" {
		t.Errorf("new URL = %d, same bytes as before: %v", newResp.StatusCode, newResp.Body == oldBytes)
	}
	// The old URL is never again served with the year-long header, nor with
	// the new bytes under the old version.
	old := c.Get(oldURL)
	if old.StatusCode != http.StatusFound || old.Header.Get("Cache-Control") != "no-store" || old.Location() != m3.ThumbURL() {
		t.Errorf("old URL = %d %q → %q, want 302 no-store to the new URL", old.StatusCode, old.Header.Get("Cache-Control"), old.Location())
	}

	// Remove the photo: the objects go, the page shows none.
	if resp := c.PostMultipart(editURL, mealForm("notes", "no photo", "remove_photo", "1", "version", version())); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("remove photo = %d", resp.StatusCode)
	}
	if m4 := allMeals(t, app, admin)[0]; m4.HasPhoto() || len(objects(t, app)) != 0 {
		t.Errorf("after remove: photo_v %d, objects %v", m4.PhotoV, objects(t, app))
	}
	if resp := c.Get(m3.ThumbURL()); resp.StatusCode != http.StatusNotFound {
		t.Errorf("removed photo = %d, want 404", resp.StatusCode)
	}

	// Deleting a meal deletes its photo.
	upload(c, editURL, "small.jpg", apptest.Photo(t, "small.jpg"), "version", version())
	if len(objects(t, app)) != 2 {
		t.Fatalf("objects after re-adding = %v", objects(t, app))
	}
	c.PostForm(editURL+"/delete", nil)
	if keys := objects(t, app); len(keys) != 0 {
		t.Errorf("objects after deleting the meal: %v", keys)
	}
}

func TestMoveMeal(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg"), "notes", "moving")
	m := allMeals(t, app, admin)[0]
	move := "/meals/2026-09-01/" + m.ID + "/move"
	v := strconv.FormatInt(m.Version, 10)
	for _, tc := range []struct {
		form   url.Values
		status int
	}{
		{url.Values{"date": {"2026-02-30"}, "time": {"10:00"}, "version": {v}}, http.StatusBadRequest},
		{url.Values{"date": {"2026-09-02"}, "time": {"25:00"}, "version": {v}}, http.StatusBadRequest},
		{url.Values{"date": {"2026-09-02"}, "time": {"10:00"}, "version": {"99"}}, http.StatusConflict},
	} {
		if resp := c.PostForm(move, tc.form); resp.StatusCode != tc.status {
			t.Errorf("move %v = %d, want %d", tc.form, resp.StatusCode, tc.status)
		}
	}
	if ms := allMeals(t, app, admin); len(ms) != 1 || ms[0].SK != m.SK {
		t.Fatalf("refused moves changed the meals: %+v", ms)
	}
	resp := c.PostForm(move, url.Values{"date": {"2026-10-05"}, "time": {"09:15"}, "version": {v}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("move = %d", resp.StatusCode)
	}
	ms := allMeals(t, app, admin)
	if len(ms) != 1 || ms[0].Date != "2026-10-05" || ms[0].Time != "09:15:00" || ms[0].Notes != "moving" || !strings.HasPrefix(ms[0].ID, "091500-") {
		t.Fatalf("after move: %+v", ms)
	}
	if keys := objects(t, app); len(keys) != 2 || !strings.Contains(keys[0], "/2026-10-05/"+ms[0].ID) {
		t.Errorf("objects after move = %v", keys)
	}
	if got := c.Get(ms[0].ThumbURL()); got.StatusCode != http.StatusOK {
		t.Errorf("moved photo = %d", got.StatusCode)
	}
}

func TestHeadAndExportPhoto(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg"))
	m := allMeals(t, app, admin)[0]
	req, _ := http.NewRequest(http.MethodHead, app.URL+m.ThumbURL(), nil)
	if resp := c.Do(req); resp.StatusCode != http.StatusOK || resp.Body != "" || resp.Header.Get("ETag") == "" {
		t.Errorf("HEAD photo = %d, %d bytes, ETag %q; want 200, no body, an ETag", resp.StatusCode, len(resp.Body), resp.Header.Get("ETag"))
	}
	var out struct {
		Meals []struct {
			Photo *struct {
				URL           string
				Width, Height int
			} `json:"photo"`
		} `json:"meals"`
	}
	if err := json.Unmarshal([]byte(c.Get("/account/export.json").Body), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Meals) != 1 || out.Meals[0].Photo == nil || out.Meals[0].Photo.URL != app.URL+m.DisplayURL() || out.Meals[0].Photo.Width != 640 {
		t.Errorf("exported photo = %+v, want the display URL and 640 px width", out.Meals[0].Photo)
	}
}

// TestUploadRateLimit: photo uploads are limited per owner: UploadBurst
// at once (new meals and edits with a photo alike), then 429 with
// Retry-After and nothing stored, until the allowance refills. Meals
// without a photo are not held back.
func TestUploadRateLimit(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	pic := apptest.JPEG(t, 32, 24, color.RGBA{R: 200, G: 120, B: 80, A: 255})
	for i := range meal.UploadBurst {
		if resp := upload(c, "/meals", "p.jpg", pic, "time", fmt.Sprintf("12:%02d", i)); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("upload %d = %d, want 303", i+1, resp.StatusCode)
		}
	}
	stored := len(objects(t, app))
	m := allMeals(t, app, admin)[0]
	edit := "/meals/" + m.Date + "/" + m.ID
	for _, tc := range []struct{ name, path string }{
		{"new meal", "/meals"},
		{"edit with a photo", edit},
	} {
		resp := upload(c, tc.path, "p.jpg", pic, "version", strconv.FormatInt(m.Version, 10))
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" {
			t.Errorf("%s after %d uploads = %d, Retry-After %q; want 429, 2", tc.name, meal.UploadBurst, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if got, want := resp.Text("main p"), "Photos came faster than ndiro takes them (30 at once, then one every 2 seconds), so this one was not saved. Try again in 2 seconds."; got != want {
			t.Errorf("%s: message = %q, want %q", tc.name, got, want)
		}
	}
	if n := len(objects(t, app)); n != stored {
		t.Errorf("%d objects after refused uploads, want %d", n, stored)
	}
	if n := len(allMeals(t, app, admin)); n != meal.UploadBurst {
		t.Errorf("%d meals after refused uploads, want %d", n, meal.UploadBurst)
	}
	if resp := c.PostForm("/meals", mealForm("notes", "no photo")); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("meal without a photo = %d, want 303", resp.StatusCode)
	}
	app.Clock.Advance(meal.UploadEvery)
	if resp := upload(c, "/meals", "p.jpg", pic); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("upload after Retry-After = %d, want 303", resp.StatusCode)
	}
}
