// Package user owns the users table: one row per person, keyed by their
// OIDC subject (the provider's "sub" claim, never the email), read on every
// authenticated request by the auth guard.
package user

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/dynamo"
	"ndiro/internal/text"
)

// Role decides which pages a user may open; stored in the users row's
// "role" attribute. ParseRole reads one from a form.
type Role string

// The roles. A role comes from the invite a user signed up with, or is
// RoleAdmin for ADMIN_EMAILS; an admin may change it (Store.SetRole).
const (
	// RoleOwner ("owner") keeps a diary: their meals, share links and
	// account page.
	RoleOwner Role = "owner"
	// RoleAdmin ("admin") keeps a diary and runs the admin pages (users,
	// invites, shares, the monitor).
	RoleAdmin Role = "admin"
)

// ParseRole returns the role named s, or an error for anything else.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleOwner, RoleAdmin:
		return r, nil
	}
	return "", fmt.Errorf("user: unknown role %q", s)
}

// Status is the lifecycle state of a users row, its "status" attribute;
// "" (rows written before statuses existed) reads as StatusActive.
type Status string

// The statuses. Changes between them are conditional writes of Store
// (SetDisabled, MarkDeleting); User.Active, Disabled and Deleting read them.
const (
	// StatusActive marks an account in use: it signs in, writes, and its
	// share links work. New accounts start here.
	StatusActive Status = "active"
	// StatusDeleting marks an account whose ordered deletion has started:
	// the guard signs it out and it can write nothing more (DESIGN.md,
	// account deletion).
	StatusDeleting Status = "deleting"
	// StatusDisabled marks an account an admin has switched off: it is
	// signed out, cannot sign in, and its share links stop, until an admin
	// enables it again. Its data stays.
	StatusDisabled Status = "disabled"
	// StatusMoving marks both rows of an account moving to a new subject
	// (DESIGN.md, moving an account): the old row (MovedTo names the new
	// subject), which signs in no more, and the new row (MoveFrom names
	// the old one), whose owner sees the "moving your diary" page until
	// the move is done and the row is active. Neither is active, so the
	// account's share links wait for the move too.
	StatusMoving Status = "moving"
)

// User is one users row.
type User struct {
	// ID is the provider's subject ("sub" claim), as it sends it; the
	// partition key.
	ID    string `dynamodbav:"user_id"`
	Email string `dynamodbav:"email"`
	Role  Role   `dynamodbav:"role"`
	// Status is "" for rows written before statuses existed; read as
	// active. "" is stored as no attribute, which is what the conditions
	// of SetDisabled look for.
	Status Status `dynamodbav:"status,omitempty"`
	// TimeZone is an IANA name such as "Europe/Berlin"; "" means UTC.
	TimeZone string `dynamodbav:"tz,omitempty"`
	// Name is the display name share recipients see ("Ana Lima"); "" shows
	// a generic heading. It comes from the OIDC name claim at sign-up and
	// follows it at each sign-in until the owner sets one on the account
	// page (NameSet), after which only the owner changes it.
	Name string `dynamodbav:"name,omitempty"`
	// NameSet records that the owner chose Name themselves (even "").
	NameSet bool `dynamodbav:"name_set,omitempty"`
	// InviteToken is the invite this user signed up with; "" for admins
	// from ADMIN_EMAILS.
	InviteToken string    `dynamodbav:"invite_token,omitempty"`
	CreatedAt   time.Time `dynamodbav:"created_at"`

	// While Status is StatusDeleting: DeletionStep names the next step of
	// the ordered deletion to run (package account), DeletionError the last
	// failure ("" if none), DeletionStartedAt when the account was marked.
	DeletionStep      string     `dynamodbav:"deletion_step,omitempty"`
	DeletionError     string     `dynamodbav:"deletion_error,omitempty"`
	DeletionStartedAt *time.Time `dynamodbav:"deletion_started_at,omitempty"`

	// Import is the account's last import of an export zip, running or
	// finished (Store.StartImport); nil if it never imported one.
	Import *Import `dynamodbav:"import,omitempty"`

	// Issuer is the OIDC issuer of the provider whose subject ID is
	// (the "iss" of the sign-in that wrote the row); "" for rows written
	// before rows recorded it.
	Issuer string `dynamodbav:"issuer,omitempty"`

	// AwaitingOwner is when an admin or ndiro migrate marked the account
	// as waiting for its owner (MarkAwaitingOwner: a sign-in of a new
	// subject with its verified email moves it there, as OwnerMark
	// allows); nil when not marked. Stored as RFC 3339, or NULL once
	// cleared.
	AwaitingOwner *time.Time `dynamodbav:"awaiting_owner,omitempty"`
	// OwnerMark is who made that mark, until when it can be claimed and
	// the issuer it came from; nil (or NULL) for no mark, or for a mark
	// made before marks recorded them, which claims nothing.
	OwnerMark *OwnerMark `dynamodbav:"owner_mark,omitempty"`

	// The move of an account to a new subject (package account, Mover).
	// On the old row, MovedTo is the subject it moves to. On the new row,
	// MoveFrom is the old row's ID (kept once the move is done, as a
	// record), MoveStep the next step to run and MoveError the last
	// failure ("" if none).
	MovedTo   string `dynamodbav:"moved_to,omitempty"`
	MoveFrom  string `dynamodbav:"move_from,omitempty"`
	MoveStep  string `dynamodbav:"move_step,omitempty"`
	MoveError string `dynamodbav:"move_error,omitempty"`

	// Usage is what the account stores, as its quota (Quota) counts it:
	// kept by the writes that change it (Store.AddUsage) and recounted
	// by the admin monitor (Store.RepairUsage). UsageRev counts its
	// changes, the recount's condition.
	Usage
	UsageRev int64 `dynamodbav:"usage_rev,omitempty"`
}

