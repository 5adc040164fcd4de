// Package account serves the owner's account page: time zone, export of all
// their data, and (with ordered deletion) deleting the account.
package account

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"ndiro/internal/meal"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// Handler serves the account pages.
type Handler struct {
	users   *user.Store
	meals   *meal.Store
	pages   *web.Pages
	now     func() time.Time
	baseURL string
}

// NewHandler returns the account pages. baseURL is the public origin, for
// the photo links in the export.
func NewHandler(users *user.Store, meals *meal.Store, pages *web.Pages, now func() time.Time, baseURL string) *Handler {
	return &Handler{users: users, meals: meals, pages: pages, now: now, baseURL: baseURL}
}

type accountPage struct {
	web.Base
	User      *user.User
	TZ        string
	TZError   string
	Name      string
	NameError string
	LocalNow  string
}

// Page shows the account settings.
func (h *Handler) Page(w http.ResponseWriter, r *http.Request) error {
	u := user.FromContext(r.Context())
	return h.render(w, r, http.StatusOK, &accountPage{User: u, TZ: u.TimeZone, Name: u.Name})
}

// render shows p, filling what every state of the page needs.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, p *accountPage) error {
	p.Title = "Account"
	p.LocalNow = h.now().In(p.User.Location()).Format("Mon 2 Jan 15:04")
	return h.pages.Render(w, r, status, "account/page", p)
}

// TimeZone saves the account's time zone, an IANA name such as
// "Europe/Berlin", which decides the default date of new meals and the
// current month.
func (h *Handler) TimeZone(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return web.BadRequest("The form could not be read.")
	}
	u := user.FromContext(r.Context())
	tz := strings.TrimSpace(r.PostForm.Get("tz"))
	if !user.ValidTimeZone(tz) {
		return h.render(w, r, http.StatusUnprocessableEntity, &accountPage{User: u, TZ: tz, Name: u.Name,
			TZError: "Time zone must be a name like Europe/Berlin, America/Los_Angeles or UTC."})
	}
	if err := h.users.SetTimeZone(r.Context(), u.ID, tz); err != nil {
		return err
	}
	web.SetFlash(w, "Time zone saved.")
	web.Redirect(w, r, "/account")
	return nil
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
		return h.render(w, r, http.StatusUnprocessableEntity, &accountPage{User: u, TZ: u.TimeZone, Name: raw,
			NameError: fmt.Sprintf("A name may have at most %d characters and no line breaks or control characters.", user.MaxNameLen)})
	}
	if err := h.users.SetName(r.Context(), u.ID, name); err != nil {
		return err
	}
	web.SetFlash(w, "Name saved.")
	web.Redirect(w, r, "/account")
	return nil
}

// exportFile is the shape of export.json.
type exportFile struct {
	ExportedAt time.Time    `json:"exported_at"`
	Email      string       `json:"email"`
	TimeZone   string       `json:"time_zone,omitempty"`
	Meals      []exportMeal `json:"meals"`
}

// exportMeal is a meal with, if it has a photo, the photo's URL on this
// site (it opens while signed in) and its pixel size.
type exportMeal struct {
	meal.Meal
	Photo *exportPhoto `json:"photo,omitempty"`
}

type exportPhoto struct {
	URL    string `json:"url"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

// Export sends every meal of the owner as JSON, numbers as JSON numbers.
func (h *Handler) Export(w http.ResponseWriter, r *http.Request) error {
	u := user.FromContext(r.Context())
	meals, err := h.meals.All(r.Context(), u.ID)
	if err != nil {
		return err
	}
	out := make([]exportMeal, len(meals))
	for i, m := range meals {
		out[i].Meal = m
		if m.HasPhoto() {
			out[i].Photo = &exportPhoto{URL: h.baseURL + m.DisplayURL(), Width: m.PhotoW, Height: m.PhotoH}
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(exportFile{ExportedAt: h.now().UTC(), Email: u.Email, TimeZone: u.TimeZone, Meals: out}); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="ndiro-meals.json"`)
	w.Header().Set("Cache-Control", "no-store")
	_, err = buf.WriteTo(w)
	return err
}
