package account

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"ndiro/internal/archive"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/storage"
	"ndiro/internal/user"
)

// The stores an import writes, as small interfaces so tests can make any
// of them fail: *user.Store, *meal.Store and *photo.Store are the real ones.
type (
	importRows interface {
		Get(ctx context.Context, id string) (*user.User, error)
		SaveImport(ctx context.Context, id string, imp user.Import) error
		ListImporting(ctx context.Context) ([]user.User, error)
	}
	importMeals interface {
		Get(ctx context.Context, userID string, d meal.Date, id string) (*meal.Meal, error)
		Create(ctx context.Context, m *meal.Meal) error
		Update(ctx context.Context, m *meal.Meal) error
		Window(ctx context.Context, userID string, from, to meal.Date) ([]meal.Meal, error)
	}
	importObjects interface {
		OpenStaged(ctx context.Context, ownerID string, st photo.Staged) (*photo.Ranged, error)
		DeleteStaged(ctx context.Context, ownerID, prefix string) error
		Put(ctx context.Context, key string, body []byte, v photo.Version) error
		Delete(ctx context.Context, ownerID string, keys ...string) error
	}
)

// ImporterDeps are an Importer's collaborators.
type ImporterDeps struct {
	Users  importRows
	Meals  importMeals
	Photos importObjects
	// Process runs an imported photo through the upload pipeline
	// (photo.Pipeline.Process: decode admission, decode, re-encode).
	Process func(ctx context.Context, data []byte) (*photo.Processed, error)
	// Gate is the accounts' write gate: each meal is imported inside it,
	// so a deletion waits for the meal in hand and stops the rest.
	Gate *user.Gate
	// Forget drops a key's bytes from the photo cache; Kick, if set, asks
	// the variant job for an imported photo's sized copies.
	Forget func(key string)
	Kick   func(m *meal.Meal)
	Log    *slog.Logger
	Now    func() time.Time
	// Limits bound the archives Open takes (zero: archive.DefaultLimits).
	Limits archive.Limits
	// Quota bounds the account: the run stops, failed, at the meal that
	// would pass a bound (errQuota).
	Quota user.Quota
}

// Importer runs imports of export zips in the background, one run per
// account at a time, detached from the request that started them. Each
// run keeps its state on the users row (user.Import), saved every
// SaveEvery meals, so a run stopped anywhere (a restart, a crash) is
// resumed by ResumeAll from the last save: the meals after it are
// looked at again, and those it had claimed already are found by their
// derived IDs (importMeal), so nothing is imported twice.
type Importer struct {
	d    ImporterDeps
	runs *runs
	// mu guards every, after and backoff (SetPace).
	mu      sync.Mutex
	every   int
	after   func(ctx context.Context, index int)
	backoff time.Duration
}

// SaveEvery is how many meals an import runs between two saves of its
// state: a restart repeats at most this many meals' reads.
const SaveEvery = 10

// NewImporter returns an Importer over d's stores.
func NewImporter(d ImporterDeps) *Importer {
	return &Importer{d: d, runs: newRuns(), every: SaveEvery, backoff: 2 * time.Second}
}

// SetPace changes how many meals run between saves (every ≥ 1) and sets
// a function called after each meal is done with the meal's index, before
// any save, under the run's context (nil: none): for tests that stop an
// import part-way, as a crash would.
func (im *Importer) SetPace(every int, after func(ctx context.Context, index int)) {
	im.mu.Lock()
	defer im.mu.Unlock()
	im.every, im.after = max(every, 1), after
}

// Start runs the import recorded on userID's row in the background; it
// reports false if one is running already or the Importer is closed.
func (im *Importer) Start(userID string) bool {
	return im.runs.start(userID, func(ctx context.Context) { im.run(ctx, userID) })
}

// ResumeAll starts every import a users row records as running, as
// start-up does, and returns how many it started.
func (im *Importer) ResumeAll(ctx context.Context) (int, error) {
	all, err := im.d.Users.ListImporting(ctx)
	if err != nil {
		return 0, fmt.Errorf("account: resume imports: %w", err)
	}
	n := 0
	for _, u := range all {
		if im.Start(u.ID) {
			n++
		}
	}
	return n, nil
}

// Running reports whether an import of userID is running now.
func (im *Importer) Running(userID string) bool { return im.runs.active(userID) }

