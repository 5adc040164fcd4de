package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/PuerkitoBio/goquery"

	"ndiro/internal/limit"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
)

// adminEmail signs in as the admin who invites the owners.
const adminEmail = "admin@example.com"

// month is the month the owners' meals are in; their share links cover
// it.
const month = "2026-09"

// seedMeals is how many meals with a photo each owner starts with.
const seedMeals = 4

// photo is a fixture photo to upload.
type photo struct {
	name string
	body []byte
}

// readPhotos reads the two fixture photos the uploads send.
func readPhotos(dir string) ([]photo, error) {
	var out []photo
	for _, name := range []string{"small.jpg", "phone-portrait-small.jpg"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("fixture photo: %w (run make load from the repository)", err)
		}
		out = append(out, photo{name, b})
	}
	return out, nil
}

// transport is the one connection pool every client shares, loopback
// only.
func newTransport() *http.Transport {
	return &http.Transport{
		DialContext:         loopbackOnly,
		MaxIdleConns:        1000,
		MaxIdleConnsPerHost: 1000,
		IdleConnTimeout:     30 * time.Second,
	}
}

// client is one browser: a cookie jar, redirects not followed.
type client struct {
	http *http.Client
	base string
}

func newClient(base string, tr http.RoundTripper, jar bool) *client {
	c := &client{base: base, http: &http.Client{
		Transport:     tr,
		Timeout:       time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	if jar {
		c.http.Jar, _ = cookiejar.New(nil)
	}
	return c
}

// answer is a response read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a *answer) location() string { return a.header.Get("Location") }

func (a *answer) doc() (*goquery.Document, error) {
	return goquery.NewDocumentFromReader(bytes.NewReader(a.body))
}

// do sends req and reads the whole answer.
func (c *client) do(ctx context.Context, req *http.Request) (*answer, error) {
	resp, err := c.http.Do(req.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &answer{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

func (c *client) abs(path string) string {
	if strings.HasPrefix(path, "http://") {
		return path
	}
	return c.base + path
}

func (c *client) get(ctx context.Context, path string, header ...string) (*answer, error) {
	req, err := http.NewRequest(http.MethodGet, c.abs(path), nil)
	if err != nil {
		return nil, err
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return c.do(ctx, req)
}

func (c *client) postForm(ctx context.Context, path string, form url.Values) (*answer, error) {
	req, err := http.NewRequest(http.MethodPost, c.abs(path), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(ctx, req)
}

// postPhoto posts the add-meal form with p as its photo.
func (c *client) postPhoto(ctx context.Context, form url.Values, p photo) (*answer, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, vs := range form {
		for _, v := range vs {
			mw.WriteField(k, v)
		}
	}
	part, err := mw.CreateFormFile("photo", p.name)
	if err != nil {
		return nil, err
	}
	part.Write(p.body)
	mw.Close()
	req, err := http.NewRequest(http.MethodPost, c.abs("/meals"), &buf)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return c.do(ctx, req)
}

// signIn signs the client in through start ("/login" or
// "/login?invite=…") as email, at local mode's sign-in stand-in, waiting
// out the sign-in rate limit if it must.
func (c *client) signIn(ctx context.Context, start, email string) error {
	for range 20 {
		a, err := c.get(ctx, start)
		if err != nil {
			return err
		}
		if a.status == http.StatusTooManyRequests {
			wait, _ := strconv.Atoi(a.header.Get("Retry-After"))
			select {
			case <-time.After(time.Duration(max(wait, 1)) * time.Second):
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if a.status != http.StatusFound {
			return fmt.Errorf("GET %s = %d, want 302 to the sign-in stand-in", start, a.status)
		}
		auth, err := url.Parse(a.location())
		if err != nil {
			return err
		}
		q := auth.Query()
		q.Set("email", email)
		auth.RawQuery = q.Encode()
		a, err = c.get(ctx, auth.String())
		if err != nil {
			return err
		}
		if a.status != http.StatusFound {
			return fmt.Errorf("sign-in stand-in = %d, want 302 back", a.status)
		}
		a, err = c.get(ctx, a.location())
		if err != nil {
			return err
		}
		if a.status != http.StatusSeeOther || a.location() != "/meals" {
			return fmt.Errorf("callback for %s = %d %q, want 303 /meals", email, a.status, a.location())
		}
		return nil
	}
	return fmt.Errorf("sign-in as %s: still rate-limited after 20 tries", email)
}

// copyLink creates something through form at path (an invite, a share)
// and returns the token of its link, read from the list page's copy field
// of the row the redirect names.
func (c *client) copyLink(ctx context.Context, path string, form url.Values) (string, error) {
	a, err := c.postForm(ctx, path, form)
	if err != nil {
		return "", err
	}
	if a.status != http.StatusSeeOther {
		return "", fmt.Errorf("POST %s = %d, want 303", path, a.status)
	}
	loc := a.location()
	list, id, _ := strings.Cut(loc, "#")
	a, err = c.get(ctx, list)
	if err != nil {
		return "", err
	}
	doc, err := a.doc()
	if err != nil {
		return "", err
	}
	link, ok := doc.Find("#" + id + " input.copy").Attr("value")
	if !ok {
		return "", fmt.Errorf("no link for %s on %s", id, list)
	}
	return link[strings.LastIndex(link, "/")+1:], nil
}

// owner is one signed-in owner and what the load knows of their diary.
type owner struct {
	email string
	c     *client
	share string // their share link's token
	// uploads mirrors the server's per-owner upload limit, so this client
	// keeps to it.
	uploads *limit.Limiter

	mu     sync.Mutex
	meals  []mealRef
	photos []photoRef
	views  int  // month pages seen, to re-read photo URLs now and then
	edit   bool // an edit is under way (one at a time per owner)
}

type mealRef struct{ date, id string }

// photoRef is a photo as the month page links it, and its ETag once seen.
type photoRef struct {
	thumb, display, etag string
}

// world is the running server and its signed-in people.
type world struct {
	base   string
	tr     *http.Transport
	admin  *client
	owners []*owner
	anon   *client
	photos []photo
}

func (w *world) meals() int {
	n := 0
	for _, o := range w.owners {
		n += len(o.meals)
	}
	return n
}

// setUp signs in the admin and n owners (by invite), and gives each owner
// seedMeals meals with photos and a share link over month.
func setUp(ctx context.Context, base string, n int, photos []photo) (*world, error) {
	tr := newTransport()
	w := &world{base: base, tr: tr, admin: newClient(base, tr, true), anon: newClient(base, tr, false), photos: photos}
	if err := w.admin.signIn(ctx, "/login", adminEmail); err != nil {
		return nil, err
	}
	// The first visit starts the monitor's paced counts, which take a
	// while: let them run during the set-up.
	if _, err := w.monitor(ctx); err != nil {
		return nil, err
	}
	now := time.Now()
	for i := range n {
		tok, err := w.admin.copyLink(ctx, "/admin/invites", url.Values{"role": {"owner"}, "expiry_days": {"1"}})
		if err != nil {
			return nil, fmt.Errorf("invite: %w", err)
		}
		o := &owner{
			email:   fmt.Sprintf("owner%02d@example.com", i+1),
			c:       newClient(base, tr, true),
			uploads: limit.New(limit.Rule{Every: meal.UploadEvery, Burst: meal.UploadBurst, MaxKeys: 1}, time.Now),
		}
		if err := o.c.signIn(ctx, "/login?invite="+tok, o.email); err != nil {
			return nil, err
		}
		for j := range seedMeals {
			o.uploads.Allow(o.email)
			if _, err := o.upload(ctx, photos[j%len(photos)], now.Add(time.Duration(j)*time.Minute)); err != nil {
				return nil, err
			}
		}
		o.share, err = o.c.copyLink(ctx, "/shares", url.Values{"label": {"Dietitian"}, "from": {month + "-01"}, "to": {month + "-30"}, "expiry": {"30"}, "notes": {"1"}, "numbers": {"1"}})
		if err != nil {
			return nil, fmt.Errorf("share: %w", err)
		}
		if _, err := o.readMonth(ctx, true); err != nil {
			return nil, err
		}
		w.owners = append(w.owners, o)
	}
	return w, nil
}

// upload adds a meal with photo p on a day of month at the time of day
// of at, and remembers it. It returns the answer's status.
func (o *owner) upload(ctx context.Context, p photo, at time.Time) (int, error) {
	date := fmt.Sprintf("%s-%02d", month, 1+rand.IntN(28))
	// Hours and minutes, as a browser's time field sends them.
	form := url.Values{"date": {date}, "time": {at.Format("15:04")}, "kind": {"lunch"}, "notes": {"Lentil soup with bread"}, "kcal": {"512.5"}}
	a, err := o.c.postPhoto(ctx, form, p)
	if err != nil {
		return 0, err
	}
	if a.status != http.StatusSeeOther {
		return a.status, nil
	}
	_, id, ok := strings.Cut(a.location(), "#meal-")
	if !ok {
		return a.status, fmt.Errorf("upload answered 303 %q, want a meal anchor", a.location())
	}
	o.mu.Lock()
	o.meals = append(o.meals, mealRef{date, id})
	o.mu.Unlock()
	return a.status, nil
}

// readMonth GETs the month page; every tenth time (or with parse) it
// reads the photo URLs on it, keeping the ETags already known.
func (o *owner) readMonth(ctx context.Context, parse bool) (*answer, error) {
	a, err := o.c.get(ctx, "/meals?month="+month)
	if err != nil || a.status != http.StatusOK {
		return a, err
	}
	o.mu.Lock()
	o.views++
	parse = parse || o.views%10 == 0
	o.mu.Unlock()
	if !parse {
		return a, nil
	}
	doc, err := a.doc()
	if err != nil {
		return a, err
	}
	// Every thumbnail on the page; its display size is the same address
	// without size=thumb.
	var refs []photoRef
	doc.Find(`img[src^="/photo/"]`).Each(func(_ int, s *goquery.Selection) {
		thumb, _ := s.Attr("src")
		u, err := url.Parse(thumb)
		if err != nil || u.Query().Get("size") != "thumb" {
			return
		}
		q := u.Query()
		q.Del("size")
		u.RawQuery = q.Encode()
		refs = append(refs, photoRef{thumb: thumb, display: u.String()})
	})
	if len(refs) == 0 {
		return a, fmt.Errorf("the month page links no thumbnails")
	}
	o.mu.Lock()
	known := map[string]string{}
	for _, p := range o.photos {
		known[p.thumb] = p.etag
	}
	for i := range refs {
		refs[i].etag = known[refs[i].thumb]
	}
	o.photos = refs
	o.mu.Unlock()
	return a, nil
}

// monitorFigures are what the admin monitor page says of the process.
type monitorFigures struct {
	goroutines int
	counting   bool
	heap       string
	hitRatio   string
	cacheHeld  string
}

// monitor reads the admin monitor page on a connection of its own.
func (w *world) monitor(ctx context.Context) (monitorFigures, error) {
	var m monitorFigures
	req, err := http.NewRequest(http.MethodGet, w.base+"/admin/monitor", nil)
	if err != nil {
		return m, err
	}
	req.Close = true
	a, err := w.admin.do(ctx, req)
	if err != nil {
		return m, err
	}
	if a.status != http.StatusOK {
		return m, fmt.Errorf("GET /admin/monitor = %d, want 200", a.status)
	}
	doc, err := a.doc()
	if err != nil {
		return m, err
	}
	row := func(section, name string) *goquery.Selection {
		return doc.Find("#" + section + " th").FilterFunction(func(_ int, s *goquery.Selection) bool {
			return strings.TrimSpace(s.Text()) == name
		}).First().Next()
	}
	m.goroutines, err = strconv.Atoi(strings.TrimSpace(row("process", "Goroutines").Text()))
	if err != nil {
		return m, fmt.Errorf("no goroutine count on the monitor page: %w", err)
	}
	m.heap = strings.TrimSpace(row("process", "Heap").Text())
	m.hitRatio = strings.TrimSpace(row("cache", "Hit ratio").Text())
	m.cacheHeld = strings.TrimSpace(row("cache", "Held").Text())
	counts := doc.Find("#counts")
	m.counting = counts.Find("#counting").Length() > 0 || strings.Contains(counts.Text(), "counting again now")
	return m, nil
}

// settledGoroutines reads the server's goroutine count once things are
// quiet: this program's idle connections closed, the monitor's
// background count done, and the server's keep-alive connections to its
// in-process backends closed (localenv.IdleConnTimeout after their last
// use). With want ≥ 0 it reads again, a second apart for up to 30 s,
// until the count is within 5 of want, and returns the last.
func (w *world) settledGoroutines(ctx context.Context, want int) (int, error) {
	for deadline := time.Now().Add(2 * time.Minute); ; {
		m, err := w.monitor(ctx)
		if err != nil {
			return 0, err
		}
		if !m.counting || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	w.tr.CloseIdleConnections()
	time.Sleep(localenv.IdleConnTimeout + time.Second)
	for deadline := time.Now().Add(30 * time.Second); ; {
		m, err := w.monitor(ctx)
		if err != nil {
			return 0, err
		}
		if want < 0 || abs(m.goroutines-want) <= 5 || time.Now().After(deadline) {
			return m.goroutines, nil
		}
		w.tr.CloseIdleConnections()
		time.Sleep(time.Second)
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
