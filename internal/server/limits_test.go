package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/go-chi/chi/v5"

	"ndiro/internal/account"
	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/server"
)

// endless is an endless stream of 'x', for large bodies that take no
// memory.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// bodies of TestEveryPostRouteLimitsItsBody: each a content type and a
// body.
func urlencodedBody(fields int, pad int64) (string, io.Reader) {
	return "application/x-www-form-urlencoded", io.MultiReader(strings.NewReader(strings.Repeat("f=&", fields)+"notes="), io.LimitReader(endless{}, pad))
}

func multipartBody(fields int, pad int64) (string, io.Reader) {
	part := "--B\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nv\r\n"
	head := strings.Repeat(part, fields) + "--B\r\nContent-Disposition: form-data; name=\"photo\"; filename=\"a.jpg\"\r\n\r\n"
	return "multipart/form-data; boundary=B", io.MultiReader(strings.NewReader(head), io.LimitReader(endless{}, pad), strings.NewReader("\r\n--B--\r\n"))
}

// TestEveryPostRouteLimitsItsBody sends every POST route of the app, as a
// signed-in admin who may use them all, a 26 MB body without a
// Content-Length and a form of 10,000 fields, url-encoded and multipart:
// each is a 413 or a 400 with its own page, never the handler's answer
// (a form re-rendered with "Please fix the fields").
func TestEveryPostRouteLimitsItsBody(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	admin := app.Client()
	admin.SignIn("admin@example.com")
	h, ok := app.Handler.(*server.Handler)
	if !ok {
		t.Fatalf("app.Handler is a %T, want a *server.Handler", app.Handler)
	}
	// The outer ServeMux's one route of its own takes no POST (its other
	// methods get a 405: TestOwnerPhotoRoute); every POST route is chi's.
	routes := h.Pages
	params := strings.NewReplacer("{date}", "2026-09-01", "{meal_id}", "123000-abcdef", "{token}", strings.Repeat("a", 43), "{user_id}", "someone", "{kind}", "photos")
	var posts []string
	chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method == http.MethodPost {
			posts = append(posts, params.Replace(route))
		}
		return nil
	})
	if len(posts) < 20 {
		t.Fatalf("found %d POST routes, want the app's 20 or more", len(posts))
	}
	const mb = 1 << 20
	const tooLarge, tooMany = "Too large", "Too many fields"
	for _, path := range posts {
		uploads := path == "/meals" || path == "/meals/2026-09-01/123000-abcdef"
		for _, tc := range []struct {
			name    string
			body    func() (string, io.Reader)
			status  int
			heading string
		}{
			{"26 MB url-encoded, chunked", func() (string, io.Reader) { return urlencodedBody(1, 26*mb) }, 413, tooLarge},
			{"26 MB multipart, chunked", func() (string, io.Reader) { return multipartBody(1, 26*mb) }, 413, tooLarge},
			{"10,000 url-encoded fields", func() (string, io.Reader) { return urlencodedBody(10_000, 0) }, 400, tooMany},
			{"51 multipart fields", func() (string, io.Reader) { return multipartBody(50, 1) }, 400, tooMany},
		} {
			if path == account.ImportPath {
				// The import reads its own body (TestImportLimits): a
				// multipart form only, its zip in the field "archive", at
				// most 10 small fields before it.
				tc.status, tc.heading = importAnswer(tc.name)
			}
			ct, body := tc.body()
			if status, h1 := post(app, admin, path, ct, body); status != tc.status || h1 != tc.heading {
				t.Errorf("POST %s, %s = %d %q, want %d %q", path, tc.name, status, h1, tc.status, tc.heading)
			}
		}
		if uploads {
			// The meal form takes up to 25 MB: 10,000 multipart fields fit.
			ct, body := multipartBody(10_000, 0)
			if status, h1 := post(app, admin, path, ct, body); status != 400 || h1 != tooMany {
				t.Errorf("POST %s, 10,000 multipart fields = %d %q, want 400 %q", path, status, h1, tooMany)
			}
		}
	}
	if ms, err := app.Meals.All(t.Context(), localenv.Subject("admin@example.com")); err != nil || len(ms) != 0 {
		t.Errorf("meals after refused forms = %d, %v; want none", len(ms), err)
	}
}

// importAnswer is the status and heading POST /account/import answers
// the body of TestEveryPostRouteLimitsItsBody's case name with: no
// url-encoded form (415), no file but the zip (400), at most 10 fields
// before it (400).
func importAnswer(name string) (int, string) {
	switch {
	case strings.Contains(name, "url-encoded"):
		return 415, "Not a form"
	case strings.Contains(name, "26 MB multipart"):
		return 400, "Not the import form"
	}
	return 400, "Too many fields"
}

// post sends a POST of body (content type ct, no Content-Length) with c's
// cookies straight to the app's handler, and returns the status and the
// page's heading.
func post(app *apptest.App, c *apptest.Client, path, ct string, body io.Reader) (int, string) {
	req := httptest.NewRequest(http.MethodPost, path, body)
	req.ContentLength = -1
	req.Header.Set("Content-Type", ct)
	u, _ := url.Parse(app.URL)
	for _, ck := range c.HTTP.Jar.Cookies(u) {
		req.AddCookie(ck)
	}
	rec := httptest.NewRecorder()
	app.Handler.ServeHTTP(rec, req)
	doc, _ := goquery.NewDocumentFromReader(rec.Body)
	return rec.Code, strings.TrimSpace(doc.Find("h1").First().Text())
}
