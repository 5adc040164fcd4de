package account

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"time"

	"ndiro/internal/archive"
	"ndiro/internal/limit"
	"ndiro/internal/photo"
	"ndiro/internal/token"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// ImportField is the import form's file field.
const ImportField = "archive"

// ImportDeadline is how long POST /account/import may take to receive
// its zip: it outlives the server's read timeout, which suits forms, not
// gigabytes over a home line.
const ImportDeadline = 6 * time.Hour

// The import's limits of one request: the parts other than the zip
// (the submit button's value) are few and small.
const (
	importMaxParts     = 10
	importMaxPartBytes = 1 << 10
	// importSlack is what the body may hold besides the zip: part
	// headers, boundaries and the small parts.
	importSlack = 64 << 10
)

// Imports are rate-limited per owner: each one costs a staged upload and
// reads of the whole directory, and a refused zip costs them too.
const (
	ImportEvery = 5 * time.Minute
	ImportBurst = 12
)

// importLimiter returns the per-owner limit of import uploads.
func importLimiter(now func() time.Time) *limit.Limiter {
	return limit.New(limit.Rule{Every: ImportEvery, Burst: ImportBurst, MaxKeys: 10_000}, now)
}

// Import takes an export zip (the multipart file field "archive") into
// the signed-in owner's diary. It is a route of its own, outside the form
// middleware and its 25 MB limit (routes.go): the body is read here as
// it arrives, the zip streamed into part objects under
// pending/{user}/import/{id}/ (photo.Store.Stage, one 8 MiB buffer)
// within NDIRO_IMPORT_MAX_BYTES (413, a declared length refused before
// any byte is read), then opened through ranged reads
// (photo.Store.OpenStaged) and checked whole by archive.Open and
// checkMeals, all of it holding a place in the staging gate (Stagings).
// Any refusal is a 4xx page with its reason, the staged parts deleted
// and nothing imported: 422 for a zip that is not a sound export, 400
// for a form without the zip, 415 for no multipart form, 409 while
// another import or upload of the owner's runs, 429 past ImportBurst
// uploads or with every place of the gate taken, 408 for an upload
// sending too little.
// A zip taken is recorded on the users row (user.Store.StartImport: the
// account active, no import running) and run in the background
// (Importer); the answer is a 303 to its progress page.
func (h *Handler) Import(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	u := user.FromContext(ctx)
	if ok, wait := h.importLimit.Allow(u.ID); !ok {
		return web.TooManyRequests(w, wait, "You have sent many zips to import in a short time.")
	}
	if u.Import.Running() || h.importer.Running(u.ID) {
		return errImportRunning
	}
	if r.ContentLength > h.importMax+importSlack {
		return h.tooLarge()
	}
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "multipart/form-data" || params["boundary"] == "" {
		return &web.Error{Status: http.StatusUnsupportedMediaType, Title: "Not a form",
			Msg: "This page takes the import form (multipart/form-data) with the zip in it, and nothing else."}
	}
	slot, err := h.stagings.enter(w, u.ID)
	if err != nil {
		return err
	}
	defer slot.release()
	rc := http.NewResponseController(w)
	for _, set := range []func(time.Time) error{rc.SetReadDeadline, rc.SetWriteDeadline} {
		if err := set(time.Now().Add(ImportDeadline)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
	}
	body := slot.watch(http.MaxBytesReader(w, r.Body, h.importMax+importSlack), rc)
	id := token.New()
	st, err := h.receive(ctx, u.ID, photo.StagedPrefix(u.ID, id), body, params["boundary"], slot)
	if err != nil {
		return err
	}
	total, err := h.check(ctx, u.ID, st)
	if err != nil {
		h.unstage(ctx, u.ID, st.Prefix)
		return err
	}
	imp := user.Import{ID: id, Prefix: st.Prefix, Size: st.Size, PartSize: st.PartSize,
		State: user.ImportRunning, Total: total, StartedAt: h.now().UTC()}
	if err := h.users.StartImport(ctx, u.ID, imp); err != nil {
		h.unstage(ctx, u.ID, st.Prefix)
		if errors.Is(err, user.ErrImportRunning) {
			return errImportRunning
		}
		return err
	}
	h.log.Info("import started", "user_id", u.ID, "bytes", st.Size, "parts", st.Parts())
	h.importer.Start(u.ID)
	web.Redirect(w, r, ImportPath)
	return nil
}

// ImportPath is the import's progress and result page.
const ImportPath = "/account/import"

var errImportRunning = &web.Error{Status: http.StatusConflict, Title: "An import is running",
	Msg: "An import of an export zip is running for this account. Wait until it has finished (its page shows how far it is), then send the next one."}

// tooLarge is the 413 of a zip over NDIRO_IMPORT_MAX_BYTES.
func (h *Handler) tooLarge() error {
	return &web.Error{Status: http.StatusRequestEntityTooLarge, Title: "Too large",
		Msg: fmt.Sprintf("The zip is larger than %s, the most this server imports (NDIRO_IMPORT_MAX_BYTES). Nothing was imported.", byteSize(h.importMax))}
}

// archivePart reads the form's parts up to the zip's and returns it
// unread. A value part may hold at most importMaxPartBytes; a file in any
// other field, more than importMaxParts parts before the zip, a body that
// is no multipart form or one without the zip are 400s.
func archivePart(mr *multipart.Reader) (*multipart.Part, error) {
	unreadable := func(err error) error {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return &web.Error{Status: http.StatusRequestEntityTooLarge, Title: "Too large", Msg: "The form was larger than this page takes."}
		}
		return &web.Error{Status: http.StatusBadRequest, Title: "Form not readable", Msg: "The form could not be read. Please try again.", Err: err}
	}
	for n := 0; ; n++ {
		if n >= importMaxParts {
			return nil, &web.Error{Status: http.StatusBadRequest, Title: "Too many fields",
				Msg: fmt.Sprintf("The form had more than %d fields before the zip, the most this page accepts.", importMaxParts)}
		}
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil, &web.Error{Status: http.StatusBadRequest, Title: "No zip chosen",
				Msg: "Choose the export zip (ndiro-export-….zip) to import, then send the form again."}
		}
		if err != nil {
			return nil, unreadable(err)
		}
		if p.FormName() == ImportField && p.FileName() != "" {
			return p, nil
		}
		if p.FileName() != "" {
			return nil, &web.Error{Status: http.StatusBadRequest, Title: "Not the import form",
				Msg: "This page takes one file, the export zip in the field " + ImportField + "."}
		}
		if k, err := io.Copy(io.Discard, io.LimitReader(p, importMaxPartBytes+1)); err != nil {
			return nil, unreadable(err)
		} else if k > importMaxPartBytes {
			return nil, &web.Error{Status: http.StatusBadRequest, Title: "Form not readable",
				Msg: "A field of the form was longer than this page takes."}
		}
	}
}

