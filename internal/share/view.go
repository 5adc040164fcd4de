package share

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/user"
)

// The shapes of a recipient's pages: PageWeeks weeks of WeekDays days
// each, counted from the share's first day.
const (
	// WeekDays is the length of a week of a share: its weeks start on the
	// share's first day, every seven days, whatever weekday that is.
	WeekDays = 7
	// PageWeeks is how many weeks one overview page shows: a 31-day share
	// fits on one page, and the page is ONE Query of 35 days at most.
	PageWeeks = 5
)

// cell is one meal as a recipient's grid and meal page show it, every
// value precomputed from a redacted meal (redact): numbers are "" unless
// the share shows them, notes "" unless it shows notes.
type cell struct {
	ID, Date, Time, HHMM string
	Kind                 meal.Kind
	Notes                string
	// Kcal, ProteinG, CarbsG, FatG, Hunger and Fullness as shown; "" for
	// blank or hidden.
	Kcal, ProteinG, CarbsG, FatG, Hunger, Fullness string
	HasNumbers                                     bool
	HasPhoto                                       bool
	// Pic is the thumbnail in the day strip's slot, WeekPic in the week
	// table's, Photo the whole photo in the meal page's; all under the
	// share's photo path.
	Pic, WeekPic, Photo photo.Picture
	// URL is the recipient's page of the meal.
	URL string
	// Comments counts the comments written through this link.
	Comments int
	// Alt describes the photo: "Photo of the lunch at 12:30".
	Alt string
}

// day is one day of a week grid.
type day struct {
	Date    string
	Heading string // "Tue 1 Sep"
	Kcal    string // the day's total as shown; "" if none or hidden
	Cells   []cell
}

// week is one week of a share: WeekDays days from Start, cut to the
// range.
type week struct {
	Start string // "2026-09-01"
	Text  string // "1 Sep – 7 Sep 2026"
	Days  []day
	Meals int
	// Reviewed: the recipient marked the week reviewed.
	Reviewed bool
	// URL is the week's own page; ReviewAction the form that marks it.
	URL, ReviewAction string
}

// typical is the usual time of one kind of meal: the median.
type typical struct {
	Kind meal.Kind
	// Name is the kind as a word that starts a list item: "Breakfast".
	Name string
	HHMM string
}

// summary is the range (or the page's part of it) at a glance, computed
// from the page's own redacted meals only.
type summary struct {
	// Of says what it covers: "the shared days" or "1 Sep – 5 Oct 2026".
	Of            string
	Logged, Days  int
	Meals         int
	PerDay        string // meals per logged day, "3.2"
	Times         []typical
	Numbers       bool
	Kcal, P, C, F *meal.Average
	HasAverages   bool
}

// cellOf turns m, already redacted for sh, into its cell, with URLs under
// the share's token.
func cellOf(sh *Share, m *meal.Meal) cell {
	tok := sh.Token
	c := cell{
		ID: m.ID, Date: m.Date, Time: m.Time, HHMM: m.HHMM(), Kind: m.Kind, Notes: m.Notes,
		Kcal: shown(m.Kcal), ProteinG: shown(m.ProteinG), CarbsG: shown(m.CarbsG), FatG: shown(m.FatG),
		Hunger: scale(m.Hunger), Fullness: scale(m.Fullness),
		HasPhoto: m.HasPhoto(),
		URL:      "/s/" + tok + "/meals/" + m.Date + "/" + m.ID,
		Comments: len(m.Comments),
		Alt:      "Photo of the " + string(m.Kind) + " at " + m.HHMM(),
	}
	c.HasNumbers = c.Kcal != "" || c.ProteinG != "" || c.CarbsG != "" || c.FatG != "" || c.Hunger != "" || c.Fullness != ""
	if c.HasPhoto {
		base := "/s/" + tok + "/photo/" + m.Date + "/" + m.ID
		c.Pic = photo.NewPicture(base, m.PhotoV, m.PhotoSet, m.PhotoDims(), photo.SlotStrip)
		c.WeekPic = photo.NewPicture(base, m.PhotoV, m.PhotoSet, m.PhotoDims(), photo.SlotWeek)
		c.Photo = photo.NewPicture(base, m.PhotoV, m.PhotoSet, m.PhotoDims(), photo.SlotShareDetail)
		c.Pic.Alt, c.WeekPic.Alt, c.Photo.Alt = c.Alt, c.Alt, c.Alt
		c.Pic.Lazy = true
		c.Photo.Class, c.Photo.High = "photo", true
	}
	return c
}

