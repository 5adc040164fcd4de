package account_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/oauth2-proxy/mockoidc"

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

// newSub is the subject the new provider gives the victim.
const newSub = "google-1234567890"

// moveWorld is a world whose victim has a comment on a meal and a sized
// copy of its photo too, and is marked as waiting for its owner.
type moveWorld struct {
	*world
	before moveSnapshot
}

// moveSnapshot is what an account holds, in a form two accounts can be
// compared by: meals without their user ID, object keys without the
// user's prefix, with their bytes.
type moveSnapshot struct {
	meals   []meal.Meal
	objects map[string][]byte
}

// usage is what the snapshot holds as user.Usage counts it: its meals,
// and its objects' bodies (after the metadata snapshot puts first).
func (s moveSnapshot) usage() user.Usage {
	u := user.Usage{Meals: int64(len(s.meals))}
	for _, b := range s.objects {
		u.PhotoBytes += int64(len(b) - bytes.IndexByte(b, '|') - 1)
	}
	return u
}

func newMoveWorld(t *testing.T) *moveWorld {
	t.Helper()
	w := &moveWorld{world: newWorld(t)}
	ctx := context.Background()
	w.app.Moves.SetRetry(1, time.Millisecond)
	meals, err := w.app.Meals.All(ctx, w.id)
	if err != nil {
		t.Fatal(err)
	}
	// A comment on a meal without a photo: the in-process DynamoDB
	// rounds every number of an item an UpdateItem writes (photo_v
	// among them), which real DynamoDB does not.
	c := meals[slices.IndexFunc(meals, func(m meal.Meal) bool { return !m.HasPhoto() })]
	cd, _ := meal.ParseDate(c.Date)
	if err := w.app.Meals.AddComment(ctx, w.id, cd, c.ID, meal.Comment{ID: meal.NewCommentID(w.app.Clock.Now()), ShareID: "s1", Label: "Dr. Rossi", Text: "Looks good", At: w.app.Clock.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	m := meals[slices.IndexFunc(meals, func(m meal.Meal) bool { return m.HasPhoto() })]
	d, _ := meal.ParseDate(m.Date)
	// A sized copy of the photo, as the variant job makes them.
	got, err := w.app.Meals.Get(ctx, w.id, d, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	objects := photo.NewStore(localenv.NewS3Client(w.app.Env.S3Endpoint), "test-photos")
	if err := objects.Put(ctx, photo.Key(w.id, m.Date, m.ID, "t160.webp"), []byte("RIFF-webp-bytes"), got.PhotoV); err != nil {
		t.Fatal(err)
	}
	if err := w.app.Meals.RecordSet(ctx, got, got.PhotoSet.Of()|photo.SetOf("t160.webp")); err != nil {
		t.Fatal(err)
	}
	w.before = w.snapshot(t, w.id)
	if len(w.before.meals) != 33 || len(w.before.objects) != 7 {
		t.Fatalf("victim holds %d meals and %d objects, want 33 and 7", len(w.before.meals), len(w.before.objects))
	}
	// The victim signed up through the provider the deployment used
	// before; the app's stand-in is the new one.
	w.app.FromOldProvider(t, w.id)
	// Counted, as the writes that made them would have: the meals and
	// the copy planted here are not.
	counted, err := w.app.Users.Get(ctx, w.id)
	if err != nil {
		t.Fatal(err)
	}
	all := w.before.usage()
	if _, err := w.app.Users.AddUsage(ctx, w.id, user.Usage{Meals: all.Meals - counted.Meals, PhotoBytes: all.PhotoBytes - counted.PhotoBytes}); err != nil {
		t.Fatal(err)
	}
	if err := w.app.Users.MarkAwaitingOwner(ctx, w.id, w.app.Clock.Now(), apptest.AdminMark(w.app.Clock.Now())); err != nil {
		t.Fatal(err)
	}
	return w
}

// snapshot reads what id holds, through clients without the faults.
func (w *moveWorld) snapshot(t *testing.T, id string) moveSnapshot {
	t.Helper()
	ctx := context.Background()
	db := localenv.NewDynamoClient(w.app.Env.DynamoEndpoint)
	meals, err := meal.NewStore(db, w.app.Tables.Meals.Name).All(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for i := range meals {
		meals[i].UserID = ""
	}
	s3c := localenv.NewS3Client(w.app.Env.S3Endpoint)
	objects := map[string][]byte{}
	prefix := photo.UserPrefix(id)
	out, err := s3c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("test-photos"), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Contents {
		obj, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("test-photos"), Key: o.Key})
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(obj.Body)
		obj.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		v := fmt.Sprint(obj.Metadata)
		objects[strings.TrimPrefix(aws.ToString(o.Key), prefix)] = append([]byte(v+"|"), body...)
	}
	return moveSnapshot{meals: meals, objects: objects}
}

// checkMoved checks the end state of a finished move of the victim to
// newSub: everything of the old account under the new one, nothing left
// under the old ID, the mark gone, the share link open for its recipient.
func (w *moveWorld) checkMoved(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	after := w.snapshot(t, newSub)
	if d := cmp.Diff(w.before.meals, after.meals, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("meals of the new account differ from the old one's (-old +new):\n%s", d)
	}
	if d := cmp.Diff(w.before.objects, after.objects); d != "" {
		t.Errorf("photo objects of the new account differ from the old one's (-old +new):\n%s", d)
	}
	if d := cmp.Diff(map[string]int{"meals": 0, "objects": 0, "shares": 0, "invites": 0}, w.holdings(t, w.id)); d != "" {
		t.Errorf("left under the old ID (-want +got):\n%s", d)
	}
	h := w.holdings(t, newSub)
	if h["meals"] != 33 || h["objects"] != 7 || h["shares"] != 1 || h["invites"] != 2 || h["user"] != 1 {
		t.Errorf("the new account holds %v, want 33 meals, 7 objects, 1 share, 2 invites and its row", h)
	}
	db := localenv.NewDynamoClient(w.app.Env.DynamoEndpoint)
	users := user.NewStore(db, w.app.Tables.Users.Name, time.Now)
	u, err := users.Get(ctx, newSub)
	if err != nil {
		t.Fatal(err)
	}
	if !u.Active() || u.MoveFrom != w.id || u.AwaitingOwner != nil || u.Email != victimEmail || u.Role != user.RoleAdmin || u.InviteToken != w.claimed {
		t.Errorf("new row = %+v, want active, moved from %s, unmarked, with the old email, role and invite", u, w.id)
	}
	if want := w.before.usage(); u.Usage != want {
		t.Errorf("new row counts %+v, want the old row's %+v: every meal and object moved with it", u.Usage, want)
	}
	if _, err := users.FindAwaitingOwner(ctx, victimEmail); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("FindAwaitingOwner after the move = %v, want ErrNotFound (mark gone)", err)
	}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(w.app.Tables.Users.Name), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: user.OwnerEmailPrefix + victimEmail}}})
	if err != nil || out.Item != nil {
		t.Errorf("email item after the move = %v, %v, want none", out.Item, err)
	}
	invs, err := invite.NewStore(cloud.NewItems(db), w.app.Tables.Invites.Seam()).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, inv := range invs {
		if inv.CreatedBy == w.id || inv.ClaimedBy == w.id {
			t.Errorf("invite %+v still names the old ID", inv)
		}
	}
	sh, err := share.NewStore(db, w.app.Tables.Shares.Name, time.Now).ListByOwner(ctx, newSub)
	if err != nil || len(sh) != 1 || sh[0].Token != w.victimShare {
		t.Errorf("shares of the new account = %v, %v, want the old link, same token", sh, err)
	}
	// The recipient's link works, with the meals in its range.
	w.app.Clock.Advance(share.CacheTTL + user.CacheTTL)
	if r := w.app.Client().Get("/s/" + w.victimShare); r.StatusCode != http.StatusOK {
		t.Errorf("the moved account's share link = %d, want 200", r.StatusCode)
	}
}