// IsAdmin reports whether u may open the admin pages.
func (u *User) IsAdmin() bool { return u.Role == RoleAdmin }

// Deleting reports whether u's account deletion has started.
func (u *User) Deleting() bool { return u.Status == StatusDeleting }

// Moving reports whether u is either row of an account moving to a new
// subject (StatusMoving).
func (u *User) Moving() bool { return u.Status == StatusMoving }

// Disabled reports whether an admin has switched u's account off.
func (u *User) Disabled() bool { return u.Status == StatusDisabled }

// Active reports whether u's account is in use: status active, or ""
// (rows from before statuses). Any other status (deleting, disabled) stops
// everything the account handed out, such as its share links.
func (u *User) Active() bool { return u.Status == "" || u.Status == StatusActive }

// Sentinel errors of Store.
var (
	// ErrNotFound: no users row has the ID.
	ErrNotFound = errors.New("user not found")
	// ErrExists: Create found a row with the ID already (the same person
	// signing up twice at once).
	ErrExists = errors.New("user already exists")
	// ErrNameChosen: the owner set their display name, so the provider's
	// name does not replace it.
	ErrNameChosen = errors.New("user chose their own name")
	// ErrState: the account is not in a state the change applies to (an
	// account being deleted takes no role or status change; only an
	// active account can be disabled, only a disabled one enabled).
	ErrState = errors.New("user account is not in a state that allows this change")
)

// Store reads and writes the users table. Every users write of the
// process goes through it, so it can keep rows in a write-through cache
// (DESIGN.md, sign-in): Get, the auth guard's read on every request, is a
// map lookup while the row is cached; each write invalidates the row
// before it starts and again when it returns, whatever its outcome, so a
// disable, a role change or a deletion mark holds from the very next
// request. CacheTTL bounds how long an edit made outside the app (the
// console, a restore) can go unseen.
type Store struct {
	db    *dynamodb.Client
	table string
	// cache holds whole rows: the account and its sessions (Sessions).
	cache *dynamo.ItemCache[row]
	// now is cache's clock, which Sessions shares (rowAt).
	now func() time.Time
	// pageLimit, if set, caps items per Scan page of the paced scans, so
	// tests see many pages (and empty ones) without many rows.
	pageLimit int32
}

// CacheTTL is how long Store keeps a row it read (or its absence): the
// longest an edit made outside the app goes unseen. Writes through the
// Store are seen at once.
const CacheTTL = 5 * time.Second

// cacheSize bounds the rows kept: far above ~100 users per deployment.
const cacheSize = 10_000

