package share

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"ndiro/internal/photo"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// reviewedWeeks names the weeks of sh its recipient marked reviewed, in
// order: "1 Sep – 7 Sep 2026".
func reviewedWeeks(sh *Share) []string {
	from, to := sh.Range()
	var out []string
	for ws := from; !to.Before(ws); ws = ws.AddDays(WeekDays) {
		if sh.IsReviewed(ws.String()) {
			we := ws.AddDays(WeekDays - 1)
			if to.Before(we) {
				we = to
			}
			out = append(out, rangeText(ws, we))
		}
	}
	return out
}

// linkComment is one comment on the owner's page of a link's comments.
type linkComment struct {
	ID, Text, When string
	New            bool
}

// commentedMeal is a meal with the link's comments on it.
type commentedMeal struct {
	URL, When, Kind string
	HasPhoto        bool
	// Pic is the meal's thumbnail beside its comments.
	Pic      photo.Picture
	Comments []linkComment
}

type linkCommentsPage struct {
	web.Base
	Label     string
	RangeText string
	Meals     []commentedMeal
	New       int
	Back      string
}

// LinkComments is GET /shares/{token}/comments: the owner's look at the
// comments written through one of their links, newest meal first, the
// ones written since their last look marked new; the link's new-comment
// count goes down by what it was when the page was made
// (Store.SeenComments), so a comment written meanwhile stays new. It reads the link's range in
// windows of PageDays, ONE Query each. Other people's links are 404.
func (h *Handler) LinkComments(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	u := user.FromContext(ctx)
	sh, err := h.store.Get(ctx, chi.URLParam(r, "token"))
	if errors.Is(err, ErrNotFound) || err == nil && sh.OwnerID != u.ID {
		return errNotYours
	}
	if err != nil {
		return err
	}
	from, to := sh.Range()
	id := ID(sh.Token)
	p := &linkCommentsPage{Base: web.Base{Title: "Comments through a link"}, Label: sh.Label, RangeText: sh.RangeText(), Back: "/shares#" + rowID(sh.Token)}
	for ws := from; !to.Before(ws); ws = ws.AddDays(PageDays) {
		we := ws.AddDays(PageDays - 1)
		if to.Before(we) {
			we = to
		}
		meals, err := h.meals.Window(ctx, u.ID, ws, we)
		if err != nil {
			return err
		}
		for i := range meals {
			m := &meals[i]
			cs := m.CommentsFrom(id)
			if len(cs) == 0 {
				continue
			}
			cm := commentedMeal{URL: m.DetailURL(), When: m.DateTime().Format("Mon 2 Jan 2006, 15:04"), Kind: string(m.Kind), HasPhoto: m.HasPhoto()}
			if cm.HasPhoto {
				cm.Pic = m.Picture(photo.SlotIcon, "Photo of the "+string(m.Kind))
				cm.Pic.Lazy = true
			}
			for _, c := range cs {
				isNew := sh.CommentsSeenAt == nil || c.At.After(*sh.CommentsSeenAt)
				if isNew {
					p.New++
				}
				cm.Comments = append(cm.Comments, linkComment{ID: c.ID, Text: c.Text, When: when(c.At, u), New: isNew})
			}
			p.Meals = append(p.Meals, cm)
		}
	}
	for i, j := 0, len(p.Meals)-1; i < j; i, j = i+1, j-1 { // newest meal first
		p.Meals[i], p.Meals[j] = p.Meals[j], p.Meals[i]
	}
	// The count as read before the page was made: a comment written
	// since stays new, one deleted by the owner meanwhile stops counting.
	if err := h.store.SeenComments(ctx, sh.Token, u.ID, sh.NewComments, h.now()); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return h.pages.Render(w, r, http.StatusOK, "share/comments", p)
}
