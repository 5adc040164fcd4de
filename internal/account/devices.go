package account

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"ndiro/internal/user"
	"ndiro/internal/web"
)

// device is one signed-in browser as the account page lists it.
type device struct {
	ID   string
	Name string // user.Device.String: "Firefox on Windows"
	// Seen is when it was last used, rounded (LastSeen); Since the day
	// it signed in.
	Seen, Since string
	// This is the browser looking at the page.
	This bool
}

// devices lists the account's signed-in browsers, the one looking first,
// then by last use.
func (h *Handler) devices(ctx context.Context, u *user.User) ([]device, error) {
	list, err := h.sessions.List(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	now, loc, this := h.now(), u.Location(), h.sessionID(ctx)
	out := make([]device, 0, len(list))
	for _, s := range list {
		d := device{ID: s.ID, Name: s.Device.String(), Seen: LastSeen(now, s.Seen), Since: s.Created.In(loc).Format("2 January 2006"), This: s.ID == this}
		if d.This {
			d.Seen = "now"
			out = append([]device{d}, out...)
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// LastSeen says how long before now t was, rounded as the account page
// shows a device's last use: "in the last 5 minutes" (sessions are
// stamped at most every user.StampEvery, so nothing finer is known),
// "about N minutes ago" to the 5 minutes below an hour, "about N hours
// ago" below a day, "yesterday", "N days ago" below a month, then "over
// a month ago". A t after now (clocks) is "in the last 5 minutes".
func LastSeen(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < user.StampEvery:
		return "in the last 5 minutes"
	case d < time.Hour:
		return fmt.Sprintf("about %d minutes ago", int(d/(5*time.Minute))*5)
	case d < 2*time.Hour:
		return "about an hour ago"
	case d < 24*time.Hour:
		return fmt.Sprintf("about %d hours ago", int(d/time.Hour))
	case d < 48*time.Hour:
		return "yesterday"
	case d < 31*24*time.Hour:
		return fmt.Sprintf("%d days ago", int(d/(24*time.Hour)))
	}
	return "over a month ago"
}

// EndDevice signs one of the account's browsers out (POST
// /account/devices/{id}/sign-out): its session ends, so its cookie opens
// nothing from its next request. This browser's own is a sign out. An ID
// that names no live session of the account is a 404.
func (h *Handler) EndDevice(w http.ResponseWriter, r *http.Request) error {
	u := user.FromContext(r.Context())
	id := chi.URLParam(r, "id")
	if id == h.sessionID(r.Context()) {
		if err := h.signOut(r.Context()); err != nil {
			return err
		}
		web.Redirect(w, r, "/")
		return nil
	}
	err := h.sessions.End(r.Context(), u.ID, id)
	if errors.Is(err, user.ErrNoSession) {
		return web.NotFound("That browser is not signed in (any more). Go back to your account page to see the ones that are.")
	}
	if err != nil {
		return err
	}
	web.SetFlash(w, "Signed out there.")
	web.Redirect(w, r, "/account#devices")
	return nil
}

// EndAllDevices signs every browser of the account out, this one too
// (POST /account/devices/sign-out): "sign out everywhere", for a lost
// phone or a shared computer.
func (h *Handler) EndAllDevices(w http.ResponseWriter, r *http.Request) error {
	u := user.FromContext(r.Context())
	if _, err := h.sessions.EndAll(r.Context(), u.ID); err != nil {
		return err
	}
	// This browser's session went with the rest; Destroy deletes its
	// cookie.
	if err := h.signOut(r.Context()); err != nil {
		return err
	}
	web.Redirect(w, r, "/")
	return nil
}
