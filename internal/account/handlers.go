// Package account serves the owner's account page (time zone, display
// name), the export of all their data, and account deletion: an ordered,
// resumable sequence across S3 and the four tables (DESIGN.md, account
// deletion).
package account

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"ndiro/internal/config"
	"ndiro/internal/limit"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/share"
	"ndiro/internal/text"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// Handler serves the account pages.
type Handler struct {
	users   *user.Store
	meals   *meal.Store
	shares  *share.Store
	photos  *photo.Store
	deleter *Deleter
	signOut func(context.Context) error
	// sessions and sessionID: the signed-in browsers (devices.go).
	sessions  *user.Sessions
	sessionID func(context.Context) string
	pages     *web.Pages
	now       func() time.Time
	log       *slog.Logger
	baseURL   string
	isAdmin   func(email string) bool
	deleted   tickets
	zones     Zones
	// The import (import_handlers.go): its job, its size limit in
	// bytes, its per-owner rate limit.
	importer    *Importer
	importMax   int64
	importLimit *limit.Limiter
	stagings    *Stagings
}

// Deps are the Handler's collaborators.
type Deps struct {
	Users  *user.Store
	Meals  *meal.Store
	Shares *share.Store
	// Photos are read straight from S3 by the export, not through the
	// shared photo cache: one export must not flush everyone's photos.
	Photos  *photo.Store
	Deleter *Deleter
	// SignOut ends the request's session (the session manager's Destroy).
	SignOut func(context.Context) error
	// Sessions are the account's signed-in browsers, listed on the page
	// with a sign out each and everywhere.
	Sessions *user.Sessions
	// SessionID returns the ID (user.SessionID) of the session of the
	// request ctx belongs to.
	SessionID func(context.Context) string
	Pages     *web.Pages
	Now       func() time.Time
	Log       *slog.Logger
	// BaseURL is the public origin, for the photo links in the JSON export.
	BaseURL string
	// IsAdminEmail reports whether an email is in ADMIN_EMAILS (it signs
	// up without an invite); nil: none is.
	IsAdminEmail func(email string) bool
	// Importer runs imports of export zips; ImportMaxBytes is the largest
	// zip POST /account/import takes (NDIRO_IMPORT_MAX_BYTES; 0 means
	// config.DefaultImportMaxBytes).
	Importer       *Importer
	ImportMaxBytes int64
	// Stagings admits the import's uploads (nil: NewStagings with the
	// defaults and ImportMaxBytes).
	Stagings *Stagings
}

// NewHandler returns the account pages.
func NewHandler(d Deps) *Handler {
	h := &Handler{
		users: d.Users, meals: d.Meals, shares: d.Shares, photos: d.Photos, deleter: d.Deleter,
		signOut: d.SignOut, sessions: d.Sessions, sessionID: d.SessionID, pages: d.Pages, now: d.Now, log: d.Log, baseURL: d.BaseURL,
		isAdmin:  d.IsAdminEmail,
		deleted:  tickets{m: map[string]ticket{}},
		zones:    ParseZones(zonesTxt),
		importer: d.Importer, importMax: d.ImportMaxBytes, importLimit: importLimiter(d.Now),
	}
	if h.importMax <= 0 {
		h.importMax = config.DefaultImportMaxBytes
	}
	if h.stagings = d.Stagings; h.stagings == nil {
		h.stagings = NewStagings(StagingLimits{MaxBytes: h.importMax})
	}
	return h
}

type accountPage struct {
	web.Base
	User      *user.User
	TZ        string
	TZError   string
	Name      string
	NameError string
	LocalNow  string
	// Zones are the time zone field's suggestions.
	Zones Zones
	// Devices are the signed-in browsers, this one first.
	Devices []device
	// ImportRunning: an import runs, so the page links to it instead of
	// showing the import form.
	ImportRunning bool
}

// Page shows the account settings.
func (h *Handler) Page(w http.ResponseWriter, r *http.Request) error {
	u := user.FromContext(r.Context())
	return h.render(w, r, http.StatusOK, &accountPage{User: u, TZ: u.TimeZone, Name: u.Name})
}

// render shows p, filling what every state of the page needs.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, p *accountPage) error {
	p.Title = "Account"
	p.LocalNow = h.now().In(p.User.Location()).Format("Monday 2 January, 15:04")
	p.Zones = h.zones
	p.ImportRunning = p.User.Import.Running()
	devices, err := h.devices(r.Context(), p.User)
	if err != nil {
		return err
	}
	p.Devices = devices
	return h.pages.Render(w, r, status, "account/page", p)
}

// TimeZone saves the account's time zone, an IANA name such as
// "Europe/Berlin", which decides the default date of new meals and the
// current month. A city that names one zone is taken as that zone
// ("Berlin" is Europe/Berlin), so the field works without the page's
// suggestions too.
func (h *Handler) TimeZone(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return web.BadRequest("The form could not be read.")
	}
	u := user.FromContext(r.Context())
	typed := strings.TrimSpace(r.PostForm.Get("tz"))
	tz, matches, ok := h.zones.Resolve(typed)
	if !ok {
		msg := "Choose a time zone from the list, or type a city such as Berlin, or a name like Europe/Berlin or UTC."
		if len(matches) > 0 {
			msg = "Several time zones match “" + typed + "”: " + strings.Join(matches, ", ") + ". Choose one of them."
		}
		return h.render(w, r, http.StatusUnprocessableEntity, &accountPage{User: u, TZ: typed, Name: u.Name, TZError: msg})
	}
	if err := h.users.SetTimeZone(r.Context(), u.ID, tz); err != nil {
		return err
	}
	web.SetFlash(w, "Time zone saved.")
	web.Redirect(w, r, "/account")
	return nil
}

// nameProblem says what is wrong with a display name CleanName refused
// (trimmed), naming only what applies: bytes that are not text, a
// character it may not hold, more than MaxNameLen characters.
func nameProblem(name string) string {
	var what []string
	if !utf8.ValidString(name) {
		what = append(what, "may hold only text (some bytes were not)")
	} else if bad, refused := text.Refused(name, false); refused {
		what = append(what, fmt.Sprintf("may not hold %s (nor line breaks, control or invisible formatting characters)", text.Name(bad)))
	}
	if utf8.RuneCountInString(name) > user.MaxNameLen {
		what = append(what, fmt.Sprintf("may have at most %d characters", user.MaxNameLen))
	}
	if len(what) == 0 { // CleanName refuses nothing else
		what = append(what, "could not be read")
	}
	return "A name " + strings.Join(what, " and ") + "; the field holds it as it can be saved."
}

// Name saves the display name that heads the owner's share links. Empty
// is allowed: the links then say "A meal diary". Once saved here, sign-in
// no longer replaces it with the provider's name.
func (h *Handler) Name(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return web.BadRequest("The form could not be read.")
	}
	u := user.FromContext(r.Context())
	raw := r.PostForm.Get("name")
	name, ok := user.CleanName(raw)
	if !ok {
		msg := nameProblem(strings.TrimSpace(raw))
		// Shown again cleaned and cut to the limit, never echoed whole.
		shown := text.Without(raw, false, user.MaxNameLen)
		return h.render(w, r, http.StatusUnprocessableEntity, &accountPage{User: u, TZ: u.TimeZone, Name: shown, NameError: msg})
	}
	if err := h.users.SetName(r.Context(), u.ID, name); err != nil {
		return err
	}
	web.SetFlash(w, "Name saved.")
	web.Redirect(w, r, "/account")
	return nil
}
