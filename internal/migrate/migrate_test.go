package migrate_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"image/color"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"ndiro/internal/apptest"
	"ndiro/internal/dynamo"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/migrate"
	"ndiro/internal/photo"
	"ndiro/internal/user"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if seedDir != "" {
		os.RemoveAll(seedDir)
	}
	os.Exit(code)
}

const (
	adminEmail  = "admin@example.com"
	friendEmail = "friend@example.com"
	goneEmail   = "gone@example.com"
	seedBucket  = "test-photos" // apptest's bucket
)

// seeded is what the seed wrote: the accounts' IDs and, for each, the
// meals, objects and share links the data dir holds.
type seeded struct {
	dir            string
	admin, friend  string
	gone           string // an account being deleted
	meals, objects map[string]int
	shares         map[string]int
	comment        string // the text of the comment on one of friend's meals
}

var (
	seedOnce sync.Once
	seed     seeded
	seedErr  string
	seedDir  string
)

// source returns a data dir written by a local-mode app, made once for
// the package and only ever opened read-only after: an admin and a
// friend who signed up by invite, with meals, photos and their sized
// copies, a share link and a recipient's comment, an unclaimed invite,
// an account being deleted, an idempotency claim, a reserved item, a
// session and an upload kept for a form (pending/).
func source(t *testing.T) seeded {
	t.Helper()
	seedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ndiro-migrate-seed-")
		if err != nil {
			seedErr = err.Error()
			return
		}
		seedDir = dir
		st := &seedT{TB: t}
		func() {
			defer func() {
				if r := recover(); r != nil && r != errSeedFailed {
					panic(r)
				}
			}()
			seed = writeSeed(st, dir)
		}()
		if st.failed != "" {
			seedErr = st.failed
		}
	})
	if seedErr != "" {
		t.Fatalf("seeding the data dir: %s", seedErr)
	}
	return seed
}

// seedT lets the seed, written once for every test, report its failure
// to whichever test asked first and then to every other that asks.
type seedT struct {
	testing.TB
	failed string
}

var errSeedFailed = errors.New("seed failed")

func (s *seedT) Fatalf(format string, args ...any) {
	s.TB.Helper()
	s.failed = "fatal"
	s.TB.Errorf(format, args...)
	panic(errSeedFailed)
}

func (s *seedT) Fatal(args ...any) {
	s.TB.Helper()
	s.failed = "fatal"
	s.TB.Error(args...)
	panic(errSeedFailed)
}

// Cleanup runs the seed's clean-ups at once when it ends (Stop), not
// at the end of the first test, which other tests outlive.
func (s *seedT) Cleanup(func()) {}

