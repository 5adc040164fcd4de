package meal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image/color"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"ndiro/internal/apptest"
	"ndiro/internal/web"
)

// stallBudgets are short storage budgets, so that a stalled backend
// answers the page in about a second.
var stallBudgets = map[string]string{
	"NDIRO_STORAGE_ITEM_TIMEOUT":     "800ms",
	"NDIRO_STORAGE_QUERY_TIMEOUT":    "1s",
	"NDIRO_STORAGE_TRANSFER_TIMEOUT": "1500ms",
	"NDIRO_STORAGE_ATTEMPTS":         "2",
	"NDIRO_STORAGE_MAX_BACKOFF":      "10ms",
}

// pageBound is how long any page may take with one backend stalled under
// stallBudgets: a transfer and the clean-up after it, and time for a
// busy machine (seconds of stall under memory pressure); without
// deadlines the page would never answer.
const pageBound = 1500*time.Millisecond + time.Second + 30*time.Second

// stallApp is an app whose backends sit behind links, signed in as the
// admin, with short budgets, logging to logs.
func stallApp(t *testing.T, faults ...*apptest.Faults) (*apptest.App, *apptest.Client, *syncLog) {
	t.Helper()
	logs := &syncLog{}
	o := apptest.Options{Links: true, Env: stallBudgets, Log: logs}
	if len(faults) > 0 {
		o.Faults = faults[0]
	}
	app := apptest.New(t, o)
	c := app.Client()
	c.SignIn(admin)
	return app, c, logs
}

// timed runs f and fails the test if it takes longer than pageBound.
func timed(t *testing.T, what string, f func() *apptest.Response) *apptest.Response {
	t.Helper()
	start := time.Now()
	resp := f()
	if took := time.Since(start); took > pageBound {
		t.Errorf("%s took %v, want an answer within %v", what, took, pageBound)
	}
	return resp
}

func checkStorage503(t *testing.T, resp *apptest.Response, what string) {
	t.Helper()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "15" {
		t.Errorf("%s = %d, Retry-After %q; want 503, 15", what, resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// TestCreateKeepsTheFormWhenDynamoDBStalls: the meal row's write gets no
// answer. The form comes back (503) as typed, its photo kept as a
// pending upload, and sent again once DynamoDB answers it saves the meal
// with that photo; nothing half-written is left in view.
func TestCreateKeepsTheFormWhenDynamoDBStalls(t *testing.T) {
	t.Parallel()
	app, c, logs := stallApp(t)
	photoBytes := apptest.JPEG(t, 640, 480, color.RGBA{200, 120, 40, 255})

	app.DynamoLink.Stall()
	resp := timed(t, "create with DynamoDB stalled", func() *apptest.Response {
		return c.PostMultipart("/meals", mealForm("notes", "Stalled soup", "kcal", "321"), apptest.File{Field: "photo", Name: "soup.jpg", Body: photoBytes})
	})
	checkStorage503(t, resp, "create with DynamoDB stalled")
	doc := resp.Doc()
	if got := strings.TrimSpace(doc.Find("#form-err").Text()); got != web.MsgUnavailable {
		t.Errorf("form message %q, want %q", got, web.MsgUnavailable)
	}
	if got := doc.Find("textarea[name=notes]").Text(); got != "Stalled soup" {
		t.Errorf("notes shown again as %q, want as typed", got)
	}
	if got, _ := doc.Find("input[name=kcal]").Attr("value"); got != "321" {
		t.Errorf("kcal shown again as %q, want as typed", got)
	}
	tok, ok := doc.Find("input[name=pending]").Attr("value")
	if !ok || tok == "" {
		t.Fatalf("the form came back without its photo kept: %s", resp.Body)
	}
	if got := c.Get("/meals/pending/" + tok + "?size=thumb"); got.StatusCode != http.StatusOK {
		t.Errorf("kept photo = %d, want 200", got.StatusCode)
	}

	app.DynamoLink.Restore()
	again := c.PostMultipart("/meals", mealForm("notes", "Stalled soup", "kcal", "321", "pending", tok))
	if again.StatusCode != http.StatusSeeOther {
		t.Fatalf("sent again after DynamoDB answers = %d, want 303; body %s", again.StatusCode, again.Body)
	}
	ms := allMeals(t, app, admin)
	if len(ms) != 1 || ms[0].Notes != "Stalled soup" || !ms[0].HasPhoto() {
		t.Fatalf("meals after sending again: %+v, want the one meal with its photo", ms)
	}
	for _, k := range ms[0].PhotoKeys() {
		if _, err := app.Env.S3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("test-photos"), Key: aws.String(k)}); err != nil {
			t.Errorf("the saved meal's photo %s: %v", k, err)
		}
	}
	if n := logs.count("storage not answering"); n != 1 {
		t.Errorf("%d WARN lines storage not answering, want 1", n)
	}
}

// TestCreateWhenDynamoDBAnswersAreLost: the meal row's write reaches
// DynamoDB, which applies it, and its answer never comes back. The page
// says so (503), and the meal is there with its photo: objects put for a
// row whose write got no answer are never deleted.
func TestCreateWhenDynamoDBAnswersAreLost(t *testing.T) {
	t.Parallel()
	app, c, _ := stallApp(t)
	app.DynamoLink.StallAnswers()
	resp := timed(t, "create with DynamoDB's answers lost", func() *apptest.Response {
		return c.PostMultipart("/meals", mealForm("notes", "Lost answer"), apptest.File{Field: "photo", Name: "a.jpg", Body: apptest.JPEG(t, 320, 240, color.RGBA{90, 60, 200, 255})})
	})
	checkStorage503(t, resp, "create with DynamoDB's answers lost")
	app.DynamoLink.Restore()
	ms := allMeals(t, app, admin)
	if len(ms) != 1 || ms[0].Notes != "Lost answer" || !ms[0].HasPhoto() {
		t.Fatalf("meals after the lost answer: %+v, want the one meal DynamoDB applied, with its photo", ms)
	}
	for _, k := range ms[0].PhotoKeys() {
		if _, err := app.Env.S3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("test-photos"), Key: aws.String(k)}); err != nil {
			t.Errorf("photo %s of the applied meal: %v, want it kept", k, err)
		}
	}
}