// TestMoveAccount: a marked account reached by a sign-in with another
// subject and the same verified email, through the local OIDC stand-in:
// the moving page while the move runs, then the diary, everything moved.
func TestMoveAccount(t *testing.T) {
	t.Parallel()
	w := newMoveWorld(t)
	ctx := context.Background()
	// The first copy waits, so the move is seen running.
	held, release := w.faults.Hold("CopyObject", "")
	defer release()
	w.app.Env.NextSignIn(&mockoidc.MockUser{Subject: newSub, Email: "Victim@Example.com", EmailVerified: true})
	c := w.app.Client()
	resp := c.SignInVia("/login", "ignored@example.com")
	if resp.StatusCode != http.StatusSeeOther || resp.Location() != "/meals" {
		t.Fatalf("sign-in of the new subject = %d %q, want 303 to /meals; body %s", resp.StatusCode, resp.Location(), resp.Body)
	}
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the move never copied a photo")
	}
	page := c.Get("/meals")
	if page.StatusCode != http.StatusOK || page.Text("h1") != "Moving your diary" {
		t.Errorf("GET /meals during the move = %d %q, want 200 and the moving page", page.StatusCode, page.Text("h1"))
	}
	if refresh, _ := page.Doc().Find(`meta[http-equiv="refresh"]`).Attr("content"); refresh != "5" {
		t.Errorf("moving page refresh = %q, want 5 (seconds)", refresh)
	}
	post := c.PostForm("/account/timezone", url.Values{"tz": {"Europe/Berlin"}})
	if post.StatusCode != http.StatusServiceUnavailable || post.Header.Get("Retry-After") == "" {
		t.Errorf("a write during the move = %d (Retry-After %q), want 503 with Retry-After", post.StatusCode, post.Header.Get("Retry-After"))
	}
	// The old sign-in's session is over: its row is claimed.
	if r := w.victim.Get("/meals"); r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Location(), "/login") {
		t.Errorf("old session during the move = %d %q, want 303 to sign-in", r.StatusCode, r.Location())
	}
	release()
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := w.app.Moves.Wait(wctx, newSub); err != nil {
		t.Fatal(err)
	}
	w.checkMoved(t)
	if u, err := w.app.Users.Get(ctx, newSub); err != nil || u.Issuer != w.app.Env.OIDC.Issuer() {
		t.Errorf("new row's issuer = %q (%v), want the sign-in's %s", u.Issuer, err, w.app.Env.OIDC.Issuer())
	}
	// The owner's diary now, signed in all along.
	month := c.Get("/meals?month=2026-09")
	if month.StatusCode != http.StatusOK || month.Text("h1") == "Moving your diary" {
		t.Errorf("GET /meals?month=2026-09 after the move = %d %q, want the diary", month.StatusCode, month.Text("h1"))
	}
	// The owner sees the moved photos, served from the new prefix.
	srcs := month.Doc().Find("img").Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("src", "") })
	if len(srcs) != 3 {
		t.Errorf("month page after the move shows %d photos, want the victim's 3", len(srcs))
	}
	for _, src := range srcs {
		if r := c.Get(src); r.StatusCode != http.StatusOK || len(r.Body) == 0 {
			t.Errorf("GET %s after the move = %d, %d bytes, want the photo", src, r.StatusCode, len(r.Body))
		}
	}
	// A sign-in of the old subject starts a new, empty account: nothing
	// of the moved account is reached by it.
	if r := w.app.Client().SignInVia("/login", victimEmail); r.StatusCode != http.StatusForbidden {
		t.Errorf("sign-in of the old subject after the move = %d, want 403 (invite needed)", r.StatusCode)
	}
}

