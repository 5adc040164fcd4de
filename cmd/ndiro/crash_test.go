package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ndiro/internal/apptest"
	"ndiro/internal/dynamo"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
)

// crashLongEnv, set to "1", runs TestLocalModeSurvivesKill9Long (make crash).
const crashLongEnv = "NDIRO_TEST_CRASH_LONG"

// child is ndiro running as a child process: the test binary itself,
// re-executed with runAsMain set.
type child struct {
	cmd  *exec.Cmd
	base string
	// output is what the child wrote to stdout so far.
	output *lockedBuffer
}

// startChild starts ndiro in local mode on dir and waits for its address.
// If the test fails, the end of its output is logged.
func startChild(t *testing.T, dir string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), runAsMain+"=1", "NDIRO_ADDR=127.0.0.1:0", "NDIRO_DATA_DIR="+dir, "NDIRO_MODE=local", "ADMIN_EMAILS=")
	output := &lockedBuffer{}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			out, e := output.String(), stderr.String()
			t.Logf("ndiro (pid %d) output, last 3000 bytes:\n%s\nerrors, first 3000 bytes:\n%s", cmd.Process.Pid, out[max(0, len(out)-3000):], e[:min(len(e), 3000)])
		}
	})
	return &child{cmd: cmd, base: waitURL(t, io.TeeReader(out, output)), output: output}
}

// lockedBuffer collects a child's output from two pipes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// kill sends SIGKILL and waits for the process to be gone.
func (c *child) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait()
}

// row is a meal as the owner saw it acknowledged: every field a form sets,
// the version edits are conditional on, and whether it has a photo.
type row struct {
	Date, Time, ID, Kind, Notes, Kcal string
	Version                           int64
	Photo                             bool
}

func rowOf(m meal.Meal) row {
	r := row{Date: m.Date, Time: m.Time, ID: m.ID, Kind: string(m.Kind), Notes: m.Notes, Version: m.Version, Photo: m.HasPhoto()}
	if m.Kcal != nil {
		r.Kcal = m.Kcal.String()
	}
	return r
}

// tag is the first word of a meal's notes: which of the test's meals it
// is, whatever edits and moves did to it.
func (r row) tag() string {
	tag, _, _ := strings.Cut(r.Notes, " ")
	return tag
}

// inflight is an operation that had no answer when ndiro died: either
// outcome is right. want is the meal as the operation would leave it (ID
// unknown for a create or a move).
type inflight struct {
	op         string
	tag        string
	before     *row
	want       row
	unknownKey bool
}

// model is what the owner was told. Each worker owns its own meals, so
// only the maps are shared.
type model struct {
	mu      sync.Mutex
	live    map[string]row   // acknowledged, by tag
	gone    map[string]bool  // acknowledged as deleted
	settled map[string][]row // tags whose last operation was in flight at a kill: as found after it
	pending []inflight
	acks    atomic.Int64
	// done counts acknowledged changes by kind, unanswered ones by
	// "unanswered <kind>", for the log.
	done map[string]int
}

func newModel() *model {
	return &model{live: map[string]row{}, gone: map[string]bool{}, settled: map[string][]row{}, done: map[string]int{}}
}

// mine returns the live meals of worker w's tags.
func (m *model) mine(w int) []row {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []row
	prefix := fmt.Sprintf("w%d-", w)
	for tag, r := range m.live {
		if strings.HasPrefix(tag, prefix) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b row) int { return strings.Compare(a.Notes, b.Notes) })
	return out
}

func (m *model) ack(kind, tag string, r *row) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.done[kind]++
	if r == nil {
		delete(m.live, tag)
		m.gone[tag] = true
	} else {
		m.live[tag] = *r
	}
	m.acks.Add(1)
}

// refused counts a photo upload answered 429: not a change.
func (m *model) refused() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.done["refused create with photo (429)"]++
}

func (m *model) unanswered(f inflight) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.live, f.tag)
	m.pending = append(m.pending, f)
	m.done["unanswered "+f.op]++
}