// TestMoveWhenDynamoDBAnswersAreLost: a move whose new row is applied
// and whose answer is lost keeps the copied photo: the meal is at worst
// in both places, each with its photo.
func TestMoveWhenDynamoDBAnswersAreLost(t *testing.T) {
	t.Parallel()
	faults := &apptest.Faults{}
	app, c, _ := stallApp(t, faults)
	if r := c.PostMultipart("/meals", mealForm("notes", "moving"), apptest.File{Field: "photo", Name: "a.jpg", Body: apptest.JPEG(t, 320, 240, color.RGBA{10, 60, 200, 255})}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("create = %d", r.StatusCode)
	}
	m := allMeals(t, app, admin)[0]
	path := "/meals/" + m.Date + "/" + m.ID
	version, _ := c.Get(path + "/edit").Doc().Find("input[name=version]").Attr("value")
	held, release := faults.Hold("PutItem", app.Tables.Meals.Name)
	defer release()
	done := make(chan *apptest.Response, 1)
	go func() {
		done <- c.PostMultipart(path, mealForm("notes", "moving", "date", "2026-09-02", "version", version))
	}()
	<-held
	app.DynamoLink.StallAnswers()
	release()
	checkStorage503(t, <-done, "move with DynamoDB's answers lost")
	app.DynamoLink.Restore()
	ms := allMeals(t, app, admin)
	if len(ms) != 2 {
		t.Fatalf("%d meals after the move's lost answer, want the old and the new row", len(ms))
	}
	for _, m := range ms {
		for _, k := range m.PhotoKeys() {
			if _, err := app.Env.S3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("test-photos"), Key: aws.String(k)}); err != nil {
				t.Errorf("meal %s %s photo %s: %v, want it there", m.Date, m.ID, k, err)
			}
		}
	}
}

