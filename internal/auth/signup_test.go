package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ndiro/internal/invite"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// fakeUsers is a users table in memory; createErr, if set, fails Create.
type fakeUsers struct {
	rows      map[string]user.User
	createErr error
	findErr   error
}

func (f *fakeUsers) Create(_ context.Context, u *user.User) error {
	if f.createErr != nil {
		return f.createErr
	}
	if _, ok := f.rows[u.ID]; ok {
		return fmt.Errorf("user: create: %w", user.ErrExists)
	}
	f.rows[u.ID] = *u
	return nil
}

// FindAwaitingOwner is the store's rule: a row marked as waiting for its
// owner whose email is email, case-insensitively.
func (f *fakeUsers) FindAwaitingOwner(_ context.Context, email string) (*user.User, error) {
	if f.findErr != nil {
		return nil, f.findErr
	}
	for _, u := range f.rows {
		if u.AwaitingOwner != nil && strings.EqualFold(u.Email, email) {
			return &u, nil
		}
	}
	return nil, fmt.Errorf("user: find awaiting owner: %w", user.ErrNotFound)
}

func (f *fakeUsers) Get(_ context.Context, id string) (*user.User, error) {
	u, ok := f.rows[id]
	if !ok {
		return nil, fmt.Errorf("user: get: %w", user.ErrNotFound)
	}
	return &u, nil
}

// fakeInvites answers Claim per token from claims (a token not in it is
// ErrNotFound) and FindClaimed from found (nil: ErrNotFound), recording
// the tokens claimed.
type fakeInvites struct {
	claims  map[string]claimResult
	found   *invite.Invite
	findErr error
	claimed []string
}

type claimResult struct {
	inv *invite.Invite
	err error
}

func (f *fakeInvites) FindClaimed(context.Context, string) (*invite.Invite, error) {
	if f.findErr != nil {
		return nil, f.findErr
	}
	if f.found == nil {
		return nil, fmt.Errorf("invite: find claimed: %w", invite.ErrNotFound)
	}
	return f.found, nil
}

func (f *fakeInvites) Claim(_ context.Context, tok, _, _ string, _ time.Time) (*invite.Invite, error) {
	c, ok := f.claims[tok]
	if !ok {
		return nil, fmt.Errorf("invite: claim: %w", invite.ErrNotFound)
	}
	if c.err != nil {
		return nil, fmt.Errorf("invite: claim: %w", c.err)
	}
	f.claimed = append(f.claimed, tok)
	return c.inv, nil
}

// TestSignUp runs the sign-up rule on fake stores: who gets a row, with
// which role and invite, and which refusal, with nothing written on a
// refusal.
func TestSignUp(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 9, 1, 14, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	ownerInv := &invite.Invite{Token: "inv-owner", Role: user.RoleOwner}
	adminInv := &invite.Invite{Token: "inv-admin", Role: user.RoleAdmin}
	claims := map[string]claimResult{
		"inv-owner":   {inv: ownerInv},
		"inv-admin":   {inv: adminInv},
		"inv-expired": {err: invite.ErrExpired},
		"inv-used":    {err: invite.ErrClaimed},
		"inv-other":   {err: invite.ErrWrongEmail},
	}
	storeDown := errors.New("store unreachable")
	row := func(email string, role user.Role, inv string) *user.User {
		return &user.User{ID: "sub-1", Email: email, Name: "Ana", Role: role, Status: user.StatusActive, InviteToken: inv, CreatedAt: now.UTC(), Issuer: "https://id.example"}
	}
	for _, tc := range []struct {
		name      string
		email     string
		invite    string
		found     *invite.Invite // an invite claimed in an earlier sign-up
		findErr   error
		existing  bool // the row is written meanwhile (a second sign-in)
		createErr error
		want      *user.User
		created   bool
		wantErr   error
		claimed   []string
	}{
		{name: "admin email, no invite", email: "boss@example.com", want: row("boss@example.com", user.RoleAdmin, ""), created: true},
		{name: "owner invite", email: "ana@example.com", invite: "inv-owner", want: row("ana@example.com", user.RoleOwner, "inv-owner"), created: true, claimed: []string{"inv-owner"}},
		{name: "admin invite", email: "ana@example.com", invite: "inv-admin", want: row("ana@example.com", user.RoleAdmin, "inv-admin"), created: true, claimed: []string{"inv-admin"}},
		{name: "admin email with an owner invite", email: "boss@example.com", invite: "inv-owner", want: row("boss@example.com", user.RoleAdmin, "inv-owner"), created: true, claimed: []string{"inv-owner"}},
		{name: "admin email with an expired invite", email: "boss@example.com", invite: "inv-expired", want: row("boss@example.com", user.RoleAdmin, ""), created: true},
		{name: "admin email with an unknown invite", email: "boss@example.com", invite: "inv-nope", want: row("boss@example.com", user.RoleAdmin, ""), created: true},
		{name: "no invite", email: "ana@example.com", wantErr: ErrInviteNeeded},
		{name: "no invite, one claimed before", email: "ana@example.com", found: ownerInv, want: row("ana@example.com", user.RoleOwner, "inv-owner"), created: true, claimed: []string{"inv-owner"}},
		{name: "expired invite", email: "ana@example.com", invite: "inv-expired", wantErr: invite.ErrExpired},
		{name: "used invite", email: "ana@example.com", invite: "inv-used", wantErr: invite.ErrClaimed},
		{name: "invite for another address", email: "ana@example.com", invite: "inv-other", wantErr: invite.ErrWrongEmail},
		{name: "unknown invite", email: "ana@example.com", invite: "inv-nope", wantErr: invite.ErrNotFound},
		{name: "signed up meanwhile", email: "ana@example.com", invite: "inv-owner", existing: true, want: row("ana@example.com", user.RoleOwner, "inv-earlier"), claimed: []string{"inv-owner"}},
		{name: "invites unreachable", email: "ana@example.com", findErr: storeDown, wantErr: storeDown},
		{name: "users unreachable", email: "boss@example.com", createErr: storeDown, wantErr: storeDown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			users := &fakeUsers{rows: map[string]user.User{}}
			if tc.existing {
				users.rows["sub-1"] = *row("ana@example.com", user.RoleOwner, "inv-earlier")
			}
			users.createErr = tc.createErr
			invites := &fakeInvites{claims: claims, found: tc.found, findErr: tc.findErr}
			d := SignUpDeps{Users: users, Invites: invites, IsAdminEmail: func(e string) bool { return e == "boss@example.com" }, Now: now}
			got, created, err := SignUp(t.Context(), d, Newcomer{Sub: "sub-1", Email: tc.email, Name: "Ana", Issuer: "https://id.example"}, tc.invite)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("SignUp = %v, want %v", err, tc.wantErr)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("SignUp's row (-want +got):\n%s", d)
			}
			if created != tc.created {
				t.Errorf("SignUp created = %v, want %v", created, tc.created)
			}
			if d := cmp.Diff(tc.claimed, invites.claimed); d != "" {
				t.Errorf("invites claimed (-want +got):\n%s", d)
			}
			if err != nil && !tc.existing && len(users.rows) != 0 {
				t.Errorf("a refused sign-up wrote %v", users.rows)
			}
			if invite.Refused(err) != (tc.invite != "" && tc.wantErr != nil && tc.wantErr != storeDown) {
				t.Errorf("invite.Refused(%v) = %v", err, invite.Refused(err))
			}
		})
	}
}

