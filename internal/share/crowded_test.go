package share_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/share"
)

// links counts the owner's links, read from the table.
func links(t *testing.T, app *apptest.App) int {
	t.Helper()
	all, err := app.Shares.ListByOwner(context.Background(), localenv.Subject(ownerEmail))
	if err != nil {
		t.Fatal(err)
	}
	return len(all)
}

// crowdedRefusal fails the test unless resp refuses a link taking
// comments over crowded days: 422, the form's comments message saying
// which days and naming names (and nothing else among labels), nothing
// written (n links before).
func crowdedRefusal(t *testing.T, app *apptest.App, resp *apptest.Response, n int, days string, names ...string) {
	t.Helper()
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("link over crowded days = %d, want 422; %s", resp.StatusCode, resp.Text("main"))
	}
	want := fmt.Sprintf("On %s, %d links take comments already: %s. A day may have at most %d", days, meal.MaxCommentLinks, strings.Join(names, ", "), meal.MaxCommentLinks)
	if got := resp.Text("#comments-err"); !strings.HasPrefix(got, want) {
		t.Errorf("message = %q, want it to start %q", got, want)
	}
	if got := links(t, app); got != n {
		t.Errorf("%d links after the refusal, want %d", got, n)
	}
}

// TestCommentLinksPerDay: a day may be covered by at most
// meal.MaxCommentLinks links that take comments; a link taking comments
// over a day that has them already is refused when it is made, to the
// owner, naming those links and the days. Links without comments, and
// expired links that left none, do not count; a link gone (revoked) that
// left a comment on a meal counts on that meal's day until the comment is
// deleted.
func TestCommentLinksPerDay(t *testing.T) {
	t.Parallel()
	if meal.MaxCommentLinks != 4 {
		t.Fatalf("the test's links are laid out for 4 links a day, not %d", meal.MaxCommentLinks)
	}
	app := apptest.New(t)
	owner := signUp(t, app, ownerEmail, ownerName)
	on := func(label, from, to string, kv ...string) url.Values {
		return shareForm(append([]string{"label", label, "from", from, "to", to, "comments", "1"}, kv...)...)
	}
	createShare(t, owner, on("Dr. A", "2026-09-01", "2026-09-07"))
	createShare(t, owner, on("Coach B", "2026-09-02", "2026-09-04"))
	createShare(t, owner, shareForm("label", "no comments", "from", "2026-09-01", "to", "2026-09-30"))
	createShare(t, owner, on("Expiring", "2026-09-01", "2026-09-30", "expiry", "7"))
	createShare(t, owner, on("Dietitian D", "2026-09-03", "2026-09-10"))
	// 3 and 4 Sep have four each; 5 Sep three.
	crowdedRefusal(t, app, owner.PostForm("/shares", on("Late E", "2026-09-03", "2026-09-05")), 5, "3 Sep – 4 Sep 2026",
		"“Coach B”", "“Dietitian D”", "“Dr. A”", "“Expiring”")
	if resp := owner.PostForm("/shares", shareForm("label", "Late E", "from", "2026-09-03", "to", "2026-09-05")); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a link without comments over full days = %d, want 303", resp.StatusCode)
	}
	// Expired (it left no comment), the link counts no more.
	app.Clock.Advance(8 * 24 * time.Hour)
	createShare(t, owner, on("Late E", "2026-09-03", "2026-09-05"))

	// A link gone (revoked) after commenting on the meal of 20 Sep fills
	// a place on that day until the owner deletes its comment.
	lunch := addMeal(t, app, owner, ownerEmail, "2026-09-20", "12:30", "lunch", nil)
	gone := createShare(t, owner, on("Coach G", "2026-09-20", "2026-09-21"))
	if resp := app.Client().PostForm(mealPath(gone, lunch)+"/comments", url.Values{"text": {"Less salt?"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("comment = %d; %s", resp.StatusCode, resp.Text("main"))
	}
	if resp := owner.PostForm("/shares/"+gone+"/revoke", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke = %d", resp.StatusCode)
	}
	for _, l := range []string{"H1", "H2", "H3"} {
		createShare(t, owner, on(l, "2026-09-20", "2026-09-21"))
	}
	n := links(t, app)
	crowdedRefusal(t, app, owner.PostForm("/shares", on("H4", "2026-09-20", "2026-09-21")), n, "20 Sep 2026",
		"“Coach G” (no longer working)", "“H1”", "“H2”", "“H3”")
	createShare(t, owner, on("H4", "2026-09-21", "2026-09-21")) // no meal there holds the gone link's comment
	m, err := app.Meals.Get(context.Background(), lunch.UserID, mustDate(t, lunch.Date), lunch.ID)
	if err != nil || len(m.CommentsFrom(share.ID(gone))) != 1 {
		t.Fatalf("meal = %+v, %v; want the gone link's comment", m, err)
	}
	for id := range m.Comments {
		if resp := owner.PostForm("/meals/"+lunch.Date+"/"+lunch.ID+"/comments/"+id+"/delete", nil); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("delete comment = %d", resp.StatusCode)
		}
	}
	createShare(t, owner, on("H5", "2026-09-20", "2026-09-20"))
}
