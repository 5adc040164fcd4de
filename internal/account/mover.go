package account

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"ndiro/internal/meal"
	"ndiro/internal/storage"
	"ndiro/internal/user"
)

// MoveStep is one step of the move of an account to a new subject
// (DESIGN.md, moving an account): deletion in reverse. No transaction
// spans S3 and four tables, so, once the old row is claimed
// (user.Store.ClaimMove) and the new row written as moving
// (user.Store.CreateMoving), the move copies everything to the new
// subject, re-points what names the old one, then deletes the old rows
// and objects with the deletion's own steps, and makes the new row
// active last. The new row is the commit record: it holds the next step
// to run, and every step can be re-run, so a move stopped anywhere
// resumes from its row.
type MoveStep string

// The steps, in the order they run.
const (
	// MovePhotos copies every object under the old UserPrefix (display
	// copies, thumbnails, sized copies) to the new one, server-side.
	MovePhotos MoveStep = "photos"
	// MoveMeals copies every meals row, comments included, to the new
	// partition; photo keys follow from the user ID.
	MoveMeals MoveStep = "meals"
	// MoveShares re-points the share links to the new owner: the tokens
	// stay, so recipients' links keep working.
	MoveShares MoveStep = "shares"
	// MoveInvites re-points the invites the account created, and the one
	// it signed up with.
	MoveInvites MoveStep = "invites"
	// MoveOldPhotos, MoveOldMeals, MoveOldInvites, MoveOldSessions and
	// MoveOldUser are the deletion's steps (StepPhotos, …, StepUser) for
	// the old ID, but never its shares (StepShares): those moved.
	MoveOldPhotos   MoveStep = "old-photos"
	MoveOldMeals    MoveStep = "old-meals"
	MoveOldInvites  MoveStep = "old-invites"
	MoveOldSessions MoveStep = "old-sessions"
	MoveOldUser     MoveStep = "old-user"
	// MoveFinish makes the new row active: the owner's next request
	// shows their diary.
	MoveFinish MoveStep = "finish"
)

// MoveSteps lists every MoveStep in order.
var MoveSteps = []MoveStep{MovePhotos, MoveMeals, MoveShares, MoveInvites,
	MoveOldPhotos, MoveOldMeals, MoveOldInvites, MoveOldSessions, MoveOldUser, MoveFinish}

// The stores a move reads and writes, as small interfaces so that tests
// can make any of them fail.
type (
	moveUsers interface {
		Get(ctx context.Context, id string) (*user.User, error)
		ClaimMove(ctx context.Context, oldID, newID, issuer string, now time.Time) (*user.User, error)
		CreateMoving(ctx context.Context, old *user.User, newID, issuer, firstStep string) (*user.User, error)
		SetMoveProgress(ctx context.Context, id, step, lastErr string) error
		FinishMove(ctx context.Context, id string) error
		ListMoving(ctx context.Context) ([]user.User, error)
		ClearAwaitingOwner(ctx context.Context, id string) error
		Delete(ctx context.Context, id string) error
		MovedImport(ctx context.Context, id, fromID string, imp user.Import) error
	}
	photoMover interface {
		CopyOwner(ctx context.Context, fromID, toID string) (int, error)
		DeleteAll(ctx context.Context, ownerID string) (int, error)
	}
	mealMover interface {
		All(ctx context.Context, userID string) ([]meal.Meal, error)
		CopyTo(ctx context.Context, m *meal.Meal, userID string) error
		DeleteAll(ctx context.Context, userID string) (int, error)
	}
	shareMover interface {
		MoveOwner(ctx context.Context, fromID, toID string) (int, error)
	}
	inviteMover interface {
		MoveUser(ctx context.Context, fromID, toID string) (int, error)
		DeleteFor(ctx context.Context, userID string) (int, error)
	}
)

// MoverDeps are a Mover's collaborators and limits.
type MoverDeps struct {
	Users    moveUsers
	Gate     *user.Gate
	Photos   photoMover
	Meals    mealMover
	Shares   shareMover
	Invites  inviteMover
	Sessions sessionDeleter
	// Imports, if set, stops the old account's running import once its
	// write gate is closed (Importer.Stop); the move then records that
	// import on the new row as failed, saying the account moved
	// (endImport).
	Imports interface {
		Stop(ctx context.Context, userID string) error
	}
	Log *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Attempts is how many times a run is tried before the move waits
	// for the next start or an admin (0 means 5); Backoff is the pause
	// after the first failure, doubled after each (0 means 2 s).
	Attempts int
	Backoff  time.Duration
	// Timeout bounds one run, all its attempts included (0 means 6 h:
	// years of photos are copied one object at a time).
	Timeout time.Duration
}

