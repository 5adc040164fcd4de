package account_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"ndiro/internal/account"
	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
)

// answer is what came back for an upload sent in the background.
type answer struct {
	status int
	retry  string
	text   string
	err    error
}

// upload is an import form sent as it is written: its zip's bytes go in
// through w, and the app's answer comes on done.
type upload struct {
	w    *io.PipeWriter
	done chan answer
}

// startUpload posts the import form as c with a body written through the
// returned upload: the form's header, then zip bytes as the test writes
// them. The form is sent chunked, as a browser streams it.
func startUpload(t *testing.T, c *apptest.Client, base string) *upload {
	t.Helper()
	pr, pw := io.Pipe()
	// The form's header, up to the zip, then what the test writes.
	head := strings.NewReader("--B\r\nContent-Disposition: form-data; name=\"archive\"; filename=\"a.zip\"\r\nContent-Type: application/zip\r\n\r\n")
	req, err := http.NewRequest(http.MethodPost, base+account.ImportPath, io.MultiReader(head, pr))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "multipart/form-data; boundary=B")
	u := &upload{w: pw, done: make(chan answer, 1)}
	go func() {
		resp, err := c.HTTP.Do(req)
		if err != nil {
			u.done <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		r := &apptest.Response{Response: resp, Body: string(b)}
		u.done <- answer{status: resp.StatusCode, retry: resp.Header.Get("Retry-After"), text: strings.Join(strings.Fields(r.Text("main")), " ")}
	}()
	return u
}

// send writes n bytes of the zip (not a zip: the check refuses them). A
// write the app does not read to the end shows in the answer.
func (u *upload) send(n int) {
	u.w.Write([]byte(strings.Repeat("z", n)))
}

// wait returns the app's answer, or fails t after a minute.
func (u *upload) wait(t *testing.T, what string) answer {
	t.Helper()
	select {
	case a := <-u.done:
		if a.err != nil {
			t.Fatalf("%s: %v", what, a.err)
		}
		return a
	case <-time.After(time.Minute):
		t.Fatalf("%s: no answer within a minute", what)
		return answer{}
	}
}

// tickers hands each upload that takes its place in the staging gate a
// ticker of the test's: the channel comes on the returned channel, once
// the upload holds its place.
func tickers(app *apptest.App) <-chan chan time.Time {
	ch := make(chan chan time.Time, 16)
	app.Stagings.SetHooks(account.StagingHooks{Ticker: func(time.Duration) (<-chan time.Time, func()) {
		tick := make(chan time.Time)
		ch <- tick
		return tick, func() {}
	}})
	return ch
}

// owners signs in n owners on app (the admin first, then invited ones).
func owners(t *testing.T, app *apptest.App, n int) []*apptest.Client {
	t.Helper()
	admin := app.Client()
	admin.SignIn(adminEmail)
	out := []*apptest.Client{admin}
	for i := 1; i < n; i++ {
		c := app.Client()
		if resp := c.SignInVia("/login?invite="+admin.CreateInvite(url.Values{"role": {"owner"}}), fmt.Sprintf("owner%d@example.com", i)); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign up owner %d = %d", i, resp.StatusCode)
		}
		out = append(out, c)
	}
	return out
}

// TestImportStagingGate: with the defaults (one upload an owner in hand,
// four in all), an owner's second upload while the first is received is
// a 409, and a fifth owner's upload while four are is a 429 with
// Retry-After, each before a byte of its body is read; an upload that
// sends under 64 KiB in a window is closed with a 408 and its place and
// parts given back, after which the others are admitted.
func TestImportStagingGate(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	ticks := tickers(app)
	cs := owners(t, app, 5)
	held := make([]*upload, 4)
	tick := make([]chan time.Time, 4)
	for i := range held {
		held[i] = startUpload(t, cs[i], app.URL)
		tick[i] = <-ticks // it holds its place
		held[i].send(1024)
	}

	second := postImport(cs[0], []byte("PK"))
	if second.StatusCode != http.StatusConflict || !strings.Contains(second.Text("main"), "Another zip of yours is being received") {
		t.Errorf("the owner's second upload = %d %q; want 409", second.StatusCode, second.Text("main"))
	}
	fifth := postImport(cs[4], []byte("PK"))
	if fifth.StatusCode != http.StatusTooManyRequests || fifth.Header.Get("Retry-After") != "60" || !strings.Contains(fifth.Text("main"), "as many zips to import as it takes at once") {
		t.Errorf("a fifth upload = %d (Retry-After %q) %q; want 429 after 60 s", fifth.StatusCode, fifth.Header.Get("Retry-After"), fifth.Text("main"))
	}

	// A window ends: each held upload sent 1 KiB in it.
	for i, u := range held {
		tick[i] <- time.Now()
		a := u.wait(t, fmt.Sprintf("upload %d after a slow window", i))
		if a.status != http.StatusRequestTimeout || !strings.Contains(a.text, "arrived too slowly: less than 64 KiB in 1m0s") {
			t.Errorf("upload %d after a window of 1 KiB = %d %q; want 408", i, a.status, a.text)
		}
		u.w.Close()
	}
	for i, c := range cs {
		noPending(t, app, localenv.Subject(emailOf(i)), "the slow upload's parts deleted")
		if resp := postImport(c, nil); resp.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("owner %d's upload once the gate is free = %d %q; want 422 (an empty file)", i, resp.StatusCode, resp.Text("main"))
		}
	}
}