// NewStore returns a Store on the users table named table, caching rows
// for CacheTTL by the clock now (time.Now outside tests).
func NewStore(db *dynamodb.Client, table string, now func() time.Time) *Store {
	return &Store{db: db, table: table, cache: dynamo.NewItemCache[row](CacheTTL, cacheSize, now), now: now}
}

// row is a users row as the Store's cache keeps it: the account, and the
// sessions signed in to it, which only Sessions reads and writes (no
// User carries them, so a list of users, an export or a copy handed out
// never holds them).
type row struct {
	User
	// Sessions are the account's signed-in sessions by ID (SessionID);
	// at most MaxSessions.
	Sessions map[string]Session `dynamodbav:"sessions,omitempty"`
	// SessionsRev counts the writes of Sessions: each write of the whole
	// map is conditional on the count it read (optimistic concurrency),
	// so two sign-ins at once never drop each other's session.
	SessionsRev int64 `dynamodbav:"sessions_rev,omitempty"`
}

// Get returns a copy of the users row for id, or ErrNotFound: from the
// cache, else with one strongly consistent GetItem (consistent, because
// the guard must see a deletion at once), whose result the cache keeps
// unless a write of this Store overlapped it.
func (s *Store) Get(ctx context.Context, id string) (*User, error) {
	r, err := s.row(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("user: get: %w", err)
	}
	u := r.User
	return &u, nil
}

// row returns the row id as Get reads it, or ErrNotFound. An ID with the
// reserved prefix names no row (it is never read: it is no subject).
func (s *Store) row(ctx context.Context, id string) (row, error) {
	return s.rowAt(ctx, s.now(), id)
}

// rowAt is row with the cache's freshness judged at now, a reading of
// s.now (dynamo.ItemCache.ReadAt).
func (s *Store) rowAt(ctx context.Context, now time.Time, id string) (row, error) {
	if Reserved(id) {
		return row{}, ErrNotFound
	}
	r, found, err := s.cache.ReadAt(ctx, now, s.db, s.table, "user_id", id)
	if err != nil {
		return row{}, err
	}
	if !found {
		return row{}, ErrNotFound
	}
	return r, nil
}

// Active reports whether the account id is in use (User.Active), as Get
// reads it, without handing out a copy of the row: the photo guard's
// check when the session store did not read the row with the session
// (Sessions.FindAccount does). A missing row is ErrNotFound.
func (s *Store) Active(ctx context.Context, id string) (bool, error) {
	r, err := s.row(ctx, id)
	if err != nil {
		return false, fmt.Errorf("user: get: %w", err)
	}
	return r.Active(), nil
}

// Create writes u if no row with its ID exists (attribute_not_exists), and
// returns ErrExists otherwise: two racing sign-ups make one row. A row it
// wrote is cached as written.
func (s *Store) Create(ctx context.Context, u *User) error {
	if u.ID == "" || Reserved(u.ID) {
		return fmt.Errorf("user: create: id %q is empty or reserved", u.ID)
	}
	item, err := attributevalue.MarshalMap(u)
	if err != nil {
		return fmt.Errorf("user: create: encode: %w", err)
	}
	cond, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name("user_id"))).Build()
	if err != nil {
		return fmt.Errorf("user: create: %w", err)
	}
	// Kept as written: the sign-in's next request needs no read.
	err = s.cache.WriteThrough(u.ID, row{User: *u}, func() error {
		_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                aws.String(s.table),
			Item:                     item,
			ConditionExpression:      cond.Condition(),
			ExpressionAttributeNames: cond.Names(),
		})
		return err
	})
	if dynamo.IsConditionFailed(err) {
		return fmt.Errorf("user: create: %w", ErrExists)
	}
	if err != nil {
		return fmt.Errorf("user: create: %w", err)
	}
	return nil
}

// List returns every user, by Scan: at ~100 users per deployment this is one
// small page (DESIGN.md allows scans for admin lists). Items under
// reserved keys (Reserved) are no users and are not listed.
func (s *Store) List(ctx context.Context) ([]User, error) {
	in, err := s.scanUsers(nil)
	if err != nil {
		return nil, fmt.Errorf("user: list: %w", err)
	}
	return dynamo.ScanAll[User](ctx, s.db, in)
}

