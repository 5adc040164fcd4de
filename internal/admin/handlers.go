// Package admin serves the admin pages: users (with deletions in progress)
// and, with the monitor, what the app holds and how it runs.
package admin

import (
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"ndiro/internal/photo"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// Handler serves the admin pages.
type Handler struct {
	users    *user.Store
	pages    *web.Pages
	monitor  *Monitor
	deleting func(userID string) bool
	now      func() time.Time
	fixed    func(email string) bool
	log      *slog.Logger
	issuer   string
	markLife time.Duration
}

// Deps are the Handler's collaborators.
type Deps struct {
	Users *user.Store
	Pages *web.Pages
	// DeletionRunning reports whether an account's deletion is running now
	// (account.Deleter.Running), to tell a deletion in progress from one
	// that stopped and waits for a resume.
	DeletionRunning func(userID string) bool
	Monitor         *Monitor
	Now             func() time.Time
	// IsAdminEmail reports whether an email is in ADMIN_EMAILS: those
	// accounts are admins by configuration, and no admin can demote or
	// disable them from these pages.
	IsAdminEmail func(email string) bool
	// Log receives the audit lines of marks to move (MarkMove).
	Log *slog.Logger
	// Issuer is the OIDC issuer of the sign-in in use: a mark records it
	// as the issuer of a row that does not record its own
	// (user.Store.MarkAwaitingOwner).
	Issuer string
	// MarkLifetime is how long a mark to move can be claimed from when
	// it is made or extended (config.Config.MoveMarkLifetime).
	MarkLifetime time.Duration
}

// NewHandler returns the admin pages.
func NewHandler(d Deps) *Handler {
	return &Handler{users: d.Users, pages: d.Pages, monitor: d.Monitor, deleting: d.DeletionRunning, now: d.Now, fixed: d.IsAdminEmail, log: d.Log,
		issuer: d.Issuer, markLife: d.MarkLifetime}
}

// userRow is one line of the users page.
type userRow struct {
	user.User
	// Path is "/admin/users/{id}", the user ID escaped for a URL.
	Path string
	// Self: the admin looking at the page.
	Self bool
	// Running: a deletion is running now; a deleting row that is not
	// running has stopped and can be resumed.
	Running bool
	// Mark describes the account's mark to move; nil if not marked.
	Mark *markView
}

type usersPage struct {
	web.Base
	Users []userRow
	// Marked are the marked accounts, the soonest to expire first (marks
	// that claim nothing last).
	Marked []userRow
	// Stuck counts deletions that stopped and wait for a resume.
	Stuck int
}

// Users lists every user, oldest first, by Scan, with the state of any
// deletion in progress.
func (h *Handler) Users(w http.ResponseWriter, r *http.Request) error {
	all, err := h.users.List(r.Context())
	if err != nil {
		return err
	}
	sort.Slice(all, func(i, j int) bool { return all[i].CreatedAt.Before(all[j].CreatedAt) })
	me := user.ID(r.Context())
	p := &usersPage{Base: web.Base{Title: "Users"}}
	emails := make(map[string]string, len(all))
	for _, u := range all {
		emails[u.ID] = u.Email
	}
	now := h.now()
	for _, u := range all {
		row := userRow{User: u, Path: "/admin/users/" + url.PathEscape(u.ID), Self: u.ID == me, Mark: newMarkView(&u, emails, now)}
		if u.Deleting() {
			row.Running = h.deleting(u.ID)
			if !row.Running {
				p.Stuck++
			}
		}
		p.Users = append(p.Users, row)
		if row.Mark != nil {
			p.Marked = append(p.Marked, row)
		}
	}
	sort.SliceStable(p.Marked, func(i, j int) bool { return p.Marked[i].Mark.before(p.Marked[j].Mark) })
	return h.pages.Render(w, r, http.StatusOK, "admin/users", p)
}

// monitorPage is the monitor: counts, photo cache, process, orphans and
// deletions in progress.
type monitorPage struct {
	web.Base
	Counts   *Counts
	Counting bool
	CountErr string
	// CountsAge is how old Counts are, rounded.
	CountsAge time.Duration
	Cache     photo.Stats
	// HitRatio is hits per lookup, 0 to 1; -1 before the first lookup.
	HitRatio  float64
	Process   Process
	Orphans   OrphanStatus
	Kinds     []kindRow
	Deletions []userRow
	// Pacing states the background read limits.
	ReadUnits, ReadBurst, S3Calls int
	// Grace says, in words, how recent a change the orphan check leaves
	// alone ("hour", "10 minutes"): the Monitor's Grace.
	Grace string
}

// graceWords says d in words for "changed in the last …": "hour" for one
// hour, "2 hours", "10 minutes", "90 seconds"; whole units only, the
// largest that divides d.
func graceWords(d time.Duration) string {
	units := []struct {
		d    time.Duration
		name string
	}{{time.Hour, "hour"}, {time.Minute, "minute"}, {time.Second, "second"}}
	for _, u := range units {
		if d >= u.d && d%u.d == 0 {
			if n := d / u.d; n != 1 {
				return strconv.FormatInt(int64(n), 10) + " " + u.name + "s"
			}
			return u.name
		}
	}
	return d.String()
}

// kindRow is one kind of orphan on the page.
type kindRow struct {
	Kind    Kind
	Label   string
	Repair  string
	Finding *Finding
}

var kindLabels = map[Kind][2]string{
	MealsWithoutUser:  {"Meals whose user is gone", "Delete these meal rows"},
	PhotosWithoutUser: {"Photos whose user is gone", "Delete these photos"},
	PhotosWithoutMeal: {"Photos no meal points to", "Delete these photos"},
	MissingPhotos:     {"Meals whose photo is missing or of another version", "Remove the photo from these meals"},
	ForeignObjects:    {"Objects no user of ndiro could own (written outside it; remove them in the bucket if unwanted)", ""},
	SessionKeys:       {"Session keys no signed-in session is behind (a sign out whose last write failed)", "Delete these keys"},
}

// Monitor shows the monitor page, starting a count in the background if
// the last is older than CountsEvery.
func (h *Handler) Monitor(w http.ResponseWriter, r *http.Request) error {
	c, counting, countErr := h.monitor.Counts()
	p := &monitorPage{
		Base: web.Base{Title: "Monitor"}, Counts: c, Counting: counting, CountErr: countErr,
		Cache: h.monitor.CacheStats(), Process: h.monitor.Process(), Orphans: h.monitor.Orphans(),
		ReadUnits: ReadUnitsPerSecond, ReadBurst: ReadUnitsBurst, S3Calls: S3CallsPerSecond,
		Grace: graceWords(h.monitor.Grace()),
	}
	if c != nil {
		p.CountsAge = h.now().Sub(c.At).Round(time.Second)
	}
	p.HitRatio = -1
	if n := p.Cache.Hits + p.Cache.Misses; n > 0 {
		p.HitRatio = float64(p.Cache.Hits) / float64(n)
	}
	for _, k := range Kinds {
		row := kindRow{Kind: k, Label: kindLabels[k][0], Repair: kindLabels[k][1]}
		if p.Orphans.Report != nil {
			row.Finding = p.Orphans.Report.Findings[k]
		}
		p.Kinds = append(p.Kinds, row)
	}
	deleting, err := h.users.ListDeleting(r.Context())
	if err != nil {
		return err
	}
	for _, u := range deleting {
		p.Deletions = append(p.Deletions, userRow{User: u, Path: "/admin/users/" + url.PathEscape(u.ID), Running: h.deleting(u.ID)})
	}
	return h.pages.Render(w, r, http.StatusOK, "admin/monitor", p)
}

// Check starts the orphan check ("check now").
func (h *Handler) Check(w http.ResponseWriter, r *http.Request) error {
	switch err := h.monitor.StartCheck(); {
	case errors.Is(err, ErrBusy):
		web.SetFlash(w, "The orphan check is already running.")
	case err != nil:
		return err
	default:
		web.SetFlash(w, "Orphan check started. Reload to follow it.")
	}
	web.Redirect(w, r, "/admin/monitor#orphans")
	return nil
}

// Clean repairs one kind of orphan the last check found.
func (h *Handler) Clean(w http.ResponseWriter, r *http.Request) error {
	kind := Kind(chi.URLParam(r, "kind"))
	if _, ok := kindLabels[kind]; !ok {
		return web.NotFound("There is no such kind of orphan.")
	}
	switch err := h.monitor.StartClean(kind); {
	case errors.Is(err, ErrNotOurs):
		return web.Errorf(http.StatusConflict, "Not ndiro's to delete", "These objects were written outside ndiro; remove them in the bucket if they are not wanted.")
	case errors.Is(err, ErrBusy):
		web.SetFlash(w, "The orphan check is running; clean up when it has finished.")
	case err != nil:
		return web.Errorf(http.StatusConflict, "Nothing to clean", "Run the orphan check first; the clean-up repairs what it found.")
	default:
		web.SetFlash(w, "Clean-up started. Reload to see the result.")
	}
	web.Redirect(w, r, "/admin/monitor#orphans")
	return nil
}

// SetRole makes a user an admin or an owner (form field role).
func (h *Handler) SetRole(w http.ResponseWriter, r *http.Request) error {
	target, err := h.target(r, "change your own role")
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return web.BadRequest("The form could not be read.")
	}
	role, err := user.ParseRole(r.PostForm.Get("role"))
	if err != nil {
		return web.BadRequest("Role must be admin or owner.")
	}
	if role != user.RoleAdmin && h.fixed(target.Email) {
		return errFixedAdmin
	}
	if err := h.userChange(h.users.SetRole(r.Context(), target.ID, role)); err != nil {
		return err
	}
	web.SetFlash(w, target.Email+" is now "+map[user.Role]string{user.RoleAdmin: "an admin", user.RoleOwner: "an owner"}[role]+".")
	web.Redirect(w, r, "/admin/users")
	return nil
}

