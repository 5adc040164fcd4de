package localenv_test

import (
	"context"
	"fmt"
	"image/color"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/user"
)

// The owner's diary month the test writes into: in the past, so no date
// is refused as in the future.
const fullMonth = "2025-03"

// createdAt is the Location of a created meal: its month, scrolled to it.
var createdAt = regexp.MustCompile(`^/meals\?month=` + fullMonth + `#meal-(\d{6}-[0-9a-f]{6})$`)

// disk is a data dir that can be made (nearly) full and freed again.
type disk struct {
	dir    string
	local  func(*localenv.Options)
	rounds []fillRound
	free   func()
}

// fillRound is one filling of the disk: how, whether the changes carry
// photos, and which backend is to refuse writes then (the start of what
// WriteHealth says: "local " for either).
type fillRound struct {
	fill    func()
	photos  bool
	failing string
}

// tmpfsDisk is a real 12 MB file system, filled with a filler file and
// freed by removing it: first leaving room for a few photos (s3.bolt or
// the journal fills first, as it happens), then, with changes without
// photos, for a few journal records (the journal fills).
func tmpfsDisk(t *testing.T) disk {
	root := localenv.MountTmpfs(t, "12m")
	d := disk{dir: filepath.Join(root, "data")}
	var remove func()
	fill := func(leave int64) func() {
		return func() { remove = localenv.FillDisk(t, root, leave) }
	}
	d.rounds = []fillRound{{fill(160 << 10), true, "local "}, {fill(6 << 10), false, "local dynamodb"}}
	d.free = func() { remove() }
	return d
}

// injectedDisk fails the journal's and snapshot's writes with ENOSPC past
// what the data dir holds plus a few records, as a full disk would, on
// any machine.
func injectedDisk(t *testing.T) disk {
	d := disk{dir: t.TempDir()}
	limit := localenv.NewDiskLimit(d.dir)
	d.local = limit.Apply
	fill := func() { limit.Fill(6 << 10) }
	d.rounds = []fillRound{{fill, true, "local dynamodb"}, {fill, false, "local dynamodb"}}
	d.free = limit.Free
	return d
}

// TestFullDiskThroughTheApp fills the data dir's disk while owners create
// (with and without photos), edit and delete meals through the app:
// every change acknowledged is there after a restart and every one
// refused is not; the refused see the page saying the disk is full (507),
// never "Meal moved or deleted" for a delete; creates answer 303 to their
// month as ever; reads (and signing in) answer throughout; and once space
// is freed, writes are taken again without a restart.
func TestFullDiskThroughTheApp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		disk func(*testing.T) disk
	}{
		{"tmpfs", tmpfsDisk},
		{"injected ENOSPC", injectedDisk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fullDiskScenario(t, tc.disk(t))
		})
	}
}

// ownerModel is what one owner was told: meals acknowledged (by tag, the
// first word of the notes), tags whose create was refused, tags
// acknowledged as deleted.
type ownerModel struct {
	email   string
	c       *apptest.Client
	live    map[string]meal.Meal
	refused map[string]bool
	deleted map[string]bool
	// counts of answers by kind, for the log
	acks, refusals int
}

func newOwner(t *testing.T, app *apptest.App, email string) *ownerModel {
	t.Helper()
	err := app.Users.Create(context.Background(), &user.User{ID: localenv.Subject(email), Email: email, Role: user.RoleOwner, Status: user.StatusActive})
	if err != nil {
		t.Fatal(err)
	}
	c := app.Client()
	c.SignIn(email)
	return &ownerModel{email: email, c: c, live: map[string]meal.Meal{}, refused: map[string]bool{}, deleted: map[string]bool{}}
}

// checkRefused checks a refusal: 507 with Retry-After and the page saying
// the disk is full and nothing was saved.
func checkRefused(t *testing.T, what string, r *apptest.Response) {
	t.Helper()
	if r.StatusCode != http.StatusInsufficientStorage {
		t.Errorf("%s = %d, want 507; body %.300s", what, r.StatusCode, r.Body)
		return
	}
	if got := r.Header.Get("Retry-After"); got != "30" {
		t.Errorf("%s: Retry-After %q, want 30", what, got)
	}
	if got := r.Text("main h1"); got != "The server's disk is full" {
		t.Errorf("%s: heading %q, want %q", what, got, "The server's disk is full")
	}
	if got := r.Text("main p"); !strings.HasPrefix(got, "Nothing was saved: the disk of the server that keeps this diary is full.") {
		t.Errorf("%s: message %q, want it to say nothing was saved as the disk is full", what, got)
	}
}

