package meal

// EagerThumbs is how many thumbnails at the top of a diary page load at
// once; the rest carry loading="lazy", so a phone fetches only what its
// first screen and the next stretch of scrolling show (about three days
// of meals at 390 px).
const EagerThumbs = 9

// gridDay is one day of the diary's photo grid.
type gridDay struct {
	Day
	// Heading is the day in words: "Tuesday 1 September" on a month page,
	// "Tue 1 Sep 2026" on a window that may span years.
	Heading string
	// AddLabel names the day for the "+" button: "Add a meal on 1 September".
	AddLabel string
	Cards    []gridMeal
}

// gridMeal is one meal's card in the grid.
type gridMeal struct {
	*Meal
	// Lazy marks a thumbnail below the first screen (loading="lazy").
	Lazy bool
}

// gridDays lays days out for the grid: headings in words, and every
// thumbnail after the first EagerThumbs marked lazy. withYear writes the
// year in headings (windows may cross a year).
func gridDays(days []Day, withYear bool) []gridDay {
	out := make([]gridDay, len(days))
	n := 0
	for i, d := range days {
		g := gridDay{Day: d, AddLabel: "Add a meal on " + d.Date.Time().Format("2 January")}
		g.Heading = d.Date.Time().Format("Monday 2 January")
		if withYear {
			g.Heading = d.Date.Time().Format("Mon 2 Jan 2006")
		}
		g.Cards = make([]gridMeal, len(d.Meals))
		for j := range d.Meals {
			m := &days[i].Meals[j]
			g.Cards[j] = gridMeal{Meal: m, Lazy: m.HasPhoto() && n >= EagerThumbs}
			if m.HasPhoto() {
				n++
			}
		}
		out[i] = g
	}
	return out
}

// diaryGrid groups meals (sorted by sort key) into the grid's days, newest
// first, and sums them up.
func diaryGrid(meals []Meal, withYear bool) ([]gridDay, Summary) {
	days := GroupByDay(meals)
	return gridDays(days, withYear), Summarize(days)
}
