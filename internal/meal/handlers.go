// Package meal owns meals: the meals table and its sort keys, the decimal
// numbers, the month and day-window queries, and the diary pages.
package meal

import (
	"net/http"

	"ndiro/internal/web"
)

// Handler serves the diary pages.
type Handler struct {
	pages *web.Pages
}

// NewHandler returns the diary pages.
func NewHandler(pages *web.Pages) *Handler {
	return &Handler{pages: pages}
}

type monthPage struct {
	web.Base
}

// Month shows the signed-in owner's diary.
func (h *Handler) Month(w http.ResponseWriter, r *http.Request) error {
	return h.pages.Render(w, r, http.StatusOK, "meal/month", &monthPage{Base: web.Base{Title: "Diary"}})
}
