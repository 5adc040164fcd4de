package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"ndiro/internal/invite"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// ErrInviteNeeded is SignUp's refusal of someone with no invite whose
// email is not in ADMIN_EMAILS: sign-up is invite-only (DESIGN.md,
// sign-in, sign-up).
var ErrInviteNeeded = errors.New("auth: sign-up needs an invite")

// Newcomer is someone signing in who has no users row yet.
type Newcomer struct {
	// Sub is the ID token's subject: the users row's partition key.
	Sub string
	// Email is the provider's verified email, in lower case.
	Email string
	// Name is the display name the provider sent, cleaned
	// (user.CleanName); "" if none.
	Name string
	// EmailVerified is the provider's email_verified claim: only a
	// verified email reaches an account waiting for its owner.
	EmailVerified bool
	// Issuer is the ID token's issuer (iss), which the row records
	// (user.User.Issuer): a marked account is never claimed by a subject
	// of its own subject's issuer (user.User.ClaimableBy).
	Issuer string
}

// SignUpUsers is what SignUp needs of the users table (user.Store).
type SignUpUsers interface {
	Create(ctx context.Context, u *user.User) error
	Get(ctx context.Context, id string) (*user.User, error)
	FindAwaitingOwner(ctx context.Context, email string) (*user.User, error)
}

// SignUpMoves starts the move of an account waiting for its owner to a
// new subject of an issuer (account.Mover.Start): it returns the new
// row, moving, or user.ErrClaimed if another subject took the account
// first or its mark no longer lets this one.
type SignUpMoves interface {
	Start(ctx context.Context, old *user.User, newID, issuer string) (*user.User, error)
}

// SignUpInvites is what SignUp needs of the invites table (invite.Store).
type SignUpInvites interface {
	FindClaimed(ctx context.Context, userID string) (*invite.Invite, error)
	Claim(ctx context.Context, tok, userID, email string, now time.Time) (*invite.Invite, error)
}

// SignUpDeps are SignUp's stores and rules.
type SignUpDeps struct {
	Users   SignUpUsers
	Invites SignUpInvites
	// IsAdminEmail reports whether an email is in ADMIN_EMAILS.
	IsAdminEmail func(email string) bool
	// Moves moves a marked account to the newcomer; nil matches no
	// account by email.
	Moves SignUpMoves
	// Now is the time of the sign-up: the invite's expiry is checked
	// against it and the row's created_at is it, in UTC.
	Now time.Time
}

