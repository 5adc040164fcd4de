// Package invite owns the invites table: admins create invites, a person
// opens /invite/{token}, signs in, and claims it with one conditional write.
package invite

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"ndiro/internal/store"
	"ndiro/internal/token"
	"ndiro/internal/user"
)

// Invite is one invites row.
type Invite struct {
	// Token is the partition key and the secret in the invite link.
	Token string `dynamodbav:"invite_token"`
	// Email, if set, is the only (lower-cased) email that may claim it.
	Email string    `dynamodbav:"email,omitempty"`
	Role  user.Role `dynamodbav:"role"`
	// CreatedBy is the admin's user ID.
	CreatedBy string    `dynamodbav:"created_by"`
	CreatedAt time.Time `dynamodbav:"created_at"`
	// ExpiresAt is in Unix seconds; it is also the table's TTL attribute,
	// but TTL deletes lazily, so Claim checks it itself.
	ExpiresAt int64  `dynamodbav:"expires_at"`
	ClaimedBy string `dynamodbav:"claimed_by,omitempty"`
	// ClaimedAt and RevokedAt are nil until it happens: the conditions test
	// the attributes' absence, and a zero time.Time would still be written.
	ClaimedAt *time.Time `dynamodbav:"claimed_at,omitempty"`
	RevokedAt *time.Time `dynamodbav:"revoked_at,omitempty"`
}

// State is where an invite stands at a given time (Invite.StateAt); it is
// worked out from the item's attributes, not stored.
type State string

// The states, as the admin's invite list shows them.
const (
	// StateOpen: not claimed, revoked or expired; its link signs someone up.
	StateOpen State = "open"
	// StateClaimed: someone signed up with it (claimed_by is set); only
	// they can use it again, to finish a sign-up that failed half-way.
	StateClaimed State = "claimed"
	// StateRevoked: an admin withdrew it before anyone claimed it.
	StateRevoked State = "revoked"
	// StateExpired: unclaimed past expires_at; the table's TTL deletes it
	// some days later.
	StateExpired State = "expired"
)

// StateAt returns inv's state at now. Revoked wins over claimed, claimed
// over expired.
func (inv *Invite) StateAt(now time.Time) State {
	switch {
	case inv.RevokedAt != nil:
		return StateRevoked
	case inv.ClaimedBy != "":
		return StateClaimed
	case now.Unix() >= inv.ExpiresAt:
		return StateExpired
	}
	return StateOpen
}

// Expires returns ExpiresAt as a time.
func (inv *Invite) Expires() time.Time { return time.Unix(inv.ExpiresAt, 0).UTC() }

// Sentinel errors of Store. Each has its own page.
var (
	ErrNotFound   = errors.New("invite not found")
	ErrExpired    = errors.New("invite expired")
	ErrClaimed    = errors.New("invite already used")
	ErrRevoked    = errors.New("invite revoked")
	ErrWrongEmail = errors.New("invite is for another email")
)

// Store reads and writes the invites table.
type Store struct {
	items store.Items
	table store.Table
}

// NewStore returns a Store on the invites table t.
func NewStore(items store.Items, t store.Table) *Store {
	return &Store{items: items, table: t}
}

// key is the invite tok's key.
func key(tok string) store.Key { return store.Key{PK: tok} }

// Create writes a new invite with a fresh token (attribute_not_exists, so a
// token is never reused) and returns it.
func (s *Store) Create(ctx context.Context, inv Invite) (*Invite, error) {
	inv.Token = token.New()
	item, err := store.Encode(inv)
	if err != nil {
		return nil, fmt.Errorf("invite: create: encode: %w", err)
	}
	if _, err := s.items.Put(ctx, s.table, item, store.NotExists(store.P("invite_token"))); err != nil {
		return nil, fmt.Errorf("invite: create: %w", err)
	}
	return &inv, nil
}

// Get returns the invite named tok, or ErrNotFound.
func (s *Store) Get(ctx context.Context, tok string) (*Invite, error) {
	if !token.Valid(tok) {
		return nil, fmt.Errorf("invite: get: %w", ErrNotFound)
	}
	inv, found, err := store.GetAs[Invite](ctx, s.items, s.table, key(tok))
	if err != nil {
		return nil, fmt.Errorf("invite: get: %w", err)
	}
	if !found {
		return nil, fmt.Errorf("invite: get: %w", ErrNotFound)
	}
	return &inv, nil
}

// List returns every invite, newest first, by Scan (a handful per
// deployment; DESIGN.md allows scans for admin lists).
func (s *Store) List(ctx context.Context) ([]Invite, error) {
	all, err := store.ScanAll[Invite](ctx, s.items, store.Scan{Table: s.table})
	if err != nil {
		return nil, fmt.Errorf("invite: list: %w", err)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].CreatedAt.After(all[j].CreatedAt) })
	return all, nil
}