func writeSeed(t testing.TB, dir string) seeded {
	ctx := context.Background()
	app := apptest.New(t, apptest.Options{DataDir: dir})
	defer app.Stop()
	s := seeded{dir: dir, admin: localenv.Subject(adminEmail), friend: localenv.Subject(friendEmail), gone: localenv.Subject(goneEmail)}

	admin := app.Client()
	admin.SignIn(adminEmail)
	tok := admin.CreateInvite(url.Values{"role": {"owner"}, "email": {friendEmail}, "expiry_days": {"7"}})
	admin.CreateInvite(url.Values{"role": {"owner"}, "email": {"later@example.com"}, "expiry_days": {"7"}})
	friend := app.Client()
	if resp := friend.SignInVia("/login?invite="+tok, friendEmail); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("friend sign-up = %d, want 303", resp.StatusCode)
	}
	add := func(c *apptest.Client, date, tm, notes string, photo bool) string {
		form := url.Values{"date": {date}, "time": {tm}, "kind": {"lunch"}, "notes": {notes}, "kcal": {"512.50"}, "protein_g": {"20"}}
		var files []apptest.File
		if photo {
			files = append(files, apptest.File{Field: "photo", Name: "meal.jpg", Body: apptest.JPEG(t, 640, 480, color.RGBA{200, 80, 40, 255})})
		}
		resp := c.PostMultipart("/meals", form, files...)
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("add meal = %d; %s", resp.StatusCode, resp.Text("main"))
		}
		return resp.Location()[strings.Index(resp.Location(), "#meal-")+len("#meal-"):]
	}
	lunch := add(friend, "2026-09-14", "12:30", "Lentil soup", true)
	add(friend, "2026-09-14", "19:05", "Pasta", true)
	add(friend, "2026-09-15", "08:00", "Porridge, no photo", false)
	add(admin, "2026-09-10", "13:00", "Admin's salad", true)
	share := friend.CreateShare(url.Values{"label": {"Dr. Rossi"}, "from": {"2026-09-01"}, "to": {"2026-09-30"}, "expiry": {"never"}, "notes": {"1"}, "numbers": {"1"}, "comments": {"1"}})
	s.comment = "More greens, please."
	if resp := app.Client().PostForm("/s/"+share+"/meals/2026-09-14/"+lunch+"/comments", url.Values{"text": {s.comment}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("comment = %d; %s", resp.StatusCode, resp.Text("main"))
	}
	// Every photo's sized copies, as the variant job stores and records
	// them (its WebP encoder takes a minute of CPU under the race
	// detector; migrate copies bytes, whatever they hold).
	addVariants(t, app, s.friend)
	addVariants(t, app, s.admin)

	// What a migration must leave behind.
	if err := app.Users.Create(ctx, &user.User{ID: s.gone, Email: goneEmail, Role: user.RoleOwner, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Users.MarkDeleting(ctx, s.gone, "shares", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Meals.Claim(ctx, meal.NewClaim(s.friend, "offline-key-1", "", "", time.Now())); err != nil {
		t.Fatal(err)
	}
	db, s3c := app.Env.DynamoDB, app.Env.S3
	put := func(table string, item map[string]types.AttributeValue) {
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	put(app.Tables.Users.Name, map[string]types.AttributeValue{"user_id": sv(user.ReservedPrefix + "session#abc"), "data": sv("x")})
	// An invite the account being deleted made (its deletion removes it).
	put(app.Tables.Invites.Name, map[string]types.AttributeValue{"invite_token": sv("gone-invite-token"), "role": sv("owner"),
		"created_by": sv(s.gone), "created_at": sv(time.Now().UTC().Format(time.RFC3339)), "expires_at": &types.AttributeValueMemberN{Value: "4102444800"}})
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(seedBucket), Key: aws.String(photo.PendingPrefix(s.friend) + "kept.jpg"), Body: bytes.NewReader([]byte("pending"))}); err != nil {
		t.Fatal(err)
	}

	s.meals, s.objects, s.shares = map[string]int{}, map[string]int{}, map[string]int{}
	for _, id := range []string{s.admin, s.friend} {
		ms, err := app.Meals.Month(ctx, id, mustMonth(t, "2026-09"))
		if err != nil {
			t.Fatal(err)
		}
		s.meals[id] = len(ms)
		s.objects[id] = len(listKeys(t, s3c, seedBucket, photo.UserPrefix(id)))
	}
	s.shares[s.friend] = 1
	return s
}

func sv(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func mustMonth(t testing.TB, s string) meal.Month {
	m, err := meal.ParseMonth(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// addVariants stores every sized copy each photo of id's September
// should have (photo.Full) as small generated objects under their keys,
// with the photo's version, and records the set on the meal
// (meal.Store.RecordSet), as the variant job does.
func addVariants(t testing.TB, app *apptest.App, id string) {
	ctx := context.Background()
	ms, err := app.Meals.Month(ctx, id, mustMonth(t, "2026-09"))
	if err != nil {
		t.Fatal(err)
	}
	photos := photo.NewStore(app.Env.S3, seedBucket)
	for i := range ms {
		m := &ms[i]
		if m.PhotoV == 0 {
			continue
		}
		full := photo.Full(m.PhotoSet, m.PhotoW, m.PhotoH)
		for _, size := range full.Sizes() {
			if m.PhotoSet.Of().Has(size) {
				continue
			}
			if err := photos.Put(ctx, photo.Key(id, m.Date, m.ID, size), []byte("copy "+string(size)+" of "+m.ID), m.PhotoV); err != nil {
				t.Fatal(err)
			}
		}
		if err := app.Meals.RecordSet(ctx, m, full); err != nil {
			t.Fatal(err)
		}
	}
}

func listKeys(t testing.TB, c *s3.Client, bucket, prefix string) []string {
	var keys []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	sort.Strings(keys)
	return keys
}

// sides opens the seed read-only as the source and starts an empty
// target (in-process, or the DynamoDB of NDIRO_TEST_DYNAMODB_ENDPOINT)
// whose DynamoDB calls go through faults.
func sides(t *testing.T, s seeded, faults *apptest.Faults) (src, dst migrate.Side, target *localenv.Env) {
	t.Helper()
	srcTables := dynamo.NewTables("src-")
	env, err := localenv.OpenReadOnly(context.Background(), localenv.Options{DataDir: s.dir, Tables: srcTables, Bucket: seedBucket})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	var dopts []func(*dynamodb.Options)
	var sopts []func(*s3.Options)
	if faults != nil {
		dopts, sopts = append(dopts, faults.DynamoOption()), append(sopts, faults.S3Option())
	}
	target, tables := apptest.LocalWith(t, dopts, sopts)
	return migrate.Side{DB: env.DynamoDB, S3: env.S3, Bucket: seedBucket, Tables: srcTables},
		migrate.Side{DB: target.DynamoDB, S3: target.S3, Bucket: seedBucket, Tables: tables}, target
}

// markLife is how long the tests' marks last.
const markLife = 30 * 24 * time.Hour

// marker marks through the target's users store.
func marker(dst migrate.Side) func(context.Context, string, time.Time, user.OwnerMark) error {
	return user.NewStore(dst.DB, dst.Tables.Users.Name, time.Now).MarkAwaitingOwner
}

func scanTable(t *testing.T, db *dynamodb.Client, table string) []map[string]types.AttributeValue {
	t.Helper()
	var items []map[string]types.AttributeValue
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, out.Items...)
	}
	return items
}

func str(item map[string]types.AttributeValue, k string) string {
	if s, ok := item[k].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func account(t *testing.T, rep *migrate.Report, id string) migrate.Account {
	t.Helper()
	for _, a := range rep.Accounts {
		if a.ID == id {
			return a
		}
	}
	t.Fatalf("report has no account %s", id)
	return migrate.Account{}
}

// TestCopyAndVerify: a run copies both accounts whole (rows, meals with
// their comment, the share link, every photo object including the sized
// copies, both invites), leaves out what is not the accounts' (the
// account being deleted, sessions, the idempotency claim, reserved
// items, pending uploads), marks both accounts as waiting for their
// owner and verifies them equal; a second run copies nothing and says
// so.
func TestCopyAndVerify(t *testing.T) {
	t.Parallel()
	s := source(t)
	src, dst, _ := sides(t, s, nil)
	ctx := context.Background()
	var out bytes.Buffer
	rep, err := migrate.Run(ctx, src, dst, migrate.Options{Mark: marker(dst), MarkLifetime: markLife, Progress: &out})
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Write(&out); err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("first run not OK:\n%s", out.String())
	}
	for _, id := range []string{s.admin, s.friend} {
		a := account(t, rep, id)
		want := migrate.Tally{Meals: s.meals[id], Photos: s.objects[id], Shares: s.shares[id]}
		if got := (migrate.Tally{Meals: a.Target.Meals, Photos: a.Target.Photos, Shares: a.Target.Shares}); got != want {
			t.Errorf("%s: target holds %+v, want %+v", id, got, want)
		}
		if a.Meals.Copied != s.meals[id] || a.Photos.Copied != s.objects[id] || a.Row.Copied != 1 {
			t.Errorf("%s: copied row %d, meals %d, objects %d; want 1, %d, %d", id, a.Row.Copied, a.Meals.Copied, a.Photos.Copied, s.meals[id], s.objects[id])
		}
		if a.Source.Sum == "" || a.Source.Sum != a.Target.Sum || !a.Marked {
			t.Errorf("%s: sums %s and %s, marked %v; want equal and marked", id, a.Source.Sum, a.Target.Sum, a.Marked)
		}
	}
	// Each photo's display copy, thumbnail and sized copies.
	if n := s.objects[s.friend]; n <= 4 {
		t.Fatalf("the seed holds %d objects for two photos: its sized copies are missing", n)
	}
	if g := account(t, rep, s.gone); g.Skipped != "being deleted" {
		t.Errorf("the account being deleted: skipped %q, want \"being deleted\"", g.Skipped)
	}
	if rep.Invites.Copied != 2 || rep.DeletedInvites != 1 {
		t.Errorf("invites copied = %d, left as the deleted account's %d; want 2 and 1", rep.Invites.Copied, rep.DeletedInvites)
	}

	checkTarget(t, s, src, dst)

	// Again: nothing to copy, still verified.
	out.Reset()
	rep, err = migrate.Run(ctx, src, dst, migrate.Options{Mark: marker(dst), MarkLifetime: markLife, Progress: &out})
	if err != nil {
		t.Fatal(err)
	}
	rep.Write(&out)
	items, objects := rep.Totals()
	if items.Copied != 0 || objects.Copied != 0 || !rep.OK() {
		t.Errorf("second run copied %d items and %d objects (OK %v), want 0 and 0:\n%s", items.Copied, objects.Copied, rep.OK(), out.String())
	}
	if !strings.Contains(out.String(), "copied nothing: all ") || !strings.Contains(out.String(), "verified: every copied account is equal") {
		t.Errorf("second run's report does not say it copied nothing and verified:\n%s", out.String())
	}
}

// checkTarget checks what the target holds after a run: the accounts'
// rows without sessions and marked, the marks' email items, no other
// reserved item, the comment on its meal, no idempotency claim, no
// pending upload, and exactly the source's objects under users/.
func checkTarget(t *testing.T, s seeded, src, dst migrate.Side) {
	t.Helper()
	// The source rows carry sessions (both signed in) and reserved
	// session keys; the target's carry neither.
	sessions, keys := 0, 0
	for _, it := range scanTable(t, src.DB, src.Tables.Users.Name) {
		if _, ok := it["sessions"]; ok {
			sessions++
		}
		if strings.HasPrefix(str(it, "user_id"), user.ReservedPrefix+"session#") {
			keys++
		}
	}
	if sessions < 2 || keys < 2 {
		t.Fatalf("the seed has %d rows with sessions and %d session keys, want at least 2 of each", sessions, keys)
	}

	// The target's tables: what must and must not be there.
	var rowIDs []string
	for _, it := range scanTable(t, dst.DB, dst.Tables.Users.Name) {
		id := str(it, "user_id")
		rowIDs = append(rowIDs, id)
		if _, ok := it["sessions"]; ok {
			t.Errorf("target row %s carries sessions", id)
		}
		if !user.Reserved(id) && str(it, "awaiting_owner") == "" {
			t.Errorf("target row %s is not marked as waiting for its owner", id)
		}
	}
	sort.Strings(rowIDs)
	want := []string{user.OwnerEmailPrefix + adminEmail, user.OwnerEmailPrefix + friendEmail, s.admin, s.friend}
	sort.Strings(want)
	if strings.Join(rowIDs, " ") != strings.Join(want, " ") {
		t.Errorf("target users table keys = %v, want %v", rowIDs, want)
	}
	comments := 0
	for _, it := range scanTable(t, dst.DB, dst.Tables.Meals.Name) {
		if strings.HasPrefix(str(it, "sk"), meal.ClaimPrefix) {
			t.Errorf("target meals hold the idempotency claim %s", str(it, "sk"))
		}
		if m, ok := it["comments"].(*types.AttributeValueMemberM); ok {
			for _, c := range m.Value {
				if cm, ok := c.(*types.AttributeValueMemberM); ok && str(cm.Value, "text") == s.comment {
					comments++
				}
			}
		}
	}
	if comments != 1 {
		t.Errorf("the recipient's comment is on %d target meals, want 1", comments)
	}
	if keys := listKeys(t, dst.S3, dst.Bucket, "pending/"); len(keys) != 0 {
		t.Errorf("target holds pending uploads %v", keys)
	}
	srcKeys, dstKeys := listKeys(t, src.S3, src.Bucket, "users/"), listKeys(t, dst.S3, dst.Bucket, "users/")
	if strings.Join(srcKeys, " ") != strings.Join(dstKeys, " ") {
		t.Errorf("target objects %v, want the source's %v", dstKeys, srcKeys)
	}

}

// TestKilledRunResumes: a run stopped by a failing write, once in the
// tables and once in the bucket, leaves no account marked that is not
// whole, and the next run copies the rest and ends verified, each item
// copied exactly once over the runs.
func TestKilledRunResumes(t *testing.T) {
	t.Parallel()
	s := source(t)
	faults := &apptest.Faults{}
	src, dst, _ := sides(t, s, faults)
	ctx := context.Background()
	var items, objects migrate.Counts
	// The first run stops among the first account's objects, the second
	// (which finds those objects there) among its meals.
	for _, kill := range []struct {
		op, target string
		after      int
	}{
		{"PutObject", dst.Bucket, 3},
		{"PutItem", dst.Tables.Meals.Name, 1},
	} {
		faults.Clear()
		faults.Fail(kill.op, kill.target, kill.after)
		rep, err := migrate.Run(ctx, src, dst, migrate.Options{Mark: marker(dst), MarkLifetime: markLife})
		if err == nil {
			t.Fatalf("run with %s failing after %d = no error (%+v)", kill.op, kill.after, rep)
		}
		partial := 0
		for _, it := range scanTable(t, dst.DB, dst.Tables.Users.Name) {
			id := str(it, "user_id")
			if !user.Reserved(id) && str(it, "awaiting_owner") == "" {
				partial++
			}
			if !user.Reserved(id) && str(it, "awaiting_owner") != "" {
				// Marked: then it must be whole already.
				if got, want := len(listKeys(t, dst.S3, dst.Bucket, photo.UserPrefix(id))), s.objects[id]; got != want {
					t.Errorf("after the %s kill %s is marked with %d of its %d objects", kill.op, id, got, want)
				}
			}
		}
		if partial == 0 {
			t.Errorf("after the %s kill no account is half copied: the kill came too late to test a resume", kill.op)
		}
	}
	faults.Clear()
	// The killed runs' copies, counted from the target.
	items.Copied = len(scanTable(t, dst.DB, dst.Tables.Meals.Name))
	objects.Copied = len(listKeys(t, dst.S3, dst.Bucket, "users/"))
	rep, err := migrate.Run(ctx, src, dst, migrate.Options{Mark: marker(dst), MarkLifetime: markLife})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.Write(&out)
	if !rep.OK() {
		t.Fatalf("resumed run not OK:\n%s", out.String())
	}
	meals, objs := 0, 0
	for _, id := range []string{s.admin, s.friend} {
		a := account(t, rep, id)
		meals += a.Meals.Copied
		objs += a.Photos.Copied
		if a.Meals.Conflicts+a.Photos.Conflicts+a.Row.Conflicts != 0 || !a.Marked {
			t.Errorf("%s after resuming: conflicts %d, marked %v", id, a.Meals.Conflicts+a.Photos.Conflicts+a.Row.Conflicts, a.Marked)
		}
	}
	if total := s.meals[s.admin] + s.meals[s.friend]; items.Copied+meals != total {
		t.Errorf("meals copied: %d by the killed runs + %d = %d, want %d", items.Copied, meals, items.Copied+meals, total)
	}
	if total := s.objects[s.admin] + s.objects[s.friend]; objects.Copied+objs != total {
		t.Errorf("objects copied: %d by the killed runs + %d = %d, want %d", objects.Copied, objs, objects.Copied+objs, total)
	}
}

// TestDryRunWritesNothing: a dry run counts what a run would copy and
// leaves the target's tables and bucket empty.
func TestDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	s := source(t)
	src, dst, _ := sides(t, s, nil)
	var out bytes.Buffer
	rep, err := migrate.Run(context.Background(), src, dst, migrate.Options{DryRun: true, Mark: marker(dst), MarkLifetime: markLife, Progress: &out})
	if err != nil {
		t.Fatal(err)
	}
	rep.Write(&out)
	f := account(t, rep, s.friend)
	if f.Meals.Copied != s.meals[s.friend] || f.Photos.Copied != s.objects[s.friend] || f.Shares.Copied != 1 || f.Marked {
		t.Errorf("dry run counts meals %d, objects %d, shares %d, marked %v; want %d, %d, 1, false",
			f.Meals.Copied, f.Photos.Copied, f.Shares.Copied, f.Marked, s.meals[s.friend], s.objects[s.friend])
	}
	if !strings.Contains(out.String(), "dry run: would copy ") || !strings.Contains(out.String(), "nothing was written") {
		t.Errorf("dry run's report does not say what it would copy:\n%s", out.String())
	}
	for _, tb := range dst.Tables.All() {
		if items := scanTable(t, dst.DB, tb.Name); len(items) != 0 {
			t.Errorf("dry run wrote %d items to %s", len(items), tb.Name)
		}
	}
	if keys := listKeys(t, dst.S3, dst.Bucket, ""); len(keys) != 0 {
		t.Errorf("dry run wrote objects %v", keys)
	}
}

// TestConflictsAreNotOverwritten: a meal and an object the target holds
// with other content are listed as conflicts, left as they are, and the
// run is not OK (its account is not marked when its row differs).
func TestConflictsAreNotOverwritten(t *testing.T) {
	t.Parallel()
	s := source(t)
	src, dst, _ := sides(t, s, nil)
	ctx := context.Background()
	if _, err := migrate.Run(ctx, src, dst, migrate.Options{}); err != nil {
		t.Fatal(err)
	}
	// Change one meal's notes and one object's bytes in the target.
	ms := scanTable(t, dst.DB, dst.Tables.Meals.Name)
	changed := ms[0]
	changed["notes"] = sv("changed in the target")
	if _, err := dst.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(dst.Tables.Meals.Name), Item: changed}); err != nil {
		t.Fatal(err)
	}
	key := listKeys(t, dst.S3, dst.Bucket, photo.UserPrefix(s.admin))[0]
	if _, err := dst.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(dst.Bucket), Key: aws.String(key), Body: bytes.NewReader([]byte("other bytes"))}); err != nil {
		t.Fatal(err)
	}
	rep, err := migrate.Run(ctx, src, dst, migrate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	items, objects := rep.Totals()
	if items.Conflicts != 1 || objects.Conflicts != 1 || rep.OK() {
		t.Errorf("conflicts: %d items, %d objects, OK %v; want 1, 1, false", items.Conflicts, objects.Conflicts, rep.OK())
	}
	out, err := dst.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(dst.Tables.Meals.Name),
		Key: map[string]types.AttributeValue{"user_id": changed["user_id"], "sk": changed["sk"]}})
	if err != nil || str(out.Item, "notes") != "changed in the target" {
		t.Errorf("the conflicting meal was overwritten: notes %q (%v)", str(out.Item, "notes"), err)
	}
	var buf bytes.Buffer
	rep.Write(&buf)
	if !strings.Contains(buf.String(), "DIFFERENT") || !strings.Contains(buf.String(), "NOT verified") {
		t.Errorf("report does not show the difference:\n%s", buf.String())
	}
}

