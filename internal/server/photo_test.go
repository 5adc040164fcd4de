package server_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/server"
)

// TestOwnerPhotoLogging: the owner's photo route logs refused requests
// (with route and status, never the path) and leaves successful ones out
// of the access log.
func TestOwnerPhotoLogging(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	app := apptest.New(t, apptest.Options{Log: &log})
	c := app.Client()
	c.SignIn("admin@example.com")
	form := url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}}
	if r := c.PostMultipart("/meals", form, apptest.File{Field: "photo", Name: "s.jpg", Body: apptest.Photo(t, "small.jpg")}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("add meal = %d", r.StatusCode)
	}
	ms, err := app.Meals.All(t.Context(), localenv.Subject("admin@example.com"))
	if err != nil || len(ms) != 1 {
		t.Fatalf("meals = %v, %v", ms, err)
	}
	if r := c.Get(ms[0].ThumbURL()); r.StatusCode != http.StatusOK {
		t.Fatalf("photo = %d", r.StatusCode)
	}
	if strings.Contains(log.String(), `"route":"/photo/{date}/{meal_id}"`) {
		t.Errorf("a successful photo request was logged:\n%s", log.String())
	}
	missing := "/photo/2026-09-01/235959-abcdef?v=000000000000"
	if r := c.Get(missing); r.StatusCode != http.StatusNotFound {
		t.Fatalf("missing photo = %d, want 404", r.StatusCode)
	}
	logged := log.String()
	if !strings.Contains(logged, `"route":"/photo/{date}/{meal_id}","status":404`) {
		t.Errorf("the refused photo request was not logged with route and status:\n%s", logged)
	}
	if strings.Contains(logged, "235959-abcdef") {
		t.Error("the log holds the photo's path")
	}
}

// TestOwnerPhotoRoute: the owner's photo route is in the route table
// (the outer ServeMux's pattern "GET /photo/{date}/{meal_id}" for GET
// and HEAD, not the chi router's), answers HEAD as GET without a body,
// refuses other methods with a 405 naming the methods it takes, and
// never sets a cookie: no session is loaded or saved for it.
func TestOwnerPhotoRoute(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	h, ok := app.Handler.(*server.Handler)
	if !ok {
		t.Fatalf("app.Handler is a %T, want a *server.Handler", app.Handler)
	}
	for method, want := range map[string]string{
		http.MethodGet:  "GET /photo/{date}/{meal_id}",
		http.MethodHead: "GET /photo/{date}/{meal_id}",
		http.MethodPost: "/photo/{date}/{meal_id}",
	} {
		req := httptest.NewRequest(method, "/photo/2026-09-01/123000-abcdef?v=000000000000", nil)
		if _, pattern := h.Mux.Handler(req); pattern != want {
			t.Errorf("route table: %s /photo/2026-09-01/123000-abcdef matches %q, want %q", method, pattern, want)
		}
	}
	chi.Walk(h.Pages, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if route == "/photo/{date}/{meal_id}" {
			t.Errorf("the chi router has the owner's photo route too (%s)", method)
		}
		return nil
	})
	c := app.Client()
	c.SignIn("admin@example.com")
	form := url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}}
	if r := c.PostMultipart("/meals", form, apptest.File{Field: "photo", Name: "s.jpg", Body: apptest.Photo(t, "small.jpg")}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("add meal = %d", r.StatusCode)
	}
	ms, err := app.Meals.All(t.Context(), localenv.Subject("admin@example.com"))
	if err != nil || len(ms) != 1 {
		t.Fatalf("meals = %v, %v", ms, err)
	}
	get := c.Get(ms[0].ThumbURL())
	if get.StatusCode != http.StatusOK || len(get.Body) == 0 {
		t.Fatalf("GET photo = %d with %d bytes, want 200 with the photo", get.StatusCode, len(get.Body))
	}
	req, _ := http.NewRequest(http.MethodHead, app.URL+ms[0].ThumbURL(), nil)
	head := c.Do(req)
	if head.StatusCode != http.StatusOK || head.Body != "" || head.Header.Get("ETag") != get.Header.Get("ETag") || head.Header.Get("Content-Length") != get.Header.Get("Content-Length") {
		t.Errorf("HEAD photo = %d, %d bytes, ETag %q, Content-Length %q; want GET's headers (%q, %q) and no body",
			head.StatusCode, len(head.Body), head.Header.Get("ETag"), head.Header.Get("Content-Length"), get.Header.Get("ETag"), get.Header.Get("Content-Length"))
	}
	req, _ = http.NewRequest(http.MethodGet, app.URL+ms[0].ThumbURL(), nil)
	req.Header.Set("If-None-Match", get.Header.Get("ETag"))
	notModified := c.Do(req)
	if notModified.StatusCode != http.StatusNotModified {
		t.Errorf("GET photo with its ETag = %d, want 304", notModified.StatusCode)
	}
	for name, r := range map[string]*apptest.Response{"GET": get, "HEAD": head, "304": notModified} {
		if v := r.Header.Values("Set-Cookie"); len(v) != 0 {
			t.Errorf("%s photo set cookies %q", name, v)
		}
	}
	if r := c.PostForm(ms[0].ThumbURL(), nil); r.StatusCode != http.StatusMethodNotAllowed || r.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST photo = %d, Allow %q; want 405, %q", r.StatusCode, r.Header.Get("Allow"), "GET, HEAD")
	}
}

