package account_test

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/go-cmp/cmp"

	"ndiro/internal/account"
	"ndiro/internal/apptest"
	"ndiro/internal/invite"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/share"
	"ndiro/internal/store/cloud"
	"ndiro/internal/user"
)

const (
	adminEmail  = "admin@example.com"
	victimEmail = "victim@example.com"
)

// world is an app with two accounts holding data of every kind: the
// admin, who stays, and the victim, an admin too (so they have invites of
// their own), whose account is deleted.
type world struct {
	app            *apptest.App
	faults         *apptest.Faults
	admin, victim  *apptest.Client
	adminID, id    string
	victimShare    string
	adminShare     string
	claimed, owned string // the invite the victim signed up with, one they made
}

func newWorld(t *testing.T, dynamoOpts ...func(*dynamodb.Options)) *world {
	t.Helper()
	f := &apptest.Faults{}
	app := apptest.New(t, apptest.Options{Faults: f, DynamoOptions: dynamoOpts})
	app.Deletions.SetRetry(2, time.Millisecond)
	w := &world{app: app, faults: f, adminID: localenv.Subject(adminEmail), id: localenv.Subject(victimEmail)}
	w.admin = app.Client()
	w.admin.SignIn(adminEmail)
	w.claimed = w.admin.CreateInvite(url.Values{"role": {"admin"}})
	w.victim = app.Client()
	if resp := w.victim.SignInVia("/login?invite="+w.claimed, victimEmail); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("victim sign-up = %d", resp.StatusCode)
	}
	w.owned = w.victim.CreateInvite(url.Values{"role": {"owner"}})
	// The victim is signed in on a second device too: its session's key
	// is the sessions step's to delete.
	app.Client().SignIn(victimEmail)
	for i, c := range []*apptest.Client{w.admin, w.victim, w.victim, w.victim} {
		form := url.Values{"date": {"2026-09-0" + fmt.Sprint(i+1)}, "time": {"12:30"}, "kind": {"lunch"}, "notes": {"meal"}}
		if resp := c.PostMultipart("/meals", form, apptest.File{Field: "photo", Name: "p.jpg", Body: apptest.JPEG(t, 64, 48, color.RGBA{R: uint8(40 * i), G: 90, B: 20})}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("add meal = %d", resp.StatusCode)
		}
	}
	// 30 more of the victim's meals, so that deleting them takes two
	// BatchWriteItem requests.
	var reqs []types.WriteRequest
	for i := range 30 {
		id := fmt.Sprintf("0800%02d-%06x", i, i)
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
			"user_id": &types.AttributeValueMemberS{Value: w.id}, "sk": &types.AttributeValueMemberS{Value: "2026-08-01#" + id},
			"meal_id": &types.AttributeValueMemberS{Value: id}, "date": &types.AttributeValueMemberS{Value: "2026-08-01"},
			"time": &types.AttributeValueMemberS{Value: "08:00:00"}, "kind": &types.AttributeValueMemberS{Value: "snack"},
			"version": &types.AttributeValueMemberN{Value: "1"},
		}}})
	}
	for len(reqs) > 0 {
		n := min(25, len(reqs))
		if _, err := app.Env.DynamoDB.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{app.Tables.Meals.Name: reqs[:n]}}); err != nil {
			t.Fatal(err)
		}
		reqs = reqs[n:]
	}
	share := url.Values{"label": {"Dr. Rossi"}, "from": {"2026-09-01"}, "to": {"2026-09-14"}, "expiry": {"never"}, "notes": {"1"}, "numbers": {"1"}}
	w.victimShare = w.victim.CreateShare(share)
	w.adminShare = w.admin.CreateShare(share)
	return w
}

