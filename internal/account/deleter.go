package account

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"ndiro/internal/storage"
	"ndiro/internal/user"
)

// Step is one step of the ordered account deletion (DESIGN.md, account
// deletion). No transaction spans S3 and four tables, so the deletion runs
// in a fixed order, after the users row is marked deleting: photos, meals,
// shares, invites, and the users row last. The row is the commit record: it
// holds the next step to run, and every step can be re-run, so a deletion
// stopped anywhere resumes from its row.
type Step string

// The steps, in the order they run.
const (
	StepPhotos   Step = "photos"   // every object under the user's prefixes
	StepMeals    Step = "meals"    // every meals row of the user
	StepShares   Step = "shares"   // every share link of the user
	StepInvites  Step = "invites"  // invites they created that nobody claimed, the one they signed up with
	StepSessions Step = "sessions" // the key items of their sessions (user.Sessions.DeleteKeys)
	StepUser     Step = "user"     // the mark of an account waiting for its owner, then the users row itself and the sessions on it
)

// Steps lists every Step in order.
var Steps = []Step{StepPhotos, StepMeals, StepShares, StepInvites, StepSessions, StepUser}

// The stores a deletion empties, as small interfaces so that tests can make
// any of them fail.
type (
	userRows interface {
		Get(ctx context.Context, id string) (*user.User, error)
		MarkDeleting(ctx context.Context, id, firstStep string, now time.Time) (*user.User, error)
		SetDeletionProgress(ctx context.Context, id, step, lastErr string) error
		ListDeleting(ctx context.Context) ([]user.User, error)
		ClearAwaitingOwner(ctx context.Context, id string) error
		Delete(ctx context.Context, id string) error
	}
	photoDeleter interface {
		DeleteAll(ctx context.Context, ownerID string) (int, error)
	}
	mealDeleter interface {
		DeleteAll(ctx context.Context, userID string) (int, error)
	}
	shareDeleter interface {
		DeleteByOwner(ctx context.Context, ownerID string) (int, error)
	}
	inviteDeleter interface {
		DeleteFor(ctx context.Context, userID string) (int, error)
	}
	sessionDeleter interface {
		DeleteKeys(ctx context.Context, userID string) (int, error)
	}
)

// DeleterDeps are a Deleter's collaborators and limits.
type DeleterDeps struct {
	Users   userRows
	Gate    *user.Gate
	Photos  photoDeleter
	Meals   mealDeleter
	Shares  shareDeleter
	Invites inviteDeleter
	// Sessions deletes the session key items (the sessions themselves
	// live on the users row).
	Sessions sessionDeleter
	// Imports, if set, stops the account's running import before the
	// write gate closes (Importer.Stop): the photos step then removes its
	// staged zip with the rest of the pending prefix.
	Imports interface {
		Stop(ctx context.Context, userID string) error
	}
	Log *slog.Logger
	Now func() time.Time
	// Attempts is how many times a run is tried before the deletion is left
	// for an admin to resume (0 means 5); Backoff is the pause after the
	// first failure, doubled after each (0 means 2 s).
	Attempts int
	Backoff  time.Duration
	// Timeout bounds one run, all its attempts included (0 means 30 min).
	Timeout time.Duration
}

// Deleter runs account deletions in the background, detached from the
// request that asked for them, one run per account at a time.
type Deleter struct {
	d    DeleterDeps
	runs *runs
	mu   sync.Mutex // guards d.Attempts and d.Backoff (SetRetry)

	// The runs' counters (Stats).
	started, finished, failed atomic.Int64
}

// DeleterStats are the account deletion runs since start: Started runs
// (a start or a resume), Finished ones (every step done), Failed ones
// (given up after their attempts; the admin page resumes them), and the
// Running ones now. A run paused by a stop counts in none but Started.
type DeleterStats struct {
	Started, Finished, Failed int64
	Running                   int
}

// Stats returns the deletion runs' counters.
func (dl *Deleter) Stats() DeleterStats {
	return DeleterStats{Started: dl.started.Load(), Finished: dl.finished.Load(), Failed: dl.failed.Load(), Running: dl.runs.count()}
}