func shown(n *meal.Number) string {
	if n == nil {
		return ""
	}
	return n.String()
}

func scale(v *int) string {
	if v == nil {
		return ""
	}
	return strconv.Itoa(*v)
}

// redactAll redacts meals (sorted by sort key) for sh.
func redactAll(sh *Share, meals []meal.Meal) []meal.Meal {
	out := make([]meal.Meal, len(meals))
	for i := range meals {
		out[i] = redact(meals[i], sh)
	}
	return out
}

// weekStart is the first day of the week of sh's range that holds d.
func weekStart(from, d meal.Date) meal.Date {
	return from.AddDays(from.DaysUntil(d) / WeekDays * WeekDays)
}

// pageStart is the first day of the overview page that holds d.
func pageStart(from, d meal.Date) meal.Date {
	n := WeekDays * PageWeeks
	return from.AddDays(from.DaysUntil(d) / n * n)
}

// weeks lays out red, sh's redacted meals from start through end (a
// window of the range starting on a week), as weeks of days, every day
// shown, meals in time order.
func weeks(sh *Share, red []meal.Meal, start, end meal.Date) []week {
	byDate := map[string][]cell{}
	first := true
	for i := range red {
		c := cellOf(sh, &red[i])
		if first && c.HasPhoto {
			// The first photo of the page: fetched first, not deferred.
			c.Pic.Lazy, c.Pic.High, c.WeekPic.High, first = false, true, true, false
		}
		byDate[red[i].Date] = append(byDate[red[i].Date], c)
	}
	kcal := map[string]*meal.Number{}
	for _, d := range meal.GroupByDay(red) { // totals of the redacted numbers
		kcal[d.Date.String()] = d.Kcal
	}
	var out []week
	for ws := start; !end.Before(ws); ws = ws.AddDays(WeekDays) {
		we := ws.AddDays(WeekDays - 1)
		if end.Before(we) {
			we = end
		}
		w := week{
			Start:        ws.String(),
			Text:         rangeText(ws, we),
			Reviewed:     sh.IsReviewed(ws.String()),
			URL:          "/s/" + sh.Token + "/week?start=" + ws.String(),
			ReviewAction: "/s/" + sh.Token + "/weeks/" + ws.String() + "/reviewed",
		}
		for d := ws; !we.Before(d); d = d.AddDays(1) {
			cs := byDate[d.String()]
			w.Days = append(w.Days, day{Date: d.String(), Heading: d.Time().Format("Mon 2 Jan"), Kcal: shown(kcal[d.String()]), Cells: cs})
			w.Meals += len(cs)
		}
		out = append(out, w)
	}
	return out
}

// summarize sums up red, sh's redacted meals over days days (of says
// which), from those meals alone: nothing outside them shapes it.
func summarize(sh *Share, red []meal.Meal, days int, of string) summary {
	grouped := meal.GroupByDay(red)
	s := meal.Summarize(grouped)
	out := summary{Of: of, Logged: s.Days, Days: days, Meals: s.Meals, Numbers: sh.Numbers,
		Kcal: s.Kcal, P: s.ProteinG, C: s.CarbsG, F: s.FatG, HasAverages: s.HasNumbers()}
	if s.Days > 0 {
		out.PerDay = fmt.Sprintf("%.1f", float64(s.Meals)/float64(s.Days))
	}
	mins := map[meal.Kind][]int{}
	for i := range red {
		if t, err := meal.ParseTimeOfDay(red[i].Time); err == nil {
			m, _ := strconv.Atoi(t.HHMM()[3:])
			mins[red[i].Kind] = append(mins[red[i].Kind], t.Hour()*60+m)
		}
	}
	for _, k := range meal.Kinds {
		ms := mins[k]
		if len(ms) == 0 {
			continue
		}
		sort.Ints(ms)
		med := ms[len(ms)/2]
		if len(ms)%2 == 0 {
			med = (ms[len(ms)/2-1] + ms[len(ms)/2]) / 2
		}
		out.Times = append(out.Times, typical{Kind: k, Name: capitalise(string(k)), HHMM: fmt.Sprintf("%02d:%02d", med/60, med%60)})
	}
	return out
}

// when writes t for a recipient or admin page in the owner's zone, named:
// "30 Sep 2026 18:07 CEST".
func when(t time.Time, owner *user.User) string {
	return t.In(owner.Location()).Format("2 Jan 2006 15:04 MST")
}