// TestSignInMatchesMarkedOnly: no account that is not marked is ever
// matched by email, an unverified email matches nothing, and the mark
// itself is refused twice for one email.
func TestSignInMatchesMarkedOnly(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	// Not marked: the newcomer with the victim's email needs an invite.
	w.app.Env.NextSignIn(&mockoidc.MockUser{Subject: newSub, Email: victimEmail, EmailVerified: true})
	resp := w.app.Client().SignInVia("/login", "ignored@example.com")
	if resp.StatusCode != http.StatusForbidden || resp.Text("h1") != "You need an invite" {
		t.Errorf("sign-in with an unmarked account's email = %d %q, want 403 You need an invite", resp.StatusCode, resp.Text("h1"))
	}
	if _, err := w.app.Users.Get(ctx, newSub); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("a refused sign-in wrote a row: %v", err)
	}
	w.app.FromOldProvider(t, w.id)
	if err := w.app.Users.MarkAwaitingOwner(ctx, w.id, w.app.Clock.Now(), apptest.AdminMark(w.app.Clock.Now())); err != nil {
		t.Fatal(err)
	}
	// Marked, but the provider does not vouch for the email.
	w.app.Env.NextSignIn(&mockoidc.MockUser{Subject: newSub, Email: victimEmail, EmailVerified: false})
	resp = w.app.Client().SignInVia("/login", "ignored@example.com")
	if resp.StatusCode != http.StatusForbidden || resp.Text("h1") != "Email not verified" {
		t.Errorf("sign-in with a marked account's unverified email = %d %q, want 403 Email not verified", resp.StatusCode, resp.Text("h1"))
	}
	if u, err := w.app.Users.Get(ctx, w.id); err != nil || !u.Active() || u.MovedTo != "" {
		t.Errorf("the marked account after an unverified sign-in = %+v, %v, want it untouched", u, err)
	}
	if w.holdings(t, w.id)["meals"] != 33 {
		t.Error("the marked account lost meals")
	}
	// Two subjects race for one marked account: the first claim wins,
	// the second is refused.
	w.app.Moves.SetRetry(1, time.Millisecond)
	w.app.Env.NextSignIn(&mockoidc.MockUser{Subject: newSub, Email: victimEmail, EmailVerified: true})
	if resp := w.app.Client().SignInVia("/login", "ignored@example.com"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("first sign-in = %d, want 303", resp.StatusCode)
	}
	w.app.Env.NextSignIn(&mockoidc.MockUser{Subject: "google-other", Email: victimEmail, EmailVerified: true})
	resp = w.app.Client().SignInVia("/login", "ignored@example.com")
	moved := resp.StatusCode == http.StatusForbidden && resp.Text("h1") == "You need an invite" // the first move finished already
	if resp.StatusCode != http.StatusConflict && !moved {
		t.Errorf("second subject's sign-in = %d %q, want 409 Account already moving (or, once moved, the invite refusal)", resp.StatusCode, resp.Text("h1"))
	}
	if _, err := w.app.Users.Get(ctx, "google-other"); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("the second subject got a row: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := w.app.Moves.Wait(wctx, newSub); err != nil {
		t.Fatal(err)
	}
}