// NewDeleter returns a Deleter over d's stores.
func NewDeleter(d DeleterDeps) *Deleter {
	if d.Attempts <= 0 {
		d.Attempts = 5
	}
	if d.Backoff <= 0 {
		d.Backoff = 2 * time.Second
	}
	if d.Timeout <= 0 {
		d.Timeout = 30 * time.Minute
	}
	return &Deleter{d: d, runs: newRuns()}
}

// Close stops the runs going (each stops between two deletes; the users
// row still names its step, so the next start resumes it) and starts no
// more, then waits for them to return or ctx to end (ctx.Err()). Call it
// when the server has stopped taking requests, before the stores close.
func (dl *Deleter) Close(ctx context.Context) error {
	if err := dl.runs.close(ctx); err != nil {
		return fmt.Errorf("account: stop deletions: %w", err)
	}
	return nil
}

// SetRetry changes how many times a run is tried and the first pause
// between tries (tests and tools; the defaults suit production).
func (dl *Deleter) SetRetry(attempts int, backoff time.Duration) {
	dl.mu.Lock()
	defer dl.mu.Unlock()
	dl.d.Attempts, dl.d.Backoff = max(attempts, 1), backoff
}

// Start marks the account userID deleting (one conditional write: from the
// next request on, the account is signed out and refused everywhere, and
// its share links stop) and starts the rest of the sequence in the
// background. It returns the marked row, or user.ErrNotFound. A mark that
// got no answer (storage.ErrUnavailable) may have been applied, with the
// account refused everywhere from then on: the sequence is started all
// the same, and it stops at once if the row was not marked.
func (dl *Deleter) Start(ctx context.Context, userID string) (*user.User, error) {
	u, err := dl.d.Users.MarkDeleting(ctx, userID, string(StepPhotos), dl.d.Now())
	if errors.Is(err, storage.ErrUnavailable) {
		dl.Resume(userID)
	}
	if err != nil {
		return nil, fmt.Errorf("account: start deletion: %w", err)
	}
	dl.d.Log.Info("account deletion started", "user_id", userID)
	dl.Resume(userID)
	return u, nil
}

// Resume starts the background run for userID, whose row must already be
// marked deleting (at start-up for every such row, or from the admin page
// for one that stopped). It reports false if a run for userID is already
// going, or the Deleter is closed.
func (dl *Deleter) Resume(userID string) bool {
	if !dl.runs.start(userID, func(context.Context) { dl.run(userID) }) {
		return false
	}
	dl.started.Add(1)
	return true
}

// ResumeAll resumes the deletion of every account still marked deleting,
// as start-up does, and returns how many it resumed.
func (dl *Deleter) ResumeAll(ctx context.Context) (int, error) {
	all, err := dl.d.Users.ListDeleting(ctx)
	if err != nil {
		return 0, fmt.Errorf("account: resume deletions: %w", err)
	}
	n := 0
	for _, u := range all {
		if dl.Resume(u.ID) {
			n++
		}
	}
	return n, nil
}

// Running reports whether a run for userID is going now.
func (dl *Deleter) Running(userID string) bool { return dl.runs.active(userID) }

// Wait blocks until no run for userID is going, or ctx ends.
func (dl *Deleter) Wait(ctx context.Context, userID string) error {
	return dl.runs.wait(ctx, userID)
}