// Mover runs moves of accounts to new subjects in the background, one
// run per account at a time, detached from the sign-in that started
// them. Runs are keyed by the new subject.
type Mover struct {
	d    MoverDeps
	runs *runs
	mu   sync.Mutex // guards d.Attempts and d.Backoff (SetRetry)
}

// NewMover returns a Mover over d's stores.
func NewMover(d MoverDeps) *Mover {
	if d.Attempts <= 0 {
		d.Attempts = 5
	}
	if d.Backoff <= 0 {
		d.Backoff = 2 * time.Second
	}
	if d.Timeout <= 0 {
		d.Timeout = 6 * time.Hour
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Mover{d: d, runs: newRuns()}
}

// SetRetry changes how many times a run is tried and the first pause
// between tries (tests and tools; the defaults suit production).
func (mv *Mover) SetRetry(attempts int, backoff time.Duration) {
	mv.mu.Lock()
	defer mv.mu.Unlock()
	mv.d.Attempts, mv.d.Backoff = max(attempts, 1), backoff
}

// Start moves the marked account old to the subject newID of the OIDC
// issuer: it claims the old row (one conditional write, refused unless
// the mark lets a subject of issuer claim it now, user.User.ClaimableBy;
// from then on the old ID signs in and writes no more), writes the new
// row as moving, and runs the rest in the background. It returns the
// new row. Errors: user.ErrClaimed (the account was claimed for another
// subject, or is no longer marked so), or a store failure; a claim that
// got no answer (storage.ErrUnavailable) is finished by the next
// sign-in or start-up (ResumeAll).
func (mv *Mover) Start(ctx context.Context, old *user.User, newID, issuer string) (*user.User, error) {
	claimed, err := mv.d.Users.ClaimMove(ctx, old.ID, newID, issuer, mv.d.Now())
	if errors.Is(err, user.ErrNotFound) {
		err = user.ErrClaimed // deleted since it was found
	}
	if err != nil {
		return nil, fmt.Errorf("account: start move: %w", err)
	}
	u, err := mv.d.Users.CreateMoving(ctx, claimed, newID, issuer, string(MovePhotos))
	if err != nil {
		return nil, fmt.Errorf("account: start move: %w", err)
	}
	mv.d.Log.Info("account move started", "user_id", newID, "from_user_id", old.ID)
	mv.Resume(newID)
	return u, nil
}

// Resume starts the background run of the move to newID, whose row must
// already be moving. It reports false if a run for newID is going, or
// the Mover is closed.
func (mv *Mover) Resume(newID string) bool {
	return mv.runs.start(newID, func(context.Context) { mv.run(newID) })
}

// ResumeAll resumes every move not finished, as start-up does: each new
// row still moving, and each claimed old row whose new row was never
// written (a claim whose next write did not happen). It returns how many
// runs it started.
func (mv *Mover) ResumeAll(ctx context.Context) (int, error) {
	all, err := mv.d.Users.ListMoving(ctx)
	if err != nil {
		return 0, fmt.Errorf("account: resume moves: %w", err)
	}
	n := 0
	for i := range all {
		u := &all[i]
		newID := u.ID
		if u.MoveFrom == "" {
			if u.MovedTo == "" {
				continue
			}
			newID = u.MovedTo
			if _, err := mv.d.Users.Get(ctx, newID); errors.Is(err, user.ErrNotFound) {
				// The claim's issuer is not kept: the new row records none.
				if _, err := mv.d.Users.CreateMoving(ctx, u, newID, "", string(MovePhotos)); err != nil {
					return n, fmt.Errorf("account: resume moves: %w", err)
				}
			} else if err != nil {
				return n, fmt.Errorf("account: resume moves: %w", err)
			}
		}
		if mv.Resume(newID) {
			n++
		}
	}
	return n, nil
}

// Running reports whether the move to newID is running now.
func (mv *Mover) Running(newID string) bool { return mv.runs.active(newID) }

// Wait blocks until no run of the move to newID is going, or ctx ends.
func (mv *Mover) Wait(ctx context.Context, newID string) error {
	return mv.runs.wait(ctx, newID)
}

// Close stops the runs going (each stops between two writes; the new row
// names its step, so the next start resumes it) and starts no more, then
// waits for them to return or ctx to end.
func (mv *Mover) Close(ctx context.Context) error {
	if err := mv.runs.close(ctx); err != nil {
		return fmt.Errorf("account: stop moves: %w", err)
	}
	return nil
}

// errNotMoving: a run for a row that is not the new row of a move, or
// whose old row is claimed for another subject. Not retried.
var errNotMoving = errors.New("account is not moving here")

// run tries the move up to Attempts times with a doubling backoff, as
// the Deleter's run does: a failure is recorded on the new row; a step
// storage refused (a full disk, no lease) is no attempt and waits.
func (mv *Mover) run(newID string) {
	mv.mu.Lock()
	attempts, pause := mv.d.Attempts, mv.d.Backoff
	mv.mu.Unlock()
	fullPause := pause
	ctx, cancel := context.WithTimeout(mv.runs.stop, mv.d.Timeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		step, err := mv.runOnce(ctx, newID)
		if err == nil {
			return
		}
		if mv.runs.stop.Err() != nil {
			mv.d.Log.Info("account move paused while ndiro stops; the next start resumes it", "user_id", newID, "step", string(step))
			return
		}
		if storage.Refused(err) != nil && ctx.Err() == nil {
			attempt--
			select {
			case <-ctx.Done():
			case <-time.After(fullPause):
			}
			fullPause = min(2*fullPause, maxFullPause)
			continue
		}
		mv.d.Log.Error("account move step failed", "user_id", newID, "step", string(step), "attempt", attempt, "err", err)
		if errors.Is(err, errNotMoving) {
			return
		}
		if perr := mv.d.Users.SetMoveProgress(ctx, newID, string(step), err.Error()); perr != nil {
			mv.d.Log.Error("account move progress not saved", "user_id", newID, "err", perr)
		}
		if attempt >= attempts {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause *= 2
	}
}

// runOnce runs the move from the step the new row names. It returns the
// step that failed and why.
func (mv *Mover) runOnce(ctx context.Context, newID string) (MoveStep, error) {
	u, err := mv.d.Users.Get(ctx, newID)
	if errors.Is(err, user.ErrNotFound) {
		return "", fmt.Errorf("%w: no row %q", errNotMoving, newID)
	}
	if err != nil {
		return "", err
	}
	if !u.Moving() || u.MoveFrom == "" {
		if u.Active() && u.MoveFrom != "" {
			return "", nil // finished already
		}
		return "", errNotMoving
	}
	oldID := u.MoveFrom
	from := max(slices.Index(MoveSteps, MoveStep(u.MoveStep)), 0)
	if err := mv.checkOld(ctx, oldID, newID, from); err != nil {
		return MoveStep(u.MoveStep), err
	}
	// No write of the old account may run from here on: wait for those
	// already admitted. The new account's writes hold its gate, so its
	// deletion waits for this run's steps.
	if err := mv.d.Gate.Close(ctx, oldID); err != nil {
		return MoveStep(u.MoveStep), fmt.Errorf("wait for writes in flight: %w", err)
	}
	if err := mv.endImport(ctx, oldID, newID, from); err != nil {
		return MoveStep(u.MoveStep), err
	}
	release, err := mv.d.Gate.Enter(newID)
	if err != nil {
		return MoveStep(u.MoveStep), fmt.Errorf("%w: %w", errNotMoving, err)
	}
	defer release()
	for i := from; i < len(MoveSteps); i++ {
		st := MoveSteps[i]
		n, err := mv.step(ctx, st, oldID, newID)
		if err != nil {
			return st, err
		}
		mv.d.Log.Info("account move step done", "user_id", newID, "step", string(st), "items", n)
		if st == MoveOldUser {
			// The old account is gone: its ID may sign up anew.
			mv.d.Gate.Forget(oldID)
		}
		if st == MoveFinish {
			break
		}
		if err := mv.d.Users.SetMoveProgress(ctx, newID, string(MoveSteps[i+1]), ""); err != nil {
			return MoveSteps[i+1], err
		}
	}
	mv.d.Log.Info("account move finished", "user_id", newID, "from_user_id", oldID)
	return "", nil
}

// msgMoved is the error of an import the move of its account stopped,
// for the result page.
const msgMoved = "The account moved to a new sign-in while this import ran, which stopped it. Import the zip again: the meals imported so far are skipped, and those without their photo get it."

// endImport stops the old account's import, if one runs (its write gate
// is closed already: it stops before its next meal), and records it on
// the new row as failed with msgMoved, its counts and notes kept, so the
// owner sees on the new account's import page that it did not finish
// and why. Its staged zip goes with the old account's pending objects
// (MoveOldPhotos). Nothing is left to do once the old row is gone (from,
// the index of the step to run, past MoveOldUser's).
func (mv *Mover) endImport(ctx context.Context, oldID, newID string, from int) error {
	if from > slices.Index(MoveSteps, MoveOldUser) {
		return nil
	}
	if mv.d.Imports != nil {
		if err := mv.d.Imports.Stop(ctx, oldID); err != nil {
			return fmt.Errorf("stop the import: %w", err)
		}
	}
	old, err := mv.d.Users.Get(ctx, oldID)
	if errors.Is(err, user.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !old.Import.Running() {
		return nil
	}
	imp := *old.Import
	imp.State, imp.Error = user.ImportFailed, msgMoved
	if imp.FinishedAt == nil {
		now := mv.d.Now().UTC()
		imp.FinishedAt = &now
	}
	if err := mv.d.Users.MovedImport(ctx, newID, oldID, imp); err != nil {
		return fmt.Errorf("record the stopped import: %w", err)
	}
	mv.d.Log.Info("import stopped by the account's move", "user_id", newID, "from_user_id", oldID, "imported", imp.Imported)
	return nil
}

// checkOld refuses (errNotMoving) to copy from or delete an account not
// claimed for newID: the old row must name newID, or be gone once the
// run is past the copies (from, the index of the step to run, is at
// MoveOldPhotos or later: the move deleted it).
func (mv *Mover) checkOld(ctx context.Context, oldID, newID string, from int) error {
	old, err := mv.d.Users.Get(ctx, oldID)
	switch {
	case errors.Is(err, user.ErrNotFound):
		if from < slices.Index(MoveSteps, MoveOldPhotos) {
			return fmt.Errorf("%w: the old account is gone before its data was copied", errNotMoving)
		}
		return nil
	case err != nil:
		return err
	case old.MovedTo != newID:
		return fmt.Errorf("%w: the old account is claimed for another subject", errNotMoving)
	}
	return nil
}

// step runs one step and returns how many items or objects it copied,
// re-pointed or deleted.
func (mv *Mover) step(ctx context.Context, st MoveStep, oldID, newID string) (int, error) {
	switch st {
	case MovePhotos:
		return mv.d.Photos.CopyOwner(ctx, oldID, newID)
	case MoveMeals:
		meals, err := mv.d.Meals.All(ctx, oldID)
		if err != nil {
			return 0, err
		}
		for i := range meals {
			if err := mv.d.Meals.CopyTo(ctx, &meals[i], newID); err != nil {
				return i, err
			}
		}
		return len(meals), nil
	case MoveShares:
		return mv.d.Shares.MoveOwner(ctx, oldID, newID)
	case MoveInvites:
		return mv.d.Invites.MoveUser(ctx, oldID, newID)
	case MoveOldPhotos:
		return mv.d.Photos.DeleteAll(ctx, oldID)
	case MoveOldMeals:
		return mv.d.Meals.DeleteAll(ctx, oldID)
	case MoveOldInvites:
		return mv.d.Invites.DeleteFor(ctx, oldID)
	case MoveOldSessions:
		return mv.d.Sessions.DeleteKeys(ctx, oldID)
	case MoveOldUser:
		if err := mv.d.Users.ClearAwaitingOwner(ctx, oldID); err != nil {
			return 0, err
		}
		return 1, mv.d.Users.Delete(ctx, oldID)
	case MoveFinish:
		return 1, mv.d.Users.FinishMove(ctx, newID)
	}
	return 0, fmt.Errorf("unknown step %q", st)
}
