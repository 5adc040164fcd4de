package archive

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/shopspring/decimal"
)

// dec returns a pointer to the decimal s.
func dec(s string) *decimal.Decimal {
	d := decimal.RequireFromString(s)
	return &d
}

// sampleMeals returns meals with every field of the format set on at
// least one: numbers with and without a decimal, hunger and fullness,
// notes with newlines and formula starts, a photo with its size and
// capture time, one whose photo is missing, comments, times with
// nanoseconds and zones other than UTC.
func sampleMeals() []Meal {
	rome := time.FixedZone("CET", 3600)
	return []Meal{
		{
			ID: "123000-abcdef", Date: "2026-09-01", Time: "12:30:00", Kind: "lunch",
			Notes: "=HYPERLINK(\"x\")\nsoup, \"bread\"\tand ünïcode 🍜",
			Kcal:  dec("512.5"), ProteinG: dec("21"), CarbsG: dec("0"), FatG: dec("3.1"),
			Hunger: 4, Fullness: 2, PhotoTaken: "2026-09-01T12:29:58",
			CreatedAt: time.Date(2026, 9, 1, 12, 31, 0, 123456789, time.UTC),
			UpdatedAt: time.Date(2026, 9, 2, 8, 0, 0, 5, rome),
			Photo:     &PhotoRef{Width: 1600, Height: 1200},
			Comments: []Comment{
				{ID: "1788000000000-0a1b2c3d", ShareID: "s1", From: "Dr. Rossi", Text: "=more greens", At: time.Date(2026, 9, 3, 9, 0, 0, 0, time.UTC)},
				{ID: "1788000000001-0a1b2c3e", ShareID: "s2", From: "Ana", Text: "Looks good\nreally", At: time.Date(2026, 9, 3, 9, 0, 1, 0, time.UTC)},
			},
		},
		{
			ID: "080000-000001", Date: "2026-09-02", Time: "08:00:00", Kind: "breakfast", Notes: "",
			CreatedAt: time.Date(2026, 9, 2, 8, 1, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 9, 2, 8, 1, 0, 0, time.UTC),
			Photo: &PhotoRef{Width: 900, Height: 1600},
		},
		{
			ID: "190000-ffffff", Date: "2026-09-03", Time: "19:00:00", Kind: "dinner", Notes: "-", Kcal: dec("-5"),
			CreatedAt: time.Date(2026, 9, 3, 19, 0, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 9, 3, 19, 0, 0, 0, time.UTC),
		},
	}
}