// errKilled stands for the process dying right after a write succeeded.
var errKilled = errors.New("killed")

// killing wraps a move's stores and fails (as a kill would) right after
// the write of step kill went through.
type killing struct {
	kill string
	w    *moveWorld
	us   *user.Store
}

func (k *killing) after(step string, err error) error {
	if err == nil && step == k.kill {
		return errKilled
	}
	return err
}

type killUsers struct{ *killing }

func (k killUsers) Get(ctx context.Context, id string) (*user.User, error) { return k.us.Get(ctx, id) }
func (k killUsers) ClaimMove(ctx context.Context, oldID, newID, issuer string, now time.Time) (*user.User, error) {
	u, err := k.us.ClaimMove(ctx, oldID, newID, issuer, now)
	return u, k.after("claim", err)
}
func (k killUsers) CreateMoving(ctx context.Context, old *user.User, newID, issuer, first string) (*user.User, error) {
	u, err := k.us.CreateMoving(ctx, old, newID, issuer, first)
	return u, k.after("create", err)
}
func (k killUsers) SetMoveProgress(ctx context.Context, id, step, lastErr string) error {
	return k.us.SetMoveProgress(ctx, id, step, lastErr)
}
func (k killUsers) FinishMove(ctx context.Context, id string) error {
	return k.after(string(account.MoveFinish), k.us.FinishMove(ctx, id))
}
func (k killUsers) ListMoving(ctx context.Context) ([]user.User, error) { return k.us.ListMoving(ctx) }
func (k killUsers) ClearAwaitingOwner(ctx context.Context, id string) error {
	return k.us.ClearAwaitingOwner(ctx, id)
}
func (k killUsers) MovedImport(ctx context.Context, id, from string, imp user.Import) error {
	return k.us.MovedImport(ctx, id, from, imp)
}
func (k killUsers) Delete(ctx context.Context, id string) error {
	return k.after(string(account.MoveOldUser), k.us.Delete(ctx, id))
}

