// Package apptest runs the whole application on httptest for handler
// tests: in-process DynamoDB, S3 and mock Google (served by the app at
// localenv.SignInPath), a fresh table prefix and bucket per test, and
// clients with cookie jars that sign in through the real OIDC flow.
package apptest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"ndiro/internal/auth"
	"ndiro/internal/config"
	"ndiro/internal/dynamo"
	"ndiro/internal/localenv"
	"ndiro/internal/metrics"
	"ndiro/internal/server"
	"ndiro/internal/storage"
	"ndiro/internal/version"
)

// App is a running application for one test.
type App struct {
	*server.App
	URL    string
	Env    *localenv.Env
	Config config.Config
	Tables dynamo.Tables
	Clock  *Clock
	// Calls counts the app's DynamoDB calls.
	Calls *Calls
	// DynamoLink and S3Link stand between the app and its backends when
	// Options.Links is set (nil otherwise): a test stalls or slows them.
	DynamoLink, S3Link *Link
	t                  testing.TB
	stop               func()
}

// Options adjust New. The zero value is the default app.
type Options struct {
	// Wrap, if set, wraps the app's handler (e.g. to count requests).
	Wrap func(http.Handler) http.Handler
	// Env adds settings to the app's configuration, as environment
	// variables would (e.g. NDIRO_TRUSTED_PROXY_HEADER).
	Env map[string]string
	// Log, if set, receives the app's log lines (JSON, debug level and
	// up), for tests of what is logged.
	Log io.Writer
	// Faults, if set, can make the app's DynamoDB and S3 calls fail.
	Faults *Faults
	// DynamoOptions are applied to the app's DynamoDB client (tests add
	// SDK middleware that watches calls).
	DynamoOptions []func(*dynamodb.Options)
	// Links puts a Link between the app and each of its backends
	// (App.DynamoLink, App.S3Link), for tests of a backend that stalls or
	// answers slowly.
	Links bool
	// HEICWorker, if set, makes the HEIC decoder's worker command; nil
	// runs the test binary as "heic-worker", which the test package's
	// TestMain must hand to photo.RunHEICWorker (photo.MaybeHEICWorker).
	HEICWorker func() *exec.Cmd
	// Variants runs the variant job (server.Backends.Variants), whose
	// WebP worker is the test binary run as "webp-worker": the package's
	// TestMain must call photo.MaybeHEICWorker.
	Variants bool
	// DataDir, if set, is where the local backends persist (journal,
	// snapshot, s3.bolt), as in local mode; a later New on the same
	// DataDir is the app restarted. "" keeps everything in memory.
	DataDir string
	// Local, if set, adjusts the local backends' options before they
	// start (tests of a full disk set their file layer).
	Local func(*localenv.Options)
	// WriteHealth, if set, stands in for the local backends' own
	// (localenv.Env.WriteHealth) as the app's write health hook: tests of
	// the early refusal report a full disk without filling one.
	WriteHealth func() error
	// Lease, if set, is the app's lease check for /readyz (server.Backends.LeaseHealth):
	// tests of readiness report a lease not held.
	Lease func() error
}

