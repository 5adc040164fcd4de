package account_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"

	"ndiro/internal/account"
	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
)

// importBucket is apptest's bucket.
const importBucket = "test-photos"

// fixture reads a photo of testdata/photos.
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../../testdata/photos/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// diaryOwner signs the admin in on app and saves four meals: two with
// every field and a photo of testdata, one with a comment from a share
// recipient, one with notes only. It returns the client.
func diaryOwner(t *testing.T, app *apptest.App) *apptest.Client {
	t.Helper()
	c := app.Client()
	c.SignIn(adminEmail)
	for i, f := range []url.Values{
		{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}, "notes": {"lentil soup\nand bread"}, "kcal": {"512.5"}, "protein_g": {"21"}, "carbs_g": {"60.5"}, "fat_g": {"9"}, "hunger": {"4"}, "fullness": {"2"}},
		{"date": {"2026-09-01"}, "time": {"19:05"}, "kind": {"dinner"}, "notes": {"risotto"}, "kcal": {"700"}, "protein_g": {"18.5"}, "carbs_g": {"90"}, "fat_g": {"22.5"}, "hunger": {"5"}, "fullness": {"4"}},
		{"date": {"2026-09-02"}, "time": {"08:00"}, "kind": {"breakfast"}, "notes": {"porridge"}, "kcal": {"300"}},
		{"date": {"2026-09-03"}, "time": {"16:00"}, "kind": {"snack"}, "notes": {"an apple"}},
	} {
		var files []apptest.File
		switch i {
		case 0:
			files = append(files, apptest.File{Field: "photo", Name: "a.jpg", Body: fixture(t, "small.jpg")})
		case 1:
			files = append(files, apptest.File{Field: "photo", Name: "b.jpg", Body: fixture(t, "phone-portrait-small.jpg")})
		}
		if resp := c.PostMultipart("/meals", f, files...); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("add meal %d = %d; %s", i, resp.StatusCode, resp.Text("main"))
		}
	}
	ms, err := app.Meals.All(t.Context(), localenv.Subject(adminEmail))
	if err != nil || len(ms) != 4 {
		t.Fatalf("meals = %d, %v; want 4", len(ms), err)
	}
	var breakfast meal.Meal
	for _, m := range ms {
		if m.Kind == "breakfast" {
			breakfast = m
		}
	}
	tok := c.CreateShare(url.Values{"label": {"Dr. Rossi"}, "from": {"2026-09-01"}, "to": {"2026-09-14"}, "expiry": {"never"}, "comments": {"1"}})
	if resp := app.Client().PostForm("/s/"+tok+"/meals/"+breakfast.Date+"/"+breakfast.ID+"/comments", url.Values{"text": {"more fruit, please"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("comment = %d; %s", resp.StatusCode, resp.Text("main"))
	}
	return c
}

// sourceZip is the export zip of diaryOwner's diary on an app of its own,
// and that diary's meals, as the imports of the zip must end with them.
func sourceZip(t *testing.T) ([]byte, []meal.Meal) {
	t.Helper()
	src := apptest.New(t)
	body := exportZip(t, diaryOwner(t, src))
	want, err := src.Meals.All(t.Context(), localenv.Subject(adminEmail))
	if err != nil {
		t.Fatal(err)
	}
	return body, want
}

// noPending fails t if any object is left under userID's pending prefix
// (a staged zip's parts): want says what should have removed them.
func noPending(t *testing.T, app *apptest.App, userID, want string) {
	t.Helper()
	if keys := objectsOf(t, app, "pending/"+userID); len(keys) != 0 {
		t.Errorf("objects left under pending/: %v; want %s", keys, want)
	}
}

// exportZip downloads c's /account/export.zip.
func exportZip(t *testing.T, c *apptest.Client) []byte {
	t.Helper()
	resp := c.Get("/account/export.zip")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export.zip = %d", resp.StatusCode)
	}
	return []byte(resp.Body)
}

