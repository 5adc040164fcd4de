package admin_test

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/go-cmp/cmp"

	"ndiro/internal/admin"
	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/user"
)

const (
	adminEmail = "admin@example.com"
	keepEmail  = "keep@example.com"
	ghost      = "ghost-user" // a user whose row is gone
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// putMeals writes meal rows straight into the table.
func putMeals(t *testing.T, app *apptest.App, items ...map[string]types.AttributeValue) {
	t.Helper()
	for len(items) > 0 {
		k := min(25, len(items))
		var reqs []types.WriteRequest
		for _, it := range items[:k] {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
		}
		if _, err := app.Env.DynamoDB.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{app.Tables.Meals.Name: reqs}}); err != nil {
			t.Fatal(err)
		}
		items = items[k:]
	}
}

// mealRow is a meals item of uid on date at id, with photo_v v ("" for
// none), last changed long ago.
func mealRow(uid, date, id, v string) map[string]types.AttributeValue {
	it := map[string]types.AttributeValue{
		"user_id": s(uid), "sk": s(date + "#" + id), "meal_id": s(id), "date": s(date),
		"time": s(id[:2] + ":" + id[2:4] + ":" + id[4:6]), "kind": s("snack"), "version": n("1"),
		"created_at": s("2026-01-01T00:00:00Z"), "updated_at": s("2026-01-01T00:00:00Z"),
	}
	if v != "" {
		it["photo_v"] = n(v)
	}
	return it
}

func putObject(t *testing.T, app *apptest.App, key, version string) {
	t.Helper()
	_, err := app.Env.S3.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String("test-photos"), Key: aws.String(key), Body: bytes.NewReader([]byte("jpeg")),
		Metadata: map[string]string{"photo-v": version},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func keys(t *testing.T, app *apptest.App, prefix string) []string {
	t.Helper()
	out, err := app.Env.S3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("test-photos"), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var ks []string
	for _, o := range out.Contents {
		ks = append(ks, aws.ToString(o.Key))
	}
	sort.Strings(ks)
	return ks
}

func found(t *testing.T, page *apptest.Response) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, k := range admin.Kinds {
		got[string(k)] = strings.TrimSpace(page.Doc().Find("#kind-" + string(k) + " .found").Text())
	}
	return got
}

