package meal

import (
	"net/http"
	"strings"
	"time"

	"ndiro/internal/web"
)

// TakenApart is how far a photo's capture time must be from a meal's date
// and time before a page mentions it: the saved month's "Filed on … from
// the photo", and the meal page's "Photo taken …". A photo taken within it
// is the meal being logged, and saying so would be noise.
const TakenApart = time.Hour

// farFrom reports whether the camera time taken (zero if unknown) is more
// than TakenApart from the wall-clock date and time of day tod ("12:30" or
// "12:30:00").
func farFrom(taken time.Time, date, tod string) bool {
	if taken.IsZero() {
		return false
	}
	t, err := ParseTimeOfDay(tod)
	if err != nil {
		return false
	}
	at, err := time.Parse("2006-01-02 15:04:05", date+" "+t.String())
	if err != nil {
		return false
	}
	d := taken.Sub(at)
	return d > TakenApart || d < -TakenApart
}

// fileByPhoto files a new meal m at its photo's capture time taken (the
// camera's wall clock; zero if unknown) when the form f left date and time
// as it first showed them: its default_date and default_time markers are
// present and unchanged. A form that names its own date and time (typed,
// or filled from the photo by the page script) is filed as sent, and so is
// one without markers (an edit: edits never move a meal by its photo).
// On a form opened for one day (FixedDate, the day's "+"), only a photo
// taken that day sets the time. A capture time that is not a day ndiro
// takes, or more than a day after today (a camera clock set wrong), is
// not used. The kind follows the new time when it was left at the one the
// default time suggests. It reports whether it changed m's date or time.
func fileByPhoto(f *Form, m *Meal, taken time.Time, today Date) bool {
	if taken.IsZero() || !f.DateTimeDefault() {
		return false
	}
	d, err := ParseDate(DateOf(taken).String())
	if err != nil || today.AddDays(1).Before(d) || (f.FixedDate && d.String() != f.Date) {
		return false
	}
	tod := TimeOfDayOf(taken)
	if m.Date == d.String() && m.Time == tod.String() {
		return false
	}
	if def, err := ParseTimeOfDay(f.DefaultTime); err == nil && m.Kind == KindAt(def) {
		m.Kind = KindAt(tod)
	}
	m.Date, m.Time = d.String(), tod.String()
	return true
}

// filedCookie tells the month page which meal the server just filed at its
// photo's capture time, and the date and time the form would have used
// ("now"), for its "Filed on … from the photo" and "Move to now": the
// redirect keeps its plain /meals?month=…#meal-{id}.
const filedCookie = "ndiro_filed"

// setFiled records, for the next month page, that m was filed at its
// photo's time instead of nowDate and nowTime (the form's defaults). The
// value is "2024-06-14/123107-abcdef/2026-09-01/12:30"; the page checks
// every part again and shows the note only for a meal of the owner's it
// lists. It lives a minute, like the flash message, and is HttpOnly.
func setFiled(w http.ResponseWriter, m *Meal, nowDate, nowTime string) {
	http.SetCookie(w, &http.Cookie{
		Name: filedCookie, Value: m.Date + "/" + m.ID + "/" + nowDate + "/" + nowTime,
		Path: "/meals", MaxAge: 60, HttpOnly: true, Secure: web.SecureCookie(w), SameSite: http.SameSiteLaxMode,
	})
}

// filedNote is the month page's note about a meal filed at its photo's
// time, with the form that moves it to the time the form first showed.
type filedNote struct {
	MealID string
	// When is where the photo put the meal, in words: "Fri 14 Jun 2024, 12:31".
	When string
	// MoveURL, Version, Date and Time make the "Move to now" form;
	// NowLabel words that time: "Tue 1 Sep 2026, 12:30".
	MoveURL, Date, Time, NowLabel string
	Version                       int64
}

// filed reads and clears the filed cookie and returns its note if it
// names one of meals (the month shown); nil otherwise.
func filed(w http.ResponseWriter, r *http.Request, meals []Meal) *filedNote {
	c, err := r.Cookie(filedCookie)
	if err != nil {
		return nil
	}
	http.SetCookie(w, &http.Cookie{Name: filedCookie, Path: "/meals", MaxAge: -1, HttpOnly: true, Secure: web.SecureCookie(w), SameSite: http.SameSiteLaxMode})
	parts := strings.Split(c.Value, "/")
	if len(parts) != 4 {
		return nil
	}
	nowDate, err := ParseDate(parts[2])
	if err != nil {
		return nil
	}
	nowTime, err := ParseTimeOfDay(parts[3])
	if err != nil {
		return nil
	}
	for i := range meals {
		m := &meals[i]
		if m.Date != parts[0] || m.ID != parts[1] {
			continue
		}
		now, _ := time.Parse("2006-01-02 15:04", nowDate.String()+" "+nowTime.HHMM())
		return &filedNote{
			MealID: m.ID, When: m.DateTime().Format("Mon 2 Jan 2006, 15:04"),
			MoveURL: m.DetailURL() + "/move", Date: nowDate.String(), Time: nowTime.HHMM(), Version: m.Version,
			NowLabel: now.Format("Mon 2 Jan 2006, 15:04"),
		}
	}
	return nil
}
