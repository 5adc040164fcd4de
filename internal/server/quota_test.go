package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"ndiro/internal/account"
	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
)

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestQuotaRefusedBeforeTheBody: for an account at its quota, a new meal
// and an import are refused with the quota's 403 page by the route's
// guard, before anything reads the body: one declared larger than any
// meal form is not read at all (the form's limit would have answered 413
// once it had read past it), one within it only drained.
func TestQuotaRefusedBeforeTheBody(t *testing.T) {
	t.Parallel()
	app := apptest.New(t, apptest.Options{Env: map[string]string{"NDIRO_QUOTA_MEALS": "1"}})
	c := app.Client()
	c.SignIn("admin@example.com")
	if r := c.PostForm("/meals", url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}, "notes": {"soup"}}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("first meal = %d", r.StatusCode)
	}
	u, _ := url.Parse(app.URL)
	for _, path := range []string{"/meals", account.ImportPath} {
		for _, size := range []int64{meal.MaxFormBytes + 5<<20, 1 << 10} {
			ct, body := multipartBody(1, size)
			cr := &countingReader{r: io.LimitReader(body, size)}
			req := httptest.NewRequest(http.MethodPost, path, cr)
			req.ContentLength = size
			req.Header.Set("Content-Type", ct)
			for _, ck := range c.HTTP.Jar.Cookies(u) {
				req.AddCookie(ck)
			}
			rec := httptest.NewRecorder()
			app.Handler.ServeHTTP(rec, req)
			doc, _ := goquery.NewDocumentFromReader(rec.Body)
			h1, msg := strings.TrimSpace(doc.Find("h1").First().Text()), doc.Find("main p").First().Text()
			if rec.Code != http.StatusForbidden || h1 != "Your diary is full" || !strings.Contains(msg, "it holds 1 meal,") {
				t.Errorf("POST %s of %d bytes = %d %q %q, want 403 \"Your diary is full\"", path, size, rec.Code, h1, msg)
			}
			if size > meal.MaxFormBytes && cr.n.Load() != 0 {
				t.Errorf("POST %s of %d bytes: %d bytes of the body read, want none", path, size, cr.n.Load())
			}
		}
	}
	if ms, err := app.Meals.All(t.Context(), localenv.Subject("admin@example.com")); err != nil || len(ms) != 1 {
		t.Errorf("meals after the refusals = %d, %v; want the 1", len(ms), err)
	}
}