// verify compares the meals found after a crash with what was
// acknowledged, and settles the operations that were in flight.
func (m *model) verify(t *testing.T, found []meal.Meal) {
	t.Helper()
	byTag := map[string][]row{}
	for _, fm := range found {
		r := rowOf(fm)
		byTag[r.tag()] = append(byTag[r.tag()], r)
	}
	sortRows := func(rs []row) []row {
		return slices.SortedFunc(slices.Values(rs), func(a, b row) int { return strings.Compare(a.Date+a.ID, b.Date+b.ID) })
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for tag, want := range m.live {
		if d := cmp.Diff([]row{want}, byTag[tag]); d != "" {
			t.Errorf("acknowledged meal %s after the crash (-want +got):\n%s", tag, d)
		}
		delete(byTag, tag)
	}
	for tag := range m.gone {
		if got := byTag[tag]; len(got) > 0 {
			t.Errorf("meal %s acknowledged as deleted is back: %+v", tag, got)
		}
		delete(byTag, tag)
	}
	for tag, want := range m.settled {
		if d := cmp.Diff(sortRows(want), sortRows(byTag[tag])); d != "" {
			t.Errorf("meal %s (settled after an earlier crash) changed (-want +got):\n%s", tag, d)
		}
		delete(byTag, tag)
	}
	for _, f := range m.pending {
		got := byTag[f.tag]
		if !f.allows(got) {
			t.Errorf("meal %s after a %s in flight at the crash = %+v; want it before (%+v) or after (%+v) the %s", f.tag, f.op, got, f.before, f.want, f.op)
		}
		m.settled[f.tag] = got
		delete(byTag, f.tag)
	}
	m.pending = nil
	for tag, rs := range byTag {
		t.Errorf("meal %s was never written: %+v", tag, rs)
	}
}

// allows reports whether got, the meals with f's tag after the crash, is
// a state f may leave: not done, or done (a move may also be half done:
// the new row created, the old one not yet deleted).
func (f inflight) allows(got []row) bool {
	isBefore := func(r row) bool { return f.before != nil && r == *f.before }
	isAfter := func(r row) bool {
		if f.unknownKey {
			r.ID = f.want.ID
		}
		return r == f.want
	}
	switch {
	case len(got) == 0:
		return f.op == "create" || f.op == "delete"
	case len(got) == 1:
		return isBefore(got[0]) || (f.op != "delete" && isAfter(got[0]))
	case len(got) == 2 && f.op == "move":
		return (isBefore(got[0]) && isAfter(got[1])) || (isAfter(got[0]) && isBefore(got[1]))
	}
	return false
}

// tinyJPEG returns a small JPEG of one colour: quick for the photo
// pipeline, different bytes per seed.
func tinyJPEG(seed int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 48, 36))
	c := color.RGBA{uint8(seed * 37), uint8(seed * 91), uint8(seed * 13), 255}
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	var buf bytes.Buffer
	jpeg.Encode(&buf, img, nil)
	return buf.Bytes()
}

// post sends form (multipart with a photo if photo is not nil) and
// returns the status and Location. An error means no answer came back.
func post(c *http.Client, u string, form url.Values, photo []byte) (int, string, error) {
	var body bytes.Buffer
	ctype := "application/x-www-form-urlencoded"
	if photo == nil {
		body.WriteString(form.Encode())
	} else {
		mw := multipart.NewWriter(&body)
		for k, vs := range form {
			for _, v := range vs {
				mw.WriteField(k, v)
			}
		}
		fw, _ := mw.CreateFormFile("photo", "meal.jpg")
		fw.Write(photo)
		mw.Close()
		ctype = mw.FormDataContentType()
	}
	req, err := http.NewRequest(http.MethodPost, u, &body)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location"), nil
}

// idFrom reads the meal ID from a redirect to "/meals?month=…#meal-{id}".
func idFrom(loc string) string {
	_, id, _ := strings.Cut(loc, "#meal-")
	return id
}