// Claim marks the invite tok as claimed by userID with ONE conditional
// update: it must exist and be unrevoked, and either be unclaimed and
// unexpired at now, or be claimed by userID already — a re-run by the
// claimer is a no-op, even after the invite's expiry, so a sign-up whose
// users-row write failed after the claim can be finished later (DESIGN.md,
// sign-up). Its email restriction, if any, must equal email. Of many
// racing claimants exactly one succeeds. On a failed condition it returns
// ErrNotFound, ErrRevoked, ErrClaimed, ErrExpired or ErrWrongEmail.
func (s *Store) Claim(ctx context.Context, tok, userID, email string, now time.Time) (*Invite, error) {
	if !token.Valid(tok) {
		return nil, fmt.Errorf("invite: claim: %w", ErrNotFound)
	}
	claimedBy, mail := store.P("claimed_by"), store.P("email")
	cond := store.And(
		store.Exists(store.P("invite_token")),
		store.NotExists(store.P("revoked_at")),
		store.Or(
			store.And(store.NotExists(claimedBy), store.Gt(store.P("expires_at"), store.Int(now.Unix()))),
			store.Eq(claimedBy, store.S(userID))),
		store.Or(store.NotExists(mail), store.Eq(mail, store.S(email))))
	update := store.Update{}.
		Set(claimedBy, store.Value(store.S(userID))).
		Set(store.P("claimed_at"), store.IfNotExists(store.P("claimed_at"), store.S(now.UTC().Format(time.RFC3339Nano))))
	item, err := s.items.Update(ctx, s.table, key(tok), update, cond)
	var refused *store.ConditionFailedError
	if errors.As(err, &refused) {
		return nil, fmt.Errorf("invite: claim: %w", whyRefused(refused.Current, userID, email, now))
	}
	if err != nil {
		return nil, fmt.Errorf("invite: claim: %w", err)
	}
	inv, err := store.Decode[Invite](item)
	if err != nil {
		return nil, fmt.Errorf("invite: claim: decode: %w", err)
	}
	return &inv, nil
}

// whyRefused names the sentinel for a failed claim condition from the
// invite the refusal was over (nil: none). The item only picks the
// message; the write already decided. An item that does not decode is
// returned as its error: no sentinel fits it.
func whyRefused(item store.Item, userID, email string, now time.Time) error {
	if item == nil {
		return ErrNotFound
	}
	inv, err := store.Decode[Invite](item)
	if err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	switch inv.StateAt(now) {
	case StateRevoked:
		return ErrRevoked
	case StateClaimed:
		if inv.ClaimedBy != userID {
			return ErrClaimed
		}
	case StateExpired:
		return ErrExpired
	}
	if inv.Email != "" && inv.Email != email {
		return ErrWrongEmail
	}
	return ErrClaimed
}

// FindClaimed returns the invite userID claimed, or ErrNotFound. It is
// for a sign-in without an invite by someone with no users row: if the
// row's write failed after their claim, the claim lets them finish
// signing up. No key leads from a user to their invite, so it is a
// paginated Scan filtered on claimed_by: the invites table holds a few
// rows per user at this scale, and the path runs only for people who
// have no account (each one a sign-in start, rate-limited per address).
func (s *Store) FindClaimed(ctx context.Context, userID string) (*Invite, error) {
	if userID == "" {
		return nil, fmt.Errorf("invite: find claimed: %w", ErrNotFound)
	}
	all, err := store.ScanAll[Invite](ctx, s.items, store.Scan{Table: s.table, Consistent: true,
		Filter: store.Eq(store.P("claimed_by"), store.S(userID))})
	if err != nil {
		return nil, fmt.Errorf("invite: find claimed: %w", err)
	}
	for _, inv := range all {
		if inv.ClaimedBy == userID && inv.RevokedAt == nil {
			return &inv, nil
		}
	}
	return nil, fmt.Errorf("invite: find claimed: %w", ErrNotFound)
}

// Revoke marks an unclaimed invite revoked, so its link stops working. It
// returns ErrNotFound for no such invite and ErrClaimed if it was used.
func (s *Store) Revoke(ctx context.Context, tok string, now time.Time) error {
	if !token.Valid(tok) {
		return fmt.Errorf("invite: revoke: %w", ErrNotFound)
	}
	_, err := s.items.Update(ctx, s.table, key(tok),
		store.Update{}.Set(store.P("revoked_at"), store.IfNotExists(store.P("revoked_at"), store.S(now.UTC().Format(time.RFC3339Nano)))),
		store.And(store.Exists(store.P("invite_token")), store.NotExists(store.P("claimed_by"))))
	var refused *store.ConditionFailedError
	switch {
	case errors.As(err, &refused) && refused.Current == nil:
		return fmt.Errorf("invite: revoke: %w", ErrNotFound)
	case errors.As(err, &refused):
		return fmt.Errorf("invite: revoke: %w", ErrClaimed)
	case err != nil:
		return fmt.Errorf("invite: revoke: %w", err)
	}
	return nil
}

