package meal_test

import (
	"bytes"
	"image/jpeg"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"ndiro/internal/apptest"
)

// TestUploadHEIC: photo.heic through the add form (this test binary is the
// HEIC worker, see TestMain) is stored as two JPEG copies, 2048×1536 and
// 480×360, with no EXIF or GPS; the capture time from its Exif item is
// offered. Decodes HEIC: make heic.
func TestUploadHEIC(t *testing.T) {
	if os.Getenv("NDIRO_TEST_HEIC") != "1" {
		t.Skip("decodes HEIC: make heic (NDIRO_TEST_HEIC=1)")
	}
	app, c := signedIn(t)
	resp := upload(c, "/meals", "IMG_0001.HEIC", apptest.Photo(t, "photo.heic"),
		"date", "2026-09-01", "time", "12:30", "default_date", "2026-09-01", "default_time", "12:30")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("upload = %d; %s", resp.StatusCode, resp.Text("#photo-err"))
	}
	ms := allMeals(t, app, admin)
	if len(ms) != 1 || ms[0].PhotoW != 2048 || ms[0].PhotoH != 1536 || ms[0].ThumbW != 480 || ms[0].ThumbH != 360 || ms[0].PhotoTaken != "2024-06-15T08:02:44" {
		t.Fatalf("meals = %+v, want one 2048x1536 photo taken 2024-06-15T08:02:44", ms)
	}
	// Date and time left as the form showed them: filed at the capture
	// time the server read from the HEIC's EXIF, on the month it lands on.
	if want := "/meals?month=2024-06#meal-" + ms[0].ID; resp.Location() != want || ms[0].Date+" "+ms[0].Time != "2024-06-15 08:02:44" {
		t.Errorf("redirect = %q, meal at %s %s; want %q, filed at the photo's 2024-06-15 08:02:44", resp.Location(), ms[0].Date, ms[0].Time, want)
	}
	for _, key := range ms[0].PhotoKeys() {
		b := object(t, app, key)
		for _, s := range []string{"Exif", "GPS", "ftyp"} {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("stored %s contains %q", key, s)
			}
		}
		if _, err := jpeg.Decode(bytes.NewReader(b)); err != nil {
			t.Errorf("stored %s is not a JPEG: %v", key, err)
		}
	}
}

// TestHEICDecoderDown: when the HEIC worker cannot start, a HEIC upload is
// refused at once with a message saying so, nothing is stored, and the
// admin monitor's process panel names the failure.
func TestHEICDecoderDown(t *testing.T) {
	t.Parallel()
	app := apptest.New(t, apptest.Options{HEICWorker: func() *exec.Cmd { return exec.Command("false") }})
	c := app.Client()
	c.SignIn(admin)
	resp := upload(c, "/meals", "IMG_0001.HEIC", apptest.Photo(t, "photo.heic"), "notes", "kept")
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("upload = %d, want 422", resp.StatusCode)
	}
	if got := resp.Text("#photo-err"); !strings.Contains(got, "the HEIC decoder could not start") {
		t.Errorf("photo message = %q", got)
	}
	if len(objects(t, app)) != 0 || len(allMeals(t, app, admin)) != 0 {
		t.Error("something was stored")
	}
	row := c.Get("/admin/monitor").Doc().Find("#heic-decoder")
	if state, detail := row.Find("td").Eq(0).Text(), row.Find("td").Eq(1).Text(); state != "failed" || !strings.Contains(detail, "1 failed starts; last: could not start") {
		t.Errorf("monitor HEIC row = %q, %q; want failed and the reason", state, detail)
	}
	// The file inputs do not ask for HEIC: iOS would send HEIC originals
	// instead of converting them to JPEG.
	page := c.Get("/meals/new").Doc()
	for _, id := range []string{"#photo", "#photo-camera"} {
		if accept, _ := page.Find(id).Attr("accept"); accept != "image/jpeg,image/png,image/webp" {
			t.Errorf("%s accept = %q", id, accept)
		}
	}
}
