package meal

import (
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"ndiro/internal/web"
)

// stripDay is one day of the month page's calendar strip: every day of the
// month, the logged ones links to their day on the page ("#day-2026-09-01"),
// which work without JavaScript.
type stripDay struct {
	// Date is "2026-09-01"; N the day of the month, "1"; Weekday its
	// first two letters, "Tu".
	Date, N, Weekday string
	// Meals is how many meals the day holds; 0 for none (not a link).
	Meals int
	// Today marks the owner's today; Future a day after it.
	Today, Future bool
}

// weekdays are the strip's day names, Sunday first as time.Weekday counts.
var weekdays = [7]string{"Su", "Mo", "Tu", "We", "Th", "Fr", "Sa"}

// calendarStrip returns every day of month m in order, marking the days of
// days (the month's grid) as logged and today and the days after it.
func calendarStrip(m Month, days []gridDay, today Date) []stripDay {
	first, last := m.First(), m.Last()
	out := make([]stripDay, first.DaysUntil(last)+1)
	for i := range out {
		d := first.AddDays(i)
		out[i] = stripDay{Date: d.String(), N: strconv.Itoa(i + 1), Weekday: weekdays[d.Time().Weekday()],
			Today: !d.Before(today) && !today.Before(d), Future: today.Before(d)}
	}
	for _, g := range days {
		if len(g.Date) == 10 && g.Date[:7] == m.String() {
			if i := int(g.Date[8]-'0')*10 + int(g.Date[9]-'0') - 1; i >= 0 && i < len(out) {
				out[i].Meals = len(g.Cards)
			}
		}
	}
	return out
}

// stripHTML writes the calendar strip's list items: a logged day is a
// link to its section, its accessible name from its content, "Th 3,
// 2 meals" (the count hidden from sight by the style sheet); another day
// is text; a day after today has class "f", today aria-current="date".
// The strip is written here rather than by the template because it holds
// nothing but dates and counts, never anything a person typed, and the
// template's reflection on thirty items a page cost the month page, the
// hot page, over a thousand allocations (BenchmarkMonthPage).
func stripHTML(days []stripDay) template.HTML {
	var b strings.Builder
	b.Grow(48 * len(days))
	for _, d := range days {
		b.WriteString("<li")
		if d.Future {
			b.WriteString(` class="f"`)
		}
		if d.Meals == 0 {
			if d.Today {
				b.WriteString(` aria-current="date"`)
			}
			b.WriteString(">" + d.Weekday + " <b>" + d.N + "</b></li>")
			continue
		}
		b.WriteString(`><a href="#day-` + d.Date + `"`)
		if d.Today {
			b.WriteString(` aria-current="date"`)
		}
		b.WriteString(">" + d.Weekday + " <b>" + d.N + "</b><span>, " + strconv.Itoa(d.Meals) + " meal")
		if d.Meals != 1 {
			b.WriteString("s")
		}
		b.WriteString("</span></a></li>")
	}
	return template.HTML(b.String()) // dates and counts only: see above
}

// gridCookie remembers, per browser, the owner's choice of the denser
// diary grid (4 to 5 thumbnails a row on a phone instead of 3): "dense",
// or absent. It is the browser's alone (no server write); the page script
// sets it when the toggle is pressed, and ?grid=dense or ?grid=normal sets
// it without JavaScript.
const gridCookie = "ndiro_grid"

// gridYear is how long the grid choice is remembered, in seconds.
const gridYear = 365 * 24 * 60 * 60

// denseGrid reports whether r's diary page shows the denser grid: ?grid=
// if given (and then remembered in gridCookie), else the cookie.
func denseGrid(w http.ResponseWriter, r *http.Request, q url.Values) bool {
	switch q.Get("grid") {
	case "dense":
		setGridCookie(w, "dense", gridYear)
		return true
	case "normal":
		setGridCookie(w, "", -1)
		return false
	}
	c, err := r.Cookie(gridCookie)
	return err == nil && c.Value == "dense"
}

func setGridCookie(w http.ResponseWriter, v string, maxAge int) {
	// Not HttpOnly: the page script flips it without a reload.
	http.SetCookie(w, &http.Cookie{Name: gridCookie, Value: v, Path: "/meals", MaxAge: maxAge, SameSite: http.SameSiteLaxMode, Secure: web.SecureCookie(w)})
}

// gridToggle is the link that switches the grid of the page at path with
// query q (without grid=) to the other density.
func gridToggle(path string, q url.Values, dense bool) string {
	v := url.Values{}
	for k, vs := range q {
		if k != "grid" {
			v[k] = vs
		}
	}
	if dense {
		v.Set("grid", "normal")
	} else {
		v.Set("grid", "dense")
	}
	return path + "?" + v.Encode()
}
