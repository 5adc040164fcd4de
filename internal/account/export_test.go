package account_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"image/color"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"
	"github.com/shopspring/decimal"

	"ndiro/internal/account"
	"ndiro/internal/apptest"
	"ndiro/internal/archive"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
)

// exportOwner signs in an owner with three meals: one whose notes start
// with a formula, one with a full-width plus, one without a photo.
func exportOwner(t *testing.T, faults *apptest.Faults) (*apptest.App, *apptest.Client, []meal.Meal) {
	t.Helper()
	app := apptest.New(t, apptest.Options{Faults: faults})
	c := app.Client()
	c.SignIn(adminEmail)
	for i, f := range []url.Values{
		{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}, "notes": {"=HYPERLINK(\"http://evil.example\")\nsoup"}, "kcal": {"512.5"}, "protein_g": {"21"}, "hunger": {"4"}},
		{"date": {"2026-09-02"}, "time": {"08:00"}, "kind": {"breakfast"}, "notes": {"＋porridge, a, \"b\""}},
		{"date": {"2026-09-03"}, "time": {"19:00"}, "kind": {"dinner"}, "notes": {"-"}},
	} {
		var files []apptest.File
		if i < 2 {
			files = append(files, apptest.File{Field: "photo", Name: "p.jpg", Body: apptest.JPEG(t, 96, 64, color.RGBA{R: uint8(90 * i), G: 80, B: 30})})
		}
		if resp := c.PostMultipart("/meals", f, files...); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("add meal = %d", resp.StatusCode)
		}
	}
	// A negative number cannot come through the form; plant one to check
	// numbers are never escaped as formulas.
	ms, err := app.Meals.All(context.Background(), localenv.Subject(adminEmail))
	if err != nil || len(ms) != 3 {
		t.Fatalf("meals = %v, %v", ms, err)
	}
	_, err = app.Env.DynamoDB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(app.Tables.Meals.Name),
		Key:                       map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: ms[2].UserID}, "sk": &types.AttributeValueMemberS{Value: ms[2].SK}},
		UpdateExpression:          aws.String("SET kcal = :k"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": &types.AttributeValueMemberN{Value: "-5"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return app, c, ms
}

func TestExportZip(t *testing.T) {
	t.Parallel()
	app, c, ms := exportOwner(t, nil)
	resp := c.Get("/account/export.zip")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /account/export.zip = %d", resp.StatusCode)
	}
	for k, want := range map[string]string{"Content-Type": "application/zip", "Cache-Control": "no-store", "Content-Length": ""} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, `attachment; filename="ndiro-export-`) {
		t.Errorf("Content-Disposition = %q", cd)
	}
	zr, err := zip.NewReader(strings.NewReader(resp.Body), int64(len(resp.Body)))
	if err != nil {
		t.Fatalf("the export does not open as a zip: %v", err)
	}
	files := map[string][]byte{}
	for _, f := range zr.File {
		if strings.ContainsAny(f.Name, ":\\") || strings.HasPrefix(f.Name, "/") || strings.Contains(f.Name, "..") {
			t.Errorf("entry name %q is not safe on every file system", f.Name)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		files[f.Name], _ = io.ReadAll(rc)
		rc.Close()
	}

	// meals.json: numbers are JSON numbers, notes raw.
	var js struct {
		Meals []map[string]any `json:"meals"`
	}
	if err := json.Unmarshal(files["meals.json"], &js); err != nil || len(js.Meals) != 3 {
		t.Fatalf("meals.json: %v, %d meals", err, len(js.Meals))
	}
	if k, ok := js.Meals[0]["kcal"].(float64); !ok || k != 512.5 {
		t.Errorf("meals.json kcal = %#v, want the number 512.5", js.Meals[0]["kcal"])
	}
	if n := js.Meals[0]["notes"]; n != "=HYPERLINK(\"http://evil.example\")\nsoup" {
		t.Errorf("meals.json keeps the raw notes; got %q", n)
	}
	if p, _ := js.Meals[0]["photo"].(map[string]any); p["file"] != "photos/2026-09-01/"+ms[0].ID+".jpg" {
		t.Errorf("meals.json photo = %v, want its file in the zip", p)
	}

	// meals.csv: a byte-order mark, then RFC 4180 that encoding/csv reads.
	raw := files["meals.csv"]
	if !bytes.HasPrefix(raw, []byte("\xEF\xBB\xBF")) {
		t.Error("meals.csv has no UTF-8 byte-order mark")
	}
	if !bytes.Contains(raw, []byte("\r\n")) {
		t.Error("meals.csv lines do not end in CRLF")
	}
	rows, err := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(raw, []byte("\xEF\xBB\xBF")))).ReadAll()
	if err != nil || len(rows) != 4 {
		t.Fatalf("meals.csv: %v, %d rows, want a header and 3", err, len(rows))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, tc := range []struct {
		row         int
		field, want string
	}{
		{1, "notes", "'=HYPERLINK(\"http://evil.example\")\nsoup"}, // neutralised
		{1, "kcal", "512.5"},
		{1, "protein_g", "21"},
		{1, "hunger", "4"},
		{1, "photo", "photos/2026-09-01/" + ms[0].ID + ".jpg"},
		{2, "notes", "'＋porridge, a, \"b\""}, // full-width plus
		{3, "notes", "'-"},
		{3, "kcal", "-5"}, // a number, not escaped
		{3, "photo", ""},
	} {
		if got := rows[tc.row][col[tc.field]]; got != tc.want {
			t.Errorf("meals.csv row %d %s = %q, want %q", tc.row, tc.field, got, tc.want)
		}
	}

	// Each photo: the stored display copy, byte for byte; read from S3,
	// not through the shared cache.
	for _, m := range ms[:2] {
		out, err := app.Env.S3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("test-photos"), Key: aws.String(m.PhotoKeys()[0])})
		if err != nil {
			t.Fatal(err)
		}
		stored, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if got := files["photos/"+m.Date+"/"+m.ID+".jpg"]; !bytes.Equal(got, stored) {
			t.Errorf("photo of %s: %d bytes in the zip, %d stored", m.ID, len(got), len(stored))
		}
	}
	if len(files) != 6 {
		t.Errorf("zip holds %d files, want meals.json, meals.csv, comments.csv, manifest.json and 2 photos", len(files))
	}
	if st := app.Photos.Cache().Stats(); st.Misses != 0 || st.Items != 0 {
		t.Errorf("the export went through the photo cache: %+v", st)
	}
}