// DeleteFor removes userID from the invites table (a step of account
// deletion): the invites they created that nobody claimed (open, expired or
// revoked), and the invite they claimed, which holds their email and user
// ID. Invites they created that others claimed stay: those record the
// others' sign-ups. A paged, strongly consistent Scan finds them; each
// delete is conditional on the invite still being in the state that made it
// deletable, so an invite claimed meanwhile by someone else is kept. It
// returns how many it deleted and can be re-run.
func (s *Store) DeleteFor(ctx context.Context, userID string) (int, error) {
	if userID == "" {
		return 0, fmt.Errorf("invite: delete for user: empty user id")
	}
	all, err := s.ofUser(ctx, userID)
	if err != nil {
		return 0, fmt.Errorf("invite: delete for user: %w", err)
	}
	deleted := 0
	for _, inv := range all {
		cond := store.NotExists(store.P("claimed_by"))
		switch {
		case inv.ClaimedBy == userID:
			cond = store.Eq(store.P("claimed_by"), store.S(userID))
		case inv.ClaimedBy != "":
			continue // created by userID, claimed by someone else
		}
		_, err := s.items.Delete(ctx, s.table, key(inv.Token), cond)
		switch {
		case errors.Is(err, store.ErrConditionFailed):
			// Claimed meanwhile by someone else, or already gone.
		case err != nil:
			return deleted, fmt.Errorf("invite: delete for user: %w", err)
		default:
			deleted++
		}
	}
	return deleted, nil
}

// Counts are the monitor's numbers of invites by state (StateAt).
type Counts struct{ Open, Claimed, Revoked, Expired int }

// Count counts the invites in each state at now with paced Scans, for
// the admin monitor.
func (s *Store) Count(ctx context.Context, pace store.Pace, now time.Time) (Counts, error) {
	claimed := store.Exists(store.P("claimed_by"))
	unclaimed := store.NotExists(store.P("claimed_by"))
	revoked := store.And(unclaimed, store.Exists(store.P("revoked_at")))
	expired := store.And(unclaimed, store.NotExists(store.P("revoked_at")), store.Le(store.P("expires_at"), store.Int(now.Unix())))
	var c Counts
	total, err := store.CountPaced(ctx, s.items, store.Scan{Table: s.table}, pace)
	if err != nil {
		return c, fmt.Errorf("invite: count: %w", err)
	}
	for _, f := range []struct {
		cond store.Cond
		n    *int
	}{{claimed, &c.Claimed}, {revoked, &c.Revoked}, {expired, &c.Expired}} {
		if *f.n, err = store.CountPaced(ctx, s.items, store.Scan{Table: s.table, Filter: f.cond}, pace); err != nil {
			return c, fmt.Errorf("invite: count: %w", err)
		}
	}
	c.Open = total - c.Claimed - c.Revoked - c.Expired
	return c, nil
}

// ofUser returns every invite userID created or claimed, by a paged
// Scan that is strongly consistent: an invite created just before the
// account was marked (deleting, moving) must be seen.
func (s *Store) ofUser(ctx context.Context, userID string) ([]Invite, error) {
	return store.ScanAll[Invite](ctx, s.items, store.Scan{Table: s.table, Consistent: true,
		Filter: store.Or(store.Eq(store.P("created_by"), store.S(userID)), store.Eq(store.P("claimed_by"), store.S(userID)))})
}

// MoveUser gives fromID's invites to toID (the move of an account to a
// new subject): created_by of the invites they made and claimed_by of the
// one they signed up with. A strongly consistent paged Scan finds them;
// each attribute is re-pointed with an update conditional on it still
// naming fromID, so it can be re-run. It returns how many invites it
// changed.
func (s *Store) MoveUser(ctx context.Context, fromID, toID string) (int, error) {
	if fromID == "" || toID == "" {
		return 0, fmt.Errorf("invite: move user: empty user id")
	}
	all, err := s.ofUser(ctx, fromID)
	if err != nil {
		return 0, fmt.Errorf("invite: move user: %w", err)
	}
	moved := 0
	for _, inv := range all {
		for _, attr := range []string{"created_by", "claimed_by"} {
			if (attr == "created_by" && inv.CreatedBy != fromID) || (attr == "claimed_by" && inv.ClaimedBy != fromID) {
				continue
			}
			_, err := s.items.Update(ctx, s.table, key(inv.Token),
				store.Update{}.Set(store.P(attr), store.Value(store.S(toID))), store.Eq(store.P(attr), store.S(fromID)))
			switch {
			case errors.Is(err, store.ErrConditionFailed):
				// Gone (TTL) or moved already.
			case err != nil:
				return moved, fmt.Errorf("invite: move user: %w", err)
			default:
				moved++
			}
		}
	}
	return moved, nil
}