// SignUp creates the users row of n's first sign-in, active, with the
// invite inviteTok ("" for none): the invite is claimed (one conditional
// UpdateItem) and gives the role; emails in ADMIN_EMAILS need no invite
// and become admins (an invite of theirs that cannot be used is left
// unclaimed); anyone else is refused. The row is written with
// attribute_not_exists, so of two sign-ins of one person at once one
// writes it and the other returns it (created false).
//
// A claim re-run by its claimer is a no-op, so a sign-up that failed
// half-way (the claim written, the users row not) is finished by the next
// sign-in, through the invite link or without it: with no invite,
// someone not in ADMIN_EMAILS is looked up as an invite's claimer
// (invite.Store.FindClaimed).
//
// First, though: a newcomer whose verified email (n.EmailVerified) is
// that of an account waiting for its owner (user.Store.FindAwaitingOwner,
// which matches marked accounts only, never any other) whose mark n may
// claim (user.User.ClaimableBy: n.Issuer is not the issuer of the
// account's own subject, and the mark has not expired) needs no invite:
// that account moves to n.Sub (d.Moves.Start), and the new row, moving,
// is returned with created true; an invite the sign-in came with is left
// unclaimed. An unverified email is never matched; one whose mark n may
// not claim signs up as anyone else would.
//
// Errors: ErrInviteNeeded for no invite; user.ErrClaimed for a marked
// account another subject claimed first; the invite's refusal for one that
// cannot be used (wrapped; invite.Refused reports it: ErrNotFound,
// ErrExpired, ErrClaimed, ErrRevoked, ErrWrongEmail); any other is a store
// failure. Nothing is written on a refusal.
func SignUp(ctx context.Context, d SignUpDeps, n Newcomer, inviteTok string) (u *user.User, created bool, err error) {
	if u, err := moveMarked(ctx, d, n); u != nil || err != nil {
		return u, u != nil, err
	}
	admin := d.IsAdminEmail(n.Email)
	if inviteTok == "" && !admin {
		if inviteTok, err = claimedBefore(ctx, d.Invites, n.Sub); err != nil {
			return nil, false, err
		}
	}
	u = &user.User{ID: n.Sub, Email: n.Email, Name: n.Name, Role: user.RoleOwner, Status: user.StatusActive, CreatedAt: d.Now.UTC(), Issuer: n.Issuer}
	var claimed *invite.Invite
	if inviteTok != "" {
		claimed, err = d.Invites.Claim(ctx, inviteTok, n.Sub, n.Email, d.Now)
		if err != nil && !(admin && invite.Refused(err)) {
			return nil, false, fmt.Errorf("auth: sign up: %w", err)
		}
	}
	switch {
	case admin:
		u.Role = user.RoleAdmin
	case claimed != nil:
		u.Role = claimed.Role
	default:
		return nil, false, ErrInviteNeeded
	}
	if claimed != nil {
		u.InviteToken = claimed.Token
	}
	err = d.Users.Create(ctx, u)
	if errors.Is(err, user.ErrExists) {
		// The same person signing in twice at once: the other request won.
		u, err = d.Users.Get(ctx, n.Sub)
		return u, false, err
	}
	if err != nil {
		return nil, false, err
	}
	return u, true, nil
}

// moveMarked starts the move of the marked account with n's verified
// email to n.Sub and returns its new row; nil and no error if no marked
// account has the email, it is not verified, or n may not claim the
// account's mark.
func moveMarked(ctx context.Context, d SignUpDeps, n Newcomer) (*user.User, error) {
	if d.Moves == nil || !n.EmailVerified || n.Email == "" {
		return nil, nil
	}
	marked, err := d.Users.FindAwaitingOwner(ctx, n.Email)
	if errors.Is(err, user.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("auth: sign up: %w", err)
	}
	if !marked.ClaimableBy(n.Issuer, d.Now) {
		return nil, nil
	}
	u, err := d.Moves.Start(ctx, marked, n.Sub, n.Issuer)
	if err != nil {
		return nil, fmt.Errorf("auth: sign up: %w", err)
	}
	return u, nil
}

// claimedBefore returns the token of the invite sub claimed in an earlier,
// unfinished sign-up, "" if none.
func claimedBefore(ctx context.Context, invites SignUpInvites, sub string) (string, error) {
	inv, err := invites.FindClaimed(ctx, sub)
	switch {
	case err == nil:
		return inv.Token, nil
	case errors.Is(err, invite.ErrNotFound):
		return "", nil
	}
	return "", err
}

// signUpPage is the page for a sign-up SignUp refused (inviteTok is the
// invite the sign-in came with); any other error passes through.
func signUpPage(err error, inviteTok string) error {
	switch {
	case errors.Is(err, user.ErrClaimed):
		return &web.Error{Status: http.StatusConflict, Title: "Account already moving",
			Msg: "The account with your email address is being moved to another sign-in already, so it cannot be yours here. If that was not you, tell whoever runs this site.", Err: err}
	case errors.Is(err, ErrInviteNeeded):
		return &web.Error{Status: http.StatusForbidden, Title: "You need an invite",
			Msg: "ndiro is invite-only. Ask someone who uses it to send you an invite link, then open that link to sign up."}
	case !invite.Refused(err):
		return err
	}
	e := invite.RefusalError(err)
	if we, ok := e.(*web.Error); ok && errors.Is(err, invite.ErrWrongEmail) && inviteTok != "" {
		// The way on is the invite again, to sign in with the account it
		// was sent to, not the start page.
		we.Back, we.BackText = "/invite/"+inviteTok, "Back to the invite"
	}
	return e
}