// TestExportZipFailsVisibly: S3 failing after the first photo makes the
// download fail, never a zip that opens but lacks photos.
func TestExportZipFailsVisibly(t *testing.T) {
	t.Parallel()
	faults := &apptest.Faults{}
	app, c, _ := exportOwner(t, faults)
	faults.Fail("GetObject", "test-photos", 1)
	resp, err := c.HTTP.Get(app.URL + "/account/export.zip")
	if err != nil {
		return // the client saw the failure at once
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		if _, zerr := zip.NewReader(bytes.NewReader(body), int64(len(body))); zerr == nil {
			t.Fatalf("a failed export reached the client as a valid zip of %d bytes", len(body))
		}
		t.Fatalf("a failed export reached the client as a complete response (%d bytes), want a broken one", len(body))
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) && !strings.Contains(err.Error(), "unexpected EOF") {
		t.Logf("read error: %v", err)
	}
}

// TestExportZipStorageNotAnswering: a bucket that does not answer the
// first photo gets the 503 page (Retry-After), not a cut download, and no
// attachment header that would save the page as a file.
func TestExportZipStorageNotAnswering(t *testing.T) {
	t.Parallel()
	app := apptest.New(t, apptest.Options{Links: true, Env: map[string]string{"NDIRO_STORAGE_TRANSFER_TIMEOUT": "500ms", "NDIRO_STORAGE_ATTEMPTS": "1"}})
	c := app.Client()
	c.SignIn(adminEmail)
	photo := apptest.File{Field: "photo", Name: "p.jpg", Body: apptest.JPEG(t, 96, 64, color.RGBA{R: 200, G: 80, B: 30})}
	if resp := c.PostMultipart("/meals", url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}}, photo); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("add meal = %d", resp.StatusCode)
	}
	app.S3Link.Stall()
	resp := c.Get("/account/export.zip")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "15" || resp.Text("h1") != "Storage is not answering" {
		t.Errorf("export with the bucket stalled = %d, Retry-After %q, %q; want 503, 15, Storage is not answering", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Text("h1"))
	}
	if got := resp.Header.Get("Content-Disposition"); got != "" {
		t.Errorf("the error page has Content-Disposition %q, want none", got)
	}
	app.S3Link.Restore()
	if again := c.Get("/account/export.zip"); again.StatusCode != http.StatusOK || again.Header.Get("Content-Type") != "application/zip" {
		t.Errorf("export once the bucket answers = %d %q, want a zip", again.StatusCode, again.Header.Get("Content-Type"))
	}
}