// holdings counts what an account holds in every table and the bucket,
// through clients without the injected faults.
func (w *world) holdings(t *testing.T, id string) map[string]int {
	t.Helper()
	ctx := context.Background()
	db := localenv.NewDynamoClient(w.app.Env.DynamoEndpoint)
	s3c := localenv.NewS3Client(w.app.Env.S3Endpoint)
	meals, err := meal.NewStore(db, w.app.Tables.Meals.Name).All(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	shares, err := share.NewStore(db, w.app.Tables.Shares.Name, time.Now).ListByOwner(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	invites, err := invite.NewStore(cloud.NewItems(db), w.app.Tables.Invites.Seam()).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]int{"meals": len(meals), "shares": len(shares), "invites": 0, "objects": 0}
	for _, inv := range invites {
		if inv.ClaimedBy == id || (inv.CreatedBy == id && inv.ClaimedBy == "") {
			h["invites"]++
		}
	}
	for _, prefix := range []string{photo.UserPrefix(id), photo.PendingPrefix(id)} {
		out, err := s3c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("test-photos"), Prefix: aws.String(prefix)})
		if err != nil {
			t.Fatal(err)
		}
		h["objects"] += len(out.Contents)
	}
	if _, err := user.NewStore(db, w.app.Tables.Users.Name, time.Now).Get(ctx, id); err == nil {
		h["user"] = 1
	}
	// Session key items naming the account (listed only when there are
	// some: a finished deletion's holdings have none).
	out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(w.app.Tables.Users.Name)})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range out.Items {
		k, _ := it["user_id"].(*types.AttributeValueMemberS)
		uid, _ := it["uid"].(*types.AttributeValueMemberS)
		if k != nil && uid != nil && strings.HasPrefix(k.Value, user.ReservedPrefix+"session#") && uid.Value == id {
			h["sessions"]++
		}
	}
	return h
}

// deleteVictim asks for the victim's deletion as they would, and waits for
// the background run to end.
func (w *world) deleteVictim(t *testing.T) *apptest.Response {
	t.Helper()
	resp := w.victim.PostForm("/account/delete", url.Values{"email": {victimEmail}})
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Location(), "/account/deleted?t=") {
		t.Fatalf("POST /account/delete = %d %q, want 303 to /account/deleted", resp.StatusCode, resp.Location())
	}
	w.wait(t)
	return resp
}

func (w *world) wait(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.app.Deletions.Wait(ctx, w.id); err != nil {
		t.Fatalf("deletion still running: %v", err)
	}
}

// TestDeleteAccount: the whole sequence, and nothing of the admin's data
// touched.
func TestDeleteAccount(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	before := w.holdings(t, w.id)
	if d := cmp.Diff(map[string]int{"meals": 33, "objects": 6, "shares": 1, "invites": 2, "user": 1, "sessions": 2}, before); d != "" {
		t.Fatalf("victim's holdings before (-want +got):\n%s", d)
	}
	adminBefore := w.holdings(t, w.adminID)
	resp := w.deleteVictim(t)
	if d := cmp.Diff(map[string]int{"meals": 0, "objects": 0, "shares": 0, "invites": 0}, w.holdings(t, w.id)); d != "" {
		t.Errorf("victim's holdings after deletion (-want +got):\n%s", d)
	}
	if d := cmp.Diff(adminBefore, w.holdings(t, w.adminID)); d != "" {
		t.Errorf("the admin's holdings changed (-before +after):\n%s", d)
	}
	// The page after the deletion says it is gone; the session is over.
	page := w.victim.Get(resp.Location())
	if state, _ := page.Doc().Find("#deletion").Attr("data-state"); state != "gone" || page.Text("h1") != "Your account is deleted" {
		t.Errorf("page after deletion: state %q, heading %q; want gone", state, page.Text("h1"))
	}
	if r := w.victim.Get("/meals"); r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Location(), "/login") {
		t.Errorf("GET /meals after deletion = %d %q, want 303 to sign-in", r.StatusCode, r.Location())
	}
	// The admin's own share still works; the victim's is gone.
	if r := w.app.Client().Get("/s/" + w.adminShare); r.StatusCode != http.StatusOK {
		t.Errorf("the admin's share = %d, want 200", r.StatusCode)
	}
	if r := w.app.Client().Get("/s/" + w.victimShare); r.StatusCode != http.StatusNotFound {
		t.Errorf("the deleted account's share = %d, want 404", r.StatusCode)
	}
}

