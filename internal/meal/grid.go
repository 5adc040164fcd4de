package meal

import "ndiro/internal/photo"

// EagerThumbs is how many thumbnails at the top of a diary page load at
// once; the rest carry loading="lazy", so a phone fetches only what its
// first screen and the next stretch of scrolling show (about three days
// of meals at 390 px).
const EagerThumbs = 9

// gridDay is one day of the diary's photo grid, every value the template
// shows precomputed: html/template reaches fields promoted from an
// embedded struct, and calls methods, through reflection that allocates
// on every use, which on a 90-meal month was most of the page's cost.
type gridDay struct {
	// Date is "2026-09-01".
	Date string
	// Heading is the day in words: "Tuesday 1 September" on a month page,
	// "Tue 1 Sep 2026" on a window that may span years.
	Heading string
	// AddLabel names the day for the "+" button: "Add a meal on 1 September".
	AddLabel string
	// Kcal, ProteinG, CarbsG and FatG are the day's sums as shown (kcal
	// whole, rounded once from the exact sum: "2563" for 2563.4; grams as
	// summed); "" when no meal of the day records the number.
	Kcal, ProteinG, CarbsG, FatG string
	Cards                        []gridMeal
}

// gridMeal is one meal's card in the grid, precomputed as gridDay is.
type gridMeal struct {
	ID        string
	Date      string // "2026-09-01"
	Time      string // "12:30:00"
	HHMM      string // "12:30"
	Kind      Kind
	Notes     string
	Kcal      string // whole: "491" for 491.4; "" if blank
	DetailURL string
	HasPhoto  bool
	// Pic is the thumbnail in the grid's slot: below the first screen
	// lazy (loading="lazy"), the first one fetchpriority="high".
	Pic photo.Picture
	// Comments counts recipients' comments on the meal (the card's badge).
	Comments int
}

// shown is n as the page shows it; "" for a blank number.
func shown(n *Number) string {
	if n == nil {
		return ""
	}
	return n.String()
}

// shownWhole is n rounded to a whole number as the page shows kcal; "" for
// a blank number.
func shownWhole(n *Number) string {
	if n == nil {
		return ""
	}
	return n.Whole()
}

// gridDays lays days out for the grid: headings in words, and every
// thumbnail after the first EagerThumbs marked lazy. withYear writes the
// year in headings (windows may cross a year); dense sizes the thumbnails
// for the denser grid's cells (photo.SlotDense), else the usual grid's.
func gridDays(days []Day, withYear, dense bool) []gridDay {
	slot := photo.SlotGrid
	if dense {
		slot = photo.SlotDense
	}
	out := make([]gridDay, len(days))
	n := 0
	for i, d := range days {
		g := gridDay{Date: d.Date.String(), AddLabel: "Add a meal on " + d.Date.Time().Format("2 January"),
			Kcal: shownWhole(d.Kcal), ProteinG: shown(d.ProteinG), CarbsG: shown(d.CarbsG), FatG: shown(d.FatG)}
		g.Heading = d.Date.Time().Format("Monday 2 January")
		if withYear {
			g.Heading = d.Date.Time().Format("Mon 2 Jan 2006")
		}
		g.Cards = make([]gridMeal, len(d.Meals))
		for j := range d.Meals {
			m := &d.Meals[j]
			c := gridMeal{ID: m.ID, Date: m.Date, Time: m.Time, HHMM: m.HHMM(), Kind: m.Kind, Notes: m.Notes,
				Kcal: shownWhole(m.Kcal), DetailURL: m.DetailURL(), HasPhoto: m.HasPhoto(), Comments: len(m.Comments)}
			if c.HasPhoto {
				alt := "Photo of the " + string(m.Kind) + " at " + c.HHMM
				if m.Notes != "" {
					alt += ": " + m.Notes
				}
				c.Pic = m.Picture(slot, alt)
				c.Pic.Lazy, c.Pic.High = n >= EagerThumbs, n == 0
				n++
			}
			g.Cards[j] = c
		}
		out[i] = g
	}
	return out
}

// diaryGrid groups meals (sorted by sort key) into the grid's days, newest
// first, and sums them up; withYear and dense as gridDays takes them.
func diaryGrid(meals []Meal, withYear, dense bool) ([]gridDay, Summary) {
	days := GroupByDay(meals)
	return gridDays(days, withYear, dense), Summarize(days)
}