// TestExportZipMissingPhoto: a meal whose photo object is gone from the
// bucket does not stop the export; the zip lacks that photo only, and
// meals.json and meals.csv mark it missing.
func TestExportZipMissingPhoto(t *testing.T) {
	t.Parallel()
	app, c, ms := exportOwner(t, nil)
	if _, err := app.Env.S3.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("test-photos"), Key: aws.String(ms[0].PhotoKeys()[0])}); err != nil {
		t.Fatal(err)
	}
	resp := c.Get("/account/export.zip")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /account/export.zip = %d", resp.StatusCode)
	}
	zr, err := zip.NewReader(strings.NewReader(resp.Body), int64(len(resp.Body)))
	if err != nil {
		t.Fatalf("the export does not open as a zip: %v", err)
	}
	files := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		files[f.Name], _ = io.ReadAll(rc)
		rc.Close()
	}
	lost, kept := "photos/2026-09-01/"+ms[0].ID+".jpg", "photos/2026-09-02/"+ms[1].ID+".jpg"
	if _, ok := files[lost]; ok {
		t.Errorf("zip holds %s, whose object is missing", lost)
	}
	if len(files[kept]) == 0 {
		t.Errorf("zip lacks %s, whose object is there", kept)
	}

	var js struct {
		Meals []struct {
			ID    string         `json:"id"`
			Photo map[string]any `json:"photo"`
		} `json:"meals"`
	}
	if err := json.Unmarshal(files["meals.json"], &js); err != nil || len(js.Meals) != 3 {
		t.Fatalf("meals.json: %v, %d meals", err, len(js.Meals))
	}
	for i, want := range []map[string]any{
		{"missing": true, "width": float64(ms[0].PhotoW), "height": float64(ms[0].PhotoH)},
		{"file": kept, "width": float64(ms[1].PhotoW), "height": float64(ms[1].PhotoH)},
		nil,
	} {
		if d := cmp.Diff(want, js.Meals[i].Photo); d != "" {
			t.Errorf("meals.json meal %d photo (-want +got):\n%s", i, d)
		}
	}

	rows, err := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(files["meals.csv"], []byte("\xEF\xBB\xBF")))).ReadAll()
	if err != nil || len(rows) != 4 {
		t.Fatalf("meals.csv: %v, %d rows, want a header and 3", err, len(rows))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for i, want := range [][2]string{{"", "true"}, {kept, ""}, {"", ""}} {
		if got := [2]string{rows[i+1][col["photo"]], rows[i+1][col["photo_missing"]]}; got != want {
			t.Errorf("meals.csv row %d photo, photo_missing = %q, want %q", i+1, got, want)
		}
	}
}