// scanUsers returns a Scan of the users table's rows that match filter
// (nil: every row), leaving out the items under reserved keys (Reserved):
// every Scan of the table goes through it, so no list, count or orphan
// check takes them for users.
func (s *Store) scanUsers(filter *expression.ConditionBuilder) (*dynamodb.ScanInput, error) {
	cond := expression.Not(expression.BeginsWith(expression.Name("user_id"), ReservedPrefix))
	if filter != nil {
		cond = cond.And(*filter)
	}
	expr, err := expression.NewBuilder().WithFilter(cond).Build()
	if err != nil {
		return nil, err
	}
	return &dynamodb.ScanInput{
		TableName:                 aws.String(s.table),
		Limit:                     s.limit(),
		FilterExpression:          expr.Filter(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}, nil
}

// Delete removes the users row for id; deleting a missing row is not an
// error, so the last step of account deletion can be re-run.
func (s *Store) Delete(ctx context.Context, id string) error {
	err := s.cache.Write(id, func() error {
		_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(s.table),
			Key:       key(id),
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("user: delete: %w", err)
	}
	return nil
}

// SetTimeZone stores tz (an IANA name the caller has validated) on an
// existing row; it returns ErrNotFound if the row is gone.
func (s *Store) SetTimeZone(ctx context.Context, id, tz string) error {
	name := expression.Name
	return s.update(ctx, "set time zone", id, expression.AttributeExists(name("user_id")),
		expression.Set(name("tz"), expression.Value(tz)))
}

// MarkDeleting marks the users row id as being deleted, with one
// conditional UpdateItem (the row must exist): from here on the guard
// refuses the account everywhere. It is the commit record of the deletion
// (DESIGN.md, account deletion). Marking an account already marked keeps
// its step and start time, so a repeated request changes nothing. Either
// row of an account moving to a new subject (StatusMoving) is refused
// with ErrState: the move would bring back what the deletion took. It
// returns the row as marked, or ErrNotFound.
func (s *Store) MarkDeleting(ctx context.Context, id, firstStep string, now time.Time) (*User, error) {
	name := expression.Name
	expr, err := expression.NewBuilder().
		WithCondition(expression.AttributeExists(name("user_id")).
			And(expression.AttributeNotExists(name("status")).Or(name("status").NotEqual(expression.Value(StatusMoving))))).
		WithUpdate(expression.Set(name("status"), expression.Value(StatusDeleting)).
			Set(name("deletion_step"), expression.IfNotExists(name("deletion_step"), expression.Value(firstStep))).
			Set(name("deletion_started_at"), expression.IfNotExists(name("deletion_started_at"), expression.Value(now.UTC().Format(time.RFC3339Nano))))).
		Build()
	if err != nil {
		return nil, fmt.Errorf("user: mark deleting: %w", err)
	}
	out, err := s.updateItem(ctx, id, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 key(id),
		UpdateExpression:                    expr.Update(),
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if dynamo.IsConditionFailed(err) {
		item, gerr := dynamo.RefusedItem(ctx, s.db, s.table, key(id), err)
		switch {
		case gerr != nil:
			return nil, fmt.Errorf("user: mark deleting: %w", gerr)
		case len(item) == 0:
			return nil, fmt.Errorf("user: mark deleting: %w", ErrNotFound)
		}
		return nil, fmt.Errorf("user: mark deleting: %w", ErrState)
	}
	if err != nil {
		return nil, fmt.Errorf("user: mark deleting: %w", err)
	}
	var u User
	if err := attributevalue.UnmarshalMap(out.Attributes, &u); err != nil {
		return nil, fmt.Errorf("user: mark deleting: decode: %w", err)
	}
	return &u, nil
}

// SetDeletionProgress records on a row being deleted the next step to run
// and the last error ("" clears it). It returns ErrNotFound if the row is
// gone or not being deleted: a deletion never writes an active account.
func (s *Store) SetDeletionProgress(ctx context.Context, id, step, lastErr string) error {
	name := expression.Name
	expr, err := expression.NewBuilder().
		WithCondition(name("status").Equal(expression.Value(StatusDeleting))).
		WithUpdate(expression.Set(name("deletion_step"), expression.Value(step)).
			Set(name("deletion_error"), expression.Value(lastErr))).
		Build()
	if err != nil {
		return fmt.Errorf("user: deletion progress: %w", err)
	}
	_, err = s.updateItem(ctx, id, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(id),
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	if dynamo.IsConditionFailed(err) {
		return fmt.Errorf("user: deletion progress: %w", ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("user: deletion progress: %w", err)
	}
	return nil
}

// ListDeleting returns every user whose deletion has started and not
// finished, by paged Scan (start-up resumes them; the admin page lists
// them).
func (s *Store) ListDeleting(ctx context.Context) ([]User, error) {
	deleting := expression.Name("status").Equal(expression.Value(StatusDeleting))
	in, err := s.scanUsers(&deleting)
	if err != nil {
		return nil, fmt.Errorf("user: list deleting: %w", err)
	}
	return dynamo.ScanAll[User](ctx, s.db, in)
}

// SetName stores name (checked with CleanName) as the display name the
// owner chose, so sign-in stops following the provider's name. It returns
// ErrNotFound if the row is gone.
func (s *Store) SetName(ctx context.Context, id, name string) error {
	n := expression.Name
	return s.update(ctx, "set name", id, expression.AttributeExists(n("user_id")),
		expression.Set(n("name"), expression.Value(name)).Set(n("name_set"), expression.Value(true)))
}

// SetProviderName stores name, the provider's name claim at sign-in, with
// one conditional UpdateItem: only if the owner has not chosen a name
// (ErrNameChosen otherwise, even if they chose it a moment ago) and the
// row exists (ErrNotFound).
func (s *Store) SetProviderName(ctx context.Context, id, name string) error {
	n := expression.Name
	nameSet := n("name_set")
	err := s.update(ctx, "set provider name", id,
		expression.AttributeExists(n("user_id")).And(expression.AttributeNotExists(nameSet).Or(nameSet.Equal(expression.Value(false)))),
		expression.Set(n("name"), expression.Value(name)))
	if errors.Is(err, ErrState) {
		return fmt.Errorf("user: set provider name: %w", ErrNameChosen)
	}
	return err
}

// MaxNameLen is the longest display name, in characters (runes).
const MaxNameLen = 80

// CleanName trims s and returns it if it can be a display name: valid
// UTF-8, at most MaxNameLen characters, none of the characters
// text.Refused refuses in one-line text (no line breaks, control or
// format characters, so no bidi overrides or isolates). ok is false
// otherwise.
func CleanName(s string) (name string, ok bool) {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > MaxNameLen {
		return "", false
	}
	if _, bad := text.Refused(s, false); bad {
		return "", false
	}
	return s, true
}

// SetRole gives the account id role, with one conditional UpdateItem: the
// row must exist (ErrNotFound) and not be being deleted (ErrState). The
// guard reads the row on every request, so the change holds from the
// account's next request on.
func (s *Store) SetRole(ctx context.Context, id string, role Role) error {
	if _, err := ParseRole(string(role)); err != nil {
		return fmt.Errorf("user: set role: %w", err)
	}
	name := expression.Name
	return s.update(ctx, "set role", id,
		expression.AttributeExists(name("user_id")).And(name("status").NotEqual(expression.Value(StatusDeleting))),
		expression.Set(name("role"), expression.Value(role)))
}

// SetDisabled switches the account id off (disabled true: from active, or
// a row without a status) or on again (false: from disabled), with one
// conditional UpdateItem. It returns ErrNotFound for no such row and
// ErrState if the account is not in the state the change starts from.
func (s *Store) SetDisabled(ctx context.Context, id string, disabled bool) error {
	name := expression.Name
	status := name("status")
	from, to := expression.AttributeNotExists(status).Or(status.Equal(expression.Value(StatusActive))), StatusDisabled
	if !disabled {
		from, to = status.Equal(expression.Value(StatusDisabled)), StatusActive
	}
	return s.update(ctx, "set disabled", id, expression.AttributeExists(name("user_id")).And(from), expression.Set(status, expression.Value(to)))
}

// update runs one conditional UpdateItem on the row id. A refused
// condition is ErrNotFound if the row is gone and ErrState if it is
// there (dynamo.RefusedItem tells them apart: the row the refusal
// carries, or a consistent read whose own error is returned if it fails).
func (s *Store) update(ctx context.Context, what, id string, cond expression.ConditionBuilder, upd expression.UpdateBuilder) error {
	expr, err := expression.NewBuilder().WithCondition(cond).WithUpdate(upd).Build()
	if err != nil {
		return fmt.Errorf("user: %s: %w", what, err)
	}
	_, err = s.updateItem(ctx, id, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 key(id),
		UpdateExpression:                    expr.Update(),
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if dynamo.IsConditionFailed(err) {
		item, gerr := dynamo.RefusedItem(ctx, s.db, s.table, key(id), err)
		switch {
		case gerr != nil:
			return fmt.Errorf("user: %s: %w", what, gerr)
		case len(item) == 0:
			return fmt.Errorf("user: %s: %w", what, ErrNotFound)
		}
		return fmt.Errorf("user: %s: %w", what, ErrState)
	}
	if err != nil {
		return fmt.Errorf("user: %s: %w", what, err)
	}
	return nil
}

// Counts are the monitor's numbers of users.
type Counts struct{ Total, Disabled, Deleting int }

// Count counts the users in total and by status with paced Select COUNT
// Scans (dynamo.CountPaced), for the admin monitor.
func (s *Store) Count(ctx context.Context, pace dynamo.Pace) (Counts, error) {
	var c Counts
	for _, st := range []struct {
		status Status // "" counts every user
		n      *int
	}{{"", &c.Total}, {StatusDisabled, &c.Disabled}, {StatusDeleting, &c.Deleting}} {
		var filter *expression.ConditionBuilder
		if st.status != "" {
			f := expression.Name("status").Equal(expression.Value(st.status))
			filter = &f
		}
		in, err := s.scanUsers(filter)
		if err != nil {
			return c, fmt.Errorf("user: count: %w", err)
		}
		if *st.n, err = dynamo.CountPaced(ctx, s.db, in, pace); err != nil {
			return c, fmt.Errorf("user: count: %w", err)
		}
	}
	return c, nil
}

// IDs returns the ID of every users row, by a paced Scan of the key only
// (the orphan check: rows of other tables whose user is gone).
func (s *Store) IDs(ctx context.Context, pace dynamo.Pace) (map[string]bool, error) {
	ids := map[string]bool{}
	in, err := s.scanUsers(nil)
	if err != nil {
		return nil, fmt.Errorf("user: ids: %w", err)
	}
	in.ProjectionExpression = aws.String("user_id")
	err = dynamo.ScanPaced(ctx, s.db, in, pace, func(out *dynamodb.ScanOutput) error {
		for _, it := range out.Items {
			if v, ok := it["user_id"].(*types.AttributeValueMemberS); ok {
				ids[v.Value] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("user: ids: %w", err)
	}
	return ids, nil
}

func (s *Store) limit() *int32 {
	if s.pageLimit > 0 {
		return aws.Int32(s.pageLimit)
	}
	return nil
}

// updateItem runs one UpdateItem on the users row id (in.Key is key(id))
// inside the cache's Write, so the row's entry is invalidated whatever the
// outcome.
func (s *Store) updateItem(ctx context.Context, id string, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
	var out *dynamodb.UpdateItemOutput
	err := s.cache.Write(id, func() error {
		var err error
		out, err = s.db.UpdateItem(ctx, in)
		return err
	})
	return out, err
}

func key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: id}}
}

// Location returns the user's time zone, UTC if unset or unknown. It decides
// which calendar date "now" is for this user (a meal at 23:50 local lands on
// the local date, never the server's).
func (u *User) Location() *time.Location {
	if u.TimeZone == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(u.TimeZone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// ValidTimeZone reports whether tz is an IANA zone name ndiro accepts, such
// as "Europe/Berlin" or "UTC". Empty, relative and "Local" are refused.
func ValidTimeZone(tz string) bool {
	if tz == "" || tz == "Local" || len(tz) > 64 || strings.Contains(tz, "..") || strings.HasPrefix(tz, "/") {
		return false
	}
	_, err := time.LoadLocation(tz)
	return err == nil
}
