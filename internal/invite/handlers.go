package invite

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"ndiro/internal/email"
	"ndiro/internal/limit"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// Unknown invite tokens are rate-limited per client address (DESIGN.md,
// share links and invites), at the landing page and at /login?invite=,
// which share one Limiter (NewMissLimiter): 20 misses at once, then one
// every 6 s. Nobody mistyping a link is stopped; guessing 256-bit tokens
// is slowed to 10 a minute, and once the allowance is spent every invite
// lookup from that address is refused until it refills, so a guess that
// hits cannot be told from one that misses.
const (
	MissBurst = 20
	MissEvery = 6 * time.Second
	// missKeys bounds the limiter's memory: addresses tracked at once.
	missKeys = 10_000
)

// NewMissLimiter returns the per-address limiter of unknown invite
// tokens (MissBurst, MissEvery) on the clock now. The landing page and
// sign-in share one.
func NewMissLimiter(now func() time.Time) *limit.Limiter {
	return limit.New(limit.Rule{Every: MissEvery, Burst: MissBurst, MaxKeys: missKeys}, now)
}

// MissesRefused is the 429 for an address out of misses, with
// Retry-After.
func MissesRefused(w http.ResponseWriter, wait time.Duration) error {
	return web.TooManyRequests(w, wait, "There were too many invite links from your address that do not exist.")
}

// Handler serves the invite landing page and the admin invite pages.
type Handler struct {
	store       *Store
	pages       *web.Pages
	baseURL     string
	now         func() time.Time
	signedIn    func(*http.Request) string
	misses      *limit.Limiter
	proxyHeader string
}

// Deps are the Handler's collaborators.
type Deps struct {
	Store *Store
	Pages *web.Pages
	// BaseURL is the public origin used in invite links, e.g.
	// "https://ndiro.example.org".
	BaseURL string
	Now     func() time.Time
	// SignedIn returns the session's user ID, "" if none (the landing
	// page is public).
	SignedIn func(*http.Request) string
	// Misses limits unknown tokens per client address (NewMissLimiter),
	// shared with sign-in's /login?invite=.
	Misses *limit.Limiter
	// TrustedProxyHeader names the header carrying the client address
	// (config.Config.TrustedProxyHeader); "" means the direct peer.
	TrustedProxyHeader string
}

// NewHandler returns the invite pages.
func NewHandler(d Deps) *Handler {
	return &Handler{store: d.Store, pages: d.Pages, baseURL: d.BaseURL, now: d.Now, signedIn: d.SignedIn, misses: d.Misses, proxyHeader: d.TrustedProxyHeader}
}

// Limits of the create form.
const (
	DefaultExpiryDays = 7
	MaxExpiryDays     = 90
)

// Form is the admin's create-invite form, as typed.
type Form struct {
	Email      string
	ExpiryDays string
	Role       string
	Errors     map[string]string
}

// Parse checks the form and returns the invite it describes, created by
// adminID at now. Errors are per field in f.Errors; ok is false if any.
func (f *Form) Parse(adminID string, now time.Time) (inv Invite, ok bool) {
	f.Errors = map[string]string{}
	addr := email.Normalize(f.Email)
	if addr != "" && !email.Valid(addr) {
		f.Errors["email"] = "Enter a whole email address, like friend@example.com, or leave it empty to let anyone use the link."
	}
	days := DefaultExpiryDays
	if s := strings.TrimSpace(f.ExpiryDays); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxExpiryDays {
			f.Errors["expiry_days"] = "Expiry must be a whole number of days from 1 to 90."
		} else {
			days = n
		}
	}
	role, err := user.ParseRole(f.Role)
	if f.Role == "" {
		role, err = user.RoleOwner, nil
	}
	if err != nil {
		f.Errors["role"] = "Choose owner or admin."
	}
	if len(f.Errors) > 0 {
		return Invite{}, false
	}
	return Invite{
		Email:     addr,
		Role:      role,
		CreatedBy: adminID,
		CreatedAt: now.UTC(),
		ExpiresAt: now.Add(time.Duration(days) * 24 * time.Hour).Unix(),
	}, true
}

type inviteRow struct {
	Invite
	State State
	Link  string
}

type listPage struct {
	web.Base
	Invites []inviteRow
	Form    Form
}

// List shows every invite with its state and link, and the create form.
func (h *Handler) List(w http.ResponseWriter, r *http.Request) error {
	return h.renderList(w, r, http.StatusOK, Form{ExpiryDays: strconv.Itoa(DefaultExpiryDays), Role: string(user.RoleOwner)})
}

func (h *Handler) renderList(w http.ResponseWriter, r *http.Request, status int, f Form) error {
	all, err := h.store.List(r.Context())
	if err != nil {
		return err
	}
	now := h.now()
	rows := make([]inviteRow, len(all))
	for i, inv := range all {
		rows[i] = inviteRow{Invite: inv, State: inv.StateAt(now), Link: h.baseURL + "/invite/" + inv.Token}
	}
	return h.pages.Render(w, r, status, "invite/list", &listPage{Base: web.Base{Title: "Invites"}, Invites: rows, Form: f})
}