// TestExportCarriesComments: a recipient's comment on a meal is in the
// JSON export (its label, the link's digest, the time and the text, never
// the link's token) and in the zip's comments.csv, neutralised as a text
// cell.
func TestExportCarriesComments(t *testing.T) {
	t.Parallel()
	app, c, ms := exportOwner(t, nil)
	tok := c.CreateShare(url.Values{"label": {"Dr. Rossi"}, "from": {"2026-09-01"}, "to": {"2026-09-14"}, "expiry": {"never"}, "comments": {"1"}})
	if resp := app.Client().PostForm("/s/"+tok+"/meals/"+ms[0].Date+"/"+ms[0].ID+"/comments", url.Values{"text": {"=more greens, please"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("comment = %d; %s", resp.StatusCode, resp.Text("main"))
	}
	resp := c.Get("/account/export.json")
	if strings.Contains(resp.Body, tok) {
		t.Error("the export holds the link's token")
	}
	var f struct {
		Format int `json:"format"`
		Meals  []struct {
			ID       string `json:"id"`
			Comments []struct {
				ID      string `json:"id"`
				ShareID string `json:"share_id"`
				From    string `json:"from"`
				Text    string `json:"text"`
				At      string `json:"at"`
			} `json:"comments"`
		} `json:"meals"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &f); err != nil {
		t.Fatal(err)
	}
	if f.Format != archive.Current {
		t.Errorf("export.json format = %d, want %d, the zip's", f.Format, archive.Current)
	}
	var got []string
	for _, m := range f.Meals {
		for _, cm := range m.Comments {
			got = append(got, m.ID+" "+cm.From+": "+cm.Text)
			if cm.ShareID == "" || cm.At == "" || cm.ID == "" {
				t.Errorf("exported comment %+v lacks its link, time or id", cm)
			}
		}
	}
	if d := cmp.Diff([]string{ms[0].ID + " Dr. Rossi: =more greens, please"}, got); d != "" {
		t.Errorf("exported comments (-want +got):\n%s", d)
	}
	zresp := c.Get("/account/export.zip")
	zr, err := zip.NewReader(strings.NewReader(zresp.Body), int64(len(zresp.Body)))
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	for _, zf := range zr.File {
		if zf.Name == "comments.csv" {
			rc, _ := zf.Open()
			raw, _ = io.ReadAll(rc)
			rc.Close()
		}
	}
	rows, err := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(raw, []byte("\uFEFF")))).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("comments.csv: %v, %d rows, want a header and 1", err, len(rows))
	}
	if d := cmp.Diff([]string{ms[0].ID, ms[0].Date, ms[0].Time, rows[1][3], "Dr. Rossi", rows[1][5], "'=more greens, please"}, rows[1]); d != "" {
		t.Errorf("comments.csv row (-want +got):\n%s", d)
	}
}

// TestExportZipOpens: the export zip passes every check of archive.Open,
// and what it reads back is each stored meal as account.Archived gives
// it, field for field (numbers, comments, photo sizes, capture times),
// with each photo's file holding the stored display copy.
func TestExportZipOpens(t *testing.T) {
	t.Parallel()
	app, c, _ := exportOwner(t, nil)
	ms, err := app.Meals.All(context.Background(), localenv.Subject(adminEmail))
	if err != nil {
		t.Fatal(err)
	}
	tok := c.CreateShare(url.Values{"label": {"Dr. Rossi"}, "from": {"2026-09-01"}, "to": {"2026-09-14"}, "expiry": {"never"}, "comments": {"1"}})
	if resp := app.Client().PostForm("/s/"+tok+"/meals/"+ms[0].Date+"/"+ms[0].ID+"/comments", url.Values{"text": {"=more greens, please"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("comment = %d", resp.StatusCode)
	}
	// A capture time and a fullness, which the generated photo and the
	// form above do not give.
	_, err = app.Env.DynamoDB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(app.Tables.Meals.Name),
		Key:                       map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: ms[0].UserID}, "sk": &types.AttributeValueMemberS{Value: ms[0].SK}},
		UpdateExpression:          aws.String("SET photo_taken = :t, fullness = :f"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberS{Value: "2026-09-01T12:29:58"}, ":f": &types.AttributeValueMemberN{Value: "3"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if ms, err = app.Meals.All(context.Background(), localenv.Subject(adminEmail)); err != nil {
		t.Fatal(err)
	}
	resp := c.Get("/account/export.zip")
	a, err := archive.Open(strings.NewReader(resp.Body), int64(len(resp.Body)), archive.Limits{})
	if err != nil {
		t.Fatalf("archive.Open(the export) = %v", err)
	}
	if h := a.Header(); h.Format != archive.Current || h.Email != adminEmail {
		t.Errorf("header = %+v, want format %d of %s", h, archive.Current, adminEmail)
	}
	// The expected meals are built here from the rows, not by Archived,
	// so that a field Archived drops fails the test.
	want := make([]archive.Meal, len(ms))
	for i := range ms {
		m := &ms[i]
		want[i] = archive.Meal{ID: m.ID, Date: m.Date, Time: m.Time, Kind: string(m.Kind), Notes: m.Notes,
			PhotoTaken: m.PhotoTaken, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
		for _, n := range []struct {
			to   **decimal.Decimal
			from *meal.Number
		}{{&want[i].Kcal, m.Kcal}, {&want[i].ProteinG, m.ProteinG}, {&want[i].CarbsG, m.CarbsG}, {&want[i].FatG, m.FatG}} {
			if n.from != nil {
				d := n.from.Decimal()
				*n.to = &d
			}
		}
		if m.Hunger != nil {
			want[i].Hunger = *m.Hunger
		}
		if m.Fullness != nil {
			want[i].Fullness = *m.Fullness
		}
		for _, c := range m.SortedComments() {
			want[i].Comments = append(want[i].Comments, archive.Comment{ID: c.ID, ShareID: c.ShareID, From: c.Label, Text: c.Text, At: c.At})
		}
		if m.HasPhoto() {
			want[i].Photo = &archive.PhotoRef{Width: m.PhotoW, Height: m.PhotoH}
			out, err := app.Env.S3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("test-photos"), Key: aws.String(ms[i].PhotoKeys()[0])})
			if err != nil {
				t.Fatal(err)
			}
			stored, _ := io.ReadAll(out.Body)
			out.Body.Close()
			want[i].Photo.File = archive.PhotoFile(ms[i].Date, ms[i].ID)
			want[i].Photo.Size = int64(len(stored))
		}
	}
	if len(want[0].Comments) != 1 || want[1].Photo == nil || want[2].Kcal == nil || want[0].Hunger != 4 || want[0].Fullness != 3 || want[0].PhotoTaken == "" {
		t.Fatalf("the diary lacks what this test checks: %+v", want)
	}
	eq := cmp.Options{cmp.Comparer(func(x, y time.Time) bool { return x.Equal(y) }), cmp.Comparer(func(x, y decimal.Decimal) bool { return x.String() == y.String() })}
	if d := cmp.Diff(want, a.Meals(), eq); d != "" {
		t.Errorf("meals read back (-stored +exported):\n%s", d)
	}
	if err := a.Verify(); err != nil {
		t.Errorf("Verify(the export) = %v", err)
	}
	// An import tells a meal it has from one in a zip by ContentKey.
	for i := range ms {
		if got, want := a.Meals()[i].ContentKey(), account.Archived(&ms[i]); got != want.ContentKey() {
			t.Errorf("meal %d: the zip's content key differs from the row's", i)
		}
	}
}
