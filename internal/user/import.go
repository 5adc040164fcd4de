package user

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"ndiro/internal/dynamo"
)

// ImportState is where an import of an export zip stands.
type ImportState string

// The states of an import.
const (
	// ImportRunning: the job has meals left to import (or a restart
	// stopped it: start-up resumes it).
	ImportRunning ImportState = "running"
	// ImportDone: every meal of the archive was looked at.
	ImportDone ImportState = "done"
	// ImportFailed: the job gave up (Import.Error says why); the meals
	// it imported stay, and importing the zip again skips them.
	ImportFailed ImportState = "failed"
)

// MaxImportNotes bounds Import.Notes: what a result page lists of the
// conflicts and problems of one import; the counts go on past it. 100
// notes of at most ~300 bytes keep the users row, read on every request,
// far below DynamoDB's 400 KB.
const MaxImportNotes = 100

// Import is the one import of an account's last export zip (the users
// row's "import" map attribute; package account runs it): its staged
// archive, how far it got and what it found, saved every few meals so a
// restart resumes it from Next.
type Import struct {
	// ID is the import's own (token.New); the meal IDs it claims are
	// derived from it.
	ID string `dynamodbav:"id"`
	// Prefix is where the staged archive's part objects are
	// (photo.StagedPrefix), Size its length in bytes and PartSize the
	// length of each part but the last (photo.Staged).
	Prefix   string `dynamodbav:"prefix,omitempty"`
	Size     int64  `dynamodbav:"size"`
	PartSize int64  `dynamodbav:"part_size,omitempty"`
	// Key is the one object an older version staged the archive as
	// (pending/{user}/import/{id}.zip), set only on an import it started
	// and Prefix then empty: the import ends as failed, asking for the
	// zip again (account.Importer).
	Key string `dynamodbav:"key,omitempty"`
	// State is running, done or failed; Error, for failed, says why.
	State ImportState `dynamodbav:"state"`
	Error string      `dynamodbav:"error,omitempty"`
	// Total is the archive's number of meals; Next the index of the next
	// one to look at (meals before it are done).
	Total int `dynamodbav:"total"`
	Next  int `dynamodbav:"next"`
	// Imported meals were added; Skipped ones were in the diary already
	// (same date, time and content); Failed ones could not be added.
	// Imported counts a meal kept without its photo (a Note says so).
	Imported int `dynamodbav:"imported"`
	Skipped  int `dynamodbav:"skipped"`
	Failed   int `dynamodbav:"failed"`
	// Notes are the conflicts and problems met, in archive order, at most
	// MaxImportNotes; Dropped counts those past it.
	Notes   []ImportNote `dynamodbav:"notes,omitempty"`
	Dropped int          `dynamodbav:"dropped,omitempty"`
	// StartedAt is when the zip was accepted, FinishedAt when the job
	// ended (nil while running).
	StartedAt  time.Time  `dynamodbav:"started_at"`
	FinishedAt *time.Time `dynamodbav:"finished_at,omitempty"`
	// Unsaved is what the run added to the account's Usage since its
	// state was last saved: SaveImport adds it to the row's with the
	// state, so an import's meals cost no write of their own. Not stored.
	Unsaved Usage `dynamodbav:"-"`
}

// Running reports whether imp is an import still to be run.
func (imp *Import) Running() bool { return imp != nil && imp.State == ImportRunning }

// Note adds n to imp's notes, or counts it in Dropped past MaxImportNotes.
func (imp *Import) Note(n ImportNote) {
	if len(imp.Notes) >= MaxImportNotes {
		imp.Dropped++
		return
	}
	imp.Notes = append(imp.Notes, n)
}

// ImportNote is one conflict or problem of an import, about the meal at
// Date ("YYYY-MM-DD") and Time ("HH:MM:SS"), the Index-th of the archive
// (from 0).
type ImportNote struct {
	Index int    `dynamodbav:"i"`
	Date  string `dynamodbav:"date"`
	Time  string `dynamodbav:"time"`
	// Kind is "conflict" (a different meal is at that date and time
	// already: both are kept), "photo" (the meal was imported without
	// its photo) or "failed" (the meal was not imported).
	Kind string `dynamodbav:"kind"`
	// Msg says what happened, for the result page.
	Msg string `dynamodbav:"msg"`
}

// ErrImportRunning is StartImport's refusal: the account has an import
// that has not finished.
var ErrImportRunning = errors.New("user: an import is running")