// photoSource returns a Source.Photo serving bytes by meal ID: a meal
// absent from photos is missing.
func photoSource(photos map[string][]byte) func(context.Context, *Meal, func() (io.Writer, error)) error {
	return func(_ context.Context, m *Meal, open func() (io.Writer, error)) error {
		b, ok := photos[m.ID]
		if !ok {
			return ErrPhotoMissing
		}
		w, err := open()
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
}

// writeSample writes sampleMeals with the first meal's photo in the zip
// and the second's missing.
func writeSample(t testing.TB) ([]byte, []Meal, map[string][]byte) {
	t.Helper()
	meals := sampleMeals()
	photos := map[string][]byte{"123000-abcdef": bytes.Repeat([]byte("jpeg bytes "), 300)}
	var buf bytes.Buffer
	src := Source{
		Header:     Header{ExportedAt: time.Date(2026, 9, 4, 10, 0, 0, 0, time.UTC), Email: "owner@example.com", TimeZone: "Europe/Rome"},
		AppVersion: "v1.2.3",
		Meals:      meals,
		Photo:      photoSource(photos),
	}
	if err := Write(context.Background(), &buf, src); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return buf.Bytes(), meals, photos
}

// TestWriteOpenRoundTrip: what Write writes, Open reads back field for
// field, the photo's bytes included, and Write leaves its Source as it was.
func TestWriteOpenRoundTrip(t *testing.T) {
	t.Parallel()
	zb, meals, photos := writeSample(t)
	if d := cmp.Diff(sampleMeals(), meals); d != "" {
		t.Errorf("Write changed its source's meals (-before +after):\n%s", d)
	}
	a, err := Open(bytes.NewReader(zb), int64(len(zb)), Limits{})
	if err != nil {
		t.Fatalf("Open(what Write wrote) = %v", err)
	}
	want := sampleMeals()
	want[0].Photo = &PhotoRef{File: "photos/2026-09-01/123000-abcdef.jpg", Width: 1600, Height: 1200, Size: int64(len(photos["123000-abcdef"]))}
	want[1].Photo = &PhotoRef{Missing: true, Width: 900, Height: 1600}
	// Times come back as the instants they were (RFC 3339 keeps the offset).
	if d := cmp.Diff(want, a.Meals(), cmp.Comparer(func(x, y time.Time) bool { return x.Equal(y) }), cmp.Comparer(func(x, y decimal.Decimal) bool { return x.Equal(y) && x.String() == y.String() })); d != "" {
		t.Errorf("meals read back (-written +read):\n%s", d)
	}
	if got := a.Meals()[0].UpdatedAt; got.Nanosecond() != 5 {
		t.Errorf("updated_at read back as %v, lost its nanoseconds", got)
	}
	if d := cmp.Diff(Header{Format: Current, ExportedAt: time.Date(2026, 9, 4, 10, 0, 0, 0, time.UTC), Email: "owner@example.com", TimeZone: "Europe/Rome"}, a.Header()); d != "" {
		t.Errorf("header (-want +got):\n%s", d)
	}
	m := a.Manifest()
	if m == nil || m.Format != Current || m.App != "ndiro" || m.AppVersion != "v1.2.3" || m.Meals != 3 || m.Photos != 1 || len(m.Files) != 4 {
		t.Fatalf("manifest = %+v, want format %d, ndiro v1.2.3, 3 meals, 1 photo, 4 files", m, Current)
	}
	var names []string
	for _, f := range m.Files {
		names = append(names, f.Name)
	}
	if d := cmp.Diff([]string{"photos/2026-09-01/123000-abcdef.jpg", MealsFile, MealsCSV, CommentsCSV}, names); d != "" {
		t.Errorf("manifest files (-want +got):\n%s", d)
	}
	rc, err := a.OpenPhoto(a.Meals()[0].Photo)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, photos["123000-abcdef"]) {
		t.Errorf("OpenPhoto read %d bytes, %v; want the %d written", len(got), err, len(photos["123000-abcdef"]))
	}
	if _, err := a.OpenPhoto(a.Meals()[1].Photo); refusal(err) == "" {
		t.Errorf("OpenPhoto(a missing photo) = %v, want a refusal", err)
	}
	if err := a.Verify(); err != nil {
		t.Errorf("Verify(what Write wrote) = %v", err)
	}
}

// TestWriteStopsOnPhotoError: a photo that fails other than missing stops
// Write with its error, leaving no zip a reader opens.
func TestWriteStopsOnPhotoError(t *testing.T) {
	t.Parallel()
	boom := errors.New("bucket on fire")
	var buf bytes.Buffer
	calls := 0
	err := Write(context.Background(), &buf, Source{Meals: sampleMeals(), Photo: func(_ context.Context, m *Meal, open func() (io.Writer, error)) error {
		calls++
		if calls == 2 {
			return boom
		}
		w, err := open()
		if err != nil {
			return err
		}
		_, err = w.Write([]byte("jpeg"))
		return err
	}})
	if !errors.Is(err, boom) {
		t.Fatalf("Write = %v, want the photo's error", err)
	}
	if buf.Len() == 0 {
		t.Error("Write sent nothing before the failing photo; the first photo's entry should have been flushed")
	}
	if _, err := Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()), Limits{}); refusal(err) == "" {
		t.Errorf("Open(a zip cut short) = %v, want a refusal", err)
	}
}

// refusal returns the Reason of err's *Refusal, or "" if it has none.
func refusal(err error) string {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	return ""
}