// TestSignUpPage: each refusal of SignUp becomes its page; any other error
// is left to be a 500.
func TestSignUpPage(t *testing.T) {
	t.Parallel()
	other := errors.New("store unreachable")
	for _, tc := range []struct {
		name         string
		err          error
		invite       string
		status       int
		title        string
		back         string
		passedThough bool
	}{
		{"no invite", ErrInviteNeeded, "", http.StatusForbidden, "You need an invite", "", false},
		{"marked account claimed by another", fmt.Errorf("auth: sign up: %w", user.ErrClaimed), "", http.StatusConflict, "Account already moving", "", false},
		{"expired", fmt.Errorf("auth: sign up: %w", invite.ErrExpired), "tok", http.StatusGone, "Invite expired", "", false},
		{"for another address", fmt.Errorf("auth: sign up: %w", invite.ErrWrongEmail), "tok", http.StatusForbidden, "Invite is for someone else", "/invite/tok", false},
		{"for another address, found by claimer", invite.ErrWrongEmail, "", http.StatusForbidden, "Invite is for someone else", "", false},
		{"store failure", other, "tok", 0, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := signUpPage(tc.err, tc.invite)
			if tc.passedThough {
				if got != tc.err {
					t.Errorf("signUpPage(%v) = %v, want it unchanged", tc.err, got)
				}
				return
			}
			e, ok := web.AsError(got)
			if !ok {
				t.Fatalf("signUpPage(%v) = %v, want a *web.Error", tc.err, got)
			}
			if e.Status != tc.status || e.Title != tc.title || e.Back != tc.back {
				t.Errorf("signUpPage(%v) = %d %q back %q, want %d %q back %q", tc.err, e.Status, e.Title, e.Back, tc.status, tc.title, tc.back)
			}
		})
	}
}

// fakeMoves records the moves started and answers with a moving row, or
// err.
type fakeMoves struct {
	started []string // "old -> new"
	err     error
}

func (f *fakeMoves) Start(_ context.Context, old *user.User, newID, issuer string) (*user.User, error) {
	if f.err != nil {
		return nil, f.err
	}
	f.started = append(f.started, old.ID+" -> "+newID+" of "+issuer)
	return &user.User{ID: newID, Email: old.Email, Role: old.Role, Status: user.StatusMoving, MoveFrom: old.ID}, nil
}