// postImport sends zip as the import form's file.
func postImport(c *apptest.Client, body []byte) *apptest.Response {
	return c.PostMultipart(account.ImportPath, nil, apptest.File{Field: account.ImportField, Name: "ndiro-export.zip", Body: body})
}

// importAndWait posts zip to app as c and waits for the import's end.
func importAndWait(t *testing.T, app *apptest.App, c *apptest.Client, body []byte) *apptest.Response {
	t.Helper()
	resp := postImport(c, body)
	if resp.StatusCode != http.StatusSeeOther || resp.Location() != account.ImportPath {
		t.Fatalf("POST %s = %d %q; %s", account.ImportPath, resp.StatusCode, resp.Location(), resp.Text("main"))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := app.Imports.Wait(ctx, localenv.Subject(adminEmail)); err != nil {
		t.Fatal(err)
	}
	return c.Get(account.ImportPath)
}

// zipFiles reads every file of a zip.
func zipFiles(t *testing.T, body []byte) map[string][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := b.ReadFrom(rc); err != nil {
			t.Fatal(err)
		}
		rc.Close()
		out[f.Name] = b.Bytes()
	}
	return out
}

// comparable is an export's meals.json as plain JSON values, without
// what cannot be stable across instances: exported_at (the time of
// each export), every meal's id (an import gives each meal a new one,
// meal.DerivedID) and with it the photo's file name, which embeds it.
// The meals are in date and time order; photos maps each meal's
// "date time" to its photo file.
func comparable(t *testing.T, files map[string][]byte) (doc map[string]any, photos map[string]string) {
	t.Helper()
	if err := json.Unmarshal(files["meals.json"], &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc, "exported_at")
	photos = map[string]string{}
	meals, _ := doc["meals"].([]any)
	for _, v := range meals {
		m := v.(map[string]any)
		delete(m, "id")
		if p, ok := m["photo"].(map[string]any); ok {
			photos[m["date"].(string)+" "+m["time"].(string)], _ = p["file"].(string)
			delete(p, "file")
		}
	}
	sort.Slice(meals, func(i, j int) bool {
		a, b := meals[i].(map[string]any), meals[j].(map[string]any)
		return a["date"].(string)+a["time"].(string) < b["date"].(string)+b["time"].(string)
	})
	return doc, photos
}

// meanDiff is the mean absolute difference of two images' pixels per
// channel (R, G, B, 0 to 255), or an error if their sizes differ.
func meanDiff(a, b []byte) ([3]float64, error) {
	ia, err := jpeg.Decode(bytes.NewReader(a))
	if err != nil {
		return [3]float64{}, err
	}
	ib, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		return [3]float64{}, err
	}
	if ia.Bounds().Size() != ib.Bounds().Size() {
		return [3]float64{}, fmt.Errorf("sizes %v and %v", ia.Bounds().Size(), ib.Bounds().Size())
	}
	var sum [3]float64
	ra, rb := ia.Bounds(), ib.Bounds()
	for y := 0; y < ra.Dy(); y++ {
		for x := 0; x < ra.Dx(); x++ {
			c1 := rgb(ia, ra.Min.X+x, ra.Min.Y+y)
			c2 := rgb(ib, rb.Min.X+x, rb.Min.Y+y)
			for k := range 3 {
				d := c1[k] - c2[k]
				if d < 0 {
					d = -d
				}
				sum[k] += d
			}
		}
	}
	n := float64(ra.Dx() * ra.Dy())
	return [3]float64{sum[0] / n, sum[1] / n, sum[2] / n}, nil
}

func rgb(img image.Image, x, y int) [3]float64 {
	r, g, b, _ := img.At(x, y).RGBA()
	return [3]float64{float64(r >> 8), float64(g >> 8), float64(b >> 8)}
}

// maxPixelDiff is the round trip's bound on meanDiff per channel: the
// import runs each photo through the upload pipeline again, one more
// JPEG encode of the same pixels at the same size (measured: 0.05 to
// 0.09 of 255 for the two photos of testdata used).
const maxPixelDiff = 1.0

