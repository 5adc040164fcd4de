package archive

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/shopspring/decimal"
)

// photoDir is the folder of the photos in the zip.
const photoDir = "photos/"

// PhotoFile is the name of a meal's photo in the zip,
// "photos/2026-09-01/123000-abcdef.jpg" for the meal of that date and ID:
// safe on every file system (no ':' or '\\'), unique because an ID is
// unique within its date.
func PhotoFile(date, id string) string { return photoDir + date + "/" + id + ".jpg" }

// ErrPhotoMissing is what a Source's Photo returns when the meal's photo
// is gone from storage: Write marks the photo missing and goes on.
var ErrPhotoMissing = errors.New("archive: photo missing from storage")

// Source is one person's diary to Write.
type Source struct {
	// Header's ExportedAt, Email and TimeZone go into meals.json (Format
	// is ignored: Write writes Current).
	Header
	// AppVersion is the writing ndiro's version (internal/version), for
	// the manifest.
	AppVersion string
	// Meals are the meals in the order meals.json lists them (oldest
	// first). A meal with a photo has a non-nil Photo with its Width and
	// Height; Write fills in File and Missing.
	Meals []Meal
	// Photo streams the photo of m (a JPEG) into the writer open returns,
	// calling open once it holds the photo's first bytes, so a storage
	// failure before then leaves the zip untouched; it returns
	// ErrPhotoMissing (before calling open) if the photo is gone. It is
	// called one photo at a time, in Meals' order.
	Photo func(ctx context.Context, m *Meal, open func() (io.Writer, error)) error
}

// Write writes src to w as a zip of the current format, streaming: the
// photos first (stored, not deflated: JPEG is compressed already), each
// read from Photo straight into the zip with nothing held beyond the
// copy buffer, then meals.json (with the photos' names, and the ones
// Photo found missing marked so), meals.csv, comments.csv and last
// manifest.json with the size and SHA-256 of every other file. A photo
// that is missing is left out and the rest goes on; any other error
// stops Write and returns it, with w holding a zip cut short (no central
// directory), which no reader takes for a whole one. Write writes nothing
// to w before the first photo's open (or, with no photo, meals.json).
func Write(ctx context.Context, w io.Writer, src Source) error {
	zw := zip.NewWriter(w)
	man := Manifest{Format: Current, App: "ndiro", AppVersion: src.AppVersion, ExportedAt: src.ExportedAt.UTC(), Meals: len(src.Meals)}
	meals := make([]Meal, len(src.Meals))
	copy(meals, src.Meals)
	names := make(map[string]bool)
	for i := range meals {
		m := &meals[i]
		if m.Photo == nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		ref := *m.Photo
		m.Photo = &ref
		ref.File, ref.Missing, ref.URL, ref.Size = PhotoFile(m.Date, m.ID), false, "", 0
		if names[ref.File] {
			return fmt.Errorf("archive: two meals have the photo name %s", ref.File)
		}
		names[ref.File] = true
		var sum *summer
		err := src.Photo(ctx, m, func() (io.Writer, error) {
			fw, err := zw.CreateHeader(&zip.FileHeader{Name: ref.File, Method: zip.Store, Modified: m.UpdatedAt})
			if err != nil {
				return nil, err
			}
			sum = newSummer(ref.File, fw)
			return sum, nil
		})
		if errors.Is(err, ErrPhotoMissing) && sum == nil {
			ref.File, ref.Missing = "", true
			continue
		}
		if err != nil {
			return fmt.Errorf("archive: photo %s: %w", ref.File, err)
		}
		if sum == nil {
			return fmt.Errorf("archive: photo %s: the source wrote nothing", ref.File)
		}
		man.Files = append(man.Files, sum.sum())
		man.Photos++
	}
	h := src.Header
	h.ExportedAt = man.ExportedAt
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{MealsFile, func(w io.Writer) error { return WriteMealsJSON(w, h, meals) }},
		{MealsCSV, func(w io.Writer) error { return writeMealsCSV(w, meals) }},
		{CommentsCSV, func(w io.Writer) error { return writeCommentsCSV(w, meals) }},
	} {
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: man.ExportedAt})
		if err != nil {
			return fmt.Errorf("archive: %s: %w", f.name, err)
		}
		sum := newSummer(f.name, fw)
		if err := f.write(sum); err != nil {
			return fmt.Errorf("archive: %s: %w", f.name, err)
		}
		man.Files = append(man.Files, sum.sum())
	}
	fw, err := zw.CreateHeader(&zip.FileHeader{Name: ManifestFile, Method: zip.Deflate, Modified: man.ExportedAt})
	if err != nil {
		return fmt.Errorf("archive: %s: %w", ManifestFile, err)
	}
	enc := json.NewEncoder(fw)
	enc.SetIndent("", "  ")
	if err := enc.Encode(man); err != nil {
		return fmt.Errorf("archive: %s: %w", ManifestFile, err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("archive: zip directory: %w", err)
	}
	return nil
}