// receive reads the form in body up to its zip and stages the zip
// (stage) in slot, whose watch ends with the body: an upload the watch
// closed for sending too little is a 408.
func (h *Handler) receive(ctx context.Context, userID, prefix string, body io.Reader, boundary string, slot *staging) (photo.Staged, error) {
	defer slot.endWatch()
	part, err := archivePart(multipart.NewReader(body, boundary))
	if err == nil {
		var st photo.Staged
		if st, err = h.stage(ctx, userID, prefix, slot.count(part)); err == nil {
			return st, nil
		}
	}
	if slot.stalled.Load() {
		return photo.Staged{}, h.stagings.tooSlow(err)
	}
	return photo.Staged{}, err
}

// stage streams part into part objects under prefix and returns where
// they are: 413 past the limit (the zip's, or its owner's uploads' in
// hand together), 400 for an upload cut off, an empty file 422; the
// bucket's errors as they are. Nothing is left under prefix on an error
// (Stage deletes the parts it put).
func (h *Handler) stage(ctx context.Context, userID, prefix string, part io.Reader) (photo.Staged, error) {
	src := &readErr{r: part}
	st, err := h.photos.Stage(ctx, userID, prefix, src, h.importMax)
	var mb *http.MaxBytesError
	switch {
	case errors.Is(err, errOwnerStaged):
		return photo.Staged{}, h.stagings.ownerTooLarge()
	case errors.Is(err, photo.ErrStageTooLarge) || errors.As(err, &mb):
		return photo.Staged{}, h.tooLarge()
	case src.err != nil:
		return photo.Staged{}, &web.Error{Status: http.StatusBadRequest, Title: "Upload cut off",
			Msg: "The zip did not arrive whole: the upload was cut off. Nothing was imported; send it again.", Err: src.err}
	case err != nil:
		return photo.Staged{}, err
	case st.Size == 0:
		return photo.Staged{}, refusedZip("the file is empty")
	}
	return st, nil
}

