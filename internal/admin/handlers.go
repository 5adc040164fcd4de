// Package admin serves the admin pages: users (with deletions in progress)
// and, with the monitor, what the app holds and how it runs.
package admin

import (
	"net/http"
	"net/url"
	"sort"

	"ndiro/internal/user"
	"ndiro/internal/web"
)

// Handler serves the admin pages.
type Handler struct {
	users    *user.Store
	pages    *web.Pages
	deleting func(userID string) bool
}

// Deps are the Handler's collaborators.
type Deps struct {
	Users *user.Store
	Pages *web.Pages
	// DeletionRunning reports whether an account's deletion is running now
	// (account.Deleter.Running), to tell a deletion in progress from one
	// that stopped and waits for a resume.
	DeletionRunning func(userID string) bool
}

// NewHandler returns the admin pages.
func NewHandler(d Deps) *Handler {
	return &Handler{users: d.Users, pages: d.Pages, deleting: d.DeletionRunning}
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
}

type usersPage struct {
	web.Base
	Users []userRow
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
	for _, u := range all {
		row := userRow{User: u, Path: "/admin/users/" + url.PathEscape(u.ID), Self: u.ID == me}
		if u.Deleting() {
			row.Running = h.deleting(u.ID)
			if !row.Running {
				p.Stuck++
			}
		}
		p.Users = append(p.Users, row)
	}
	return h.pages.Render(w, r, http.StatusOK, "admin/users", p)
}