type killPhotos struct {
	*killing
	s *photo.Store
}

func (k killPhotos) CopyOwner(ctx context.Context, from, to string) (int, error) {
	n, err := k.s.CopyOwner(ctx, from, to)
	return n, k.after(string(account.MovePhotos), err)
}
func (k killPhotos) DeleteAll(ctx context.Context, id string) (int, error) {
	n, err := k.s.DeleteAll(ctx, id)
	return n, k.after(string(account.MoveOldPhotos), err)
}

type killMeals struct {
	*killing
	s *meal.Store
}

func (k killMeals) All(ctx context.Context, id string) ([]meal.Meal, error) { return k.s.All(ctx, id) }

// CopyTo is killed half-way through the meals: after the 10th.
func (k killMeals) CopyTo(ctx context.Context, m *meal.Meal, id string) error {
	err := k.s.CopyTo(ctx, m, id)
	if err == nil && k.kill == string(account.MoveMeals) && strings.HasPrefix(m.SK, "2026-08-01#080010") {
		return errKilled
	}
	return err
}
func (k killMeals) DeleteAll(ctx context.Context, id string) (int, error) {
	n, err := k.s.DeleteAll(ctx, id)
	return n, k.after(string(account.MoveOldMeals), err)
}

type killShares struct {
	*killing
	s *share.Store
}

func (k killShares) MoveOwner(ctx context.Context, from, to string) (int, error) {
	n, err := k.s.MoveOwner(ctx, from, to)
	return n, k.after(string(account.MoveShares), err)
}

type killInvites struct {
	*killing
	s *invite.Store
}

func (k killInvites) MoveUser(ctx context.Context, from, to string) (int, error) {
	n, err := k.s.MoveUser(ctx, from, to)
	return n, k.after(string(account.MoveInvites), err)
}
func (k killInvites) DeleteFor(ctx context.Context, id string) (int, error) {
	n, err := k.s.DeleteFor(ctx, id)
	return n, k.after(string(account.MoveOldInvites), err)
}

type killSessions struct {
	*killing
	s *user.Sessions
}

func (k killSessions) DeleteKeys(ctx context.Context, id string) (int, error) {
	n, err := k.s.DeleteKeys(ctx, id)
	return n, k.after(string(account.MoveOldSessions), err)
}

// mover returns a Mover over the app's stores that is killed at step
// kill ("" for never): one attempt, as a process that dies does.
func (w *moveWorld) mover(kill string) *account.Mover {
	k := &killing{kill: kill, w: w, us: w.app.Users}
	objects := photo.NewStore(localenv.NewS3Client(w.app.Env.S3Endpoint), "test-photos")
	mv := account.NewMover(account.MoverDeps{
		Users: killUsers{k}, Gate: &user.Gate{}, Photos: killPhotos{k, objects}, Meals: killMeals{k, w.app.Meals},
		Shares: killShares{k, w.app.Shares}, Invites: killInvites{k, w.app.Invites}, Sessions: killSessions{k, w.app.SessionStore},
		Log: slog.New(slog.DiscardHandler), Attempts: 1, Backoff: time.Millisecond,
	})
	return mv
}