// check opens the staged zip through ranged reads and holds it to the
// format (archive.Open) and to the diary's rules (checkMeals), and
// returns its number of meals: a 422 with the reason, or the bucket's
// error.
func (h *Handler) check(ctx context.Context, userID string, st photo.Staged) (int, error) {
	ra, err := h.photos.OpenStaged(ctx, userID, st)
	if err != nil {
		return 0, err
	}
	a, err := archive.Open(ra, ra.Size(), h.importer.d.Limits)
	var refused *archive.Refusal
	if errors.As(err, &refused) {
		return 0, refusedZip(refused.Reason)
	}
	if err != nil {
		return 0, err
	}
	if reason := checkMeals(a.Meals()); reason != "" {
		return 0, refusedZip(reason)
	}
	return len(a.Meals()), nil
}

// refusedZip is the 422 of a zip the import will not take.
func refusedZip(reason string) error {
	return &web.Error{Status: http.StatusUnprocessableEntity, Title: "Zip not imported",
		Msg: "This zip cannot be imported, and nothing of it was: " + reason + "."}
}

// unstage deletes a staged zip's parts, detached from the request (a
// client gone must not leave them); a failure is logged (the account
// deletion and local mode's sweep remove what is left).
func (h *Handler) unstage(ctx context.Context, userID, prefix string) {
	if err := h.photos.DeleteStaged(context.WithoutCancel(ctx), userID, prefix); err != nil {
		h.log.Warn("refused import archive not deleted", "user_id", userID, "err", err)
	}
}

// readErr passes r through and keeps the first error other than io.EOF
// that r returned: the client's side of a failed stage.
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && e.err == nil {
		var mb *http.MaxBytesError
		if !errors.As(err, &mb) {
			e.err = err
		}
	}
	return n, err
}

// byteSize writes n as "8 GiB", "300 MiB" or "512 KiB" (rounded down).
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// importPage is the progress and result page of the account's import.
type importPage struct {
	web.Base
	Import *user.Import
	// Running: the page refreshes itself every RefreshSeconds.
	Running        bool
	RefreshSeconds int
	// Percent is how far the import is, 0 to 100.
	Percent int
	// Conflicts and Problems are the import's notes by kind.
	Conflicts, Problems []user.ImportNote
}

// ImportPage shows the account's import: how far it is while it runs
// (the page reloads itself with a meta refresh, no script needed), and
// when it has ended its counts, conflicts and problems.
func (h *Handler) ImportPage(w http.ResponseWriter, r *http.Request) error {
	u, err := h.users.Get(r.Context(), user.ID(r.Context()))
	if err != nil {
		return err
	}
	p := &importPage{Import: u.Import, RefreshSeconds: 3}
	p.Title = "Import"
	if imp := u.Import; imp != nil {
		p.Running = imp.Running()
		if imp.Total > 0 {
			p.Percent = imp.Next * 100 / imp.Total
		} else if !p.Running {
			p.Percent = 100
		}
		for _, n := range imp.Notes {
			if n.Kind == noteConflict {
				p.Conflicts = append(p.Conflicts, n)
			} else {
				p.Problems = append(p.Problems, n)
			}
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	return h.pages.Render(w, r, http.StatusOK, "account/import", p)
}
