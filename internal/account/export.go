package account

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/user"
)

// exportFile is the shape of export.json and of meals.json in the zip.
type exportFile struct {
	ExportedAt time.Time    `json:"exported_at"`
	Email      string       `json:"email"`
	TimeZone   string       `json:"time_zone,omitempty"`
	Meals      []exportMeal `json:"meals"`
}

// exportMeal is a meal with, if it has a photo, where to find it and its
// pixel size, and the comments recipients left on it, oldest first (each
// naming its link by the label it had and a digest of the token, never
// the token).
type exportMeal struct {
	meal.Meal
	Photo    *exportPhoto   `json:"photo,omitempty"`
	Comments []meal.Comment `json:"comments,omitempty"`
}

// exportPhoto locates a meal's photo: URL on this site (it opens while
// signed in) in export.json, File inside the zip in meals.json. Missing is
// true, and File empty, in meals.json for a photo whose object was not in
// the bucket when the zip was made: the zip holds no file for it.
type exportPhoto struct {
	URL     string `json:"url,omitempty"`
	File    string `json:"file,omitempty"`
	Missing bool   `json:"missing,omitempty"`
	Width   int    `json:"width"`
	Height  int    `json:"height"`
}

// Export sends every meal of the owner as JSON, numbers as JSON numbers.
func (h *Handler) Export(w http.ResponseWriter, r *http.Request) error {
	u := user.FromContext(r.Context())
	meals, err := h.meals.All(r.Context(), u.ID)
	if err != nil {
		return err
	}
	f := h.exportFile(u, meals, func(m *meal.Meal) *exportPhoto {
		return &exportPhoto{URL: h.baseURL + m.DisplayURL(), Width: m.PhotoW, Height: m.PhotoH}
	})
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="ndiro-meals.json"`)
	w.Header().Set("Cache-Control", "no-store")
	_, err = buf.WriteTo(w)
	return err
}

func (h *Handler) exportFile(u *user.User, meals []meal.Meal, locate func(*meal.Meal) *exportPhoto) exportFile {
	out := make([]exportMeal, len(meals))
	for i := range meals {
		out[i].Meal = meals[i]
		out[i].Comments = meals[i].SortedComments()
		if len(out[i].Comments) == 0 {
			out[i].Comments = nil
		}
		if meals[i].HasPhoto() {
			out[i].Photo = locate(&meals[i])
		}
	}
	return exportFile{ExportedAt: h.now().UTC(), Email: u.Email, TimeZone: u.TimeZone, Meals: out}
}

// ExportDeadline is how long a zip export may take to send: it outlives
// the server's write timeout, which suits pages, not a download of every
// photo over a slow line.
const ExportDeadline = 30 * time.Minute

// ExportZip streams every meal of the owner as a zip:
// photos/{date}/{meal_id}.jpg, the display copies, read straight from S3
// (not through the shared photo cache) one at a time, so memory stays flat
// whatever the number of photos; then meals.json (as Export, with each
// photo's file name) and meals.csv (RFC 4180, UTF-8 with a byte-order mark,
// formulas neutralised). A photo whose object is missing from the bucket
// (photo.ErrNotFound) is left out and marked in both: "missing": true and
// no file in meals.json, an empty photo cell and photo_missing "true" in
// meals.csv; the rest of the export goes on. The archive is written to the
// response as it is built: there is no Content-Length, and any other
// failure after the first byte aborts the response (http.ErrAbortHandler),
// so the download fails visibly instead of ending as a valid-looking but
// incomplete zip.
func (h *Handler) ExportZip(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	u := user.FromContext(ctx)
	meals, err := h.meals.All(ctx, u.ID)
	if err != nil {
		return err // nothing sent yet: an ordinary error page
	}
	if err := http.NewResponseController(w).SetWriteDeadline(time.Now().Add(ExportDeadline)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	// The answer starts with the zip's first entry, once the first photo
	// is in hand: a bucket that does not answer it (or any failure before)
	// still gets the error page, not a cut download.
	started := false
	begin := func() {
		if started {
			return
		}
		started = true
		hd := w.Header()
		hd.Set("Content-Type", "application/zip")
		hd.Set("Content-Disposition", `attachment; filename="ndiro-export-`+h.now().In(u.Location()).Format(time.DateOnly)+`.zip"`)
		hd.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		// Sent at once: a failure from here on is a download cut short,
		// which no client takes for an answer it may ask again for.
		http.NewResponseController(w).Flush()
	}

	zw := zip.NewWriter(w)
	abort := func(what string, err error) {
		h.log.Error("export failed mid-stream", "user_id", u.ID, "part", what, "err", err)
		panic(http.ErrAbortHandler)
	}
	// The photos first: which of them are missing is known only once they
	// have been asked for, and meals.json and meals.csv say so.
	missing := map[string]bool{} // meal sort keys: an ID is unique within its day only
	for i := range meals {
		m := &meals[i]
		if !m.HasPhoto() {
			continue
		}
		_, err := h.photos.Stream(ctx, u.ID, photo.Key(u.ID, m.Date, m.ID, m.PhotoSet.Largest()), func() (io.Writer, error) {
			begin()
			// JPEG is compressed already: stored, not deflated again.
			return zw.CreateHeader(&zip.FileHeader{Name: photoFile(m), Method: zip.Store, Modified: m.UpdatedAt})
		})
		if errors.Is(err, photo.ErrNotFound) {
			h.log.Warn("export photo missing", "user_id", u.ID, "meal_id", m.ID)
			missing[m.SK] = true
			continue
		}
		if err != nil && !started {
			return err // nothing sent yet: an ordinary error page
		}
		if err != nil {
			abort("photo", err)
		}
	}
	begin()
	f := h.exportFile(u, meals, func(m *meal.Meal) *exportPhoto {
		if missing[m.SK] {
			return &exportPhoto{Missing: true, Width: m.PhotoW, Height: m.PhotoH}
		}
		return &exportPhoto{File: photoFile(m), Width: m.PhotoW, Height: m.PhotoH}
	})
	jw, err := zw.CreateHeader(&zip.FileHeader{Name: "meals.json", Method: zip.Deflate, Modified: f.ExportedAt})
	if err != nil {
		abort("meals.json", err)
	}
	enc := json.NewEncoder(jw)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		abort("meals.json", err)
	}
	cw, err := zw.CreateHeader(&zip.FileHeader{Name: "meals.csv", Method: zip.Deflate, Modified: f.ExportedAt})
	if err != nil {
		abort("meals.csv", err)
	}
	if err := writeCSV(cw, meals, missing); err != nil {
		abort("meals.csv", err)
	}
	kw, err := zw.CreateHeader(&zip.FileHeader{Name: "comments.csv", Method: zip.Deflate, Modified: f.ExportedAt})
	if err != nil {
		abort("comments.csv", err)
	}
	if err := writeCommentsCSV(kw, meals); err != nil {
		abort("comments.csv", err)
	}
	if err := zw.Close(); err != nil {
		abort("zip directory", err)
	}
	return nil
}

// photoFile is a meal photo's name in the zip: "photos/2026-09-01/
// 123000-abcdef.jpg", safe on every file system (no ':' or '\\').
func photoFile(m *meal.Meal) string { return "photos/" + m.Date + "/" + m.ID + ".jpg" }

// csvHeader names meals.csv's columns.
var csvHeader = []string{"id", "date", "time", "kind", "notes", "kcal", "protein_g", "carbs_g", "fat_g", "hunger", "fullness", "photo", "photo_taken", "created_at", "updated_at", "photo_missing"}

// writeCSV writes meals as RFC 4180 CSV (CRLF line ends, quoted where
// needed) after a UTF-8 byte-order mark, which spreadsheet apps need to
// read UTF-8. Text cells go through textCell; numbers are written as they
// are stored. A meal whose sort key is in missing has a photo the zip lacks: its
// photo cell is empty and its photo_missing cell "true".
func writeCSV(w interface{ Write([]byte) (int, error) }, meals []meal.Meal, missing map[string]bool) error {
	if _, err := w.Write([]byte("\uFEFF")); err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	cw.UseCRLF = true
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	num := func(n *meal.Number) string {
		if n == nil {
			return ""
		}
		return n.String()
	}
	scale := func(v *int) string {
		if v == nil {
			return ""
		}
		return strconv.Itoa(*v)
	}
	for i := range meals {
		m := &meals[i]
		file, lost := "", ""
		switch {
		case missing[m.SK]:
			lost = "true"
		case m.HasPhoto():
			file = photoFile(m)
		}
		rec := []string{
			textCell(m.ID), textCell(m.Date), textCell(m.Time), textCell(string(m.Kind)), textCell(m.Notes),
			num(m.Kcal), num(m.ProteinG), num(m.CarbsG), num(m.FatG), scale(m.Hunger), scale(m.Fullness),
			textCell(file), textCell(m.PhotoTaken),
			m.CreatedAt.UTC().Format(time.RFC3339), m.UpdatedAt.UTC().Format(time.RFC3339),
			lost,
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// formulaStarts are the first characters with which a spreadsheet app
// reads a cell as a formula (or, tab and carriage return, shifts it into
// one), in ASCII and full width (OWASP, CSV injection): = + - @ U+0009
// U+000D ＝ ＋ － ＠. It is the one list; textCell reads it.
const formulaStarts = "=+-@\t\r＝＋－＠"

// textCell neutralises a text cell that a spreadsheet would run as a
// formula, one whose first character (a rune, so the full-width forms
// count) is in formulaStarts, by putting an apostrophe in front; the JSON
// keeps the raw text.
func textCell(s string) string {
	if r, _ := utf8.DecodeRuneInString(s); s != "" && strings.ContainsRune(formulaStarts, r) {
		return "'" + s
	}
	return s
}

// commentsHeader names comments.csv's columns: the meal (id, date, time)
// and the comment (its id, the label of the link it came through, when,
// the text).
var commentsHeader = []string{"meal_id", "date", "time", "comment_id", "from", "at", "text"}

// writeCommentsCSV writes every comment of meals, oldest meal first and
// each meal's oldest comment first, in meals.csv's form (byte-order mark,
// CRLF, textCell).
func writeCommentsCSV(w interface{ Write([]byte) (int, error) }, meals []meal.Meal) error {
	if _, err := w.Write([]byte("\uFEFF")); err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	cw.UseCRLF = true
	if err := cw.Write(commentsHeader); err != nil {
		return err
	}
	for i := range meals {
		m := &meals[i]
		for _, c := range m.SortedComments() {
			if err := cw.Write([]string{textCell(m.ID), textCell(m.Date), textCell(m.Time), textCell(c.ID), textCell(c.Label), c.At.UTC().Format(time.RFC3339), textCell(c.Text)}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