// create posts a new meal tagged tag (with a photo of colour seed if
// photo) and records the answer: 303 to its month, or refused.
func (o *ownerModel) create(t *testing.T, tag string, withPhoto bool, seed int) {
	form := url.Values{"date": {fmt.Sprintf("%s-%02d", fullMonth, 1+seed%28)}, "time": {fmt.Sprintf("12:%02d", seed%60)}, "kind": {"lunch"}, "notes": {tag + " v1"}}
	var r *apptest.Response
	if withPhoto {
		r = o.c.PostMultipart("/meals", form, apptest.File{Field: "photo", Name: "meal.jpg", Body: apptest.JPEG(t, 400, 300, color.RGBA{uint8(seed * 37), uint8(seed * 91), 90, 255})})
	} else {
		r = o.c.PostForm("/meals", form)
	}
	if r.StatusCode == http.StatusSeeOther {
		m := createdAt.FindStringSubmatch(r.Location())
		if m == nil {
			t.Errorf("create %s: Location %q, want /meals?month=%s#meal-{id}", tag, r.Location(), fullMonth)
			return
		}
		o.live[tag] = meal.Meal{ID: m[1], Date: form.Get("date"), Notes: tag + " v1", Version: 1, Photo: meal.Photo{PhotoV: photo.Version(boolInt(withPhoto))}}
		o.acks++
		return
	}
	checkRefused(t, "create "+tag, r)
	o.refused[tag] = true
	o.refusals++
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// edit rewrites the notes of the meal tag; a refusal leaves it as it was.
func (o *ownerModel) edit(t *testing.T, tag string) {
	m := o.live[tag]
	notes := fmt.Sprintf("%s v%d", tag, m.Version+1)
	detail := "/meals/" + m.Date + "/" + m.ID
	edit := o.c.Get(detail + "/edit")
	if edit.StatusCode != http.StatusOK {
		t.Errorf("edit form of %s = %d, want 200 (reads go on)", tag, edit.StatusCode)
		return
	}
	tod, _ := edit.Doc().Find("input[name=time]").Attr("value")
	r := o.c.PostForm(detail, url.Values{"date": {m.Date}, "time": {tod}, "kind": {"dinner"}, "notes": {notes}, "version": {fmt.Sprint(m.Version)}})
	if r.StatusCode == http.StatusSeeOther {
		m.Notes, m.Version = notes, m.Version+1
		o.live[tag] = m
		o.acks++
		return
	}
	checkRefused(t, "edit "+tag, r)
	o.refusals++
}

// remove deletes the meal tag; a refusal leaves it there.
func (o *ownerModel) remove(t *testing.T, tag string) {
	m := o.live[tag]
	r := o.c.PostForm("/meals/"+m.Date+"/"+m.ID+"/delete", url.Values{})
	if r.StatusCode == http.StatusSeeOther {
		delete(o.live, tag)
		o.deleted[tag] = true
		o.acks++
		return
	}
	checkRefused(t, "delete "+tag, r)
	if r.Text("main h1") == "Meal moved or deleted" {
		t.Errorf("delete %s on a full disk says the meal moved or was deleted", tag)
	}
	o.refusals++
}

// work makes ops changes: creates (every fourth with a photo, if
// photos), edits and deletes of the owner's own meals, in turn; it stops
// early after three refusals.
func (o *ownerModel) work(t *testing.T, w, round, ops int, photos bool) {
	start := o.refusals
	for i := range ops {
		// The meals made in this round (the two made before the disk
		// filled are left for the end; a round without photos touches no
		// photo).
		var tags []string
		for tag := range o.live {
			if strings.HasPrefix(tag, fmt.Sprintf("w%d-r%d", w, round)) {
				tags = append(tags, tag)
			}
		}
		slices.Sort(tags)
		switch {
		case i%4 == 2 && len(tags) > 0:
			o.edit(t, tags[i%len(tags)])
		case i%4 == 3 && len(tags) > 1:
			o.remove(t, tags[0])
		default:
			o.create(t, fmt.Sprintf("w%d-r%dn%d", w, round, i), photos && i%4 == 0, w*100+round*40+i)
		}
		if o.refusals-start >= 3 {
			return
		}
	}
}

// verify compares the owner's meals in app with what they were told.
func (o *ownerModel) verify(t *testing.T, app *apptest.App) {
	t.Helper()
	found, err := app.Meals.All(context.Background(), localenv.Subject(o.email))
	if err != nil {
		t.Fatal(err)
	}
	byTag := map[string]meal.Meal{}
	for _, m := range found {
		tag, _, _ := strings.Cut(m.Notes, " ")
		byTag[tag] = m
	}
	for tag, want := range o.live {
		got, ok := byTag[tag]
		if !ok {
			t.Errorf("%s: acknowledged meal %s lost after the restart", o.email, tag)
			continue
		}
		if got.ID != want.ID || got.Notes != want.Notes || got.Version != want.Version || got.HasPhoto() != (want.PhotoV != 0) {
			t.Errorf("%s: meal %s after the restart = id %s, %q, version %d, photo %v; want id %s, %q, version %d, photo %v", o.email, tag,
				got.ID, got.Notes, got.Version, got.HasPhoto(), want.ID, want.Notes, want.Version, want.PhotoV != 0)
		}
		if got.HasPhoto() {
			if r := o.c.Get(got.DisplayURL()); r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "image/jpeg" {
				t.Errorf("%s: photo of %s after the restart = %d %s, want 200 image/jpeg", o.email, tag, r.StatusCode, r.Header.Get("Content-Type"))
			}
		}
		delete(byTag, tag)
	}
	for tag := range o.deleted {
		if _, ok := byTag[tag]; ok {
			t.Errorf("%s: meal %s acknowledged as deleted is back", o.email, tag)
		}
	}
	for tag := range o.refused {
		if _, ok := byTag[tag]; ok {
			t.Errorf("%s: meal %s whose create was refused exists after the restart", o.email, tag)
		}
	}
	for tag, m := range byTag {
		if !o.deleted[tag] && !o.refused[tag] {
			t.Errorf("%s: meal %s (%s) was never acknowledged", o.email, tag, m.Notes)
		}
	}
}

func fullDiskScenario(t *testing.T, d disk) {
	ctx := context.Background()
	opts := apptest.Options{DataDir: d.dir, Local: func(o *localenv.Options) {
		o.ProbeEvery = 5 * time.Millisecond
		if d.local != nil {
			d.local(o)
		}
	}}
	app := apptest.New(t, opts)
	const workers = 4
	owners := make([]*ownerModel, workers)
	for w := range owners {
		owners[w] = newOwner(t, app, fmt.Sprintf("owner%d@example.com", w))
		// Meals that were there before the disk filled.
		owners[w].create(t, fmt.Sprintf("w%d-base", w), true, w)
		owners[w].create(t, fmt.Sprintf("w%d-base2", w), false, w+50)
	}
	if t.Failed() {
		return
	}
	for round, r := range d.rounds {
		fullRound(t, app, owners, d, round, r)
		if t.Failed() {
			return
		}
	}
	var acks, refusals int
	for _, o := range owners {
		acks, refusals = acks+o.acks, refusals+o.refusals
	}
	t.Logf("%d changes acknowledged, %d refused", acks, refusals)

	// Restart on the same data dir.
	app.Stop()
	app = apptest.New(t, opts)
	for _, o := range owners {
		o.c = app.Client()
		o.c.SignIn(o.email)
		o.verify(t, app)
	}
	r, err := meal.CheckPhotos(ctx, app.Meals, photo.NewStore(app.Env.S3, "test-photos"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Missing) > 0 {
		t.Errorf("after the restart, %d meals miss their photo objects: %+v", len(r.Missing), r.Missing)
	}
}

// fullRound fills the disk as r says, runs the owners' changes (with
// photos or not) until each has been refused a few times, checks a
// delete and an edit refused, frees the disk and waits for writes to be
// taken again, checking one.
func fullRound(t *testing.T, app *apptest.App, owners []*ownerModel, d disk, round int, r fillRound) {
	t.Helper()
	before := 0
	for _, o := range owners {
		before += o.refusals
	}
	r.fill()
	// Reads go on throughout: the month page, again and again (this
	// goroutine reports, never stops the test).
	stop := make(chan struct{})
	var reads sync.WaitGroup
	reads.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			resp, err := owners[0].c.HTTP.Get(app.URL + "/meals?month=" + fullMonth)
			if err != nil {
				t.Errorf("month page while the disk is full: %v", err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("month page while the disk is full = %d, want 200", resp.StatusCode)
				return
			}
		}
	})
	stopReads := sync.OnceFunc(func() { close(stop); reads.Wait() })
	defer stopReads()
	var wg sync.WaitGroup
	for w, o := range owners {
		wg.Go(func() { o.work(t, w, round, 40, r.photos) })
	}
	wg.Wait()
	refusals := -before
	for _, o := range owners {
		refusals += o.refusals
	}
	if refusals == 0 {
		t.Fatalf("round %d: no change was refused: the disk never filled", round)
	}
	health := app.Env.WriteHealth()
	if health == nil || !strings.Contains(health.Error(), r.failing) {
		t.Fatalf("round %d: WriteHealth on the full disk = %v, want %q refusing writes", round, health, r.failing)
	}

	// Someone with an account signs in: nothing to write.
	app.Client().SignIn(owners[3].email)

	// A delete and an edit of meals that were there before: refused, and
	// not "Meal moved or deleted"; the meal's page still there.
	o := owners[1]
	o.remove(t, "w1-base")
	if _, ok := o.live["w1-base"]; !ok {
		t.Error("delete of w1-base acknowledged on a full disk")
	}
	o.edit(t, "w1-base2")
	base := o.live["w1-base"]
	if r := o.c.Get("/meals/" + base.Date + "/" + base.ID); r.StatusCode != http.StatusOK {
		t.Errorf("meal page on the full disk = %d, want 200", r.StatusCode)
	}
	stopReads()

	// Space comes back: writes are taken again, without a restart.
	d.free()
	for deadline := time.Now().Add(30 * time.Second); app.Env.WriteHealth() != nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("30 s after space came back: WriteHealth = %v", app.Env.WriteHealth())
		}
	}
	tag := fmt.Sprintf("w2-after%d", round)
	owners[2].create(t, tag, r.photos, 7+round)
	if owners[2].live[tag].ID == "" {
		t.Fatalf("round %d: create after space came back was not acknowledged", round)
	}
}