// Stop cancels the import of userID, if one runs, and waits until it has
// returned or ctx ends (ctx.Err()). The account deletion and the account
// move call it: the run stops between two writes, and its state is not
// saved again.
func (im *Importer) Stop(ctx context.Context, userID string) error {
	return im.runs.end(ctx, userID)
}

// Wait blocks until no import of userID runs, or ctx ends.
func (im *Importer) Wait(ctx context.Context, userID string) error {
	return im.runs.wait(ctx, userID)
}

// Close stops every run (each between two meals; the users rows keep
// their last save, so the next start resumes them) and starts no more,
// then waits for them or ctx (ctx.Err()).
func (im *Importer) Close(ctx context.Context) error {
	if err := im.runs.close(ctx); err != nil {
		return fmt.Errorf("account: stop imports: %w", err)
	}
	return nil
}

// Attempts of a run: a failure that is not the storage refusing writes
// is tried this many times, pausing from the backoff doubling, before
// the import is recorded as failed.
const importAttempts = 5

// maxImportPause caps the pause between two tries.
const maxImportPause = time.Minute

// errZipGone: a part of the staged zip was gone when a meal's photo was
// read from it; the run ends as failed (msgZipGone).
var errZipGone = errors.New("account: import: the staged zip is gone")

// errQuota: the account reached a bound of its quota; the run ends as
// failed (quotaMessage).
var errQuota = errors.New("account: import: the account reached its quota")

// errStopped: the run stopped because the account is being deleted or
// moved.
var errStopped = errors.New("account: import stopped: the account is being deleted or moved")

