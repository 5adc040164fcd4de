package share_test

import (
	"context"
	"fmt"
	"image/color"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/share"
)

// TestCommentFlow: a recipient comments on a meal and sees it as theirs;
// the owner sees it on the meal (from the link, by its label, at a time
// in their zone, named), as a badge on the month and as new on /shares,
// whose comments page lists it and counts it seen; another link's
// recipient never sees it; the owner deletes it.
func TestCommentFlow(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	app := w.app
	if err := app.Users.SetTimeZone(context.Background(), localenv.Subject(ownerEmail), "Europe/Berlin"); err != nil {
		t.Fatal(err)
	}
	other := createShare(t, w.owner, shareForm("label", "Coach Lee", "comments", "1"))
	anon := app.Client()
	const text = "Could you add greens\nto this lunch?"
	resp := anon.PostForm(mealPath(w.commenting, w.inRange)+"/comments", url.Values{"text": {"  " + strings.ReplaceAll(text, "\n", "\r\n") + " "}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("comment = %d, want 303; %s", resp.StatusCode, resp.Text("main"))
	}
	page := anon.Get(resp.Location()).Doc()
	if got := page.Find("#comments li.comment .comment-text").Text(); got != text {
		t.Errorf("the recipient's page shows %q, want %q", got, text)
	}
	if strings.Contains(page.Text(), "commenting") || strings.Contains(page.Text(), "Dr. Rossi") {
		t.Error("the recipient's page shows the link's label")
	}
	at := page.Find("#comments li.comment time").Text()
	if !strings.HasSuffix(at, " CET") && !strings.HasSuffix(at, " CEST") {
		t.Errorf("comment time on the recipient's page = %q, want it in the owner's zone, named", at)
	}
	// Another link's recipient: the meal, not the comment.
	if body := anon.Get(mealPath(other, w.inRange)).Body; strings.Contains(body, "greens") {
		t.Error("another link's recipient sees the comment")
	}
	// The owner: on the meal, on the month, on /shares.
	detail := w.owner.Get("/meals/" + w.inRange.Date + "/" + w.inRange.ID).Doc()
	c := detail.Find("#comments li.comment")
	if c.Length() != 1 || c.Find(".comment-text").Text() != text || !strings.Contains(c.Text(), "From the link for commenting") {
		t.Errorf("owner's meal page comments: %d, %q", c.Length(), strings.TrimSpace(c.Text()))
	}
	if got := c.Find("time").Text(); got != at {
		t.Errorf("owner sees the time %q, the recipient %q; want the same, in the owner's zone", got, at)
	}
	month := w.owner.Get("/meals?month=2026-09").Doc()
	if got := strings.TrimSpace(month.Find("#meal-" + w.inRange.ID + " .comments-badge").Text()); got != "1 comment" {
		t.Errorf("month card badge = %q, want 1 comment", got)
	}
	if n := month.Find(".comments-badge").Length(); n != 1 {
		t.Errorf("%d badges on the month, want 1", n)
	}
	list := w.owner.Get("/shares").Doc()
	if got := strings.TrimSpace(list.Find("a.new-comments").Text()); got != "1 new comment" {
		t.Errorf("/shares says %q, want 1 new comment", got)
	}
	href := list.Find("a.new-comments").AttrOr("href", "")
	cp := w.owner.Get(href)
	if cp.StatusCode != http.StatusOK || cp.Doc().Find("li.comment.new").Length() != 1 || !strings.Contains(cp.Text("main"), "greens") {
		t.Errorf("the link's comments page = %d, %d new; %q", cp.StatusCode, cp.Doc().Find("li.comment.new").Length(), cp.Text("main"))
	}
	if w.owner.Get("/shares").Doc().Find("a.new-comments").Length() != 0 {
		t.Error("/shares still says new comments after the owner saw them")
	}
	if resp := w.other.Get(href); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another user's look at the link's comments = %d, want 404", resp.StatusCode)
	}

	// The owner deletes it; another user cannot.
	del := detail.Find("#comments form").AttrOr("action", "")
	if resp := w.other.PostForm(del, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another user's delete = %d, want 404", resp.StatusCode)
	}
	if resp := w.owner.PostForm(del, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("owner's delete = %d, want 303", resp.StatusCode)
	}
	if w.owner.Get("/meals/"+w.inRange.Date+"/"+w.inRange.ID).Doc().Find("#comments").Length() != 0 || strings.Contains(anon.Get(mealPath(w.commenting, w.inRange)).Body, "greens") {
		t.Error("the deleted comment still shows")
	}
	if resp := w.owner.PostForm(del, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("deleting it again = %d, want 404", resp.StatusCode)
	}

}