// TestSignUpAgainAfterDeletion: once the deletion has finished, the same
// person invited again signs up with the same ID, and their writes are
// admitted (the write gate closed by the deletion is open again).
func TestSignUpAgainAfterDeletion(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.deleteVictim(t)
	if h := w.holdings(t, w.id); h["user"] != 0 {
		t.Fatalf("users row still there after the deletion: %v", h)
	}
	again := w.admin.CreateInvite(url.Values{"role": {"owner"}})
	c := w.app.Client()
	if resp := c.SignInVia("/login?invite="+again, victimEmail); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-up again = %d, want 303", resp.StatusCode)
	}
	form := url.Values{"date": {"2026-10-01"}, "time": {"12:30"}, "kind": {"lunch"}, "notes": {"back"}}
	if resp := c.PostMultipart("/meals", form, apptest.File{Field: "photo", Name: "p.jpg", Body: apptest.JPEG(t, 64, 48, color.RGBA{G: 200})}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("POST /meals after signing up again = %d, want 303", resp.StatusCode)
	}
	if got := w.holdings(t, w.id)["meals"]; got != 1 {
		t.Errorf("meals of the new account = %d, want 1", got)
	}
}

// TestDeletionReadsAreConsistent: every Query and Scan the deletion makes
// to find what to delete is strongly consistent, so an item written just
// before the account was marked is not missed. The emulators are always
// consistent, so the test checks the requests the app sends.
func TestDeletionReadsAreConsistent(t *testing.T) {
	t.Parallel()
	var (
		mu        sync.Mutex
		recording bool
		reads     []string // "Op table consistent"
	)
	watch := func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("consistencyWatch",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					var read string
					switch p := in.Parameters.(type) {
					case *dynamodb.QueryInput:
						read = fmt.Sprint("Query ", aws.ToString(p.TableName), " ", aws.ToBool(p.ConsistentRead))
					case *dynamodb.ScanInput:
						read = fmt.Sprint("Scan ", aws.ToString(p.TableName), " ", aws.ToBool(p.ConsistentRead))
					}
					mu.Lock()
					if recording && read != "" {
						reads = append(reads, read)
					}
					mu.Unlock()
					return next.HandleInitialize(ctx, in)
				}), middleware.Before)
		})
	}
	w := newWorld(t, watch)
	mu.Lock()
	recording = true
	mu.Unlock()
	w.deleteVictim(t)
	mu.Lock()
	recording = false
	got := slices.Compact(slices.Sorted(slices.Values(reads)))
	mu.Unlock()
	want := []string{
		"Query " + w.app.Tables.Meals.Name + " true",
		"Scan " + w.app.Tables.Invites.Name + " true",
		"Scan " + w.app.Tables.Shares.Name + " true",
		"Scan " + w.app.Tables.Users.Name + " true", // the session keys
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("reads of the deletion (-want +got):\n%s", d)
	}
}

