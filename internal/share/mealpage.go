package share

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"ndiro/internal/meal"
	"ndiro/internal/text"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// Comments through a link are limited per link: CommentBurst at once,
// then one every CommentEvery, so a leaked link cannot fill the owner's
// meals (each also holds at most meal.MaxLinkComments of one link's).
const (
	CommentBurst = 20
	CommentEvery = 30 * time.Second
)

// step links a recipient's meal page to the meal before or after it
// within the range.
type step struct {
	URL string
	// Label says which meal: "Lunch at 12:30, Tue 1 Sep".
	Label string
}

// ownComment is a comment as its own link's recipient sees it.
type ownComment struct {
	ID   string
	Text string
	// When is its time in the owner's zone, named.
	When string
}

type mealPage struct {
	web.Base
	head
	Meal      cell
	MealTitle string // "Lunch"
	When      string // "Tuesday 1 September 2026, 12:30"
	// CanComment: the link takes comments.
	CanComment bool
	// Prev and Next are the neighbours within the range; nil at its ends.
	Prev, Next *step
	// WeekURL leads back to the meal's week on its overview page.
	WeekURL  string
	WeekText string
	// Comments are this link's comments on the meal, oldest first.
	Comments []ownComment
	// Action is the comment form's; Full says the link left the most
	// comments it may on the meal (meal.MaxLinkComments).
	Action string
	Full   bool
	// Text and Err are the form as sent back with 422.
	Text, Err string
	Max       int
}

var errNoMeal = &web.Error{Status: http.StatusNotFound, Title: "Meal not found",
	Msg: "There is no such meal in this shared diary. It may have been moved or deleted."}

// mealKey reads and checks {date} and {meal_id} under sh: a day the
// share covers and a well-formed meal ID, or a 404 leading back.
func mealKey(r *http.Request, sh *Share) (meal.Date, string, error) {
	d, err := meal.ParseDate(chi.URLParam(r, "date"))
	id := chi.URLParam(r, "meal_id")
	_, idErr := meal.ParseID(id)
	if err != nil || idErr != nil {
		e := *errNoMeal
		return meal.Date{}, "", backTo(sh, &e)
	}
	if !sh.Contains(d) {
		return meal.Date{}, "", outside(sh, d)
	}
	return d, id, nil
}

// Meal is GET /s/{token}/meals/{date}/{meal_id}: one meal of the range as
// its recipient may see it (redact): the display photo, time, kind, the
// notes and numbers the link shows, the link's own comments and, if the
// link takes them, the comment form; the meals before and after it within
// the range (swipe or arrow keys with JavaScript, links without) and the
// way back to its week. It is one GetItem and two Query calls with Limit
// 1 clamped to the range (meal.Store.Adjacent), after the checks every
// recipient request makes (open): a day outside the range, another
// owner's meal ID or a meal gone are 404s.
func (h *Handler) Meal(w http.ResponseWriter, r *http.Request) error {
	sh, owner, err := h.open(w, r)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	if isPreview(r) {
		return h.preview(w, r)
	}
	d, id, err := mealKey(r, sh)
	if err != nil {
		return err
	}
	return h.renderMeal(w, r, http.StatusOK, sh, owner, d, id, "", "")
}