// StartImport records imp (State ImportRunning) as the account id's
// import, with one conditional UpdateItem: the row exists (ErrNotFound),
// the account is active (ErrState: not while it is disabled or being
// deleted), and no other import is running (ErrImportRunning). The
// import before, finished, is replaced.
func (s *Store) StartImport(ctx context.Context, id string, imp Import) error {
	if imp.ID == "" || imp.State != ImportRunning {
		return fmt.Errorf("user: start import: want a running import with an ID")
	}
	av, err := attributevalue.Marshal(imp)
	if err != nil {
		return fmt.Errorf("user: start import: encode: %w", err)
	}
	n := expression.Name
	cond := expression.AttributeExists(n("user_id")).
		And(expression.AttributeNotExists(n("status")).Or(n("status").Equal(expression.Value(StatusActive)))).
		And(expression.AttributeNotExists(n("import")).Or(n("import.state").NotEqual(expression.Value(ImportRunning))))
	err = s.update(ctx, "start import", id, cond, expression.Set(n("import"), expression.Value(av)))
	if errors.Is(err, ErrState) {
		// Which part of the condition failed decides the answer.
		u, gerr := s.getConsistent(ctx, id)
		switch {
		case gerr != nil:
			return fmt.Errorf("user: start import: %w", gerr)
		case u.Active() && u.Import.Running():
			return fmt.Errorf("user: start import: %w", ErrImportRunning)
		}
	}
	return err
}

// SaveImport writes imp over the account id's import of the same ID, and
// adds imp.Unsaved to the row's Usage (moving UsageRev on), with one
// conditional UpdateItem: the row exists (ErrNotFound), holds that
// import, still running (ErrState otherwise: another import replaced it,
// or it was finished), and the account is not being deleted (ErrState),
// so a job stopped by a deletion never writes the row again.
func (s *Store) SaveImport(ctx context.Context, id string, imp Import) error {
	av, err := attributevalue.Marshal(imp)
	if err != nil {
		return fmt.Errorf("user: save import: encode: %w", err)
	}
	n := expression.Name
	cond := expression.AttributeExists(n("user_id")).
		And(expression.AttributeNotExists(n("status")).Or(n("status").NotEqual(expression.Value(StatusDeleting)))).
		And(n("import.id").Equal(expression.Value(imp.ID))).
		And(n("import.state").Equal(expression.Value(ImportRunning)))
	upd := expression.Set(n("import"), expression.Value(av))
	if imp.Unsaved != (Usage{}) {
		upd = upd.Add(n("meal_count"), expression.Value(imp.Unsaved.Meals)).
			Add(n("photo_bytes"), expression.Value(imp.Unsaved.PhotoBytes)).
			Add(n("usage_rev"), expression.Value(1))
	}
	return s.update(ctx, "save import", id, cond, upd)
}

// MovedImport records imp, ended, as the import of the account id, the
// new row of a move from fromID (status moving, move_from fromID:
// ErrState otherwise, ErrNotFound without a row), with one conditional
// UpdateItem: the import the old account was running when the move
// stopped it, so that the owner finds it on the import page of the
// account they sign in to. A re-run writes the same import again; the row
// may hold no other import (ErrState).
func (s *Store) MovedImport(ctx context.Context, id, fromID string, imp Import) error {
	if imp.ID == "" || imp.Running() {
		return fmt.Errorf("user: moved import: want an ended import with an ID")
	}
	av, err := attributevalue.Marshal(imp)
	if err != nil {
		return fmt.Errorf("user: moved import: encode: %w", err)
	}
	n := expression.Name
	cond := n("status").Equal(expression.Value(StatusMoving)).
		And(n("move_from").Equal(expression.Value(fromID))).
		And(expression.AttributeNotExists(n("import")).Or(n("import.id").Equal(expression.Value(imp.ID))))
	return s.update(ctx, "moved import", id, cond, expression.Set(n("import"), expression.Value(av)))
}

// ListImporting returns every user whose import is running, by paged
// Scan (start-up resumes them).
func (s *Store) ListImporting(ctx context.Context) ([]User, error) {
	running := expression.Name("import.state").Equal(expression.Value(ImportRunning))
	in, err := s.scanUsers(&running)
	if err != nil {
		return nil, fmt.Errorf("user: list importing: %w", err)
	}
	return dynamo.ScanAll[User](ctx, s.db, in)
}

// getConsistent reads the row id with a strongly consistent GetItem,
// around the cache (a condition just refused: the cached copy may be
// older than what refused it).
func (s *Store) getConsistent(ctx context.Context, id string) (*User, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(id), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, ErrNotFound
	}
	var u User
	if err := attributevalue.UnmarshalMap(out.Item, &u); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return &u, nil
}