// TestSignUpMarked: a newcomer whose verified email is a marked account's
// moves it, with no invite; an unmarked account with the same email, an
// unverified email, a newcomer of the account's own issuer, an expired
// mark and one that records no issuer are the normal sign-up, which is
// invite-only.
func TestSignUpMarked(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 9, 1, 14, 0, 0, 0, time.UTC)
	marked := now.Add(-time.Hour)
	mark := &user.OwnerMark{By: "admin-1", Expires: now.Add(time.Hour), Issuer: "https://old.example"}
	ownIssuer := &user.OwnerMark{By: "admin-1", Expires: now.Add(time.Hour), Issuer: "https://new.example"}
	expired := &user.OwnerMark{By: "admin-1", Expires: now, Issuer: "https://old.example"}
	storeDown := errors.New("store unreachable")
	for _, tc := range []struct {
		name     string
		old      user.User
		verified bool
		invite   string
		findErr  error
		moveErr  error
		wantErr  error
		started  []string
		claimed  []string
	}{
		{name: "marked, verified", old: user.User{ID: "local-ana", Email: "ana@example.com", Role: user.RoleOwner, AwaitingOwner: &marked, OwnerMark: mark}, verified: true,
			started: []string{"local-ana -> sub-1 of https://new.example"}},
		{name: "marked with capitals, verified", old: user.User{ID: "local-ana", Email: "Ana@Example.com", Role: user.RoleOwner, AwaitingOwner: &marked, OwnerMark: mark}, verified: true,
			started: []string{"local-ana -> sub-1 of https://new.example"}},
		{name: "marked, verified, with an invite", old: user.User{ID: "local-ana", Email: "ana@example.com", Role: user.RoleOwner, AwaitingOwner: &marked, OwnerMark: mark}, verified: true, invite: "inv-owner",
			started: []string{"local-ana -> sub-1 of https://new.example"}},
		{name: "marked, not verified", old: user.User{ID: "local-ana", Email: "ana@example.com", Role: user.RoleOwner, AwaitingOwner: &marked, OwnerMark: mark}, wantErr: ErrInviteNeeded},
		{name: "marked, newcomer of the account's own issuer", old: user.User{ID: "local-ana", Email: "ana@example.com", Role: user.RoleOwner, AwaitingOwner: &marked, OwnerMark: ownIssuer}, verified: true, wantErr: ErrInviteNeeded},
		{name: "marked, own issuer, with an invite", old: user.User{ID: "local-ana", Email: "ana@example.com", Role: user.RoleOwner, AwaitingOwner: &marked, OwnerMark: ownIssuer}, verified: true, invite: "inv-owner",
			claimed: []string{"inv-owner"}},
		{name: "mark expired", old: user.User{ID: "local-ana", Email: "ana@example.com", Role: user.RoleOwner, AwaitingOwner: &marked, OwnerMark: expired}, verified: true, wantErr: ErrInviteNeeded},
		{name: "mark recording nothing", old: user.User{ID: "local-ana", Email: "ana@example.com", Role: user.RoleOwner, AwaitingOwner: &marked}, verified: true, wantErr: ErrInviteNeeded},
		{name: "not marked, same email", old: user.User{ID: "local-ana", Email: "ana@example.com", Role: user.RoleOwner}, verified: true, wantErr: ErrInviteNeeded},
		{name: "not marked, same email, with an invite", old: user.User{ID: "local-ana", Email: "ana@example.com", Role: user.RoleOwner}, verified: true, invite: "inv-owner",
			claimed: []string{"inv-owner"}},
		{name: "claimed by another meanwhile", old: user.User{ID: "local-ana", Email: "ana@example.com", AwaitingOwner: &marked, OwnerMark: mark}, verified: true, moveErr: user.ErrClaimed, wantErr: user.ErrClaimed},
		{name: "users unreachable", old: user.User{ID: "local-ana", Email: "ana@example.com", AwaitingOwner: &marked, OwnerMark: mark}, verified: true, findErr: storeDown, wantErr: storeDown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			users := &fakeUsers{rows: map[string]user.User{tc.old.ID: tc.old}, findErr: tc.findErr}
			invites := &fakeInvites{claims: map[string]claimResult{"inv-owner": {inv: &invite.Invite{Token: "inv-owner", Role: user.RoleOwner}}}}
			moves := &fakeMoves{err: tc.moveErr}
			d := SignUpDeps{Users: users, Invites: invites, Moves: moves, IsAdminEmail: func(string) bool { return false }, Now: now}
			got, created, err := SignUp(t.Context(), d, Newcomer{Sub: "sub-1", Email: "ana@example.com", EmailVerified: tc.verified, Issuer: "https://new.example"}, tc.invite)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("SignUp = %v, want %v", err, tc.wantErr)
			}
			if d := cmp.Diff(tc.started, moves.started); d != "" {
				t.Errorf("moves started (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.claimed, invites.claimed); d != "" {
				t.Errorf("invites claimed (-want +got):\n%s", d)
			}
			if tc.started != nil && (got == nil || !created || got.ID != "sub-1" || !got.Moving()) {
				t.Errorf("SignUp of a marked account's owner = %+v, created %v; want the new row, moving", got, created)
			}
			if tc.started == nil && tc.claimed == nil && len(users.rows) != 1 {
				t.Errorf("a refused sign-up wrote %v", users.rows)
			}
		})
	}
}
