// Package archive is ndiro's export format: the zip a person downloads
// from /account/export.zip, `ndiro backup` writes and the import reads
// back. docs/EXPORT-FORMAT.md is its contract; this package is the one
// writer (Write) and the one reader (Open) of it.
//
// A zip holds meals.json (the diary: every meal with its numbers,
// comments and, if it has one, the name of its photo), meals.csv and
// comments.csv (the same meals for a spreadsheet), the photos under
// photos/{date}/{meal_id}.jpg and, from format 2 on, manifest.json (the
// size and SHA-256 of every other file). Open checks everything a hostile
// zip could use against its reader before anything is imported: names,
// sizes, compression ratios, entry counts, meals.json's schema and the
// manifest. It knows no ndiro concept: meals here are the format's, and
// the packages that own meals convert.
package archive

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"
)

// Format versions (docs/EXPORT-FORMAT.md, versions).
const (
	// Format1 is the format written before versioning: meals.json without
	// a "format" field, no manifest.json.
	Format1 = 1
	// Format2 adds "format": 2 to meals.json and manifest.json.
	Format2 = 2
	// Current is the format Write writes and the newest Open reads.
	Current = Format2
)

// Names of the fixed files in the zip.
const (
	MealsFile    = "meals.json"
	ManifestFile = "manifest.json"
	MealsCSV     = "meals.csv"
	CommentsCSV  = "comments.csv"
)

// Meal is one meal as the format holds it.
type Meal struct {
	// ID is the meal's ID on the instance that wrote the zip,
	// "HHMMSS-xxxxxx": unique within its date there, not stable across
	// instances (an import gives the meal a new one).
	ID string
	// Date is "YYYY-MM-DD" and Time "HH:MM:SS", the owner's wall clock.
	Date string
	Time string
	// Kind is "breakfast", "lunch", "dinner", "snack" or "drink" as of
	// format 2; a reader takes it as text (a newer writer may add kinds).
	Kind  string
	Notes string
	// Kcal, ProteinG, CarbsG and FatG are exact decimals (kilocalories and
	// grams); nil is blank, never 0.
	Kcal     *decimal.Decimal
	ProteinG *decimal.Decimal
	CarbsG   *decimal.Decimal
	FatG     *decimal.Decimal
	// Hunger before and Fullness after, 1 (least) to 5 (most); 0 is blank.
	Hunger   int
	Fullness int
	// PhotoTaken is the photo's camera wall-clock capture time,
	// "2006-01-02T15:04:05"; "" if unknown or no photo.
	PhotoTaken string
	// CreatedAt and UpdatedAt are when the meal was first saved and last
	// changed, to the nanosecond the writer kept.
	CreatedAt time.Time
	UpdatedAt time.Time
	// Photo is the meal's photo; nil is none.
	Photo *PhotoRef
	// Comments are what share recipients wrote, oldest first.
	Comments []Comment
}

// PhotoRef is where a meal's photo is in the zip and its pixel size.
type PhotoRef struct {
	// File is the photo's entry name, "photos/2026-09-01/123000-abcdef.jpg"
	// in a zip; "" when Missing. In /account/export.json (no zip) it is
	// empty and URL names the photo on the site instead.
	File string
	// URL is the photo's address on the site that wrote it, only in
	// /account/export.json: it opens while signed in there.
	URL string
	// Width and Height are the photo's pixel size as displayed.
	Width  int
	Height int
	// Missing is true when the writer's bucket had no object for the
	// photo: the zip holds no file for it, though the meal had one.
	Missing bool
	// Size is the entry's uncompressed size in bytes, from the zip's
	// central directory (0 outside a zip, or when Missing); it is not in
	// meals.json.
	Size int64
}

// Comment is one comment a share recipient left on a meal.
type Comment struct {
	// ID is the comment's ID on the writing instance (13 digits of Unix
	// milliseconds, "-", 8 hex digits); not stable across instances.
	ID string
	// ShareID names the link it came through by a digest of its token,
	// never the token; it names a link of the writing instance only.
	ShareID string
	// From is the link's label when the comment was written.
	From string
	Text string
	// At is when it was written.
	At time.Time
}

// Manifest is manifest.json: what the zip holds, so a reader can tell a
// whole archive from a damaged or cut one.
type Manifest struct {
	Format     int       `json:"format"`
	App        string    `json:"app"`
	AppVersion string    `json:"app_version"`
	ExportedAt time.Time `json:"exported_at"`
	// Meals and Photos count meals.json's meals and the photo files.
	Meals  int `json:"meals"`
	Photos int `json:"photos"`
	// Files lists every other file of the zip in the order written.
	Files []FileSum `json:"files"`
}

// FileSum is one file of the manifest: its name in the zip, uncompressed
// size in bytes and SHA-256 (64 lowercase hex digits).
type FileSum struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Refusal is why Open (or a read of one photo) will not take a zip: a
// sentence a person can act on, such as "meals.json: meal 14: kcal is a
// string; it must be a number". Every check of the format fails with one;
// find it with errors.As.
type Refusal struct {
	Reason string
}

func (r *Refusal) Error() string { return "archive refused: " + r.Reason }

// refuse builds a *Refusal from a format and its arguments.
func refuse(format string, args ...any) *Refusal {
	return &Refusal{Reason: fmt.Sprintf(format, args...)}
}