// emailOf is the email of owners' client i.
func emailOf(i int) string {
	if i == 0 {
		return adminEmail
	}
	return fmt.Sprintf("owner%d@example.com", i)
}

// TestImportMinimumRate: an upload that sends 100 KB in a window stays
// open; the next window, in which it sends nothing, closes it (408).
func TestImportMinimumRate(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	ticks := tickers(app)
	uid := localenv.Subject(adminEmail)
	read := make(chan int64, 4096)
	app.Stagings.SetHooks(account.StagingHooks{Read: func(owner string, staged int64) {
		if owner == uid {
			select {
			case read <- staged:
			default: // the test waits for one figure only
			}
		}
	}})
	c := owners(t, app, 1)[0]
	u := startUpload(t, c, app.URL)
	tick := <-ticks
	go u.send(100_000)
	for n := int64(0); n < 100_000; n = <-read {
	}
	tick <- time.Now() // a window of 100 KB
	tick <- time.Now() // a window of nothing
	a := u.wait(t, "the upload after an empty window")
	if a.status != http.StatusRequestTimeout || !strings.Contains(a.text, "arrived too slowly") {
		t.Errorf("upload after a window of 100 KB and one of nothing = %d %q; want 408", a.status, a.text)
	}
	noPending(t, app, uid, "the slow upload's parts deleted")
}

// TestImportOwnerStagedBytes: with two uploads an owner in hand and a
// 150,000-byte import limit, an owner's second upload that takes what the
// two have staged past the limit is a 413 saying so; once the first is
// closed (it stalls), an upload of 140,000 bytes is taken in (and refused as no
// zip, 422).
func TestImportOwnerStagedBytes(t *testing.T) {
	t.Parallel()
	app := apptest.New(t, apptest.Options{Env: map[string]string{"NDIRO_IMPORT_STAGING_PER_OWNER": "2", "NDIRO_IMPORT_MAX_BYTES": "150000"}})
	ticks := tickers(app)
	uid := localenv.Subject(adminEmail)
	read := make(chan int64, 4096)
	app.Stagings.SetHooks(account.StagingHooks{Read: func(owner string, staged int64) {
		if owner == uid {
			select {
			case read <- staged:
			default: // the test waits for one figure only
			}
		}
	}})
	c := owners(t, app, 1)[0]
	first := startUpload(t, c, app.URL)
	firstTick := <-ticks
	go first.send(100_000)
	for n := int64(0); n < 100_000; n = <-read {
	}
	second := startUpload(t, c, app.URL)
	<-ticks
	go func() {
		second.w.Write([]byte(strings.Repeat("z", 100_000) + "\r\n--B--\r\n"))
		second.w.Close()
	}()
	a := second.wait(t, "the second upload")
	if a.status != http.StatusRequestEntityTooLarge || !strings.Contains(a.text, "Your zips being received add up to more than 146 KiB") {
		t.Errorf("second upload past the owner's staged bytes = %d %q; want 413", a.status, a.text)
	}
	firstTick <- time.Now() // a window of 100 KB
	firstTick <- time.Now() // and one of nothing
	if a := first.wait(t, "the first upload, stalled"); a.status != http.StatusRequestTimeout {
		t.Errorf("first upload stalled = %d %q; want 408", a.status, a.text)
	}
	first.w.Close()
	noPending(t, app, uid, "both uploads' parts deleted")
	if resp := postImport(c, []byte(strings.Repeat("z", 140_000))); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("an upload of 140,000 bytes once the others ended = %d %q; want 422 (taken in, no zip)", resp.StatusCode, resp.Text("main"))
	}
}
