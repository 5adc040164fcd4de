package user

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"ndiro/internal/dynamo"
)

// The rows of a move (DESIGN.md, moving an account). A marked account
// (MarkAwaitingOwner) reached by a new subject's sign-in is claimed
// (ClaimMove: the old row's commit record, one conditional write), then
// the new row is written (CreateMoving) and carries the move's progress
// (SetMoveProgress) until FinishMove makes it active. Every write is
// conditional, so two sign-ins of two subjects with one email move the
// account once, to whichever claimed it first.

// ErrClaimed is returned by ClaimMove when the marked account was claimed
// for another subject first, or is no longer marked or active: the
// sign-in that asked cannot take it.
var ErrClaimed = errors.New("user: the account is not waiting for its owner any more")

// ClaimMove claims the marked account oldID for the subject newID of
// issuer at now with one conditional UpdateItem: the row must be active
// and claimable by issuer at now (User.ClaimableBy: the mark records
// another issuer and has not expired), or be claimed for newID already
// (a repeated claim changes nothing). It sets moved_to to newID and the
// status to StatusMoving, from which the old row signs in no more and
// takes no writes. It returns the claimed row, ErrNotFound for no such
// row, or ErrClaimed for a row not marked, not claimable so, not
// active, or claimed for another subject.
func (s *Store) ClaimMove(ctx context.Context, oldID, newID, issuer string, now time.Time) (*User, error) {
	if newID == "" || Reserved(newID) || newID == oldID || issuer == "" {
		return nil, fmt.Errorf("user: claim move: new id %q is empty, reserved or the old one, or its issuer %q is empty", newID, issuer)
	}
	n := expression.Name
	status := n("status")
	fresh := expression.AttributeNotExists(n("moved_to")).
		And(expression.AttributeNotExists(status).Or(status.Equal(expression.Value(StatusActive)))).
		And(n("owner_mark.issuer").NotEqual(expression.Value(issuer))).
		And(n("owner_mark.expires").GreaterThan(expression.Value(markTime(now))))
	err := s.update(ctx, "claim move", oldID,
		expression.AttributeType(n("awaiting_owner"), expression.String).
			And(n("moved_to").Equal(expression.Value(newID)).Or(fresh)),
		expression.Set(n("moved_to"), expression.Value(newID)).Set(status, expression.Value(StatusMoving)))
	if errors.Is(err, ErrState) {
		return nil, fmt.Errorf("user: claim move: %w", ErrClaimed)
	}
	if err != nil {
		return nil, err
	}
	return s.Get(ctx, oldID)
}

// CreateMoving writes the new row of old's move to newID, a subject of
// issuer ("" if not known): old's email, role, name, time zone, invite,
// created_at and Usage (the move copies every meal and object, counted
// already), status StatusMoving, move_from old.ID and move_step
// firstStep (attribute_not_exists). A row for newID that moves from
// old.ID already is returned as it is (a re-run); any other row there
// is ErrExists.
func (s *Store) CreateMoving(ctx context.Context, old *User, newID, issuer, firstStep string) (*User, error) {
	u := &User{
		ID: newID, Email: old.Email, Role: old.Role, Name: old.Name, NameSet: old.NameSet,
		TimeZone: old.TimeZone, InviteToken: old.InviteToken, CreatedAt: old.CreatedAt, Issuer: issuer,
		Status: StatusMoving, MoveFrom: old.ID, MoveStep: firstStep, Usage: old.Usage,
	}
	err := s.Create(ctx, u)
	if errors.Is(err, ErrExists) {
		cur, gerr := s.Get(ctx, newID)
		if gerr != nil {
			return nil, fmt.Errorf("user: create moving: %w", gerr)
		}
		if cur.MoveFrom == old.ID {
			return cur, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("user: create moving: %w", err)
	}
	return u, nil
}

// SetMoveProgress records on the new row of a move the next step to run
// and the last error ("" clears it). It returns ErrNotFound if the row
// is gone or not moving (an admin deleted it meanwhile).
func (s *Store) SetMoveProgress(ctx context.Context, id, step, lastErr string) error {
	n := expression.Name
	err := s.update(ctx, "move progress", id,
		n("status").Equal(expression.Value(StatusMoving)).And(expression.AttributeExists(n("move_from"))),
		expression.Set(n("move_step"), expression.Value(step)).Set(n("move_error"), expression.Value(lastErr)))
	if errors.Is(err, ErrState) {
		return fmt.Errorf("user: move progress: %w", ErrNotFound)
	}
	return err
}

// FinishMove makes the new row of a finished move active: the owner's
// next request shows their diary. move_from stays as a record. It
// returns ErrNotFound if the row is gone, and is no error on a row
// already active (a re-run).
func (s *Store) FinishMove(ctx context.Context, id string) error {
	n := expression.Name
	err := s.update(ctx, "finish move", id,
		n("status").Equal(expression.Value(StatusMoving)).And(expression.AttributeExists(n("move_from"))),
		expression.Set(n("status"), expression.Value(StatusActive)).
			Set(n("move_step"), expression.Value("")).Set(n("move_error"), expression.Value("")))
	if errors.Is(err, ErrState) {
		u, gerr := s.Get(ctx, id)
		if gerr == nil && u.Active() && u.MoveFrom != "" {
			return nil
		}
	}
	return err
}

// ListMoving returns every row of a move not finished: new rows
// (MoveFrom set) and old rows (MovedTo set), by paged Scan (start-up
// resumes them; the admin page shows them).
func (s *Store) ListMoving(ctx context.Context) ([]User, error) {
	moving := expression.Name("status").Equal(expression.Value(StatusMoving))
	in, err := s.scanUsers(&moving)
	if err != nil {
		return nil, fmt.Errorf("user: list moving: %w", err)
	}
	in.ConsistentRead = aws.Bool(true)
	return dynamo.ScanAll[User](ctx, s.db, in)
}