// TestOwnerPhotoWhenS3Stalls: an owner's photo that is not in the cache,
// asked for while S3 does not answer, gets the storage page's 503 with
// Retry-After within the transfer budget, counted as unavailable (the
// alert's series), not as an error; once S3 answers it is served.
func TestOwnerPhotoWhenS3Stalls(t *testing.T) {
	t.Parallel()
	const budget = 1500 * time.Millisecond
	app := apptest.New(t, apptest.Options{Links: true, Env: map[string]string{
		"NDIRO_STORAGE_TRANSFER_TIMEOUT": budget.String(),
		"NDIRO_STORAGE_ATTEMPTS":         "2",
		"NDIRO_STORAGE_MAX_BACKOFF":      "10ms",
	}})
	c := app.Client()
	c.SignIn("admin@example.com")
	form := url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}}
	if r := c.PostMultipart("/meals", form, apptest.File{Field: "photo", Name: "s.jpg", Body: apptest.Photo(t, "small.jpg")}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("add meal = %d", r.StatusCode)
	}
	ms, err := app.Meals.All(t.Context(), localenv.Subject("admin@example.com"))
	if err != nil || len(ms) != 1 {
		t.Fatalf("meals = %v, %v", ms, err)
	}
	for _, k := range ms[0].PhotoKeys() {
		app.Photos.Cache().Forget(k)
	}
	getObject := func(result string) map[string]string {
		return map[string]string{"service": "S3", "operation": "GetObject", "result": result}
	}
	before := scrape(t, app)
	app.S3Link.Stall()
	start := time.Now()
	r := c.Get(ms[0].ThumbURL())
	took := time.Since(start)
	if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Errorf("photo with S3 stalled = %d, Retry-After %q; want 503 with Retry-After", r.StatusCode, r.Header.Get("Retry-After"))
	}
	if took > budget+10*time.Second {
		t.Errorf("photo with S3 stalled took %s, want about its transfer budget %s", took, budget)
	}
	after := scrape(t, app)
	if got := value(after, "ndiro_storage_calls_total", getObject("unavailable")) - value(before, "ndiro_storage_calls_total", getObject("unavailable")); got != 1 {
		t.Errorf("GetObject counted unavailable %v times, want 1", got)
	}
	if got := value(after, "ndiro_storage_calls_total", getObject("error")) - value(before, "ndiro_storage_calls_total", getObject("error")); got != 0 {
		t.Errorf("GetObject counted as an error %v times, want 0", got)
	}
	app.S3Link.Restore()
	if r := c.Get(ms[0].ThumbURL()); r.StatusCode != http.StatusOK {
		t.Errorf("photo once S3 answers = %d, want 200", r.StatusCode)
	}
}