// TestCommentsOutliveRevoke: after a revoke the owner keeps what was
// written through the link, labelled; the link takes no more, and its
// pages are gone.
func TestCommentsOutliveRevoke(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	app := w.app
	anon := app.Client()
	if resp := anon.PostForm(mealPath(w.commenting, w.inRange)+"/comments", url.Values{"text": {"Second thought."}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("second comment = %d", resp.StatusCode)
	}
	if resp := w.owner.PostForm("/shares/"+w.commenting+"/revoke", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatal("revoke failed")
	}
	if got := w.owner.Get("/meals/" + w.inRange.Date + "/" + w.inRange.ID).Text("#comments li.comment"); !strings.Contains(got, "Second thought.") || !strings.Contains(got, "From the link for commenting") {
		t.Errorf("after revoke the owner's meal shows %q", got)
	}
	for _, p := range []string{mealPath(w.commenting, w.inRange), mealPath(w.commenting, w.inRange) + "/comments"} {
		var resp = anon.Get(p)
		if strings.HasSuffix(p, "/comments") {
			resp = anon.PostForm(p, url.Values{"text": {"after revoke"}})
		}
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s after revoke = %d, want 404", strings.Replace(p, w.commenting, "{token}", 1), resp.StatusCode)
		}
	}
	m, err := app.Meals.Get(context.Background(), w.inRange.UserID, mustDate(t, w.inRange.Date), w.inRange.ID)
	if err != nil || len(m.Comments) != 1 {
		t.Errorf("comments stored after revoke: %v, %v; want the one written before", m, err)
	}
}