// summer counts and hashes what passes through it to w.
type summer struct {
	name string
	w    io.Writer
	h    hash.Hash
	n    int64
}

func newSummer(name string, w io.Writer) *summer {
	return &summer{name: name, w: w, h: sha256.New()}
}

func (s *summer) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	s.h.Write(p[:n])
	s.n += int64(n)
	return n, err
}

func (s *summer) sum() FileSum {
	return FileSum{Name: s.name, Size: s.n, SHA256: hex.EncodeToString(s.h.Sum(nil))}
}

// The JSON shapes of meals.json, in the order of its fields.
type (
	wireMeal struct {
		ID         string        `json:"id"`
		Date       string        `json:"date"`
		Time       string        `json:"time"`
		Kind       string        `json:"kind"`
		Notes      string        `json:"notes"`
		Kcal       *json.Number  `json:"kcal,omitempty"`
		ProteinG   *json.Number  `json:"protein_g,omitempty"`
		CarbsG     *json.Number  `json:"carbs_g,omitempty"`
		FatG       *json.Number  `json:"fat_g,omitempty"`
		Hunger     int           `json:"hunger,omitempty"`
		Fullness   int           `json:"fullness,omitempty"`
		PhotoTaken string        `json:"photo_taken,omitempty"`
		CreatedAt  time.Time     `json:"created_at"`
		UpdatedAt  time.Time     `json:"updated_at"`
		Photo      *wirePhoto    `json:"photo,omitempty"`
		Comments   []wireComment `json:"comments,omitempty"`
	}
	wirePhoto struct {
		URL     string `json:"url,omitempty"`
		File    string `json:"file,omitempty"`
		Missing bool   `json:"missing,omitempty"`
		Width   int    `json:"width"`
		Height  int    `json:"height"`
	}
	wireComment struct {
		ID      string    `json:"id"`
		ShareID string    `json:"share_id"`
		From    string    `json:"from"`
		Text    string    `json:"text"`
		At      time.Time `json:"at"`
	}
)

func wireNumber(d *decimal.Decimal) *json.Number {
	if d == nil {
		return nil
	}
	n := json.Number(d.String())
	return &n
}

func wireOf(m *Meal) wireMeal {
	w := wireMeal{
		ID: m.ID, Date: m.Date, Time: m.Time, Kind: m.Kind, Notes: m.Notes,
		Kcal: wireNumber(m.Kcal), ProteinG: wireNumber(m.ProteinG), CarbsG: wireNumber(m.CarbsG), FatG: wireNumber(m.FatG),
		Hunger: m.Hunger, Fullness: m.Fullness, PhotoTaken: m.PhotoTaken,
		CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt,
	}
	if p := m.Photo; p != nil {
		w.Photo = &wirePhoto{URL: p.URL, File: p.File, Missing: p.Missing, Width: p.Width, Height: p.Height}
	}
	for _, c := range m.Comments {
		w.Comments = append(w.Comments, wireComment(c))
	}
	return w
}

// WriteMealsJSON writes meals.json of the current format for h and meals
// to w, indented, one meal encoded at a time: {"format": 2,
// "exported_at", "email", "time_zone" (if any), "meals": [...]}, numbers
// as bare JSON numbers. /account/export.json is this document too, its
// photos named by URL instead of File.
func WriteMealsJSON(w io.Writer, h Header, meals []Meal) error {
	head := struct {
		Format     int       `json:"format"`
		ExportedAt time.Time `json:"exported_at"`
		Email      string    `json:"email"`
		TimeZone   string    `json:"time_zone,omitempty"`
	}{Current, h.ExportedAt.UTC(), h.Email, h.TimeZone}
	b, err := json.MarshalIndent(head, "", "  ")
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	buf.Write(b[:len(b)-2]) // without "\n}"
	buf.WriteString(",\n  \"meals\": [")
	for i := range meals {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString("\n    ")
		b, err := json.MarshalIndent(wireOf(&meals[i]), "    ", "  ")
		if err != nil {
			return err
		}
		buf.Write(b)
		if buf.Len() >= 32<<10 {
			if _, err := buf.WriteTo(w); err != nil {
				return err
			}
		}
	}
	if len(meals) > 0 {
		buf.WriteString("\n  ")
	}
	buf.WriteString("]\n}\n")
	_, err = buf.WriteTo(w)
	return err
}