// TestOrphans plants each kind of orphan directly in the emulators, then
// checks that the monitor finds each, and that each clean-up repairs its
// kind and touches nothing else.
func TestOrphans(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	c.SignIn(adminEmail)
	inv := c.CreateInvite(url.Values{"role": {"owner"}})
	keeper := app.Client()
	keeper.SignInVia("/login?invite="+inv, keepEmail)
	keep := localenv.Subject(keepEmail)
	form := url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}}
	if r := keeper.PostMultipart("/meals", form, apptest.File{Field: "photo", Name: "p.jpg", Body: apptest.JPEG(t, 64, 48, color.RGBA{R: 200})}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("add meal = %d", r.StatusCode)
	}
	goodKeys := keys(t, app, photo.UserPrefix(keep))

	// 1. Meals whose user is gone.
	putMeals(t, app, mealRow(ghost, "2026-09-01", "080000-aaaaaa", ""), mealRow(ghost, "2026-09-02", "090000-bbbbbb", "5"))
	// 2. Photos whose user is gone.
	putObject(t, app, photo.Key(ghost, "2026-09-02", "090000-bbbbbb", photo.SizeDisplay), "5")
	// 3. Photos of a living user that no meal names: no row at all, a row
	// without a photo, and a key that is no photo key.
	putMeals(t, app, mealRow(keep, "2026-09-03", "100000-cccccc", ""))
	putObject(t, app, photo.Key(keep, "2026-09-03", "100000-cccccc", photo.SizeDisplay), "7")
	putObject(t, app, photo.Key(keep, "2026-09-04", "110000-dddddd", photo.SizeThumb), "8")
	putObject(t, app, photo.UserPrefix(keep)+"stray.bin", "0")
	// 4. Meals whose photo is missing, or of another version.
	putMeals(t, app, mealRow(keep, "2026-09-05", "120000-eeeeee", "9"), mealRow(keep, "2026-09-06", "130000-ffffff", "10"))
	putObject(t, app, photo.Key(keep, "2026-09-06", "130000-ffffff", photo.SizeDisplay), "11")
	putObject(t, app, photo.Key(keep, "2026-09-06", "130000-ffffff", photo.SizeThumb), "10")
	// 5. An object no user ID makes, written outside ndiro: reported at
	// once, never cleaned up.
	foreign := "users/a%b/meals/2026-09-01/123000-abcdef.jpg"
	putObject(t, app, foreign, "0")
	// 6. Session keys no row lists: one of the keeper's whose session
	// ended (its entry is gone), one of the ghost's. The admin's and the
	// keeper's live sessions' keys are no orphans.
	for _, k := range []struct{ id, uid string }{{strings.Repeat("a", 64), keep}, {strings.Repeat("b", 64), ghost}} {
		at, _ := attributevalue.Marshal(app.Clock.Now())
		if _, err := app.Env.DynamoDB.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(app.Tables.Users.Name), Item: map[string]types.AttributeValue{
			"user_id": &types.AttributeValueMemberS{Value: user.ReservedPrefix + "session#" + k.id}, "uid": &types.AttributeValueMemberS{Value: k.uid}, "at": at,
		}}); err != nil {
			t.Fatal(err)
		}
	}
	// Never orphans: a short-lived upload.
	putObject(t, app, photo.PendingPrefix(keep)+"tok.jpg", "0")

	check := func() *apptest.Response {
		t.Helper()
		if r := c.PostForm("/admin/monitor/check", nil); r.StatusCode != http.StatusSeeOther {
			t.Fatalf("check = %d", r.StatusCode)
		}
		if err := app.Monitor.WaitOrphans(t.Context()); err != nil {
			t.Fatal(err)
		}
		return c.Get("/admin/monitor")
	}
	// Everything planted is new: within the grace period, nothing but the
	// rows whose user is gone and the meals counts as an orphan.
	if d := cmp.Diff(map[string]string{"meals-without-user": "2", "photos-without-user": "0", "photos-without-meal": "0", "missing-photos": "2", "foreign-objects": "1", "session-keys-without-session": "0"}, found(t, check())); d != "" {
		t.Errorf("findings within the grace period (-want +got):\n%s", d)
	}
	app.Clock.Advance(2 * admin.Grace)
	page := check()
	if got := page.Text("#orphans > p.muted"); !strings.Contains(got, "changed in the last hour is left alone") {
		t.Errorf("orphans intro = %q, want it to name the grace period, an hour", got)
	}
	if d := cmp.Diff(map[string]string{"meals-without-user": "2", "photos-without-user": "1", "photos-without-meal": "3", "missing-photos": "2", "foreign-objects": "1", "session-keys-without-session": "2"}, found(t, page)); d != "" {
		t.Fatalf("findings (-want +got):\n%s", d)
	}
	if sample := page.Text("#kind-foreign-objects code"); sample != foreign {
		t.Errorf("sample of foreign objects = %q, want %q", sample, foreign)
	}
	if page.Doc().Find("#kind-foreign-objects form").Length() != 0 {
		t.Error("foreign objects are offered a clean-up")
	}
	if r := c.PostForm("/admin/monitor/clean/foreign-objects", nil); r.StatusCode != http.StatusConflict {
		t.Errorf("clean foreign-objects = %d, want 409", r.StatusCode)
	}
	if sample := page.Text("#kind-photos-without-user code"); sample != photo.Key(ghost, "2026-09-02", "090000-bbbbbb", photo.SizeDisplay) {
		t.Errorf("sample of photos without user = %q", sample)
	}

	for _, k := range admin.Kinds {
		if k == admin.ForeignObjects {
			continue
		}
		if r := c.PostForm("/admin/monitor/clean/"+string(k), nil); r.StatusCode != http.StatusSeeOther {
			t.Fatalf("clean %s = %d", k, r.StatusCode)
		}
		if err := app.Monitor.WaitOrphans(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	// Repaired: nothing of the ghost, no stray objects, dangling photo_v
	// cleared; kept: the real meal and its photo, the pending upload.
	if ms, _ := app.Meals.All(t.Context(), ghost); len(ms) != 0 {
		t.Errorf("ghost meals left: %d", len(ms))
	}
	want := append(append([]string{}, goodKeys...), photo.Key(keep, "2026-09-06", "130000-ffffff", photo.SizeDisplay), photo.Key(keep, "2026-09-06", "130000-ffffff", photo.SizeThumb), foreign)
	sort.Strings(want)
	if d := cmp.Diff(want, keys(t, app, "users/")); d != "" {
		t.Errorf("objects after clean-up (-want +got):\n%s", d)
	}
	if got := keys(t, app, "pending/"); len(got) != 1 {
		t.Errorf("pending uploads after clean-up = %v, want the one kept", got)
	}
	ms, err := app.Meals.All(t.Context(), keep)
	if err != nil || len(ms) != 4 {
		t.Fatalf("keeper's meals = %d, %v; want 4", len(ms), err)
	}
	for _, m := range ms {
		hasPhoto := m.Date == "2026-09-01"
		if m.HasPhoto() != hasPhoto {
			t.Errorf("meal %s has photo_v %d, want a photo only on the real meal", m.SK, m.PhotoV)
		}
	}
	if r := keeper.Get(ms[0].ThumbURL()); r.StatusCode != http.StatusOK {
		t.Errorf("the real meal's photo = %d, want 200", r.StatusCode)
	}
	// The objects left of the version-mismatched meal are photos without a
	// meal now; a second check finds exactly them.
	if d := cmp.Diff(map[string]string{"meals-without-user": "0", "photos-without-user": "0", "photos-without-meal": "2", "missing-photos": "0", "foreign-objects": "1", "session-keys-without-session": "0"}, found(t, check())); d != "" {
		t.Errorf("findings after clean-up (-want +got):\n%s", d)
	}
	// The live sessions outlived the clean-up of the dangling keys.
	for name, cl := range map[string]*apptest.Client{"admin": c, "keeper": keeper} {
		if r := cl.Get("/meals"); r.StatusCode != http.StatusOK {
			t.Errorf("%s after the clean-up of session keys: GET /meals = %d, want 200", name, r.StatusCode)
		}
	}
}

// TestCleanKeepsObjectWrittenSinceCheck: an object the check found with no
// meal naming it is written again before the clean-up (an upload puts its
// objects before its meal row); the clean-up sees it is younger than Grace
// and leaves it. Once it has settled with still no meal naming it, the
// next check and clean-up remove it.
func TestCleanKeepsObjectWrittenSinceCheck(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	c.SignIn(adminEmail)
	owner := localenv.Subject(adminEmail)
	key := photo.Key(owner, "2026-09-03", "100000-cccccc", photo.SizeDisplay)
	putObject(t, app, key, "7")
	run := func(path string) {
		t.Helper()
		if r := c.PostForm(path, nil); r.StatusCode != http.StatusSeeOther {
			t.Fatalf("POST %s = %d", path, r.StatusCode)
		}
		if err := app.Monitor.WaitOrphans(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	app.Clock.Advance(2 * admin.Grace)
	run("/admin/monitor/check")
	if got := found(t, c.Get("/admin/monitor"))["photos-without-meal"]; got != "1" {
		t.Fatalf("photos without meal = %q, want 1", got)
	}

	// An upload to that meal writes the object again, and the clean-up
	// runs right after, before the upload has written its row. (S3 dates
	// objects by the real clock: the app's clock goes back to it.)
	putObject(t, app, key, "8")
	app.Clock.Set(time.Now())
	run("/admin/monitor/clean/photos-without-meal")
	if got := keys(t, app, photo.UserPrefix(owner)); !slices.Contains(got, key) {
		t.Fatalf("the clean-up deleted an object just written; objects left %v", got)
	}

	app.Clock.Advance(2 * admin.Grace)
	run("/admin/monitor/check")
	run("/admin/monitor/clean/photos-without-meal")
	if got := keys(t, app, photo.UserPrefix(owner)); slices.Contains(got, key) {
		t.Errorf("a settled object no meal names was kept: %v", got)
	}
}

// TestCounts checks the monitor's counts against what was planted.
func TestCounts(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	c.SignIn(adminEmail)
	c.CreateInvite(url.Values{"role": {"owner"}})
	used := c.CreateInvite(url.Values{"role": {"owner"}})
	revoked := c.CreateInvite(url.Values{"role": {"owner"}})
	c.PostForm("/admin/invites/"+revoked+"/revoke", nil)
	app.Client().SignInVia("/login?invite="+used, keepEmail)
	var rows []map[string]types.AttributeValue
	for i := range 250 {
		rows = append(rows, mealRow(localenv.Subject(keepEmail), "2026-08-01", fmt.Sprintf("0800%02d-%06x", i%60, i), ""))
	}
	putMeals(t, app, rows...)
	share := url.Values{"label": {"x"}, "from": {"2026-08-01"}, "to": {"2026-08-02"}, "expiry": {"7"}, "notes": {"1"}, "numbers": {"1"}}
	c.CreateShare(share)
	c.CreateShare(share)
	c.CreateShare(url.Values{"label": {"x"}, "from": {"2026-08-01"}, "to": {"2026-08-02"}, "expiry": {"never"}})
	app.Clock.Advance(8 * 24 * time.Hour) // two shares and the open invite expire

	c.Get("/admin/monitor") // starts the count
	if err := app.Monitor.WaitCounts(t.Context()); err != nil {
		t.Fatal(err)
	}
	page := c.Get("/admin/monitor")
	got := map[string]string{}
	for _, id := range []string{"users", "meals", "photos", "shares", "invites"} {
		got[id] = page.Text("#count-" + id)
	}
	want := map[string]string{"users": "2", "meals": "250", "photos": "0", "shares": "1 active", "invites": "0 open"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("counts (-want +got):\n%s", d)
	}
	if detail := page.Text("#count-invites + td"); detail != "1 used, 1 expired, 1 revoked" {
		t.Errorf("invite detail = %q", detail)
	}
	if detail := page.Text("#count-shares + td"); !strings.HasPrefix(detail, "2 expired") {
		t.Errorf("share detail = %q", detail)
	}
}

// callTimes records, on the fake clock, when each DynamoDB read was made,
// how many items it read, and what it cost in read units: the consumed
// capacity the server reports (DynamoDB, dynalite), or one unit an item
// where it reports none (minidyn), an upper bound for small items.
type callTimes struct {
	mu    sync.Mutex
	clock *apptest.Clock
	calls []call
}

type call struct {
	at           time.Time
	items, units int
}

func (ct *callTimes) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("callTimes",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleInitialize(ctx, in)
				items, units := 0, 0.0
				switch r := out.Result.(type) {
				case *dynamodb.ScanOutput:
					items = int(max(r.Count, r.ScannedCount))
					if r.ConsumedCapacity != nil && r.ConsumedCapacity.CapacityUnits != nil {
						units = *r.ConsumedCapacity.CapacityUnits
					}
				case *dynamodb.QueryOutput:
					items = int(max(r.Count, r.ScannedCount))
					if r.ConsumedCapacity != nil && r.ConsumedCapacity.CapacityUnits != nil {
						units = *r.ConsumedCapacity.CapacityUnits
					}
				}
				if units == 0 {
					units = float64(items)
				}
				if op := awsmiddleware.GetOperationName(ctx); (op == "Scan" || op == "Query") && ct.clock != nil {
					ct.mu.Lock()
					ct.calls = append(ct.calls, call{ct.clock.Now(), items, max(int(math.Ceil(units)), 1)})
					ct.mu.Unlock()
				}
				return out, md, err
			}), middleware.After)
	})
}

