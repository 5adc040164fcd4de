// Package admin serves the admin pages: users, and (with account deletion)
// the monitor.
package admin

import (
	"net/http"
	"sort"

	"ndiro/internal/user"
	"ndiro/internal/web"
)

// Handler serves the admin pages.
type Handler struct {
	users *user.Store
	pages *web.Pages
}

// NewHandler returns the admin pages.
func NewHandler(users *user.Store, pages *web.Pages) *Handler {
	return &Handler{users: users, pages: pages}
}

type usersPage struct {
	web.Base
	Users []user.User
}

// Users lists every user, oldest first, by Scan.
func (h *Handler) Users(w http.ResponseWriter, r *http.Request) error {
	all, err := h.users.List(r.Context())
	if err != nil {
		return err
	}
	sort.Slice(all, func(i, j int) bool { return all[i].CreatedAt.Before(all[j].CreatedAt) })
	return h.pages.Render(w, r, http.StatusOK, "admin/users", &usersPage{Base: web.Base{Title: "Users"}, Users: all})
}
