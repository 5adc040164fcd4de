package account_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"ndiro/internal/account"
	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
)

// counted is an endless body of 'x' after head that counts the bytes
// read from it.
type counted struct {
	head io.Reader
	n    atomic.Int64
}

func (c *counted) Read(p []byte) (int, error) {
	k, err := c.head.Read(p)
	if err == io.EOF {
		for i := range p {
			p[i] = 'x'
		}
		k, err = len(p), nil
	}
	c.n.Add(int64(k))
	return k, err
}

// TestImportLimits: with NDIRO_IMPORT_MAX_BYTES at 1 MiB, a zip declared
// larger is a 413 before a byte of it is read; one sent chunked is a 413
// once it passes the limit, long before its end; neither leaves a meal, an
// import or an object behind.
func TestImportLimits(t *testing.T) {
	t.Parallel()
	const max = 1 << 20
	app := apptest.New(t, apptest.Options{Env: map[string]string{"NDIRO_IMPORT_MAX_BYTES": "1048576"}})
	c := app.Client()
	c.SignIn(adminEmail)
	uid := localenv.Subject(adminEmail)
	head := "--B\r\nContent-Disposition: form-data; name=\"archive\"; filename=\"big.zip\"\r\nContent-Type: application/zip\r\n\r\n"
	for _, tc := range []struct {
		name     string
		length   int64 // -1: chunked
		maxRead  int64
		wantText string
	}{
		{"declared 64 MiB", 64 << 20, 0, "1 MiB"},
		{"chunked, endless", -1, 4 * max, "1 MiB"},
	} {
		app.Clock.Advance(account.ImportEvery)
		body := &counted{head: strings.NewReader(head)}
		req := httptest.NewRequest(http.MethodPost, account.ImportPath, body)
		req.ContentLength = tc.length
		req.Header.Set("Content-Type", "multipart/form-data; boundary=B")
		u, _ := url.Parse(app.URL)
		for _, ck := range c.HTTP.Jar.Cookies(u) {
			req.AddCookie(ck)
		}
		rec := httptest.NewRecorder()
		app.Handler.ServeHTTP(rec, req)
		doc, _ := goquery.NewDocumentFromReader(rec.Body)
		msg := doc.Find("main").Text()
		if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(msg, tc.wantText) {
			t.Errorf("%s: POST = %d %q; want 413 naming %s", tc.name, rec.Code, strings.Join(strings.Fields(msg), " "), tc.wantText)
		}
		if got := body.n.Load(); got > tc.maxRead {
			t.Errorf("%s: %d bytes read; want at most %d", tc.name, got, tc.maxRead)
		}
		if ms, err := app.Meals.All(t.Context(), uid); err != nil || len(ms) != 0 {
			t.Errorf("%s: meals = %d, %v; want none", tc.name, len(ms), err)
		}
		if keys := objectsOf(t, app, uid); len(keys) != 0 {
			t.Errorf("%s: objects left: %v", tc.name, keys)
		}
		if u := row(t, app); u.Import != nil {
			t.Errorf("%s: users row has an import: %+v", tc.name, u.Import)
		}
	}
}

// TestImportOneAtATime: while an import runs, a second zip is a 409
// naming the running one, and nothing of it is staged; past ImportBurst
// zips in a burst, the next is a 429.
func TestImportOneAtATime(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	c := app.Client()
	c.SignIn(adminEmail)
	uid := localenv.Subject(adminEmail)
	sound := buildZip(t, hostileMeals(""), entry{name: "photos/2026-09-01/p.jpg", body: fixture(t, "small.jpg")})
	started, goOn := make(chan struct{}), make(chan struct{})
	var once sync.Once
	app.Imports.SetPace(1, func(ctx context.Context, i int) {
		once.Do(func() { close(started) })
		select {
		case <-goOn:
		case <-ctx.Done():
		}
	})
	if resp := postImport(c, sound); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("first import = %d; %s", resp.StatusCode, resp.Text("main"))
	}
	<-started
	resp := postImport(c, sound)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(resp.Text("main"), "running") {
		t.Errorf("second import while the first runs = %d %q; want 409", resp.StatusCode, resp.Text("main"))
	}
	if keys := objectsOf(t, app, "pending/"+uid); len(keys) != 1 {
		t.Errorf("staged objects = %v; want the first import's only", keys)
	}
	close(goOn)
	if err := app.Imports.Wait(t.Context(), uid); err != nil {
		t.Fatal(err)
	}
	// Two sent so far; the burst's rest are refused zips (empty files).
	for range account.ImportBurst - 2 {
		if resp := postImport(c, nil); resp.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("empty zip = %d; want 422", resp.StatusCode)
		}
	}
	if resp := postImport(c, sound); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("zip %d of a burst = %d; want 429", account.ImportBurst+1, resp.StatusCode)
	}
	if ms, err := app.Meals.All(t.Context(), uid); err != nil || len(ms) != 1 {
		t.Errorf("meals = %d, %v; want the first import's 1", len(ms), err)
	}
}
