package archive

import (
	"bytes"
	"image"
	_ "image/jpeg" // the photos of testdata/format1.zip
	"io"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestOpenFormat1 reads testdata/format1.zip, written by ndiro's export
// before the format had a version (no "format", no manifest.json): three
// meals, two photos, one comment.
func TestOpenFormat1(t *testing.T) {
	t.Parallel()
	zb, err := os.ReadFile("testdata/format1.zip")
	if err != nil {
		t.Fatal(err)
	}
	a, err := Open(bytes.NewReader(zb), int64(len(zb)), Limits{})
	if err != nil {
		t.Fatalf("Open(format 1) = %v", err)
	}
	at := time.Date(2026, 12, 2, 1, 12, 45, 126127101, time.UTC)
	if d := cmp.Diff(Header{Format: Format1, ExportedAt: at, Email: "admin@example.com"}, a.Header()); d != "" {
		t.Errorf("header (-want +got):\n%s", d)
	}
	if a.Manifest() != nil {
		t.Errorf("format 1 has no manifest; got %+v", a.Manifest())
	}
	ms := a.Meals()
	if len(ms) != 3 {
		t.Fatalf("%d meals, want 3", len(ms))
	}
	type row struct{ Date, Time, Kind, Notes, Kcal, Protein, File string }
	var got []row
	for _, m := range ms {
		r := row{Date: m.Date, Time: m.Time, Kind: m.Kind, Notes: m.Notes}
		if m.Kcal != nil {
			r.Kcal = m.Kcal.String()
		}
		if m.ProteinG != nil {
			r.Protein = m.ProteinG.String()
		}
		if m.Photo != nil {
			r.File = m.Photo.File
		}
		got = append(got, r)
	}
	want := []row{
		{"2026-09-01", "12:30:00", "lunch", "=HYPERLINK(\"http://evil.example\")\nsoup", "512.5", "21", "photos/2026-09-01/123000-6cc82e.jpg"},
		{"2026-09-02", "08:00:00", "breakfast", "＋porridge, a, \"b\"", "", "", "photos/2026-09-02/080000-8c8248.jpg"},
		{"2026-09-03", "19:00:00", "dinner", "-", "-5", "", ""},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("meals (-want +got):\n%s", d)
	}
	if ms[0].Hunger != 4 || ms[0].Fullness != 0 {
		t.Errorf("hunger, fullness = %d, %d; want 4, 0 (blank)", ms[0].Hunger, ms[0].Fullness)
	}
	wantC := []Comment{{ID: "1796173965126-975ca211", ShareID: "e17d6d29d7d7b55f", From: "Dr. Rossi", Text: "=more greens, please", At: at}}
	if d := cmp.Diff(wantC, ms[0].Comments); d != "" {
		t.Errorf("comments (-want +got):\n%s", d)
	}
	for _, m := range ms[:2] {
		rc, err := a.OpenPhoto(m.Photo)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("photo %s: %v", m.Photo.File, err)
		}
		cfg, _, err := image.DecodeConfig(bytes.NewReader(b))
		if err != nil || cfg.Width != m.Photo.Width || cfg.Height != m.Photo.Height || m.Photo.Size != int64(len(b)) {
			t.Errorf("photo %s: %dx%d (%v), %d bytes; want %dx%d, %d bytes", m.Photo.File, cfg.Width, cfg.Height, err, len(b), m.Photo.Width, m.Photo.Height, m.Photo.Size)
		}
	}
	if err := a.Verify(); err != nil {
		t.Errorf("Verify(format 1) = %v", err)
	}
}

// TestOpenZip64: a zip ending in zip64 end records that agree with its
// central directory opens.
func TestOpenZip64(t *testing.T) {
	t.Parallel()
	zb := toZip64(t, zipOf(t, mealsJSON(meal1), entry{name: "photos/a.jpg", body: []byte("x")}), 2)
	a, err := Open(bytes.NewReader(zb), int64(len(zb)), Limits{})
	if err != nil || len(a.Meals()) != 1 {
		t.Fatalf("Open(zip64) = %v", err)
	}
}