// burst runs workers, each signed in as the admin in its own session,
// creating (with and without photos), editing, moving and deleting meals
// of its own, and kills ndiro once acks more changes are acknowledged.
func burst(t *testing.T, c *child, m *model, workers, acks, run int) {
	t.Helper()
	var killed atomic.Bool
	var wg sync.WaitGroup
	target := m.acks.Load() + int64(acks)
	for w := range workers {
		client := apptest.NewClient(t, c.base)
		client.SignIn("admin@example.com")
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(run), uint64(w)))
			for i := 0; ; i++ {
				if !work(t, c.base, client.HTTP, m, rng, w, fmt.Sprintf("w%d-r%dn%d", w, run, i), &killed) {
					return
				}
			}
		}()
	}
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	deadline := time.After(2 * time.Minute)
wait:
	for m.acks.Load() < target {
		select {
		case <-stopped:
			break wait
		case <-deadline:
			break wait
		case <-time.After(time.Millisecond):
		}
	}
	killed.Store(true)
	c.kill(t)
	wg.Wait()
	if m.acks.Load() < target {
		t.Fatalf("%d changes acknowledged in 2 minutes, want %d", m.acks.Load()-target+int64(acks), acks)
	}
}

// work makes one change and records what ndiro answered. It returns false
// once ndiro is gone.
func work(t *testing.T, base string, c *http.Client, m *model, rng *rand.Rand, w int, newTag string, killed *atomic.Bool) bool {
	mine := m.mine(w)
	date := fmt.Sprintf("2026-09-%02d", 1+rng.IntN(28))
	tod := fmt.Sprintf("%02d:%02d:%02d", rng.IntN(24), rng.IntN(60), rng.IntN(60))
	kcal := fmt.Sprintf("%d.%d", 1+rng.IntN(1500), 1+rng.IntN(9)) // stored and shown as typed
	op := []string{"create", "create", "create", "create", "edit", "edit", "move", "move", "delete", "delete"}[rng.IntN(10)]
	if len(mine) < 2 {
		op = "create"
	}
	var (
		f      inflight
		u      string
		form   url.Values
		jpg    []byte
		status int
		loc    string
		err    error
	)
	if op == "create" {
		f = inflight{op: op, tag: newTag, unknownKey: true,
			want: row{Date: date, Time: tod, Kind: "lunch", Notes: newTag + " e0", Kcal: kcal, Version: 1, Photo: rng.IntN(2) == 0}}
		u, form = base+"/meals", url.Values{"date": {date}, "time": {tod}, "kind": {"lunch"}, "notes": {f.want.Notes}, "kcal": {kcal}}
		if f.want.Photo {
			jpg = tinyJPEG(rng.IntN(1000))
		}
	} else {
		cur := mine[rng.IntN(len(mine))]
		f = inflight{op: op, tag: cur.tag(), before: &cur, want: cur}
		path := base + "/meals/" + cur.Date + "/" + cur.ID
		version := fmt.Sprint(cur.Version)
		switch op {
		case "edit":
			f.want.Notes = fmt.Sprintf("%s e%d", cur.tag(), cur.Version)
			f.want.Kind, f.want.Kcal, f.want.Version = "dinner", kcal, cur.Version+1
			u, form = path, url.Values{"date": {cur.Date}, "time": {cur.Time}, "kind": {"dinner"}, "notes": {f.want.Notes}, "kcal": {kcal}, "version": {version}}
		case "move":
			f.want.Date, f.want.Time, f.want.Version, f.unknownKey = date, tod, 1, true
			u, form = path+"/move", url.Values{"date": {date}, "time": {tod}, "version": {version}}
		case "delete":
			u = path + "/delete"
		}
	}
	status, loc, err = post(c, u, form, jpg)
	if err != nil {
		if !killed.Load() {
			t.Errorf("%s %s: %v before ndiro was killed", op, f.tag, err)
		}
		m.unanswered(f)
		return false
	}
	if status == http.StatusTooManyRequests && op == "create" && f.want.Photo {
		// Over the owner's upload limit (meal.UploadBurst, then one every
		// meal.UploadEvery): refused, so nothing with this tag may exist
		// after the crash (verify reports any meal it cannot place).
		m.refused()
		return true
	}
	if status != http.StatusSeeOther {
		t.Errorf("%s %s = %d, want 303", op, f.tag, status)
		return false
	}
	kind := op
	if op == "create" && f.want.Photo {
		kind = "create with photo"
	}
	switch op {
	case "create", "move":
		f.want.ID = idFrom(loc)
		m.ack(kind, f.tag, &f.want)
	case "edit":
		m.ack(kind, f.tag, &f.want)
	case "delete":
		m.ack(kind, f.tag, nil)
	}
	return true
}

