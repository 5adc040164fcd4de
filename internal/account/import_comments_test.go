package account_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"ndiro/internal/account"
	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/share"
)

// commentedMeal is a meal of 2026-09-01 with one comment through the link
// whose ID is shareID, labelled from.
func commentedMeal(shareID, from, text string) entry {
	return hostileMeals(`{"id":"123000-aaaaaa","date":"2026-09-01","time":"12:30:00","kind":"lunch","notes":"soup",` +
		`"comments":[{"id":"1790000000000-1a2b3c4d","share_id":"` + shareID + `","from":"` + from + `","text":"` + text + `","at":"2026-09-02T10:00:00Z"}]}`)
}

// TestImportedCommentsAreNoLinksOwn: a comment imported with the share_id
// of a link the owner has now shows to the owner with the label it came
// with, and neither on that link's recipient page nor on the owner's page
// of that link's comments.
func TestImportedCommentsAreNoLinksOwn(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	c.SignIn(adminEmail)
	tok := c.CreateShare(url.Values{"label": {"Dr. New"}, "from": {"2026-09-01"}, "to": {"2026-09-14"}, "expiry": {"never"}, "comments": {"1"}})
	importAndWait(t, app, c, buildZip(t, commentedMeal(share.ID(tok), "Dr. Old", "imported words")))
	ms, err := app.Meals.All(t.Context(), localenv.Subject(adminEmail))
	if err != nil || len(ms) != 1 {
		t.Fatalf("meals = %d, %v; want the imported one", len(ms), err)
	}
	m := ms[0]

	owner := c.Get(m.DetailURL())
	if got := owner.Text(".comment"); !strings.Contains(got, "imported words") || !strings.Contains(got, "From the link for Dr. Old") {
		t.Errorf("the owner's meal page shows the comment as %q; want its text from Dr. Old", got)
	}
	recipient := app.Client().Get("/s/" + tok + "/meals/" + m.Date + "/" + m.ID)
	if recipient.StatusCode != http.StatusOK || strings.Contains(recipient.Body, "imported words") {
		t.Errorf("the link's recipient page = %d, showing the imported comment: %v; want 200 without it", recipient.StatusCode, strings.Contains(recipient.Body, "imported words"))
	}
	if page := c.Get("/shares/" + tok + "/comments"); strings.Contains(page.Body, "imported words") {
		t.Errorf("the owner's page of the link's comments lists the imported comment")
	}
}

// TestImportRefusesCommentsNdiroDoesNotWrite: a comment whose share_id is
// not a link ID as ndiro writes them (300,000 characters, upper case, too
// short) or whose text is longer than a recipient may write is a 422
// naming the comment and the field, and nothing is imported.
func TestImportRefusesCommentsNdiroDoesNotWrite(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	c.SignIn(adminEmail)
	uid := localenv.Subject(adminEmail)
	for _, tc := range []struct {
		name, shareID, text, want string
	}{
		{"a share_id of 300,000 characters", strings.Repeat("a", 300_000), "hi", "comment 1's share_id is not a link's ID as ndiro writes them"},
		{"a share_id in upper case", "0123456789ABCDEF", "hi", "comment 1's share_id"},
		{"a share_id too short", "0123456789abcde", "hi", "comment 1's share_id"},
		{"no share_id", "", "hi", "comment 1's share_id"},
		{"a text past 2,000 characters", "0123456789abcdef", strings.Repeat("x", 2001), "comment 1 has 2001 characters; at most 2000 are taken"},
	} {
		app.Clock.Advance(account.ImportEvery)
		resp := postImport(c, buildZip(t, commentedMeal(tc.shareID, "Dr. Old", tc.text)))
		if msg := resp.Text("main"); resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: POST = %d %.300q; want 422 saying %q", tc.name, resp.StatusCode, msg, tc.want)
		}
		if ms, err := app.Meals.All(t.Context(), uid); err != nil || len(ms) != 0 {
			t.Errorf("%s: meals = %d, %v; want none", tc.name, len(ms), err)
		}
		noPending(t, app, uid, "the refused zip's parts deleted")
	}
}