// TestAccountTakenByEmailIsNotCopied: a target that already has another
// account with a source account's email (its owner signed in and it
// moved) gets nothing of that account.
func TestAccountTakenByEmailIsNotCopied(t *testing.T) {
	t.Parallel()
	s := source(t)
	src, dst, _ := sides(t, s, nil)
	ctx := context.Background()
	if err := user.NewStore(dst.DB, dst.Tables.Users.Name, time.Now).Create(ctx, &user.User{ID: "provider-sub-1", Email: strings.ToUpper(friendEmail), Role: user.RoleOwner, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	rep, err := migrate.Run(ctx, src, dst, migrate.Options{Mark: marker(dst), MarkLifetime: markLife})
	if err != nil {
		t.Fatal(err)
	}
	if f := account(t, rep, s.friend); f.Skipped != "the target has another account with this email" {
		t.Errorf("friend: skipped %q, want the target's other account named", f.Skipped)
	}
	if keys := listKeys(t, dst.S3, dst.Bucket, photo.UserPrefix(s.friend)); len(keys) != 0 {
		t.Errorf("friend's objects were copied: %v", keys)
	}
	if rep.Unowned != 1 {
		t.Errorf("share links not copied = %d, want friend's 1", rep.Unowned)
	}
	if !account(t, rep, s.admin).Verified() || !rep.OK() {
		t.Error("the admin's account did not verify")
	}
}

// TestSourceUnchanged: the data dir's files are byte for byte what they
// were before the runs (the package's runs have opened it read-only).
func TestSourceUnchanged(t *testing.T) {
	s := source(t)
	before := dirDigest(t, s.dir)
	src, dst, _ := sides(t, s, nil)
	if _, err := migrate.Run(context.Background(), src, dst, migrate.Options{Mark: marker(dst), MarkLifetime: markLife}); err != nil {
		t.Fatal(err)
	}
	if after := dirDigest(t, s.dir); after != before {
		t.Errorf("the data dir changed:\nbefore %s\nafter  %s", before, after)
	}
}

func dirDigest(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&b, "%s:%d:%x ", filepath.Base(p), len(data), sum[:8])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestWritesPaced: with WriteUnits 4 the target's table writes (each
// item here under 1 KB: one unit) never run ahead of 4 a second plus a
// second's burst, on the pacer's clock.
func TestWritesPaced(t *testing.T) {
	t.Parallel()
	s := source(t)
	clock := &apptest.Clock{}
	clock.Set(time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC))
	var mu sync.Mutex
	var at []time.Time
	record := func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("recordWrites",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					if op := awsmiddleware.GetOperationName(ctx); op == "PutItem" || op == "UpdateItem" || op == "DeleteItem" {
						mu.Lock()
						at = append(at, clock.Now())
						mu.Unlock()
					}
					return next.HandleInitialize(ctx, in)
				}), middleware.After)
		})
	}
	src, dst, _ := sides(t, s, nil)
	dst.DB = dynamodb.New(dst.DB.Options(), record)
	const rate = 4
	rep, err := migrate.Run(context.Background(), src, dst, migrate.Options{WriteUnits: rate, Clock: clock, Mark: marker(dst), MarkLifetime: markLife})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatal("paced run not OK")
	}
	if len(at) < 3*rate {
		t.Fatalf("the run wrote %d items, too few to see a pace of %d a second", len(at), rate)
	}
	for i := range at {
		for j := i; j < len(at); j++ {
			if n, d := j-i+1, at[j].Sub(at[i]); float64(n) > rate*d.Seconds()+rate+0.001 {
				t.Fatalf("%d writes within %v, over %d a second plus a burst of %d", n, d, rate, rate)
			}
		}
	}
}