// renderMeal renders the meal page of id on d with status, the comment
// form holding txt and its message msg.
func (h *Handler) renderMeal(w http.ResponseWriter, r *http.Request, status int, sh *Share, owner *user.User, d meal.Date, id, txt, msg string) error {
	ctx := r.Context()
	m, err := h.meals.Get(ctx, sh.OwnerID, d, id)
	if errors.Is(err, meal.ErrNotFound) {
		e := *errNoMeal
		return backTo(sh, &e)
	}
	if err != nil {
		return err
	}
	red := redact(*m, sh)
	from, to := sh.Range()
	lo, hi := meal.DayBounds(from, to)
	ws := weekStart(from, d)
	we := ws.AddDays(WeekDays - 1)
	if to.Before(we) {
		we = to
	}
	p := &mealPage{
		Base:       web.Base{Title: pageTitle, Unlisted: true},
		head:       h.head(sh, owner),
		Meal:       cellOf(sh, &red),
		MealTitle:  capitalise(string(red.Kind)),
		CanComment: sh.Comments,
		When:       red.DateTime().Format("Monday 2 January 2006, 15:04"),
		WeekURL:    "/s/" + sh.Token + "?from=" + pageStart(from, d).String() + "#week-" + ws.String(),
		WeekText:   rangeText(ws, we),
		Action:     "/s/" + sh.Token + "/meals/" + red.Date + "/" + red.ID + "/comments",
		Full:       len(m.CommentsFrom(ID(sh.Token))) >= meal.MaxLinkComments,
		Text:       txt,
		Err:        msg,
		Max:        meal.MaxCommentText,
	}
	for _, c := range red.SortedComments() {
		p.Comments = append(p.Comments, ownComment{ID: c.ID, Text: c.Text, When: when(c.At, owner)})
	}
	for _, side := range []struct {
		link   **step
		before bool
	}{{&p.Prev, true}, {&p.Next, false}} {
		n, err := h.meals.Adjacent(ctx, sh.OwnerID, m.SK, lo, hi, side.before)
		switch {
		case err == nil:
			*side.link = stepTo(sh, n, m)
		case !errors.Is(err, meal.ErrNotFound):
			return err
		}
	}
	return h.pages.Render(w, r, status, "share/meal", p)
}

// stepTo links to n from the page of m, under the share.
func stepTo(sh *Share, n, m *meal.Meal) *step {
	label := capitalise(string(n.Kind)) + " at " + n.HHMM()
	if n.Date != m.Date {
		label += ", " + n.DateTime().Format("Mon 2 Jan")
	}
	return &step{URL: "/s/" + sh.Token + "/meals/" + n.Date + "/" + n.ID, Label: label}
}

// capitalise upper-cases the first letter of an ASCII word.
func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// msgLinkFull refuses a comment past meal.MaxLinkComments on one meal. It
// speaks of the recipient's own comments only: other links' are never
// told to them.
var msgLinkFull = fmt.Sprintf("You have left %d comments on this meal, the most one link may leave.", meal.MaxLinkComments)

var errNoComments = &web.Error{Status: http.StatusForbidden, Title: "Comments are off",
	Msg: "The person who shared this diary did not turn on comments for this link.", Unlisted: true}

// commentText checks a comment as typed: what to store, or a message
// saying what to fix and the text to show again (cleaned, cut to the
// limit, never echoed whole).
func commentText(raw string) (clean, msg, again string) {
	s := strings.TrimSpace(strings.ReplaceAll(raw, "\r\n", "\n"))
	bad, refused := text.Refused(s, true)
	switch {
	case s == "":
		return "", "Write a comment first.", ""
	case !utf8.ValidString(s):
		msg = "The comment contained bytes that are not text; they were taken out. Check it and send it again."
	case utf8.RuneCountInString(s) > meal.MaxCommentText:
		msg = fmt.Sprintf("A comment may have at most %d characters; this one has %d.", meal.MaxCommentText, utf8.RuneCountInString(s))
	case refused:
		msg = fmt.Sprintf("A comment may not hold %s (nor control characters other than line breaks and tabs, nor characters that reverse the text's direction); the field holds it without them.", text.Name(bad))
	default:
		return s, "", ""
	}
	return "", msg, text.Without(s, true, meal.MaxCommentText)
}