// TestDeletionFaults breaks each step in turn, mid-batch where a step has
// batches: the run stops at that step and the admin page says so; once the
// fault is gone, a resume (as start-up does) finishes the deletion.
func TestDeletionFaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		inject func(w *world)
		step   account.Step
		// left: what the failed run must have left of the victim's data.
		left map[string]int
		// admin: resume from the admin page rather than at start-up.
		admin bool
	}{
		{"listing photos fails", func(w *world) { w.faults.Fail("ListObjectsV2", "test-photos", 0) },
			account.StepPhotos, map[string]int{"meals": 33, "objects": 6, "shares": 1, "invites": 2, "user": 1, "sessions": 1}, false},
		{"a photo refused inside DeleteObjects", func(w *world) { w.faults.RefuseKey(".thumb.jpg") },
			account.StepPhotos, map[string]int{"meals": 33, "objects": 3, "shares": 1, "invites": 2, "user": 1, "sessions": 1}, true},
		{"second meals batch fails", func(w *world) { w.faults.Fail("BatchWriteItem", w.app.Tables.Meals.Name, 1) },
			account.StepMeals, map[string]int{"meals": 8, "objects": 0, "shares": 1, "invites": 2, "user": 1, "sessions": 1}, false},
		{"shares scan fails", func(w *world) { w.faults.Fail("Scan", w.app.Tables.Shares.Name, 0) },
			account.StepShares, map[string]int{"meals": 0, "objects": 0, "shares": 1, "invites": 2, "user": 1, "sessions": 1}, false},
		{"second invite delete fails", func(w *world) { w.faults.Fail("DeleteItem", w.app.Tables.Invites.Name, 1) },
			account.StepInvites, map[string]int{"meals": 0, "objects": 0, "shares": 0, "invites": 1, "user": 1, "sessions": 1}, true},
		// The second device's key; the victim's own went with its sign out.
		{"session keys delete fails", func(w *world) { w.faults.Fail("BatchWriteItem", w.app.Tables.Users.Name, 0) },
			account.StepSessions, map[string]int{"meals": 0, "objects": 0, "shares": 0, "invites": 0, "user": 1, "sessions": 1}, false},
		{"users row delete fails", func(w *world) { w.faults.Fail("DeleteItem", w.app.Tables.Users.Name, 0) },
			account.StepUser, map[string]int{"meals": 0, "objects": 0, "shares": 0, "invites": 0, "user": 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			adminBefore := w.holdings(t, w.adminID)
			tc.inject(w)
			resp := w.deleteVictim(t)

			u, err := w.app.Users.Get(context.Background(), w.id)
			if err != nil {
				t.Fatalf("users row after the failed run: %v", err)
			}
			if !u.Deleting() || u.DeletionStep != string(tc.step) || !strings.Contains(u.DeletionError, "injected") && !strings.Contains(u.DeletionError, "AccessDenied") {
				t.Errorf("users row: status %q step %q error %q; want deleting at %s with the error", u.Status, u.DeletionStep, u.DeletionError, tc.step)
			}
			if d := cmp.Diff(tc.left, w.holdings(t, w.id)); d != "" {
				t.Errorf("left after the failed run (-want +got):\n%s", d)
			}
			// The admin page lists the stopped deletion with its step and a
			// resume button.
			page := w.admin.Get("/admin/users").Doc()
			row := page.Find(`tr[data-user="` + w.id + `"]`)
			if got := strings.TrimSpace(row.Find(".step").Text()); got != string(tc.step) || row.Find(".stopped").Length() != 1 || page.Find("#stuck").Length() != 1 {
				t.Errorf("admin page row: step %q, stopped %d, notice %d; want %s, 1, 1", got, row.Find(".stopped").Length(), page.Find("#stuck").Length(), tc.step)
			}
			action, _ := row.Find(`form[action$="/resume"]`).Attr("action")
			if action == "" {
				t.Fatal("no resume button")
			}
			// While it is stopped, the page after the deletion says it is
			// under way.
			if state, _ := w.victim.Get(resp.Location()).Doc().Find("#deletion").Attr("data-state"); state != "deleting" {
				t.Errorf("page after deletion: state %q, want deleting", state)
			}

			w.faults.Clear()
			if tc.admin {
				if r := w.admin.PostForm(action, nil); r.StatusCode != http.StatusSeeOther {
					t.Fatalf("resume = %d; body %s", r.StatusCode, r.Body)
				}
			} else if n, err := w.app.Deletions.ResumeAll(context.Background()); err != nil || n != 1 {
				t.Fatalf("ResumeAll = %d, %v; want 1 resumed", n, err)
			}
			w.wait(t)
			if d := cmp.Diff(map[string]int{"meals": 0, "objects": 0, "shares": 0, "invites": 0}, w.holdings(t, w.id)); d != "" {
				t.Errorf("after the resume (-want +got):\n%s", d)
			}
			if d := cmp.Diff(adminBefore, w.holdings(t, w.adminID)); d != "" {
				t.Errorf("the admin's holdings changed (-before +after):\n%s", d)
			}
		})
	}
}

// TestUploadInFlightLeavesNothing: an upload that passed the guard before
// the account was marked finishes first, and the deletion removes what it
// wrote.
func TestUploadInFlightLeavesNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	held, release := w.faults.Hold("PutObject", "test-photos")
	defer release()
	uploaded := make(chan *apptest.Response, 1)
	go func() {
		form := url.Values{"date": {"2026-09-20"}, "time": {"08:00"}, "kind": {"breakfast"}}
		uploaded <- w.victim.PostMultipart("/meals", form, apptest.File{Field: "photo", Name: "late.jpg", Body: apptest.JPEG(t, 64, 48, color.RGBA{B: 200})})
	}()
	<-held // the upload's first object is on its way to S3
	resp := w.victim.PostForm("/account/delete", url.Values{"email": {victimEmail}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST /account/delete = %d", resp.StatusCode)
	}
	time.Sleep(50 * time.Millisecond) // the deletion is now waiting at the gate
	if !w.app.Deletions.Running(w.id) {
		t.Error("the deletion did not wait for the upload in flight")
	}
	if got := w.holdings(t, w.id)["meals"]; got != 33 {
		t.Errorf("the deletion went ahead with an upload in flight: %d meals left, want 33", got)
	}
	release()
	if r := <-uploaded; r.StatusCode != http.StatusSeeOther {
		t.Errorf("the upload in flight = %d, want it to finish (303)", r.StatusCode)
	}
	w.wait(t)
	if d := cmp.Diff(map[string]int{"meals": 0, "objects": 0, "shares": 0, "invites": 0}, w.holdings(t, w.id)); d != "" {
		t.Errorf("left after deletion (-want +got):\n%s", d)
	}
}

