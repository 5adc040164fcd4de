package meal

import "strconv"

// listMeal is one meal as the month and day-window pages show it: every
// value meal/list.html prints, worked out once in Go. The names are those
// of Meal's fields and methods the template used before, so the template
// reads the same; a method call from a template goes through reflection
// (about a dozen allocations each, ten per meal), a field does not
// (BenchmarkMonthPage).
type listMeal struct {
	ID, Date, Time, HHMM, Kind, Notes string
	HasPhoto                          bool
	ThumbURL, DisplayURL              string
	ThumbW, ThumbH                    int
	// Numbers as typed back ("12.5"), "" if unset; Hunger and Fullness
	// 1–5, 0 if unset.
	Kcal, ProteinG, CarbsG, FatG string
	Hunger, Fullness             int
}

// listDay is a Day of listMeals; Kcal is the day's total, "" if no meal
// has kcal.
type listDay struct {
	Date  Date
	Meals []listMeal
	Kcal  string
}

// listDays groups meals (sorted by sort key) into days for the list
// page, newest day first, as GroupByDay does.
func listDays(meals []Meal) []listDay {
	days := GroupByDay(meals)
	out := make([]listDay, len(days))
	views := make([]listMeal, 0, len(meals)) // one allocation for every meal
	for i, d := range days {
		start := len(views)
		for j := range d.Meals {
			views = append(views, listMealOf(&d.Meals[j]))
		}
		out[i] = listDay{Date: d.Date, Meals: views[start:len(views):len(views)], Kcal: numberText(d.Kcal)}
	}
	return out
}

func listMealOf(m *Meal) listMeal {
	v := listMeal{
		ID: m.ID, Date: m.Date, Time: m.Time, HHMM: m.HHMM(), Kind: string(m.Kind), Notes: m.Notes,
		HasPhoto: m.HasPhoto(), ThumbW: m.ThumbW, ThumbH: m.ThumbH,
		Kcal: numberText(m.Kcal), ProteinG: numberText(m.ProteinG), CarbsG: numberText(m.CarbsG), FatG: numberText(m.FatG),
	}
	if v.HasPhoto {
		base := "/photo/" + m.Date + "/" + m.ID + "?v=" + m.PhotoV.Tag()
		v.DisplayURL, v.ThumbURL = base, base+"&size=thumb"
	}
	if m.Hunger != nil {
		v.Hunger = *m.Hunger
	}
	if m.Fullness != nil {
		v.Fullness = *m.Fullness
	}
	return v
}

// numberText is n as typed back, "" for nil.
func numberText(n *Number) string {
	if n == nil {
		return ""
	}
	if d := n.Decimal(); d.Exponent() == 0 && d.IsInteger() {
		if i := d.IntPart(); i >= 0 && i < 1_000_000 {
			return strconv.FormatInt(i, 10) // whole numbers without big.Int
		}
	}
	return n.String()
}