// run tries the sequence up to Attempts times, pausing with a doubling
// backoff between tries. A failure is recorded on the users row (step and
// error) for the admin page; after the last attempt the deletion waits for
// a resume. A step storage refused (a full disk, storage.Refused) is no
// attempt: the run waits, from Backoff doubling up to maxFullPause, and
// goes on from the step the row names once writes are taken again, within
// the run's Timeout (after which start-up or an admin resumes it).
func (dl *Deleter) run(userID string) {
	dl.mu.Lock()
	attempts, pause := dl.d.Attempts, dl.d.Backoff
	dl.mu.Unlock()
	fullPause := pause
	ctx, cancel := context.WithTimeout(dl.runs.stop, dl.d.Timeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		step, err := dl.runOnce(ctx, userID)
		if err == nil {
			dl.finished.Add(1)
			return
		}
		if dl.runs.stop.Err() != nil {
			dl.d.Log.Info("account deletion paused while ndiro stops; the next start resumes it", "user_id", userID, "step", string(step))
			return
		}
		if storage.Refused(err) != nil && ctx.Err() == nil {
			if fullPause == pause {
				dl.d.Log.Warn("account deletion waits for storage to take writes", "user_id", userID, "step", string(step), "err", err)
			}
			attempt--
			select {
			case <-ctx.Done():
			case <-time.After(fullPause):
			}
			fullPause = min(2*fullPause, maxFullPause)
			continue
		}
		dl.d.Log.Error("account deletion step failed", "user_id", userID, "step", string(step), "attempt", attempt, "err", err)
		if perr := dl.d.Users.SetDeletionProgress(ctx, userID, string(step), err.Error()); perr != nil {
			dl.d.Log.Error("account deletion progress not saved", "user_id", userID, "err", perr)
		}
		if attempt >= attempts || errors.Is(err, errNotMarked) {
			dl.failed.Add(1)
			return
		}
		select {
		case <-ctx.Done():
			if dl.runs.stop.Err() == nil {
				dl.failed.Add(1) // out of time (DeleterDeps.Timeout)
			}
			return
		case <-time.After(pause):
		}
		pause *= 2
	}
}

// maxFullPause caps the pause between two tries of a deletion while
// storage refuses writes.
const maxFullPause = time.Minute

// errNotMarked: a run for an account whose row is not marked deleting.
var errNotMarked = errors.New("account is not marked for deletion")

// runOnce runs the sequence from the step the users row names. It returns
// the step that failed and why.
func (dl *Deleter) runOnce(ctx context.Context, userID string) (Step, error) {
	u, err := dl.d.Users.Get(ctx, userID)
	if errors.Is(err, user.ErrNotFound) {
		dl.d.Gate.Forget(userID)
		return "", nil // the last step ran already
	}
	if err != nil {
		return "", err
	}
	if !u.Deleting() {
		return "", errNotMarked
	}
	// An import stops between two meals (it would stop at the closed
	// gate anyway, at its next meal); no write for this account may run
	// from here on: wait for those already admitted (an upload that
	// began before the mark, the import's meal in hand).
	if dl.d.Imports != nil {
		if err := dl.d.Imports.Stop(ctx, userID); err != nil {
			return "", fmt.Errorf("stop the import: %w", err)
		}
	}
	if err := dl.d.Gate.Close(ctx, userID); err != nil {
		return "", fmt.Errorf("wait for writes in flight: %w", err)
	}
	from := 0
	for i, st := range Steps {
		if string(st) == u.DeletionStep {
			from = i
		}
	}
	for i := from; i < len(Steps); i++ {
		st := Steps[i]
		n, err := dl.step(ctx, st, userID)
		if err != nil {
			return st, err
		}
		dl.d.Log.Info("account deletion step done", "user_id", userID, "step", string(st), "deleted", n)
		if st == StepUser {
			// The account is gone: its ID may sign up anew (invited
			// again), and that account's writes must be admitted.
			dl.d.Gate.Forget(userID)
			break
		}
		if err := dl.d.Users.SetDeletionProgress(ctx, userID, string(Steps[i+1]), ""); err != nil {
			return Steps[i+1], err
		}
	}
	dl.d.Log.Info("account deletion finished", "user_id", userID)
	return "", nil
}

// step runs one step and returns how many items or objects it deleted.
func (dl *Deleter) step(ctx context.Context, st Step, userID string) (int, error) {
	switch st {
	case StepPhotos:
		return dl.d.Photos.DeleteAll(ctx, userID)
	case StepMeals:
		return dl.d.Meals.DeleteAll(ctx, userID)
	case StepShares:
		return dl.d.Shares.DeleteByOwner(ctx, userID)
	case StepInvites:
		return dl.d.Invites.DeleteFor(ctx, userID)
	case StepSessions:
		return dl.d.Sessions.DeleteKeys(ctx, userID)
	case StepUser:
		// The email item of a marked account names the row: it goes
		// first, so no sign-in finds the account it names once the row
		// is gone (user.Store.FindAwaitingOwner would refuse it anyway).
		if err := dl.d.Users.ClearAwaitingOwner(ctx, userID); err != nil {
			return 0, err
		}
		return 1, dl.d.Users.Delete(ctx, userID)
	}
	return 0, fmt.Errorf("unknown step %q", st)
}