// TestDeletingAccountIsRefused: from the mark on, another session of the
// account, its photo URLs and its share links are all refused.
func TestDeletingAccountIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	other := w.app.Client() // the victim on a second device
	other.SignIn(victimEmail)
	meals, err := w.app.Meals.All(context.Background(), w.id)
	if err != nil {
		t.Fatal(err)
	}
	var thumb string
	for _, m := range meals {
		if m.HasPhoto() {
			thumb = m.ThumbURL()
		}
	}
	if r := other.Get(thumb); r.StatusCode != http.StatusOK {
		t.Fatalf("photo before deletion = %d", r.StatusCode)
	}
	sharePhoto := strings.Replace(thumb, "/photo/", "/s/"+w.victimShare+"/photo/", 1)
	if r := w.app.Client().Get(sharePhoto); r.StatusCode != http.StatusOK {
		t.Fatalf("shared photo before deletion = %d", r.StatusCode)
	}
	held, release := w.faults.Hold("ListObjectsV2", "test-photos")
	defer release()
	w.victim.PostForm("/account/delete", url.Values{"email": {victimEmail}})
	<-held // marked, and stopped at the photos step
	for _, tc := range []struct {
		name string
		c    *apptest.Client
		path string
		want int
	}{
		{"session", other, "/meals", http.StatusSeeOther},
		{"write", other, "/account", http.StatusSeeOther},
		{"photo", other, thumb, http.StatusSeeOther},
		{"share page", w.app.Client(), "/s/" + w.victimShare, http.StatusNotFound},
		{"share photo", w.app.Client(), sharePhoto, http.StatusNotFound},
	} {
		if r := tc.c.Get(tc.path); r.StatusCode != tc.want || (tc.want == http.StatusSeeOther && !strings.HasPrefix(r.Location(), "/login")) {
			t.Errorf("%s while deleting: GET %s = %d %q, want %d", tc.name, tc.path, r.StatusCode, r.Location(), tc.want)
		}
	}
	if resp := other.SignInVia("/login", victimEmail); resp.StatusCode != http.StatusForbidden {
		t.Errorf("signing in while deleting = %d, want 403", resp.StatusCode)
	}
	release()
	w.wait(t)
}

