package meal

import (
	"errors"
	"net/http"
	"strings"

	"ndiro/internal/photo"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// DetailDays is how far either side of a meal's day its detail page looks
// first for the previous and next meal: one Query over 2×DetailDays+1
// days. A neighbour further away costs one more Query with Limit 1
// (Store.Beyond) per side.
const DetailDays = 7

// neighbour is a link to the previous or next meal.
type neighbour struct {
	URL string
	// Label says which meal: "Breakfast at 08:00" on the same day,
	// "Dinner at 19:30, Mon 31 Aug" on another, with the year in another
	// year ("Lunch at 12:00, Tue 30 Dec 2025").
	Label string
}

type detailPage struct {
	web.Base
	Meal *Meal
	// Pic is the photo in the meal page's slot, fetchpriority="high"
	// (the page's first image).
	Pic photo.Picture
	// Heading is the kind, capitalised: "Lunch".
	Heading string
	// When is the date and time in words: "Tuesday 1 September 2026, 12:30".
	When string
	// Taken is when the photo was taken, in words ("Fri 14 Jun 2024,
	// 12:31"), if that is more than TakenApart from When; "" otherwise.
	// The owner's alone, like the capture time itself.
	Taken      string
	Prev, Next *neighbour
	// MonthURL leads back to the meal in its month; MonthLabel names the
	// month ("September 2026").
	MonthURL, MonthLabel string
	// Comments are the recipients' comments on the meal, oldest first.
	Comments []commentView
}

// commentView is one comment on the owner's meal page.
type commentView struct {
	ID   string
	Text string
	// From names the link it came through: "the link for Dr. Rossi".
	From string
	// When is its time in the owner's zone, named: "2 Sep 2026 18:07 CEST".
	When string
	// Delete is the form action that deletes it.
	Delete string
}

// commentViews lays out m's comments for its owner u.
func commentViews(m *Meal, u *user.User) []commentView {
	var out []commentView
	for _, c := range m.SortedComments() {
		from := "a link that is gone"
		if c.Label != "" {
			from = "the link for " + c.Label
		}
		out = append(out, commentView{ID: c.ID, Text: c.Text, From: from,
			When:   c.At.In(u.Location()).Format("2 Jan 2006 15:04 MST"),
			Delete: m.DetailURL() + "/comments/" + c.ID + "/delete"})
	}
	return out
}

// Detail is GET /meals/{date}/{meal_id}: one meal with its display photo,
// full notes and numbers, links to the meals before and after it, and its
// edit form. It costs ONE Query, over the meal's day and DetailDays either
// side, which finds the meal and its neighbours at once; a side with no
// meal in that window costs one Query with Limit 1 more, so a diary kept
// now and then still links every meal to the next. A meal that is
// not there (moved to another date or time, or deleted) is a 404 that
// links to the day it was on.
func (h *Handler) Detail(w http.ResponseWriter, r *http.Request) error {
	d, id, ok := keyFromURL(r)
	if !ok {
		return errNoMeal
	}
	u := user.FromContext(r.Context())
	from, to := d.AddDays(-DetailDays), d.AddDays(DetailDays)
	meals, err := h.store.Window(r.Context(), u.ID, from, to)
	if err != nil {
		return err
	}
	i := -1
	for j := range meals {
		if meals[j].Date == d.String() && meals[j].ID == id {
			i = j
			break
		}
	}
	if i < 0 {
		return h.gone(w, r, d, nil)
	}
	m := &meals[i]
	p := &detailPage{
		Meal:       m,
		Pic:        detailPicture(m),
		Heading:    capitalise(string(m.Kind)),
		When:       m.DateTime().Format("Monday 2 January 2006, 15:04"),
		MonthURL:   mealLink(m),
		MonthLabel: d.Month().Time().Format("January 2006"),
		Comments:   commentViews(m, u),
	}
	if t, err := m.TakenTime(); err == nil && farFrom(t, m.Date, m.Time) {
		p.Taken = t.Format("Mon 2 Jan 2006, 15:04")
	}
	p.Title = p.Heading + ", " + d.Time().Format("2 January 2006")
	lo, hi, _ := DayRange(from, to) // the window Window just read
	for _, side := range []struct {
		link   **neighbour
		at     int
		before bool
	}{{&p.Prev, i - 1, true}, {&p.Next, i + 1, false}} {
		if side.at >= 0 && side.at < len(meals) {
			*side.link = neighbourOf(&meals[side.at], m)
			continue
		}
		n, err := h.store.Beyond(r.Context(), u.ID, lo, hi, side.before)
		switch {
		case err == nil:
			*side.link = neighbourOf(n, m)
		case !errors.Is(err, ErrNotFound):
			return err
		}
	}
	return h.pages.Render(w, r, http.StatusOK, "meal/detail", p)
}

// neighbourOf links to n from the page of m.
func neighbourOf(n, m *Meal) *neighbour {
	label := capitalise(string(n.Kind)) + " at " + n.HHMM()
	switch {
	case n.Date[:4] != m.Date[:4]:
		label += ", " + n.DateTime().Format("Mon 2 Jan 2006")
	case n.Date != m.Date:
		label += ", " + n.DateTime().Format("Mon 2 Jan")
	}
	return &neighbour{URL: n.DetailURL(), Label: label}
}

// DeleteComment is POST /meals/{date}/{meal_id}/comments/{comment_id}/delete:
// the owner deletes a recipient's comment on one of their meals (any
// link's) and is sent back to the meal's comments (303). A comment or
// meal that is not there is a 404.
func (h *Handler) DeleteComment(w http.ResponseWriter, r *http.Request) error {
	d, id, ok := keyFromURL(r)
	cid := r.PathValue("comment_id")
	if !ok || !ValidCommentID(cid) {
		return errNoComment
	}
	u := user.FromContext(r.Context())
	_, err := h.store.DeleteComment(r.Context(), u.ID, d, id, cid)
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrNoComment) {
		return errNoComment
	}
	if err != nil {
		return err
	}
	web.SetFlash(w, "Comment deleted.")
	web.Redirect(w, r, "/meals/"+d.String()+"/"+id+"#comments")
	return nil
}

var errNoComment = &web.Error{Status: http.StatusNotFound, Title: "Comment not found",
	Msg: "There is no such comment on your meals. It may have been deleted already."}

// dayURL is a day on its month page: "/meals?month=2026-09#day-2026-09-01".
func dayURL(d Date) string { return "/meals?month=" + d.Month().String() + "#day-" + d.String() }

// capitalise upper-cases the first letter of an ASCII word: "lunch" → "Lunch".
func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// detailPicture is m's photo on its page: the page's first image.
func detailPicture(m *Meal) photo.Picture {
	p := m.Picture(photo.SlotDetail, "Photo of the "+string(m.Kind))
	p.Class, p.High = "photo", true
	return p
}