// TestImportRoundTrip: the export of instance A imported into an empty
// account on a fresh instance B exports again as the same meals.json
// (but for exported_at and the meal ids, comparable) and the same
// photos, each within maxPixelDiff; importing it a second time adds
// nothing and leaves the first copy's photo objects as they were.
func TestImportRoundTrip(t *testing.T) {
	t.Parallel()
	a := apptest.New(t)
	zipA := exportZip(t, diaryOwner(t, a))

	b := apptest.New(t)
	cb := b.Client()
	cb.SignIn(adminEmail)
	page := importAndWait(t, b, cb, zipA)
	if got := page.Text("#imported") + " " + page.Text("#skipped") + " " + page.Text("#failed"); got != "4 0 0" {
		t.Errorf("result page imported, skipped, failed = %s; want 4 0 0\n%s", got, page.Text("main"))
	}
	if h := page.Text("h1"); h != "Import finished" {
		t.Errorf("result page heading = %q", h)
	}

	filesA, filesB := zipFiles(t, zipA), zipFiles(t, exportZip(t, cb))
	docA, photosA := comparable(t, filesA)
	docB, photosB := comparable(t, filesB)
	if d := cmp.Diff(docA, docB); d != "" {
		t.Errorf("meals.json of B's export (-A +B):\n%s", d)
	}
	if len(photosA) != 2 || len(photosB) != 2 {
		t.Fatalf("photos: A %v, B %v; want 2 each", photosA, photosB)
	}
	for at, fa := range photosA {
		diff, err := meanDiff(filesA[fa], filesB[photosB[at]])
		if err != nil {
			t.Fatalf("photo of %s: %v", at, err)
		}
		for k, d := range diff {
			if d > maxPixelDiff {
				t.Errorf("photo of %s: channel %d differs by %.2f on average, want at most %.1f", at, k, d, maxPixelDiff)
			}
		}
		t.Logf("photo of %s: mean absolute difference per channel %.2f", at, diff)
	}

	// Twice: nothing added, the first copy's objects untouched.
	uid := localenv.Subject(adminEmail)
	before, err := b.Meals.All(t.Context(), uid)
	if err != nil {
		t.Fatal(err)
	}
	etags := photoETags(t, b, before)
	b.Clock.Advance(account.ImportEvery)
	page = importAndWait(t, b, cb, zipA)
	if got := page.Text("#imported") + " " + page.Text("#skipped"); got != "0 4" {
		t.Errorf("second import: imported, skipped = %s; want 0 4", got)
	}
	after, err := b.Meals.All(t.Context(), uid)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(ids(before), ids(after)); d != "" {
		t.Errorf("meals after the second import (-first +second):\n%s", d)
	}
	if d := cmp.Diff(etags, photoETags(t, b, after)); d != "" {
		t.Errorf("photo objects' ETags after the second import (-first +second):\n%s", d)
	}
}

func ids(ms []meal.Meal) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Date + "/" + m.ID
	}
	sort.Strings(out)
	return out
}

// photoETags returns the ETag of every photo object of ms, by key.
func photoETags(t *testing.T, app *apptest.App, ms []meal.Meal) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range ms {
		if !m.HasPhoto() {
			continue
		}
		for _, k := range m.PhotoKeys() {
			h, err := app.Env.S3.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(importBucket), Key: aws.String(k)})
			if err != nil {
				t.Fatalf("head %s: %v", k, err)
			}
			out[k] = aws.ToString(h.ETag)
		}
	}
	return out
}

// objectsOf lists every object of the bucket whose key holds userID.
func objectsOf(t *testing.T, app *apptest.App, userID string) []string {
	t.Helper()
	var out []string
	p := s3.NewListObjectsV2Paginator(app.Env.S3, &s3.ListObjectsV2Input{Bucket: aws.String(importBucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			if strings.Contains(aws.ToString(o.Key), userID) {
				out = append(out, aws.ToString(o.Key))
			}
		}
	}
	return out
}