// TestCreateWhenS3Stalls: the photo's upload gets no answer. The form
// comes back (503) with the fields as typed and a message to choose the
// photo again (the bucket cannot keep it); no meal row is written.
func TestCreateWhenS3Stalls(t *testing.T) {
	t.Parallel()
	app, c, logs := stallApp(t)
	app.S3Link.Stall()
	resp := timed(t, "create with S3 stalled", func() *apptest.Response {
		return c.PostMultipart("/meals", mealForm("notes", "Stalled salad"), apptest.File{Field: "photo", Name: "salad.jpg", Body: apptest.JPEG(t, 320, 240, color.RGBA{40, 160, 60, 255})})
	})
	checkStorage503(t, resp, "create with S3 stalled")
	doc := resp.Doc()
	if got := doc.Find("textarea[name=notes]").Text(); got != "Stalled salad" {
		t.Errorf("notes shown again as %q, want as typed", got)
	}
	if got := strings.TrimSpace(doc.Find("#photo-err").Text()); got != "The photo could not be kept while storage is not answering; choose it again." {
		t.Errorf("photo message %q, want to choose it again", got)
	}
	if ms := allMeals(t, app, admin); len(ms) != 0 {
		t.Errorf("%d meals after the failed upload, want none", len(ms))
	}
	// The bucket that did not answer is not asked to keep the photo (a
	// second wait for nothing).
	if n := logs.count("photo not kept for a form storage did not answer"); n != 0 {
		t.Errorf("the photo was offered to the stalled bucket to keep (%d lines)", n)
	}
	app.S3Link.Restore()
	if r := c.PostMultipart("/meals", mealForm("notes", "Stalled salad"), apptest.File{Field: "photo", Name: "salad.jpg", Body: apptest.JPEG(t, 320, 240, color.RGBA{40, 160, 60, 255})}); r.StatusCode != http.StatusSeeOther {
		t.Errorf("sent again once S3 answers = %d, want 303", r.StatusCode)
	}
}

// TestEditKeepsTheFormWhenDynamoDBStalls: an edit whose row write gets no
// answer shows the edit form again (503) as typed.
func TestEditKeepsTheFormWhenDynamoDBStalls(t *testing.T) {
	t.Parallel()
	faults := &apptest.Faults{}
	app, c, _ := stallApp(t, faults)
	if r := c.PostForm("/meals", mealForm("notes", "before")); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("create = %d", r.StatusCode)
	}
	m := allMeals(t, app, admin)[0]
	path := "/meals/" + m.Date + "/" + m.ID
	version, _ := c.Get(path + "/edit").Doc().Find("input[name=version]").Attr("value")
	// The edit reads the meal, then writes it: only the write stalls.
	held, release := faults.Hold("PutItem", app.Tables.Meals.Name)
	defer release()
	done := make(chan *apptest.Response, 1)
	go func() {
		done <- c.PostMultipart(path, mealForm("notes", "after", "version", version))
	}()
	<-held
	app.DynamoLink.Stall()
	release()
	resp := <-done
	checkStorage503(t, resp, "edit with DynamoDB stalled")
	if got := resp.Doc().Find("textarea[name=notes]").Text(); got != "after" {
		t.Errorf("notes shown again as %q, want as typed", got)
	}
	app.DynamoLink.Restore()
	if got := allMeals(t, app, admin)[0].Notes; got != "before" {
		t.Errorf("notes stored %q after the stalled edit, want the old ones", got)
	}
}

// TestPagesWhenDynamoDBStalls: the month page answers 503 within its
// budget while DynamoDB stalls, 200 once it answers again (nothing to
// restart), and 200 while it answers slowly.
func TestPagesWhenDynamoDBStalls(t *testing.T) {
	t.Parallel()
	app, c, _ := stallApp(t)
	app.DynamoLink.Stall()
	resp := timed(t, "month page with DynamoDB stalled", func() *apptest.Response { return c.Get("/meals?month=2026-09") })
	checkStorage503(t, resp, "month page with DynamoDB stalled")
	if got := resp.Text("h1"); got != "Storage is not answering" {
		t.Errorf("heading %q, want Storage is not answering", got)
	}
	app.DynamoLink.Restore()
	if r := c.Get("/meals?month=2026-09"); r.StatusCode != http.StatusOK {
		t.Errorf("month page once DynamoDB answers = %d, want 200", r.StatusCode)
	}
	app.DynamoLink.Slow(100 * time.Millisecond)
	began := time.Now()
	if r := c.Get("/meals?month=2026-09"); r.StatusCode != http.StatusOK {
		t.Errorf("month page with DynamoDB answering slowly = %d, want 200", r.StatusCode)
	}
	// Each chunk the link passes waits 100 ms: the page waited for them.
	if took := time.Since(began); took < 100*time.Millisecond {
		t.Errorf("month page with DynamoDB answering 100 ms late took %v: the link did not slow it", took)
	}
}

// syncLog collects the app's JSON log lines.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// count returns how many lines have the message msg.
func (l *syncLog) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range strings.Split(l.buf.String(), "\n") {
		var rec struct{ Msg string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == msg {
			n++
		}
	}
	return n
}