// TestMarksLocalAccountsOnly: an account local mode signed up is marked
// by ndiro migrate, until the run's time plus the lifetime, with the
// issuer its row records or else LocalIssuer; an account whose ID is a
// provider's subject (server mode) is copied but not marked, which the
// report says, and the run is OK.
func TestMarksLocalAccountsOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srcEnv, srcTables := apptest.Local(t)
	dstEnv, dstTables := apptest.Local(t)
	src := migrate.Side{DB: srcEnv.DynamoDB, S3: srcEnv.S3, Bucket: "test-photos", Tables: srcTables}
	dst := migrate.Side{DB: dstEnv.DynamoDB, S3: dstEnv.S3, Bucket: "test-photos", Tables: dstTables}
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	oldLocal, newLocal := localenv.Subject("old@example.com"), localenv.Subject("new@example.com")
	users := user.NewStore(src.DB, src.Tables.Users.Name, time.Now)
	for _, u := range []user.User{
		{ID: "dex-CgNzdWIS", Email: "server@example.com", Issuer: "https://dex.example.org"},
		{ID: oldLocal, Email: "old@example.com"},
		{ID: newLocal, Email: "new@example.com", Issuer: "http://127.0.0.1:4000/oidc"},
	} {
		u.Role, u.Status, u.CreatedAt = user.RoleOwner, user.StatusActive, now
		if err := users.Create(ctx, &u); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := migrate.Run(ctx, src, dst, migrate.Options{Mark: marker(dst), MarkLifetime: markLife, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rep.Write(&out); err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("run not OK:\n%s", out.String())
	}
	target := user.NewStore(dst.DB, dst.Tables.Users.Name, time.Now)
	srv, err := target.Get(ctx, "dex-CgNzdWIS")
	if err != nil || srv.AwaitingOwner != nil || srv.OwnerMark != nil || srv.Issuer != "https://dex.example.org" {
		t.Errorf("server mode account in the target = %+v, %v; want it copied with its issuer, not marked", srv, err)
	}
	if _, err := target.FindAwaitingOwner(ctx, "server@example.com"); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("FindAwaitingOwner(server mode account's email) = %v, want ErrNotFound", err)
	}
	if a := account(t, rep, "dex-CgNzdWIS"); a.Marked || a.Unmarked == "" || !strings.Contains(out.String(), "signs in as before") {
		t.Errorf("report of the server mode account: marked %v, unmarked %q; want it saying it signs in as before:\n%s", a.Marked, a.Unmarked, out.String())
	}
	for id, issuer := range map[string]string{oldLocal: migrate.LocalIssuer, newLocal: "http://127.0.0.1:4000/oidc"} {
		u, err := target.Get(ctx, id)
		want := user.OwnerMark{By: user.MarkedByMigrate, Expires: now.Add(markLife), Issuer: issuer}
		if err != nil || u.AwaitingOwner == nil || !u.AwaitingOwner.Equal(now) || u.OwnerMark == nil || *u.OwnerMark != want {
			t.Errorf("local account %s in the target: marked %v with %+v (%v), want at %v with %+v", id, u.AwaitingOwner, u.OwnerMark, err, now, want)
		}
		if !account(t, rep, id).Marked {
			t.Errorf("report: local account %s not marked", id)
		}
	}
}

// TestMarkNeedsLifetime: options that mark need a mark lifetime above
// 0; Run refuses them before it reads or writes anything.
func TestMarkNeedsLifetime(t *testing.T) {
	t.Parallel()
	mark := func(context.Context, string, time.Time, user.OwnerMark) error { return nil }
	for _, tc := range []struct {
		name string
		o    migrate.Options
		ok   bool
	}{
		{"marks for 30 days", migrate.Options{Mark: mark, MarkLifetime: markLife}, true},
		{"marks nothing", migrate.Options{}, true},
		{"marks with no lifetime", migrate.Options{Mark: mark}, false},
		{"marks with a negative lifetime", migrate.Options{Mark: mark, MarkLifetime: -time.Hour}, false},
	} {
		if err := tc.o.Check(); (err == nil) != tc.ok {
			t.Errorf("%s: Check() = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	if _, err := migrate.Run(context.Background(), migrate.Side{}, migrate.Side{}, migrate.Options{Mark: mark}); err == nil || !strings.Contains(err.Error(), "lifetime") {
		t.Errorf("Run with a mark and no lifetime = %v, want the lifetime refused", err)
	}
}