// TestPacing runs the counts and the orphan check over 1,200 meals with a
// fake clock and checks, through SDK middleware, that the reads never go
// faster than the stated rate: in any second, at most ReadUnitsPerSecond
// plus one burst of read units.
func TestPacing(t *testing.T) {
	t.Parallel()
	ct := &callTimes{}
	app := apptest.New(t, apptest.Options{DynamoOptions: []func(*dynamodb.Options){ct.option}})
	c := app.Client()
	c.SignIn(adminEmail)
	var rows []map[string]types.AttributeValue
	// Long notes, so that a server that reports consumed capacity (by
	// size, 4 KB a unit) charges enough to be paced too.
	notes := &types.AttributeValueMemberS{Value: strings.Repeat("x", 2000)}
	for i := range 1200 {
		row := mealRow(localenv.Subject(adminEmail), fmt.Sprintf("2026-%02d-01", 1+i%12), fmt.Sprintf("0800%02d-%06x", i%60, i), "")
		row["notes"] = notes
		rows = append(rows, row)
	}
	putMeals(t, app, rows...)
	ct.mu.Lock()
	ct.clock = app.Clock
	ct.mu.Unlock()
	start := app.Clock.Now()
	c.Get("/admin/monitor")
	if err := app.Monitor.WaitCounts(t.Context()); err != nil {
		t.Fatal(err)
	}
	if r := c.PostForm("/admin/monitor/check", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("check = %d", r.StatusCode)
	}
	if err := app.Monitor.WaitOrphans(t.Context()); err != nil {
		t.Fatal(err)
	}
	ct.mu.Lock()
	calls := append([]call{}, ct.calls...)
	ct.mu.Unlock()
	total, items := 0, 0
	for _, cl := range calls {
		total += cl.units
		items += cl.items
	}
	if items < 2400 {
		t.Fatalf("the background reads read %d items, want the meals table twice at least (2400)", items)
	}
	limit := admin.ReadUnitsPerSecond + admin.ReadUnitsBurst
	for i, a := range calls {
		sum := 0
		for _, b := range calls[i:] {
			if b.at.Sub(a.at) >= time.Second {
				break
			}
			sum += b.units
		}
		if sum > limit {
			t.Fatalf("%d read units spent in the second from %v, want at most %d", sum, a.at.Sub(start), limit)
		}
	}
	if took := app.Clock.Now().Sub(start); took < time.Duration(total/admin.ReadUnitsPerSecond-admin.ReadUnitsBurst/admin.ReadUnitsPerSecond)*time.Second {
		t.Errorf("%d read units spent in %v of fake time, faster than %d a second", total, took, admin.ReadUnitsPerSecond)
	}
}