// Create adds an invite from the form and shows the list, where its link
// can be copied. A bad form re-renders with 422 and a message per field.
func (h *Handler) Create(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return web.BadRequest("The form could not be read.")
	}
	f := Form{Email: r.PostForm.Get("email"), ExpiryDays: r.PostForm.Get("expiry_days"), Role: r.PostForm.Get("role")}
	inv, ok := f.Parse(user.ID(r.Context()), h.now())
	if !ok {
		return h.renderList(w, r, http.StatusUnprocessableEntity, f)
	}
	created, err := h.store.Create(r.Context(), inv)
	if err != nil {
		return err
	}
	web.SetFlash(w, "Invite created. Copy its link below and send it to the person you invite.")
	web.Redirect(w, r, "/admin/invites#invite-"+created.Token[:8])
	return nil
}

// Revoke stops an unclaimed invite's link from working.
func (h *Handler) Revoke(w http.ResponseWriter, r *http.Request) error {
	err := h.store.Revoke(r.Context(), chi.URLParam(r, "token"), h.now())
	switch {
	case errors.Is(err, ErrNotFound):
		return web.NotFound("There is no such invite.")
	case errors.Is(err, ErrClaimed):
		return web.Errorf(http.StatusConflict, "Invite already used", "This invite was already used to sign up, so there is nothing left to revoke.")
	case err != nil:
		return err
	}
	web.SetFlash(w, "Invite revoked: its link no longer works.")
	web.Redirect(w, r, "/admin/invites")
	return nil
}

type landingPage struct {
	web.Base
	Invite   *Invite
	LoginURL string
}

// Landing is /invite/{token}: it says whether the invite can be used and,
// if so, offers sign-in, after which the invite is claimed. A used
// invite offers sign-in too, for the person who used it (whose sign-up
// may have failed after the claim: signing in through it again finishes
// it); anyone else is refused after signing in. Unknown tokens count
// against the address's misses (MissBurst).
func (h *Handler) Landing(w http.ResponseWriter, r *http.Request) error {
	tok := chi.URLParam(r, "token")
	// The token is in the URL: no page of it may pass it on.
	w.Header().Set("Referrer-Policy", "no-referrer")
	ip := limit.ClientIP(r, h.proxyHeader)
	if blocked, wait := h.misses.Blocked(ip); blocked {
		return MissesRefused(w, wait)
	}
	inv, err := h.store.Get(r.Context(), tok)
	if errors.Is(err, ErrNotFound) {
		h.misses.Allow(ip)
		return RefusalError(ErrNotFound)
	}
	if err != nil {
		return err
	}
	switch inv.StateAt(h.now()) {
	case StateClaimed:
		if h.signedIn != nil && inv.ClaimedBy == h.signedIn(r) {
			// The person who used it, back at their own link.
			web.Redirect(w, r, "/meals")
			return nil
		}
		e := RefusalError(ErrClaimed).(*web.Error)
		e.Msg += " If you used it yourself, sign in to reach your diary."
		e.Back, e.BackText = "/login?invite="+tok, "Sign in with "+h.pages.Provider()
		return e
	case StateRevoked:
		return RefusalError(ErrRevoked)
	case StateExpired:
		return RefusalError(ErrExpired)
	}
	return h.pages.Render(w, r, http.StatusOK, "invite/landing", &landingPage{
		Base:     web.Base{Title: "You're invited"},
		Invite:   inv,
		LoginURL: "/login?invite=" + tok,
	})
}

// Refused reports whether err is a refusal of the invite itself (one of
// ErrNotFound, ErrExpired, ErrClaimed, ErrRevoked, ErrWrongEmail), not a
// failure to read or write it.
func Refused(err error) bool {
	for _, s := range []error{ErrNotFound, ErrExpired, ErrClaimed, ErrRevoked, ErrWrongEmail} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// RefusalError is the page for a claim or landing refused with one of the
// package's sentinels; other errors pass through unchanged.
func RefusalError(err error) error {
	switch {
	case errors.Is(err, ErrNotFound):
		return &web.Error{Status: http.StatusNotFound, Title: "Invite not found", Msg: "This invite link is not valid. Check that you copied all of it, or ask for a new one.", Err: err}
	case errors.Is(err, ErrExpired):
		return &web.Error{Status: http.StatusGone, Title: "Invite expired", Msg: "This invite has expired. Ask the person who sent it for a new one.", Err: err}
	case errors.Is(err, ErrClaimed):
		return &web.Error{Status: http.StatusGone, Title: "Invite already used", Msg: "This invite has already been used. Each invite signs up one person; ask for a new one.", Err: err}
	case errors.Is(err, ErrRevoked):
		return &web.Error{Status: http.StatusGone, Title: "Invite revoked", Msg: "This invite was withdrawn by the person who sent it. Ask them for a new one.", Err: err}
	case errors.Is(err, ErrWrongEmail):
		return &web.Error{Status: http.StatusForbidden, Title: "Invite is for someone else", Msg: "This invite is for a different email address. Sign in with the account it was sent to.", Err: err}
	}
	return err
}
