package meal

import "github.com/shopspring/decimal"

// Summary is a month (or a window of days) at a glance: how many days have
// meals, and the average day's numbers.
type Summary struct {
	// Days is how many days have at least one meal; Meals how many meals.
	Days, Meals int
	// Kcal, ProteinG, CarbsG and FatG are the average day's totals; nil if
	// no day records the number.
	Kcal, ProteinG, CarbsG, FatG *Average
}

// Average is one number's mean per logged day.
type Average struct {
	// Value is the mean of the day totals, in decimal: kcal rounded to a
	// whole number, grams to one decimal place (half away from zero).
	Value Number
	// Days is how many days record the number, out of Of days logged. A
	// day logged without the number is left out of the mean rather than
	// counted as 0, which would understate every such month.
	Days, Of int
}

// Partial reports whether some logged days do not record the number, so
// that the average covers fewer days than were logged.
func (a *Average) Partial() bool { return a.Days < a.Of }

// Summarize returns the summary of days (as GroupByDay returns them).
func Summarize(days []Day) Summary {
	s := Summary{Days: len(days)}
	for _, d := range days {
		s.Meals += len(d.Meals)
	}
	avg := func(total func(Day) *Number, places int32) *Average {
		sum, n := decimal.Zero, 0
		for _, d := range days {
			if t := total(d); t != nil {
				sum, n = sum.Add(t.d), n+1
			}
		}
		if n == 0 {
			return nil
		}
		return &Average{Value: Number{sum.DivRound(decimal.NewFromInt(int64(n)), places)}, Days: n, Of: len(days)}
	}
	s.Kcal = avg(func(d Day) *Number { return d.Kcal }, 0)
	s.ProteinG = avg(func(d Day) *Number { return d.ProteinG }, 1)
	s.CarbsG = avg(func(d Day) *Number { return d.CarbsG }, 1)
	s.FatG = avg(func(d Day) *Number { return d.FatG }, 1)
	return s
}

// HasNumbers reports whether any day records any of the four numbers.
func (s Summary) HasNumbers() bool {
	return s.Kcal != nil || s.ProteinG != nil || s.CarbsG != nil || s.FatG != nil
}