// TestMonitorStopsWithTheServer: Close cancels a count held in the middle
// of a Scan and waits for it, and starts no count or orphan check after.
func TestMonitorStopsWithTheServer(t *testing.T) {
	t.Parallel()
	f := &apptest.Faults{}
	app := apptest.New(t, apptest.Options{Faults: f})
	held, release := f.Hold("Scan", app.Tables.Meals.Name)
	defer release()
	c := app.Client()
	c.SignIn(adminEmail)
	c.Get("/admin/monitor") // starts the count
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the count never reached the meals table")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := app.Monitor.Close(ctx); err != nil {
		t.Fatalf("Close with a count held mid-Scan: %v", err)
	}
	if counts, running, lastErr := app.Monitor.Counts(); counts != nil || running || !strings.Contains(lastErr, "context canceled") {
		t.Errorf("after Close: counts %v, running %v, last error %q; want none, not running, canceled", counts, running, lastErr)
	}
	if err := app.Monitor.StartCheck(); err != admin.ErrClosed {
		t.Errorf("StartCheck after Close = %v, want ErrClosed", err)
	}
}

// TestOrphanGraceSetting: with NDIRO_ORPHAN_GRACE set, the check counts
// an object no meal names only once it is that old, not at the default
// hour.
func TestOrphanGraceSetting(t *testing.T) {
	t.Parallel()
	app := apptest.New(t, apptest.Options{Env: map[string]string{"NDIRO_ORPHAN_GRACE": "3h"}})
	c := app.Client()
	c.SignIn(adminEmail)
	owner := localenv.Subject(adminEmail)
	putObject(t, app, photo.Key(owner, "2026-09-04", "100000-dddddd", photo.SizeDisplay), "7")
	if got := c.Get("/admin/monitor").Text("#orphans > p.muted"); !strings.Contains(got, "changed in the last 3 hours is left alone") {
		t.Errorf("orphans intro = %q, want it to name the 3 h grace period", got)
	}
	check := func() string {
		t.Helper()
		if r := c.PostForm("/admin/monitor/check", nil); r.StatusCode != http.StatusSeeOther {
			t.Fatalf("POST check = %d", r.StatusCode)
		}
		if err := app.Monitor.WaitOrphans(t.Context()); err != nil {
			t.Fatal(err)
		}
		return found(t, c.Get("/admin/monitor"))["photos-without-meal"]
	}
	app.Clock.Advance(2 * admin.Grace)
	if got := check(); got != "0" {
		t.Errorf("photos without meal after 2h with a 3h grace = %q, want 0", got)
	}
	app.Clock.Advance(2 * admin.Grace)
	if got := check(); got != "1" {
		t.Errorf("photos without meal after 4h with a 3h grace = %q, want 1", got)
	}
}