// TestMoveResumes: a move killed right after each of its writes (the
// claim, the new row, each step, and half-way through the meals) and
// resumed by the next start (a new Mover's ResumeAll) ends in the state
// of a move never interrupted.
func TestMoveResumes(t *testing.T) {
	t.Parallel()
	kills := []string{"claim", "create"}
	for _, st := range account.MoveSteps {
		kills = append(kills, string(st))
	}
	for _, kill := range kills {
		t.Run(kill, func(t *testing.T) {
			t.Parallel()
			w := newMoveWorld(t)
			ctx := context.Background()
			old, err := w.app.Users.Get(ctx, w.id)
			if err != nil {
				t.Fatal(err)
			}
			first := w.mover(kill)
			_, err = first.Start(ctx, old, newSub, w.app.Env.OIDC.Issuer())
			switch kill {
			case "claim", "create":
				if !errors.Is(err, errKilled) {
					t.Fatalf("Start killed at %s = %v, want the kill", kill, err)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
			}
			wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			if err := first.Close(wctx); err != nil {
				t.Fatal(err)
			}
			if kill != string(account.MoveFinish) {
				if u, err := w.app.Users.Get(ctx, newSub); err == nil && u.Active() {
					t.Fatalf("the move killed at %s finished all the same: the kill tests nothing", kill)
				}
			}
			// The next start.
			next := w.mover("")
			n, err := next.ResumeAll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := 1; kill != string(account.MoveFinish) && n != want {
				t.Errorf("ResumeAll resumed %d moves, want %d", n, want)
			}
			if err := next.Wait(wctx, newSub); err != nil {
				t.Fatal(err)
			}
			w.checkMoved(t)
			if again, err := next.ResumeAll(ctx); err != nil || again != 0 {
				t.Errorf("ResumeAll after the move = %d, %v, want nothing to resume", again, err)
			}
		})
	}
}

// TestMoveFromOtherSubjectRefused: a run for a new row whose old row is
// claimed for another subject copies and deletes nothing.
func TestMoveFromOtherSubjectRefused(t *testing.T) {
	t.Parallel()
	w := newMoveWorld(t)
	ctx := context.Background()
	iss, now := w.app.Env.OIDC.Issuer(), w.app.Clock.Now()
	old, err := w.app.Users.ClaimMove(ctx, w.id, "google-first", iss, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.app.Users.ClaimMove(ctx, w.id, newSub, iss, now); !errors.Is(err, user.ErrClaimed) {
		t.Errorf("second claim = %v, want ErrClaimed", err)
	}
	// A new row naming the old one, written around the claim.
	if _, err := w.app.Users.CreateMoving(ctx, old, newSub, iss, string(account.MovePhotos)); err != nil {
		t.Fatal(err)
	}
	mv := w.mover("")
	mv.Resume(newSub)
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := mv.Wait(wctx, newSub); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(w.before, w.snapshot(t, w.id), cmp.AllowUnexported(moveSnapshot{}), cmpopts.EquateEmpty()); d != "" {
		t.Errorf("the old account changed (-before +after):\n%s", d)
	}
	if got := w.snapshot(t, newSub); len(got.meals) != 0 || len(got.objects) != 0 {
		t.Errorf("copied %d meals and %d objects to a subject the account was not claimed for", len(got.meals), len(got.objects))
	}
}

// TestMovingAccountNotDeleted: neither row of a move not finished can be
// deleted (the move would bring back what the deletion took); once the
// move is done the new account can be.
func TestMovingAccountNotDeleted(t *testing.T) {
	t.Parallel()
	w := newMoveWorld(t)
	ctx := context.Background()
	old, err := w.app.Users.ClaimMove(ctx, w.id, newSub, w.app.Env.OIDC.Issuer(), w.app.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.app.Users.CreateMoving(ctx, old, newSub, w.app.Env.OIDC.Issuer(), string(account.MovePhotos)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{w.id, newSub} {
		path := "/admin/users/" + url.PathEscape(id) + "/delete"
		if r := w.admin.Get(path); r.StatusCode != http.StatusConflict || r.Text("h1") != "Account moving" {
			t.Errorf("GET %s of a moving row = %d %q, want 409 Account moving", path, r.StatusCode, r.Text("h1"))
		}
		if r := w.admin.PostForm(path, url.Values{"email": {victimEmail}}); r.StatusCode != http.StatusConflict {
			t.Errorf("POST %s of a moving row = %d, want 409", path, r.StatusCode)
		}
		if _, err := w.app.Users.MarkDeleting(ctx, id, "photos", w.app.Clock.Now()); !errors.Is(err, user.ErrState) {
			t.Errorf("MarkDeleting of moving row %s = %v, want ErrState", id, err)
		}
	}
	w.app.Moves.Resume(newSub)
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := w.app.Moves.Wait(wctx, newSub); err != nil {
		t.Fatal(err)
	}
	w.checkMoved(t)
	if r := w.admin.Get("/admin/users/" + url.PathEscape(newSub) + "/delete"); r.StatusCode != http.StatusOK {
		t.Errorf("delete page of the moved account = %d, want 200", r.StatusCode)
	}
}