// TestDeleteNeedsTheEmail: a wrong or missing email deletes nothing, and
// an admin cannot delete their own account from the admin pages.
func TestDeleteNeedsTheEmail(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	page := w.victim.Get("/account/delete").Doc()
	if got := page.Find("#what .count").First().Text(); got != "33" {
		t.Errorf("confirmation page counts %q meals, want 33", got)
	}
	// What signing in again takes: an invite, unless ADMIN_EMAILS lists
	// the address.
	for _, tc := range []struct {
		c    *apptest.Client
		want string
	}{{w.victim, "signing in again needs a new invite"}, {w.admin, "signing in again starts a new, empty account"}} {
		items := tc.c.Get("/account/delete").Doc().Find("#what li")
		if got := items.Last().Text(); !strings.Contains(got, tc.want) {
			t.Errorf("the page says %q, want %q", got, tc.want)
		}
		// An address in ADMIN_EMAILS signed up without an invite.
		if got, listed := items.Eq(2).Text(), tc.c == w.admin; strings.Contains(got, "signed up with") == listed {
			t.Errorf("the invites item says %q (listed in ADMIN_EMAILS: %v)", got, listed)
		}
	}
	for _, typed := range []string{"", "someone@example.com", "victim@example"} {
		resp := w.victim.PostForm("/account/delete", url.Values{"email": {typed}})
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(resp.Text("#email-err"), "Nothing was deleted") {
			t.Errorf("email %q: %d %q, want 422 saying nothing was deleted", typed, resp.StatusCode, resp.Text("#email-err"))
		}
	}
	if r := w.admin.Get("/admin/users/" + url.PathEscape(w.adminID) + "/delete"); r.StatusCode != http.StatusForbidden {
		t.Errorf("admin deleting themselves = %d, want 403", r.StatusCode)
	}
	if r := w.admin.PostForm("/admin/users/"+url.PathEscape(w.adminID)+"/delete", url.Values{"email": {adminEmail}}); r.StatusCode != http.StatusForbidden {
		t.Errorf("admin deleting themselves (POST) = %d, want 403", r.StatusCode)
	}
	u, err := w.app.Users.Get(context.Background(), w.id)
	if err != nil || u.Status == user.StatusDeleting {
		t.Errorf("after refused confirmations: %+v, %v; want the account untouched", u, err)
	}
	// The admin deletes the victim, from the admin pages.
	resp := w.admin.PostForm("/admin/users/"+url.PathEscape(w.id)+"/delete", url.Values{"email": {victimEmail}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("admin delete = %d; body %s", resp.StatusCode, resp.Body)
	}
	w.wait(t)
	if d := cmp.Diff(map[string]int{"meals": 0, "objects": 0, "shares": 0, "invites": 0}, w.holdings(t, w.id)); d != "" {
		t.Errorf("after an admin's deletion (-want +got):\n%s", d)
	}
}

// TestDeletionStopsWithTheServer: Close (the server stopping) cancels a
// run in the middle of a step and waits for it; the users row still names
// the step, and the next start's ResumeAll finishes the deletion.
func TestDeletionStopsWithTheServer(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	held, release := w.faults.Hold("BatchWriteItem", w.app.Tables.Meals.Name)
	defer release()
	resp := w.victim.PostForm("/account/delete", url.Values{"email": {victimEmail}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST /account/delete = %d, want 303", resp.StatusCode)
	}
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the run never reached the meals step")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.app.Deletions.Close(ctx); err != nil {
		t.Fatalf("Close with a run held mid-step: %v", err)
	}
	if w.app.Deletions.Running(w.id) {
		t.Error("a run is still going after Close")
	}
	u, err := w.app.Users.Get(context.Background(), w.id)
	if err != nil || !u.Deleting() || u.DeletionStep != string(account.StepMeals) {
		t.Fatalf("users row after Close = %+v, %v; want deleting at %s", u, err, account.StepMeals)
	}
	if w.app.Deletions.Resume(w.id) {
		t.Error("a closed Deleter started a run")
	}

	// The next start: a new Deleter over the same stores resumes it.
	env := w.app.Env
	next := account.NewDeleter(account.DeleterDeps{
		Users: w.app.Users, Gate: &user.Gate{}, Photos: photo.NewStore(localenv.NewS3Client(env.S3Endpoint), "test-photos"),
		Meals: w.app.Meals, Shares: w.app.Shares, Invites: w.app.Invites, Sessions: w.app.SessionStore, Log: slog.New(slog.DiscardHandler), Now: time.Now,
	})
	defer next.Close(context.Background())
	if n, err := next.ResumeAll(context.Background()); err != nil || n != 1 {
		t.Fatalf("ResumeAll after the restart = %d, %v; want 1", n, err)
	}
	if err := next.Wait(ctx, w.id); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]int{"meals": 0, "objects": 0, "shares": 0, "invites": 0}, w.holdings(t, w.id)); d != "" {
		t.Errorf("after the resume (-want +got):\n%s", d)
	}
}

// TestDeleteMarkedAccount: deleting an account waiting for its owner
// removes the item that names it by email, so no later sign-in with that
// email finds it and the email can be marked again.
func TestDeleteMarkedAccount(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	if err := w.app.Users.MarkAwaitingOwner(ctx, w.id, w.app.Clock.Now(), apptest.AdminMark(w.app.Clock.Now())); err != nil {
		t.Fatal(err)
	}
	w.deleteVictim(t)
	out, err := w.app.Env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(w.app.Tables.Users.Name),
		Key:            map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: user.OwnerEmailPrefix + victimEmail}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Item != nil {
		t.Errorf("the deleted account's email item is still there: %v", out.Item)
	}
	if _, err := w.app.Users.FindAwaitingOwner(ctx, victimEmail); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("FindAwaitingOwner after the deletion = %v, want ErrNotFound", err)
	}
}