// usageOf returns the account's usage as its users row holds it (read
// past the store's cache) and what storage holds: its meals rows and the
// bytes of its objects.
func usageOf(t *testing.T, app *apptest.App, id string) (row, truth user.Usage) {
	t.Helper()
	ctx := context.Background()
	out, err := app.Env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(app.Tables.Users.Name), Key: map[string]types.AttributeValue{"user_id": s(id)}, ConsistentRead: aws.Bool(true)})
	if err != nil || len(out.Item) == 0 {
		t.Fatalf("users row of %s: %v", id, err)
	}
	var u user.User
	if err := attributevalue.UnmarshalMap(out.Item, &u); err != nil {
		t.Fatal(err)
	}
	free := func(context.Context, int) error { return nil }
	meals, err := app.Meals.CountByOwner(ctx, free)
	if err != nil {
		t.Fatal(err)
	}
	truth.Meals = meals[id]
	err = app.Objects.List(ctx, photo.UserPrefix(id), free, func(o photo.ObjectInfo) error {
		truth.PhotoBytes += o.Size
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return u.Usage, truth
}

// TestUsageRepair: a crash between a write and its count (a meal row and
// a photo object the users row never counted) is found by the monitor's
// count and repaired once a second count, CountsEvery later, finds the
// same drift at the same revision of the row; a drift seen once, or a
// row some counted write changed between the two counts, is left to the
// next count.
func TestUsageRepair(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	c.SignIn(adminEmail)
	id := localenv.Subject(adminEmail)
	if r := c.PostMultipart("/meals", url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}}, apptest.File{Field: "photo", Name: "p.jpg", Body: apptest.JPEG(t, 64, 48, color.RGBA{R: 200})}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("add meal = %d", r.StatusCode)
	}
	if row, truth := usageOf(t, app, id); row != truth {
		t.Fatalf("before the crash the row counts %+v, storage holds %+v", row, truth)
	}
	crash := func(mealID string) {
		t.Helper()
		putMeals(t, app, mealRow(id, "2026-08-01", mealID, "7"))
		putObject(t, app, photo.Key(id, "2026-08-01", mealID, photo.SizeDisplay), "7")
	}
	count := func(step string) string {
		t.Helper()
		app.Clock.Advance(admin.CountsEvery)
		c.Get("/admin/monitor")
		if err := app.Monitor.WaitCounts(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, _, lastErr := app.Monitor.Counts(); lastErr != "" {
			t.Fatalf("%s: count failed: %s", step, lastErr)
		}
		return c.Get("/admin/monitor").Text("#count-usage")
	}

	crash("080000-aaaaaa")
	if got := count("first count"); got != "0 repaired" {
		t.Errorf("first count: %q, want 0 repaired", got)
	}
	row, truth := usageOf(t, app, id)
	if row == truth || truth.Meals != 2 {
		t.Fatalf("after one count the row counts %+v, storage holds %+v: want the drift left (seen once)", row, truth)
	}
	if got := count("second count"); got != "1 repaired" {
		t.Errorf("second count: %q, want 1 repaired", got)
	}
	if row, truth := usageOf(t, app, id); row != truth {
		t.Errorf("after the second count the row counts %+v, storage holds %+v: want them equal", row, truth)
	}

	// A drift again, seen once; then a meal added and deleted (counted
	// writes: the row's revision moves, its counts come back) before the
	// next count, which leaves it; the one after repairs it.
	crash("090000-bbbbbb")
	count("third count")
	if r := c.PostForm("/meals", url.Values{"date": {"2026-09-02"}, "time": {"08:00"}, "kind": {"breakfast"}, "notes": {"toast"}}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("add meal = %d", r.StatusCode)
	}
	all, err := app.Meals.All(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	added := slices.IndexFunc(all, func(m meal.Meal) bool { return m.Date == "2026-09-02" })
	if added < 0 {
		t.Fatalf("no meal of 2026-09-02 in %+v", all)
	}
	if r := c.PostForm(all[added].DetailURL()+"/delete", url.Values{}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete = %d", r.StatusCode)
	}
	if got := count("fourth count"); got != "0 repaired" {
		t.Errorf("fourth count, after counted writes: %q, want 0 repaired", got)
	}
	if row, truth := usageOf(t, app, id); row == truth {
		t.Errorf("the fourth count repaired a row counted writes changed since the third: %+v", row)
	}
	if got := count("fifth count"); got != "1 repaired" {
		t.Errorf("fifth count: %q, want 1 repaired", got)
	}
	if row, truth := usageOf(t, app, id); row != truth || truth.Meals != 3 {
		t.Errorf("after the fifth count the row counts %+v, storage holds %+v: want them equal, 3 meals", row, truth)
	}
}