// checkPhotosServed asks the running ndiro for every meal's photo, as
// listed in the owner's export: each must come back.
func checkPhotosServed(t *testing.T, base string) {
	t.Helper()
	c := apptest.NewClient(t, base)
	c.SignIn("admin@example.com")
	var export struct {
		Meals []struct {
			ID    string
			Photo *struct{ URL string }
		}
	}
	if err := json.Unmarshal([]byte(c.Get("/account/export.json").Body), &export); err != nil {
		t.Fatal(err)
	}
	for _, em := range export.Meals {
		if em.Photo == nil {
			continue
		}
		if resp := c.Get(em.Photo.URL); resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/jpeg" || len(resp.Body) == 0 {
			t.Errorf("photo of meal %s after the crash = %d %s, %d bytes; want 200 image/jpeg", em.ID, resp.StatusCode, resp.Header.Get("Content-Type"), len(resp.Body))
		}
	}
}

// checkData opens the data dir ndiro left (ndiro is stopped) and checks
// the meals against the model and the photo objects against the meals:
// no object without a meal, no meal without its objects.
func checkData(t *testing.T, dir string, m *model) {
	t.Helper()
	ctx := context.Background()
	tables := dynamo.NewTables("ndiro-")
	env, err := localenv.Start(ctx, localenv.Options{DataDir: dir, Tables: tables, Bucket: localBucket})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	store, photos := meal.NewStore(env.DynamoDB, tables.Meals.Name), photo.NewStore(env.S3, localBucket)
	found, err := store.All(ctx, localenv.Subject("admin@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	m.verify(t, found)
	r, err := meal.CheckPhotos(ctx, store, photos, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Clean() {
		t.Errorf("after the restart: orphan objects %v, meals missing photo objects %d", r.Orphans, len(r.Missing))
	}
}

// crashRuns runs: start ndiro, sign in, a burst of changes from several
// workers, kill -9 once acks are acknowledged, start again (which replays
// the journal and repairs photos), check what the restarted ndiro serves,
// stop it, check the data.
func crashRuns(t *testing.T, runs, workers, acks int) {
	dir := t.TempDir()
	c := startChild(t, dir)
	open := seed(t, c.base)
	m := newModel()
	for run := range runs {
		if run > 0 {
			c = startChild(t, dir)
		}
		burst(t, c, m, workers, acks, run)
		c = startChild(t, dir)
		check(t, c.base, open)
		checkPhotosServed(t, c.base)
		c.kill(t)
		checkData(t, dir, m)
		if t.Failed() {
			return
		}
	}
	t.Logf("%d runs, %d changes acknowledged: %v", runs, m.acks.Load(), m.done)
}

// TestLocalModeSurvivesKill9 kills ndiro in the middle of a burst of
// creates, edits, moves and deletes: after a restart every acknowledged
// change is there exactly as acknowledged, and no photo object lacks its
// meal or meal its photo.
func TestLocalModeSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ndiro as a child process")
	}
	t.Parallel()
	crashRuns(t, 1, 4, 30)
}

// TestLocalModeSurvivesKill9Long is TestLocalModeSurvivesKill9 over
// several runs on one data dir with larger bursts: make crash.
func TestLocalModeSurvivesKill9Long(t *testing.T) {
	if os.Getenv(crashLongEnv) != "1" {
		t.Skip("set " + crashLongEnv + "=1 (make crash)")
	}
	crashRuns(t, 6, 6, 300)
}
