package meal_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
)

const idemKey = "k3y-of-the-outbox_0123456789"

func TestValidIdemKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key string
		ok  bool
	}{
		{strings.Repeat("a", 16), true},
		{strings.Repeat("Z", 64), true},
		{"0123456789abcdef-_ABCDEF", true},
		{strings.Repeat("a", 15), false},
		{strings.Repeat("a", 65), false},
		{"0123456789abcdef ", false},
		{"0123456789abcdef/", false},
		{"0123456789abcdef#", false},
		{"0123456789abcdefé", false},
		{"", false},
	} {
		if err := meal.ValidIdemKey(tc.key); (err == nil) != tc.ok {
			t.Errorf("ValidIdemKey(%q) = %v, want ok %v", tc.key, err, tc.ok)
		}
	}
}

// claims returns the sort keys of every claim in owner's partition, read
// straight from the table.
func claims(t *testing.T, app *apptest.App, email string) []string {
	t.Helper()
	out, err := app.Env.DynamoDB.Query(context.Background(), &dynamodb.QueryInput{
		TableName:              aws.String(app.Tables.Meals.Name),
		KeyConditionExpression: aws.String("user_id = :u AND begins_with(sk, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":u": &types.AttributeValueMemberS{Value: localenv.Subject(email)},
			":p": &types.AttributeValueMemberS{Value: meal.ClaimPrefix},
		},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	var sks []string
	for _, it := range out.Items {
		sks = append(sks, it["sk"].(*types.AttributeValueMemberS).Value)
	}
	return sks
}

// TestBadIdemKeyRefused: a key outside the rule is a 400 saying what is
// wrong, and nothing is written: no meal, no photo, no claim.
func TestBadIdemKeyRefused(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	for _, k := range []string{"short", strings.Repeat("x", 65), "has spaces in it, sixteen+", "slash/slash/slash/slash"} {
		resp := upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg"), "idem", k)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(resp.Text("main"), "16 to 64 characters of A-Z, a-z, 0-9, - and _") {
			t.Errorf("idem %q: %d %q, want 400 naming the rule", k, resp.StatusCode, resp.Text("main"))
		}
	}
	if n := len(allMeals(t, app, admin)); n != 0 {
		t.Errorf("%d meals stored for refused keys", n)
	}
	if objs := objects(t, app); len(objs) != 0 {
		t.Errorf("objects %v stored for refused keys", objs)
	}
	if cl := claims(t, app, admin); len(cl) != 0 {
		t.Errorf("claims %v stored for refused keys", cl)
	}
}

// objectState is every photo object's key and bytes.
func objectState(t *testing.T, app *apptest.App) map[string]string {
	t.Helper()
	st := map[string]string{}
	for _, k := range objects(t, app) {
		st[k] = string(object(t, app, k))
	}
	return st
}

// TestRepeatedKeyAfterLostAnswer: the outbox sends a meal, the answer is
// lost, it sends it again (as a form, and with the page script's
// header): the repeat answers with the first meal, and the first meal's
// photo is untouched. The claim's own write, its answer lost and sent
// again by the SDK, is no repeat.
func TestRepeatedKeyAfterLostAnswer(t *testing.T) {
	t.Parallel()
	app, c, f := faulty(t)
	f.LoseAnswerOnce("PutItem", app.Tables.Meals.Name) // the claim's
	first := upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg"), "idem", idemKey, "time", "07:15", "notes", "porridge")
	if first.StatusCode != http.StatusSeeOther {
		t.Fatalf("first = %d; %s", first.StatusCode, first.Text("main"))
	}
	ms := allMeals(t, app, admin)
	if len(ms) != 1 || !ms[0].HasPhoto() || ms[0].Time != "07:15:00" {
		t.Fatalf("meals = %+v, want one at 07:15 with a photo", ms)
	}
	if want := "/meals?month=2026-09#meal-" + ms[0].ID; first.Location() != want {
		t.Errorf("first location = %q, want %q", first.Location(), want)
	}
	before := objectState(t, app)

	// Sent again, as a form and as the page script sends it.
	again := upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg"), "idem", idemKey, "time", "07:15", "notes", "porridge")
	if again.StatusCode != http.StatusSeeOther || again.Location() != first.Location() {
		t.Errorf("repeat = %d to %q, want 303 to the first meal %q", again.StatusCode, again.Location(), first.Location())
	}
	scripted := c.Do(scriptedUpload(t, app, "1", apptest.Photo(t, "small.jpg"), "idem", idemKey, "time", "07:15", "notes", "porridge"))
	var out struct{ Location string }
	if err := json.Unmarshal([]byte(scripted.Body), &out); err != nil || scripted.StatusCode != http.StatusOK || out.Location != first.Location() {
		t.Errorf("scripted repeat = %d %q, want 200 {location: %q}", scripted.StatusCode, scripted.Body, first.Location())
	}
	if ms := allMeals(t, app, admin); len(ms) != 1 {
		t.Errorf("%d meals after the repeats, want 1", len(ms))
	}
	if after := objectState(t, app); !equalState(before, after) {
		t.Errorf("photo objects changed by a repeat:\nbefore %v\nafter  %v", objectKeys(before), objectKeys(after))
	}
	if cl := claims(t, app, admin); len(cl) != 1 || cl[0] != meal.ClaimPrefix+idemKey {
		t.Errorf("claims = %v, want the one key's", cl)
	}
	// Another key is another meal.
	if resp := c.PostForm("/meals", mealForm("idem", idemKey+"-2")); resp.StatusCode != http.StatusSeeOther || resp.Location() == first.Location() {
		t.Errorf("another key = %d to %q, want a new meal", resp.StatusCode, resp.Location())
	}
	if n := len(allMeals(t, app, admin)); n != 2 {
		t.Errorf("%d meals after another key, want 2", n)
	}
}

func equalState(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func objectKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TestConcurrentKeyCreatesOneMeal: two tabs send the same queued meal at
// once. The second finds the first at work (held at its photo upload,
// after its claim), waits, and answers 409 "already being saved"; the
// first saves; a retry then answers with the first meal. One meal, the
// first's photo.
func TestConcurrentKeyCreatesOneMeal(t *testing.T) {
	t.Parallel()
	app, c, f := faulty(t)
	held, release := f.Hold("PutObject", "test-photos")
	defer release()
	firstDone := make(chan *apptest.Response, 1)
	go func() {
		firstDone <- upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg"), "idem", idemKey)
	}()
	<-held
	second := upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg"), "idem", idemKey)
	if second.StatusCode != http.StatusConflict || !strings.Contains(second.Text("main"), "already being saved") {
		t.Errorf("second while the first is at work = %d %q, want 409 already being saved", second.StatusCode, second.Text("main"))
	}
	release()
	first := <-firstDone
	if first.StatusCode != http.StatusSeeOther {
		t.Fatalf("first = %d; %s", first.StatusCode, first.Text("main"))
	}
	retry := upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg"), "idem", idemKey)
	if retry.StatusCode != http.StatusSeeOther || retry.Location() != first.Location() {
		t.Errorf("retry = %d to %q, want the first meal %q", retry.StatusCode, retry.Location(), first.Location())
	}
	ms := allMeals(t, app, admin)
	if len(ms) != 1 || ms[0].PhotoW != 640 {
		t.Fatalf("meals = %+v, want one with the first's photo (small.jpg, 640 wide)", ms)
	}
	keys := ms[0].PhotoKeys()
	sort.Strings(keys)
	if got := objects(t, app); strings.Join(got, ",") != strings.Join(keys, ",") {
		t.Errorf("objects = %v, want only the meal's %v", got, keys)
	}
}

// TestConcurrentKeyRace: many sends of one key at once, none held: one
// meal, and every answer is that meal or "already being saved".
func TestConcurrentKeyRace(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	const n = 6
	var wg sync.WaitGroup
	answers := make([]*apptest.Response, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = c.PostForm("/meals", mealForm("idem", idemKey, "notes", "race"))
		}()
	}
	wg.Wait()
	ms := allMeals(t, app, admin)
	if len(ms) != 1 {
		t.Fatalf("%d meals from %d sends of one key, want 1", len(ms), n)
	}
	want := "/meals?month=2026-09#meal-" + ms[0].ID
	for i, a := range answers {
		if !(a.StatusCode == http.StatusSeeOther && a.Location() == want) && a.StatusCode != http.StatusConflict {
			t.Errorf("send %d = %d to %q, want 303 to %q or 409", i, a.StatusCode, a.Location(), want)
		}
	}
}

// TestStaleClaimTakenOver: an attempt that claimed a key and died before
// writing its meal (a crash) holds the key only for meal.ClaimLease; a
// repeat after it creates the meal, at the sort key the claim chose.
func TestStaleClaimTakenOver(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	owner := localenv.Subject(admin)
	dead := meal.NewClaim(owner, idemKey, "2026-09-01#123000-abcdef", "", app.Clock.Now())
	if _, err := app.Meals.Claim(context.Background(), dead); err != nil {
		t.Fatal(err)
	}
	if resp := c.PostForm("/meals", mealForm("idem", idemKey)); resp.StatusCode != http.StatusConflict {
		t.Errorf("repeat within the lease = %d, want 409", resp.StatusCode)
	}
	app.Clock.Advance(meal.ClaimLease + time.Second)
	resp := c.PostForm("/meals", mealForm("idem", idemKey, "time", "18:00"))
	if resp.StatusCode != http.StatusSeeOther || resp.Location() != "/meals?month=2026-09#meal-123000-abcdef" {
		t.Fatalf("repeat past the lease = %d to %q, want the claimed meal", resp.StatusCode, resp.Location())
	}
	ms := allMeals(t, app, admin)
	if len(ms) != 1 || ms[0].SK != "2026-09-01#123000-abcdef" || ms[0].Time != "12:30:00" {
		t.Errorf("meals = %+v, want one at the claimed key", ms)
	}
	cl, err := app.Meals.GetClaim(context.Background(), owner, idemKey)
	if err != nil || !cl.Done || cl.Holder == dead.Holder {
		t.Errorf("claim = %+v, %v: want taken over and done", cl, err)
	}
}

// TestFailedCreateReleasesClaim: a create refused before its row (the
// photo upload failed) frees its key, so the outbox's next try goes ahead
// at once rather than waiting out the lease.
func TestFailedCreateReleasesClaim(t *testing.T) {
	t.Parallel()
	app, c, f := faulty(t)
	f.FailOnce("PutObject", "test-photos", 0)
	if resp := upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg"), "idem", idemKey); resp.StatusCode < 500 {
		t.Fatalf("create with a failing upload = %d, want 5xx", resp.StatusCode)
	}
	if cl := claims(t, app, admin); len(cl) != 0 {
		t.Errorf("claims after a failed create = %v, want none", cl)
	}
	if resp := upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg"), "idem", idemKey); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("retry = %d, want 303", resp.StatusCode)
	}
	if n := len(allMeals(t, app, admin)); n != 1 {
		t.Errorf("%d meals, want 1", n)
	}
}

