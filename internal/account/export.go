package account

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/shopspring/decimal"

	"ndiro/internal/archive"
	"ndiro/internal/dynamo"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/user"
	"ndiro/internal/version"
)

// Archived returns m as the export format holds it (package archive):
// its numbers as exact decimals, its comments oldest first, and, if it
// has a photo, the photo's pixel size (its place in a zip is the
// writer's). An import recognises a meal already in the diary by
// Archived(m).ContentKey().
func Archived(m *meal.Meal) archive.Meal {
	a := archive.Meal{
		ID: m.ID, Date: m.Date, Time: m.Time, Kind: string(m.Kind), Notes: m.Notes,
		PhotoTaken: m.PhotoTaken, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt,
	}
	for _, n := range []struct {
		to   **decimal.Decimal
		from *meal.Number
	}{{&a.Kcal, m.Kcal}, {&a.ProteinG, m.ProteinG}, {&a.CarbsG, m.CarbsG}, {&a.FatG, m.FatG}} {
		if n.from != nil {
			d := n.from.Decimal()
			*n.to = &d
		}
	}
	if m.Hunger != nil {
		a.Hunger = *m.Hunger
	}
	if m.Fullness != nil {
		a.Fullness = *m.Fullness
	}
	if m.HasPhoto() {
		a.Photo = &archive.PhotoRef{Width: m.PhotoW, Height: m.PhotoH}
	}
	for _, c := range m.SortedComments() {
		a.Comments = append(a.Comments, archive.Comment{ID: c.ID, ShareID: c.ShareID, From: c.Label, Text: c.Text, At: c.At})
	}
	return a
}

// Export sends every meal of the owner as JSON: meals.json of the
// current export format (archive.WriteMealsJSON), each photo named by its
// URL on this site instead of a file.
func (h *Handler) Export(w http.ResponseWriter, r *http.Request) error {
	u := user.FromContext(r.Context())
	meals, err := h.meals.All(r.Context(), u.ID)
	if err != nil {
		return err
	}
	out := make([]archive.Meal, len(meals))
	for i := range meals {
		out[i] = Archived(&meals[i])
		if out[i].Photo != nil {
			out[i].Photo.URL = h.baseURL + meals[i].DisplayURL()
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="ndiro-meals.json"`)
	w.Header().Set("Cache-Control", "no-store")
	lazy := &lazyWriter{w: w}
	if err := archive.WriteMealsJSON(lazy, h.header(u), out); err != nil && !lazy.started {
		return err
	} else if err != nil {
		h.log.Error("export failed mid-stream", "user_id", u.ID, "part", "export.json", "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

func (h *Handler) header(u *user.User) archive.Header {
	return archive.Header{ExportedAt: h.now().UTC(), Email: u.Email, TimeZone: u.TimeZone}
}

// ExportDeadline is how long a zip export may take to send: it outlives
// the server's write timeout, which suits pages, not a download of every
// photo over a slow line.
const ExportDeadline = 30 * time.Minute

// ExportZip streams every meal of the owner as the export zip
// (Exporter.Write, docs/EXPORT-FORMAT.md). The archive is written to the
// response as it is built: there is no Content-Length. The answer starts
// with the zip's first entry, once the first photo is in hand, so a
// bucket that does not answer it (or any failure before) still gets the
// error page; any failure after the first byte aborts the response
// (http.ErrAbortHandler), so the download fails visibly instead of
// ending as a valid-looking but incomplete zip.
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
	lazy := &lazyWriter{w: w, begin: func() {
		hd := w.Header()
		hd.Set("Content-Type", "application/zip")
		hd.Set("Content-Disposition", `attachment; filename="ndiro-export-`+h.now().In(u.Location()).Format(time.DateOnly)+`.zip"`)
		hd.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		// Sent at once: a failure from here on is a download cut short,
		// which no client takes for an answer it may ask again for.
		http.NewResponseController(w).Flush()
	}}
	ex := Exporter{Photos: h.photos, Now: h.now, Log: h.log}
	err = ex.write(ctx, lazy, u, meals)
	switch {
	case err != nil && !lazy.started:
		return err // nothing sent yet: an ordinary error page
	case err != nil:
		h.log.Error("export failed mid-stream", "user_id", u.ID, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// Exporter writes one person's export zip: the export route and
// `ndiro backup` both write through it.
type Exporter struct {
	// Meals reads the person's meals; Photos reads each photo straight
	// from S3 (never through the shared photo cache: one export must not
	// flush everyone's photos).
	Meals  *meal.Store
	Photos *photo.Store
	Now    func() time.Time
	Log    *slog.Logger
	// Pace, if set, pays for the reads of the meals (meal.Store.AllPaced):
	// background work (`ndiro backup`) keeps to its share of the table's
	// read capacity. Nil reads them as the export page does.
	Pace dynamo.Pace
}

// Write writes u's export zip to w (archive.Write): every meal, and the
// display copy of every photo read from S3 one at a time, so memory stays
// flat whatever the number of photos. A photo whose object is missing
// from the bucket (photo.ErrNotFound) is left out and marked so (logged
// as a warning); the rest goes on. Any other error stops it, with w
// holding a zip cut short.
func (e Exporter) Write(ctx context.Context, w io.Writer, u *user.User) error {
	var meals []meal.Meal
	var err error
	if e.Pace != nil {
		meals, err = e.Meals.AllPaced(ctx, u.ID, e.Pace)
	} else {
		meals, err = e.Meals.All(ctx, u.ID)
	}
	if err != nil {
		return err
	}
	return e.write(ctx, w, u, meals)
}

func (e Exporter) write(ctx context.Context, w io.Writer, u *user.User, meals []meal.Meal) error {
	src := archive.Source{
		Header:     archive.Header{ExportedAt: e.Now().UTC(), Email: u.Email, TimeZone: u.TimeZone},
		AppVersion: version.String(),
		Meals:      make([]archive.Meal, len(meals)),
	}
	byFile := make(map[string]*meal.Meal, len(meals))
	for i := range meals {
		src.Meals[i] = Archived(&meals[i])
		byFile[archive.PhotoFile(meals[i].Date, meals[i].ID)] = &meals[i]
	}
	src.Photo = func(ctx context.Context, am *archive.Meal, open func() (io.Writer, error)) error {
		m := byFile[archive.PhotoFile(am.Date, am.ID)]
		_, err := e.Photos.Stream(ctx, u.ID, photo.Key(u.ID, m.Date, m.ID, m.PhotoSet.Largest()), open)
		if errors.Is(err, photo.ErrNotFound) {
			e.Log.Warn("export photo missing", "user_id", u.ID, "meal_id", m.ID)
			return archive.ErrPhotoMissing
		}
		return err
	}
	return archive.Write(ctx, w, src)
}

// lazyWriter sends nothing, headers included, until the first byte is
// written: it calls begin then, and remembers it did.
type lazyWriter struct {
	w       io.Writer
	begin   func()
	started bool
}

func (l *lazyWriter) Write(p []byte) (int, error) {
	if !l.started {
		l.started = true
		if l.begin != nil {
			l.begin()
		}
	}
	return l.w.Write(p)
}