// run tries the import until it ends: a write storage refused (a full
// disk, the lease not held: storage.Refused) or a call that got no answer
// waits and tries again without counting; any other failure counts, and
// after importAttempts the import is recorded as failed with the error.
func (im *Importer) run(ctx context.Context, userID string) {
	im.mu.Lock()
	pause := im.backoff
	im.mu.Unlock()
	for attempt := 1; ; attempt++ {
		err := im.runOnce(ctx, userID)
		switch {
		case err == nil, errors.Is(err, errStopped):
			return
		case ctx.Err() != nil:
			im.d.Log.Info("import paused while ndiro stops or the account is deleted", "user_id", userID)
			return
		case storage.Refused(err) != nil || errors.Is(err, storage.ErrUnavailable) || errors.Is(err, photo.ErrBusy):
			attempt--
			im.d.Log.Warn("import waits for storage or the photo pipeline", "user_id", userID, "err", err)
		default:
			im.d.Log.Error("import failed", "user_id", userID, "attempt", attempt, "err", err)
			if attempt >= importAttempts {
				im.fail(ctx, userID, "The import stopped because storage kept failing. Upload the zip again: the meals imported so far are skipped.")
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, maxImportPause)
	}
}

// fail records the running import of userID as failed with msg, a
// sentence for the result page, and removes its staged archive.
func (im *Importer) fail(ctx context.Context, userID, msg string) {
	u, err := im.d.Users.Get(ctx, userID)
	if err != nil || !u.Import.Running() {
		return
	}
	imp := *u.Import
	imp.State, imp.Error = user.ImportFailed, msg
	im.finish(ctx, userID, &imp)
}

// finish saves imp, ended, and deletes its staged archive (its parts, or
// the one object an older version staged it as): a failure to delete is
// logged (the deletion of the account, or local mode's sweep after
// StagedTTL, removes it).
func (im *Importer) finish(ctx context.Context, userID string, imp *user.Import) error {
	now := im.d.Now().UTC()
	imp.FinishedAt = &now
	if err := im.d.Users.SaveImport(ctx, userID, *imp); err != nil {
		return fmt.Errorf("account: import: save the end: %w", err)
	}
	var err error
	if imp.Prefix != "" {
		err = im.d.Photos.DeleteStaged(context.WithoutCancel(ctx), userID, imp.Prefix)
	} else if imp.Key != "" {
		err = im.d.Photos.Delete(context.WithoutCancel(ctx), userID, imp.Key)
	}
	if err != nil {
		im.d.Log.Warn("staged import archive not deleted", "user_id", userID, "err", err)
	}
	im.d.Log.Info("import finished", "user_id", userID, "state", string(imp.State),
		"imported", imp.Imported, "skipped", imp.Skipped, "failed", imp.Failed)
	return nil
}

// runOnce runs the import from where its row says: it opens the staged
// archive again (Open's checks, a few ranged reads), then looks at each
// meal from Next, inside the write gate, saving the state every few meals
// and at the end.
func (im *Importer) runOnce(ctx context.Context, userID string) error {
	imp, a, used, err := im.reopen(ctx, userID)
	if err != nil || a == nil {
		return err
	}
	im.mu.Lock()
	every, after := im.every, im.after
	im.mu.Unlock()
	j := &importJob{im: im, userID: userID, imp: imp, a: a, used: used, days: map[string][]meal.Meal{}}
	meals := a.Meals()
	saved := imp.Next
	for i := imp.Next; i < len(meals); i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := j.one(ctx, i, &meals[i]); errors.Is(err, errZipGone) {
			imp.State, imp.Error = user.ImportFailed, msgZipGone
			return saveError(im.finish(ctx, userID, imp))
		} else if errors.Is(err, errQuota) {
			imp.State, imp.Error = user.ImportFailed, j.quotaMessage(i, len(meals))
			return saveError(im.finish(ctx, userID, imp))
		} else if err != nil {
			return err
		}
		imp.Next = i + 1
		if after != nil {
			after(ctx, i)
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if imp.Next-saved >= every && imp.Next < len(meals) {
			if err := im.d.Users.SaveImport(ctx, userID, *imp); err != nil {
				return saveError(err)
			}
			j.used, imp.Unsaved = j.usage(), user.Usage{}
			saved = imp.Next
		}
	}
	imp.State = user.ImportDone
	return saveError(im.finish(ctx, userID, imp))
}

// reopen reads userID's running import from its row and opens its staged
// archive; used is the account's usage as the row holds it. A nil
// archive with a nil error means nothing is left to run: no row, no
// import running, or an import ended here as failed (older than
// StagedTTL, its zip gone or changed); an account being deleted is
// errStopped.
func (im *Importer) reopen(ctx context.Context, userID string) (_ *user.Import, _ *archive.Archive, used user.Usage, _ error) {
	imp, a, err := im.reopenRow(ctx, userID, &used)
	return imp, a, used, err
}

// reopenRow is reopen, the row's usage stored in used.
func (im *Importer) reopenRow(ctx context.Context, userID string, used *user.Usage) (*user.Import, *archive.Archive, error) {
	u, err := im.d.Users.Get(ctx, userID)
	switch {
	case errors.Is(err, user.ErrNotFound):
		return nil, nil, nil
	case err != nil:
		return nil, nil, err
	case u.Deleting() || u.Moving():
		// A move records the import on the new row (Mover.endImport).
		return nil, nil, errStopped
	case !u.Import.Running():
		return nil, nil, nil
	}
	*used = u.Usage
	imp := *u.Import
	imp.Notes = append([]user.ImportNote(nil), imp.Notes...)
	failed := func(msg string) (*user.Import, *archive.Archive, error) {
		imp.State, imp.Error = user.ImportFailed, msg
		return nil, nil, im.finish(ctx, userID, &imp)
	}
	if im.d.Now().Sub(imp.StartedAt) > photo.StagedTTL {
		return failed("The import did not finish within a week, and its zip was removed. Upload it again: the meals imported so far are skipped.")
	}
	if imp.Prefix == "" {
		// Staged as one object by an older version: that layout is no
		// longer read.
		return failed(msgOlderStage)
	}
	ra, err := im.d.Photos.OpenStaged(ctx, userID, photo.Staged{Prefix: imp.Prefix, Size: imp.Size, PartSize: imp.PartSize})
	if err != nil {
		return nil, nil, err
	}
	a, err := archive.Open(ra, ra.Size(), im.d.Limits)
	var refused *archive.Refusal
	if errors.Is(err, photo.ErrNotFound) {
		return failed(msgZipGone)
	}
	if errors.As(err, &refused) {
		// Checked before the import started: the object changed since.
		return failed("The uploaded zip can no longer be read: " + refused.Reason)
	}
	if err != nil {
		return nil, nil, err
	}
	return &imp, a, nil
}

// The messages of an import ended because its staged zip is gone or was
// staged by an older version, for the result page.
const (
	msgZipGone    = "The uploaded zip was removed before the import finished. Upload it again: the meals imported so far are skipped."
	msgOlderStage = "The import was started by an older version of ndiro, which kept the zip in a way this version no longer reads. Upload it again: the meals imported so far are skipped."
)

// saveError turns a save refused because the account is being deleted
// (or the import replaced) into errStopped.
func saveError(err error) error {
	if errors.Is(err, user.ErrState) || errors.Is(err, user.ErrNotFound) {
		return errStopped
	}
	return err
}