// Disable switches a user's account off: signed out at their next request,
// refused at sign-in, their share links stopped.
func (h *Handler) Disable(w http.ResponseWriter, r *http.Request) error {
	return h.setDisabled(w, r, true)
}

// Enable switches a disabled account on again.
func (h *Handler) Enable(w http.ResponseWriter, r *http.Request) error {
	return h.setDisabled(w, r, false)
}

func (h *Handler) setDisabled(w http.ResponseWriter, r *http.Request, disabled bool) error {
	target, err := h.target(r, "disable or enable your own account")
	if err != nil {
		return err
	}
	if disabled && h.fixed(target.Email) {
		return errFixedAdmin
	}
	if err := h.userChange(h.users.SetDisabled(r.Context(), target.ID, disabled)); err != nil {
		return err
	}
	if disabled {
		web.SetFlash(w, target.Email+" is disabled: signed out, and their share links stop.")
	} else {
		web.SetFlash(w, target.Email+" is enabled again.")
	}
	web.Redirect(w, r, "/admin/users")
	return nil
}

var errFixedAdmin = web.Errorf(http.StatusForbidden, "Admin by configuration", "This account is an admin through ADMIN_EMAILS, so it cannot be demoted or disabled here. Remove it from ADMIN_EMAILS first.")

// target loads the user an admin acts on; an admin cannot act on
// themselves here (what, for the message).
func (h *Handler) target(r *http.Request, what string) (*user.User, error) {
	id, err := url.PathUnescape(chi.URLParam(r, "user_id"))
	if err != nil {
		return nil, web.NotFound("There is no such user.")
	}
	if id == user.ID(r.Context()) {
		return nil, web.Forbidden("You cannot " + what + " here. Another admin can.")
	}
	u, err := h.users.Get(r.Context(), id)
	if errors.Is(err, user.ErrNotFound) {
		return nil, web.NotFound("There is no such user.")
	}
	return u, err
}

// userChange words the refusals of the users store's conditional writes.
func (h *Handler) userChange(err error) error {
	switch {
	case errors.Is(err, user.ErrNotFound):
		return web.NotFound("There is no such user.")
	case errors.Is(err, user.ErrState):
		return web.Errorf(http.StatusConflict, "Not possible now", "The account changed meanwhile (it may be being deleted, or already in that state). Reload the list and try again.")
	}
	return err
}