// TestClaimsAreNoMeals: a claim in the partition is invisible to the month,
// window, neighbour, search, export and count reads, to the orphan check;
// account deletion removes it.
func TestClaimsAreNoMeals(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	owner := localenv.Subject(admin)
	ctx := context.Background()
	if resp := c.PostForm("/meals", mealForm("idem", idemKey)); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("create = %d; %s", resp.StatusCode, resp.Text("main"))
	}
	if cl := claims(t, app, admin); len(cl) != 1 {
		t.Fatalf("claims = %v, want 1", cl)
	}
	ms := allMeals(t, app, admin)
	if len(ms) != 1 {
		t.Fatalf("All = %d items, want the 1 meal", len(ms))
	}
	last := date(t, "2026-09-01")
	lo, hi, _ := meal.DayRange(last.AddDays(-1), last.AddDays(-1))
	if _, err := app.Meals.Beyond(ctx, owner, lo, hi, false); err != nil {
		t.Errorf("Beyond the day before = %v, want the meal", err)
	}
	lo, hi, _ = meal.DayRange(last, last)
	if m, err := app.Meals.Beyond(ctx, owner, lo, hi, false); err == nil {
		t.Errorf("Beyond the last day = %+v, want ErrNotFound (a claim is no meal)", m)
	}
	page, err := app.Meals.Search(ctx, owner, "", func(*meal.Meal) bool { return true }, func(context.Context, int) error { return nil })
	if err != nil || len(page.Meals) != 1 || page.Read != 1 {
		t.Errorf("Search = %d meals, %d read, %v: want 1 and 1", len(page.Meals), page.Read, err)
	}
	free := func(context.Context, int) error { return nil }
	if n, err := app.Meals.CountByOwner(ctx, free); err != nil || len(n) != 1 || n[owner] != 1 {
		t.Errorf("CountByOwner = %v, %v, want 1 meal of %s", n, err, owner)
	}
	if all, err := app.Meals.AllPaced(ctx, owner, free); err != nil || len(all) != 1 {
		t.Errorf("AllPaced = %d meals, %v, want 1", len(all), err)
	}
	seen := 0
	if err := app.Meals.ScanPhotos(ctx, free, func(m *meal.Meal) error { seen++; return nil }); err != nil || seen != 1 {
		t.Errorf("ScanPhotos saw %d, %v, want 1", seen, err)
	}
	var export struct{ Meals []json.RawMessage }
	if err := json.Unmarshal([]byte(c.Get("/account/export.json").Body), &export); err != nil || len(export.Meals) != 1 {
		t.Errorf("export = %d meals, %v, want 1", len(export.Meals), err)
	}
	resp := c.PostForm("/account/delete", url.Values{"email": {admin}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete account = %d; %s", resp.StatusCode, resp.Text("main"))
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := app.Deletions.Wait(wctx, owner); err != nil {
		t.Fatalf("deletion still running: %v", err)
	}
	if cl := claims(t, app, admin); len(cl) != 0 {
		t.Errorf("claims after account deletion = %v, want none", cl)
	}
}

// TestLateRowOfDeadAttempt: a claim taken over from an attempt held for
// dead, whose row turns up after all while the new attempt uploads: the
// new attempt's row write is refused (the same sort key), it answers with
// that meal, and the photo keys the row names are not deleted.
func TestLateRowOfDeadAttempt(t *testing.T) {
	t.Parallel()
	app, c, f := faulty(t)
	owner := localenv.Subject(admin)
	ctx := context.Background()
	dead := meal.NewClaim(owner, idemKey, "2026-09-01#123000-abcdef", "", app.Clock.Now())
	if _, err := app.Meals.Claim(ctx, dead); err != nil {
		t.Fatal(err)
	}
	app.Clock.Advance(meal.ClaimLease + time.Second)
	held, release := f.Hold("PutObject", "test-photos")
	defer release()
	done := make(chan *apptest.Response, 1)
	go func() { done <- upload(c, "/meals", "small.jpg", apptest.Photo(t, "small.jpg"), "idem", idemKey) }()
	<-held
	late := &meal.Meal{UserID: owner, Date: "2026-09-01", Time: "12:30:00", ID: "123000-abcdef", Kind: meal.Lunch, Notes: "the dead attempt's"}
	late.PhotoV, late.PhotoW, late.PhotoH, late.ThumbW, late.ThumbH = 1, 640, 480, 320, 240
	if err := app.Meals.Create(ctx, late); err != nil {
		t.Fatal(err)
	}
	release()
	resp := <-done
	if resp.StatusCode != http.StatusSeeOther || resp.Location() != "/meals?month=2026-09#meal-123000-abcdef" {
		t.Errorf("take-over meeting the late row = %d to %q, want that meal", resp.StatusCode, resp.Location())
	}
	ms := allMeals(t, app, admin)
	if len(ms) != 1 || ms[0].Notes != "the dead attempt's" {
		t.Fatalf("meals = %+v, want the late row alone", ms)
	}
	keys := late.PhotoKeys()
	sort.Strings(keys)
	if got := objects(t, app); strings.Join(got, ",") != strings.Join(keys, ",") {
		t.Errorf("objects = %v, want the late row's %v kept", got, keys)
	}
}
