package archive

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// csvHeader names meals.csv's columns.
var csvHeader = []string{"id", "date", "time", "kind", "notes", "kcal", "protein_g", "carbs_g", "fat_g", "hunger", "fullness", "photo", "photo_taken", "created_at", "updated_at", "photo_missing"}

// writeMealsCSV writes meals as RFC 4180 CSV (CRLF line ends, quoted
// where needed) after a UTF-8 byte-order mark, which spreadsheet apps
// need to read UTF-8. Text cells go through textCell; numbers are written
// as they are held. A meal whose photo is missing has an empty photo cell
// and photo_missing "true".
func writeMealsCSV(w io.Writer, meals []Meal) error {
	if _, err := io.WriteString(w, "\uFEFF"); err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	cw.UseCRLF = true
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	num := func(d *decimal.Decimal) string {
		if d == nil {
			return ""
		}
		return d.String()
	}
	scale := func(v int) string {
		if v == 0 {
			return ""
		}
		return strconv.Itoa(v)
	}
	for i := range meals {
		m := &meals[i]
		file, lost := "", ""
		if p := m.Photo; p != nil && p.Missing {
			lost = "true"
		} else if p != nil {
			file = p.File
		}
		rec := []string{
			textCell(m.ID), textCell(m.Date), textCell(m.Time), textCell(m.Kind), textCell(m.Notes),
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

// writeCommentsCSV writes every comment of meals, in meals' order and each
// meal's comments in theirs (oldest first), in meals.csv's form
// (byte-order mark, CRLF, textCell).
func writeCommentsCSV(w io.Writer, meals []Meal) error {
	if _, err := io.WriteString(w, "\uFEFF"); err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	cw.UseCRLF = true
	if err := cw.Write(commentsHeader); err != nil {
		return err
	}
	for i := range meals {
		m := &meals[i]
		for _, c := range m.Comments {
			if err := cw.Write([]string{textCell(m.ID), textCell(m.Date), textCell(m.Time), textCell(c.ID), textCell(c.From), c.At.UTC().Format(time.RFC3339), textCell(c.Text)}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