// New starts the app for t and stops it when t ends. Admin email is
// admin@example.com unless opts say otherwise.
func New(t testing.TB, opts ...Options) *App {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	ctx := context.Background()
	env := map[string]string{"ADMIN_EMAILS": "admin@example.com"}
	// A minute per storage call: a busy test machine must not turn a slow
	// emulator into a 503. Tests of the budgets set their own.
	for _, k := range []string{"NDIRO_STORAGE_ITEM_TIMEOUT", "NDIRO_STORAGE_QUERY_TIMEOUT", "NDIRO_STORAGE_TRANSFER_TIMEOUT"} {
		env[k] = "1m"
	}
	for k, v := range o.Env {
		env[k] = v
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.BaseURL = "http://" + ln.Addr().String()
	clock := &Clock{now: time.Now()}
	log := slog.New(slog.DiscardHandler)
	switch {
	case o.Log != nil:
		log = slog.New(slog.NewJSONHandler(o.Log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	case testing.Verbose():
		log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	// The storage bounds first: the options after them (faults, the
	// test's own) see the bounded calls from outside.
	// Then the metrics, as cmd/ndiro adds them.
	bounds := storage.New(cfg.Storage, log, clock.Now)
	mx := metrics.New(version.Info())
	calls := &Calls{}
	dynamoOpts := append([]func(*dynamodb.Options){bounds.DynamoDB, mx.DynamoDB, calls.Option()}, o.DynamoOptions...)
	s3Opts := []func(*s3.Options){bounds.S3, mx.S3}
	if o.Faults != nil {
		dynamoOpts = append(dynamoOpts, o.Faults.DynamoOption())
		s3Opts = append(s3Opts, o.Faults.S3Option())
	}
	le, tables, stopLocal := local(t, dynamoOpts, s3Opts, o.DataDir, func(lo *localenv.Options) {
		lo.ObserveSync = mx.ObserveSync
		lo.SignInOrigin = cfg.BaseURL
		if o.Local != nil {
			o.Local(lo)
		}
	})
	var stopped sync.Once
	stop := func() { stopped.Do(stopLocal) }
	t.Cleanup(stop)

	health := le.WriteHealth
	if o.WriteHealth != nil {
		health = o.WriteHealth
	}
	db, s3c := le.DynamoDB, le.S3
	var dynamoLink, s3Link *Link
	if o.Links {
		dynamoLink, s3Link = NewLink(t, le.DynamoEndpoint), NewLink(t, le.S3Endpoint)
		db = localenv.NewDynamoClient(dynamoLink.Endpoint, dynamoOpts...)
		s3c = localenv.NewS3Client(s3Link.Endpoint, s3Opts...)
	}
	a, err := server.Build(ctx, cfg, server.Backends{
		DynamoDB: db,
		S3:       s3c,
		Bucket:   "test-photos",
		Tables:   tables,
		Provider: auth.Provider{
			Issuer:       le.OIDC.Issuer(),
			ClientID:     le.OIDC.ClientID,
			ClientSecret: le.OIDC.ClientSecret,
			RedirectURL:  cfg.BaseURL + "/auth/callback",
			HTTPClient:   le.SignInClient(),
		},
		SignIn:      le.SignIn,
		Clock:       clock,
		HEICWorker:  o.HEICWorker,
		Variants:    o.Variants,
		WriteHealth: health,
		LeaseHealth: o.Lease,
		Metrics:     mx,
	}, log, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	h := a.Handler
	if o.Wrap != nil {
		h = o.Wrap(h)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	app := &App{App: a, URL: srv.URL, Env: le, Config: cfg, Tables: tables, Clock: clock, Calls: calls, DynamoLink: dynamoLink, S3Link: s3Link, t: t}
	// The server stops, then the background work, then the backends.
	app.stop = func() {
		stopped.Do(func() {
			a.HEIC.Close()
			srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := a.Close(ctx); err != nil {
				t.Errorf("background work did not stop: %v", err)
			}
			stopLocal()
		})
	}
	t.Cleanup(app.stop)
	return app
}

// Stop stops the app now as the end of the test would (the server, the
// background work, then the backends, which fold their data into the data
// dir): a test that starts New again on the same Options.DataDir sees the
// app restarted. Later calls do nothing.
func (a *App) Stop() { a.stop() }

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// Clock is a settable clock for rules that depend on time (invite expiry).
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep moves the clock forward by d at once: background work paced on
// this clock (the monitor) runs without waiting, and the test sees the
// time it would have taken.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.Advance(d)
	return nil
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Client is a browser stand-in: a cookie jar, redirects not followed (tests
// assert each hop), every request against the app or the mock provider.
type Client struct {
	HTTP *http.Client
	base string
	t    testing.TB
}

// Client returns a new client for the app with an empty cookie jar.
func (a *App) Client() *Client { return NewClient(a.t, a.URL) }

// NewClient returns a client with an empty cookie jar for the ndiro
// running at base, e.g. "http://127.0.0.1:8080".
func NewClient(t testing.TB, base string) *Client {
	jar, _ := cookiejar.New(nil)
	// A transport of its own: every httptest.Server's Close closes the
	// idle connections of http.DefaultTransport, and a parallel test's
	// request that had just taken one of them would fail.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &Client{
		HTTP: &http.Client{
			Transport: tr,
			Jar:       jar,
			// Generous: photo uploads under the race detector on a busy
			// 2-core machine take seconds each.
			Timeout:       3 * time.Minute,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		base: base,
		t:    t,
	}
}

// Response is a fully read response.
type Response struct {
	*http.Response
	Body string
}

// Doc parses the body as HTML.
func (r *Response) Doc() *goquery.Document {
	d, err := goquery.NewDocumentFromReader(strings.NewReader(r.Body))
	if err != nil {
		panic(err)
	}
	return d
}

// Text returns the trimmed text of the first node matching selector.
func (r *Response) Text(selector string) string {
	return strings.TrimSpace(r.Doc().Find(selector).First().Text())
}

// Location returns the Location header.
func (r *Response) Location() string { return r.Header.Get("Location") }

// Do sends req and reads the whole response. Errors fail the test.
func (c *Client) Do(req *http.Request) *Response {
	c.t.Helper()
	resp, err := c.HTTP.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read body: %v", req.Method, req.URL, err)
	}
	return &Response{Response: resp, Body: string(b)}
}

// Get fetches path (relative to the app) or an absolute URL.
func (c *Client) Get(path string) *Response {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.abs(path), nil)
	if err != nil {
		c.t.Fatal(err)
	}
	return c.Do(req)
}

// PostForm posts form values to path.
func (c *Client) PostForm(path string, form url.Values) *Response {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.abs(path), strings.NewReader(form.Encode()))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.Do(req)
}

func (c *Client) abs(path string) string {
	if strings.HasPrefix(path, "http://") || strings.HasPrefix(path, "https://") {
		return path
	}
	return c.base + path
}

// StartSignIn follows the app's sign-in from start (e.g. "/login" or
// "/login?invite=…") to the mock provider's sign-in page and returns the
// provider's authorization URL.
func (c *Client) StartSignIn(start string) *url.URL {
	c.t.Helper()
	resp := c.Get(start)
	if resp.StatusCode != http.StatusFound {
		c.t.Fatalf("GET %s = %d, want 302 to the provider; body: %s", start, resp.StatusCode, resp.Body)
	}
	u, err := url.Parse(resp.Location())
	if err != nil {
		c.t.Fatal(err)
	}
	return u
}

// Authorize submits the provider's sign-in page for email and returns the
// callback URL the provider redirects to.
func (c *Client) Authorize(authURL *url.URL, email string) string {
	c.t.Helper()
	return c.AuthorizeNamed(authURL, email, "")
}

// AuthorizeNamed is Authorize for an account whose provider profile has
// the name claim name ("" for none).
func (c *Client) AuthorizeNamed(authURL *url.URL, email, name string) string {
	c.t.Helper()
	u := *authURL
	q := u.Query()
	q.Set("email", email)
	if name != "" {
		q.Set("name", name)
	}
	u.RawQuery = q.Encode()
	resp := c.Get(u.String())
	if resp.StatusCode != http.StatusFound {
		c.t.Fatalf("provider authorize = %d, want 302; body: %s", resp.StatusCode, resp.Body)
	}
	return resp.Location()
}

// SignInVia runs the whole sign-in from start as email and returns the
// app's answer to the callback: 303 to the diary on success, an error page
// otherwise.
func (c *Client) SignInVia(start, email string) *Response {
	c.t.Helper()
	return c.Get(c.Authorize(c.StartSignIn(start), email))
}

// SignIn signs in as email, which must already have an account or be an
// admin email, and fails the test unless it lands on the diary.
func (c *Client) SignIn(email string) {
	c.t.Helper()
	resp := c.SignInVia("/login", email)
	if resp.StatusCode != http.StatusSeeOther || resp.Location() != "/meals" {
		c.t.Fatalf("sign in as %s: %d %s, want 303 to /meals; body: %s", email, resp.StatusCode, resp.Location(), resp.Body)
	}
}

// SignInNamed is SignIn for an account whose provider profile carries the
// name claim name.
func (c *Client) SignInNamed(email, name string) {
	c.t.Helper()
	resp := c.Get(c.AuthorizeNamed(c.StartSignIn("/login"), email, name))
	if resp.StatusCode != http.StatusSeeOther || resp.Location() != "/meals" {
		c.t.Fatalf("sign in as %s: %d %s, want 303 to /meals; body: %s", email, resp.StatusCode, resp.Location(), resp.Body)
	}
}

// CreateInvite signs nothing in: the client must be an admin. It creates an
// invite with form values and returns its token, read from the list page.
func (c *Client) CreateInvite(form url.Values) string {
	c.t.Helper()
	resp := c.PostForm("/admin/invites", form)
	if resp.StatusCode != http.StatusSeeOther {
		c.t.Fatalf("create invite: %d, want 303; body: %s", resp.StatusCode, resp.Body)
	}
	frag := resp.Location()[strings.Index(resp.Location(), "#")+1:]
	list := c.Get("/admin/invites")
	link, ok := list.Doc().Find("#" + frag + " input.copy").Attr("value")
	if !ok {
		c.t.Fatalf("invite %s not on the list page", frag)
	}
	return link[strings.LastIndex(link, "/")+1:]
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// File is one file part of a multipart form.
type File struct {
	Field, Name string
	Body        []byte
}

// PostMultipart posts a multipart/form-data form, as a browser's file
// upload does.
func (c *Client) PostMultipart(path string, form url.Values, files ...File) *Response {
	c.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, vs := range form {
		for _, v := range vs {
			mw.WriteField(k, v)
		}
	}
	for _, f := range files {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, f.Field, f.Name))
		h.Set("Content-Type", "image/jpeg") // what browsers send for .jpg, whatever the bytes
		part, err := mw.CreatePart(h)
		if err != nil {
			c.t.Fatal(err)
		}
		part.Write(f.Body)
	}
	mw.Close()
	req, err := http.NewRequest(http.MethodPost, c.abs(path), &buf)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return c.Do(req)
}

// ServerRequest returns a GET request for path carrying the client's
// cookies, to hand straight to the app's handler (benchmarks that leave
// the network out).
func (c *Client) ServerRequest(path string) *http.Request {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	u, _ := url.Parse(c.base)
	for _, ck := range c.HTTP.Jar.Cookies(u) {
		req.AddCookie(ck)
	}
	return req
}

// CreateShare posts the share create form (label, from, to, expiry, notes,
// numbers) as the signed-in owner and returns the new share's token, read
// from the list page's copy field.
func (c *Client) CreateShare(form url.Values) string {
	c.t.Helper()
	resp := c.PostForm("/shares", form)
	if resp.StatusCode != http.StatusSeeOther {
		c.t.Fatalf("create share: %d, want 303; body %s", resp.StatusCode, resp.Body)
	}
	loc := resp.Location()
	id := loc[strings.Index(loc, "#")+1:]
	link, ok := c.Get("/shares").Doc().Find("#" + id + " input.copy").Attr("value")
	if !ok {
		c.t.Fatalf("share %s not on the list page", id)
	}
	return link[strings.LastIndex(link, "/")+1:]
}