// Comment is POST /s/{token}/meals/{date}/{meal_id}/comments: the
// recipient of a link that takes comments leaves one on a meal of its
// range, answered 303 back to the meal's page. In order: the checks of
// every recipient request (open); comments on (403); the link's
// allowance (429: CommentBurst, then one every CommentEvery); the meal's
// key (404 outside the range); the text (422, the page again with the
// message and the text kept, cleaned). Then the share item counts the
// comment (Store.CountComment, conditional on the link still taking
// comments: a revoke or expiry at that moment refuses it), and the meal
// item takes it (meal.Store.AddComment; a meal gone is 404; one holding
// the link's meal.MaxLinkComments, or with no room, 422; each takes the
// count back). The comment carries the link's
// ID and a copy of its label, never the token. No cookie, no session.
func (h *Handler) Comment(w http.ResponseWriter, r *http.Request) error {
	sh, owner, err := h.open(w, r)
	if err != nil {
		return err
	}
	if !sh.Comments {
		return errNoComments
	}
	if ok, wait := h.comments.Allow(sh.Token); !ok {
		return web.TooManyRequests(w, wait, "There were too many comments through this link.")
	}
	d, id, err := mealKey(r, sh)
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return backTo(sh, web.BadRequest("The form could not be read."))
	}
	body, msg, again := commentText(r.PostForm.Get("text"))
	if msg != "" {
		return h.renderMeal(w, r, http.StatusUnprocessableEntity, sh, owner, d, id, again, msg)
	}
	ctx := r.Context()
	now := h.now()
	if err := h.store.CountComment(ctx, sh.Token, now); errors.Is(err, ErrClosed) {
		return errNoShare
	} else if err != nil {
		return err
	}
	c := meal.Comment{ID: meal.NewCommentID(now), ShareID: ID(sh.Token), Label: sh.Label, Text: body, At: now.UTC()}
	err = h.meals.AddComment(ctx, sh.OwnerID, d, id, c)
	if err != nil {
		if uerr := h.store.UncountComment(ctx, sh.Token); uerr != nil {
			h.log.Warn("comment count not taken back", "err", uerr)
		}
	}
	switch {
	case errors.Is(err, meal.ErrNotFound):
		e := *errNoMeal
		return backTo(sh, &e)
	case errors.Is(err, meal.ErrCommentsFull):
		return h.renderMeal(w, r, http.StatusUnprocessableEntity, sh, owner, d, id, again, msgLinkFull)
	case errors.Is(err, meal.ErrNoRoom):
		return h.renderMeal(w, r, http.StatusUnprocessableEntity, sh, owner, d, id, again, "This meal takes no more comments.")
	case err != nil:
		return err
	}
	web.Redirect(w, r, "/s/"+sh.Token+"/meals/"+d.String()+"/"+id+"#comment-"+c.ID)
	return nil
}

// Reviewed is POST /s/{token}/weeks/{start}/reviewed: the recipient of a
// link that takes comments marks the week starting on {start} (a week of
// the range) reviewed, or, with reviewed=0, not, answered 303 back to the
// week on its overview page. Refusals as Comment's; a day that does not
// start a week of the range is 404.
func (h *Handler) Reviewed(w http.ResponseWriter, r *http.Request) error {
	sh, _, err := h.open(w, r)
	if err != nil {
		return err
	}
	if !sh.Comments {
		return errNoComments
	}
	if ok, wait := h.comments.Allow(sh.Token); !ok {
		return web.TooManyRequests(w, wait, "There were too many changes through this link.")
	}
	from, _ := sh.Range()
	d, err := meal.ParseDate(chi.URLParam(r, "start"))
	if err != nil || !sh.Contains(d) || weekStart(from, d).String() != d.String() {
		return backTo(sh, &web.Error{Status: http.StatusNotFound, Title: "Week not found",
			Msg: "This link's weeks start on " + from.Time().Format("Monday 2 January") + " and every seven days after it; there is no such week."})
	}
	if err := r.ParseForm(); err != nil {
		return backTo(sh, web.BadRequest("The form could not be read."))
	}
	on := true
	switch r.PostForm.Get("reviewed") {
	case "", "1":
	case "0":
		on = false
	default:
		return backTo(sh, web.BadRequest("reviewed must be 1 (reviewed) or 0 (not reviewed)."))
	}
	if err := h.store.MarkReviewed(r.Context(), sh.Token, d.String(), on, h.now()); errors.Is(err, ErrClosed) {
		return errNoShare
	} else if err != nil {
		return err
	}
	web.Redirect(w, r, "/s/"+sh.Token+"?from="+pageStart(from, d).String()+"#week-"+d.String())
	return nil
}