// TestCommentRefusals: each kind of bad comment is answered 422 on the
// meal's page with a message saying what to fix and the text shown again
// cleaned and cut to the limit, and nothing written; a meal holding the
// link's meal.MaxLinkComments is 422 saying so; the link's allowance is
// 429 with Retry-After.
func TestCommentRefusals(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	app := w.app
	anon := app.Client()
	path := mealPath(w.commenting, w.inRange) + "/comments"
	long := strings.Repeat("é", meal.MaxCommentText+1)
	for _, tc := range []struct {
		name, text, msg, again string
	}{
		{"empty", "  \r\n ", "Write a comment first.", ""},
		{"too long", long, fmt.Sprintf("A comment may have at most %d characters; this one has %d.", meal.MaxCommentText, meal.MaxCommentText+1), long[:2*meal.MaxCommentText]},
		{"a direction override", "fine \u202egreens", "U+202E", "fine greens"},
		{"a control character", "bell\x07", "U+0007", "bell"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := anon.PostForm(path, url.Values{"text": {tc.text}})
			if resp.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("POST = %d, want 422", resp.StatusCode)
			}
			if got := resp.Text("#text-err"); !strings.Contains(got, tc.msg) {
				t.Errorf("message = %q, want it to say %q", got, tc.msg)
			}
			if got := resp.Doc().Find("textarea#text").Text(); got != tc.again {
				t.Errorf("the field holds %d characters %.40q, want %.40q", len([]rune(got)), got, tc.again)
			}
			checkRecipientHeaders(t, resp)
		})
	}
	stored := func() int {
		m, err := app.Meals.Get(context.Background(), w.inRange.UserID, mustDate(t, w.inRange.Date), w.inRange.ID)
		if err != nil {
			t.Fatal(err)
		}
		return len(m.Comments)
	}
	if n := stored(); n != 0 {
		t.Fatalf("%d comments stored from refused forms", n)
	}
	if sh, _ := app.Shares.Get(context.Background(), w.commenting); sh.NewComments != 0 {
		t.Errorf("refused forms counted %d new comments", sh.NewComments)
	}

	// Fill the link's share of the meal (the allowance refilled each
	// time), then one more.
	for i := range meal.MaxLinkComments {
		app.Clock.Advance(share.CommentEvery)
		if resp := anon.PostForm(path, url.Values{"text": {fmt.Sprint("note ", i)}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("comment %d = %d", i+1, resp.StatusCode)
		}
	}
	app.Clock.Advance(share.CommentEvery)
	full := anon.PostForm(path, url.Values{"text": {"one too many"}})
	if want := fmt.Sprintf("You have left %d comments on this meal, the most one link may leave.", meal.MaxLinkComments); full.StatusCode != http.StatusUnprocessableEntity || full.Text("#text-err") != want {
		t.Errorf("a comment past the link's share = %d %q, want 422 %q", full.StatusCode, full.Text("#text-err"), want)
	}
	if n := stored(); n != meal.MaxLinkComments {
		t.Errorf("%d comments stored, want %d", n, meal.MaxLinkComments)
	}
	if sh, _ := app.Shares.Get(context.Background(), w.commenting); sh.NewComments != meal.MaxLinkComments {
		t.Errorf("new comments = %d, want %d (the refused one taken back)", sh.NewComments, meal.MaxLinkComments)
	}
	if got := anon.Get(mealPath(w.commenting, w.inRange)).Doc(); got.Find("form.comment-form").Length() != 0 || got.Find("#comments .notice").Text() != "You have left the most comments one link may leave on this meal." {
		t.Errorf("a meal full for the link offers the form, or says %q", got.Find("#comments .notice").Text())
	}

	// The allowance: CommentBurst at once, then 429 (past the link's
	// share of each meal, 422).
	other := addMeal(t, app, w.owner, ownerEmail, "2026-09-04", "09:00", "breakfast", jpegOf(t, 64, 48, color.RGBA{9, 9, 9, 255}))
	app.Clock.Advance(share.CommentBurst * share.CommentEvery)
	codes := map[int]int{}
	for range share.CommentBurst + 1 {
		codes[anon.PostForm(mealPath(w.commenting, other)+"/comments", url.Values{"text": {"x"}}).StatusCode]++
	}
	if codes[http.StatusSeeOther] != meal.MaxLinkComments || codes[http.StatusUnprocessableEntity] != share.CommentBurst-meal.MaxLinkComments || codes[http.StatusTooManyRequests] != 1 {
		t.Errorf("statuses of %d comments at once = %v, want %d × 303, %d × 422 and one 429", share.CommentBurst+1, codes, meal.MaxLinkComments, share.CommentBurst-meal.MaxLinkComments)
	}
	resp := anon.PostForm(mealPath(w.commenting, other)+"/comments", url.Values{"text": {"x"}})
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("over the allowance = %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// TestNewCommentCount: /shares counts the comments the owner has not
// looked at, whichever meal they are on; a look at the link's comments
// clears the count, also of comments the owner deleted first, and a
// comment written after the look is new again.
func TestNewCommentCount(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	anon := w.app.Client()
	post := func(text string) {
		t.Helper()
		if resp := anon.PostForm(mealPath(w.commenting, w.inRange)+"/comments", url.Values{"text": {text}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("comment = %d", resp.StatusCode)
		}
	}
	count := func() string {
		t.Helper()
		return strings.TrimSpace(w.owner.Get("/shares").Doc().Find("#share-" + w.commenting[:8] + " a.new-comments").Text())
	}
	post("one")
	post("two")
	post("three")
	if got := count(); got != "3 new comments" {
		t.Errorf("/shares says %q, want 3 new comments", got)
	}
	del := w.owner.Get("/meals/"+w.inRange.Date+"/"+w.inRange.ID).Doc().Find("#comments form").First().AttrOr("action", "")
	if resp := w.owner.PostForm(del, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete = %d", resp.StatusCode)
	}
	page := w.owner.Get("/shares/" + w.commenting + "/comments").Doc()
	if n := page.Find("li.comment.new").Length(); n != 2 {
		t.Errorf("the comments page marks %d new, want the 2 left", n)
	}
	if got := count(); got != "" {
		t.Errorf("after the look /shares says %q, want no new comments", got)
	}
	if n := w.owner.Get("/shares/" + w.commenting + "/comments").Doc().Find("li.comment.new").Length(); n != 0 {
		t.Errorf("a second look marks %d new, want 0", n)
	}
	w.app.Clock.Advance(time.Second)
	post("four")
	if got := count(); got != "1 new comment" {
		t.Errorf("after one more /shares says %q, want 1 new comment", got)
	}
}

// TestOneLinkCannotSilenceAnother: a link that left the most comments it
// may on a meal does not stop another link's recipient, who is told
// nothing of the first link's comments; each link's share is its own.
func TestOneLinkCannotSilenceAnother(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	app := w.app
	second := createShare(t, w.owner, shareForm("label", "Coach Lee", "comments", "1"))
	anon := app.Client()
	for i := range meal.MaxLinkComments + 1 {
		app.Clock.Advance(share.CommentEvery)
		anon.PostForm(mealPath(w.commenting, w.inRange)+"/comments", url.Values{"text": {fmt.Sprint("first link ", i)}})
	}
	page := anon.Get(mealPath(second, w.inRange))
	if page.Doc().Find("form.comment-form").Length() != 1 || strings.Contains(page.Body, "first link") || strings.Contains(page.Text("main"), "most") {
		t.Fatalf("the second link's page after the first filled its share: form %d, %q", page.Doc().Find("form.comment-form").Length(), page.Text("#comments"))
	}
	for i := range meal.MaxLinkComments {
		app.Clock.Advance(share.CommentEvery)
		if resp := anon.PostForm(mealPath(second, w.inRange)+"/comments", url.Values{"text": {fmt.Sprint("second link ", i)}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("second link's comment %d = %d %q, want 303", i+1, resp.StatusCode, resp.Text("#text-err"))
		}
	}
	m, err := app.Meals.Get(context.Background(), w.inRange.UserID, mustDate(t, w.inRange.Date), w.inRange.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := len(m.CommentsFrom(share.ID(w.commenting))), len(m.CommentsFrom(share.ID(second))); a != meal.MaxLinkComments || b != meal.MaxLinkComments {
		t.Errorf("comments stored: %d and %d, want %d from each link", a, b, meal.MaxLinkComments)
	}
}
