package meal

import (
	"errors"
	"net/http"
	"strings"

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
		Heading:    capitalise(string(m.Kind)),
		When:       m.DateTime().Format("Monday 2 January 2006, 15:04"),
		MonthURL:   mealLink(m),
		MonthLabel: d.Month().Time().Format("January 2006"),
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

// dayURL is a day on its month page: "/meals?month=2026-09#day-2026-09-01".
func dayURL(d Date) string { return "/meals?month=" + d.Month().String() + "#day-" + d.String() }

// capitalise upper-cases the first letter of an ASCII word: "lunch" → "Lunch".
func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
