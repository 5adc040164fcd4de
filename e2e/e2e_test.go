//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"ndiro/internal/apptest"
	"ndiro/internal/dynamo"
)

// The provider's test accounts (e2e/oidc-provider.mjs): the account ID is
// the subject, the email is a claim.
type account struct{ id, email string }

var (
	admin      = account{"acct-admin-7c1e", "admin@example.com"}
	friend     = account{"acct-friend-2b9d", "friend@example.com"}
	stranger   = account{"acct-stranger-5f03", "stranger@example.com"}
	unverified = account{"acct-unverified-9a44", "unverified@example.com"}
)

// The literal headers a browser acts on in AWS mode.
const (
	wantHSTS       = "max-age=63072000; includeSubDomains"
	wantPhotoCache = "private, max-age=31536000, immutable"
	providerName   = "Example ID" // NDIRO_OIDC_NAME
)

// harness is one run: the proxy's origin and what the browsers saw.
type harness struct {
	t    *testing.T
	s    settings
	base string // the public origin, https://127.0.0.1:port
	// issuer is the provider the running binary signs in with.
	issuer string
	rec    *recorder
	// secrets are values that must never appear in the logs: invite
	// tokens, OAuth state, nonces and codes.
	secrets []string
}

// client is a new browser: its own cookie jar, the shared transport.
func (h *harness) client() *apptest.Client {
	c := apptest.NewClient(h.t, h.base)
	c.HTTP.Transport = h.rec
	return c
}

// checkHSTS fails unless resp carries the HSTS header AWS mode promises.
func (h *harness) checkHSTS(resp *apptest.Response, what string) {
	h.t.Helper()
	if got := resp.Header.Get("Strict-Transport-Security"); got != wantHSTS {
		h.t.Errorf("%s: Strict-Transport-Security = %q, want %q", what, got, wantHSTS)
	}
}

// checkSessionCookie fails unless resp sets the session cookie with the
// attributes AWS mode promises: Secure, HttpOnly, SameSite=Lax, Path=/.
func (h *harness) checkSessionCookie(resp *apptest.Response, what string) {
	h.t.Helper()
	c := cookie(resp, "ndiro_session")
	if c == nil || !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" {
		h.t.Errorf("%s: session cookie %s, want Secure=true HttpOnly=true SameSite=Lax Path=\"/\"", what, describe(c))
	}
}

// signIn follows a sign-in from start (e.g. "/login?invite=…") through the
// provider's own login and consent pages as acct, and returns the app's
// answer to the callback.
func (h *harness) signIn(c *apptest.Client, start string, acct account) *apptest.Response {
	h.t.Helper()
	resp := c.Get(h.authorize(c, start, acct).String())
	h.checkHSTS(resp, "callback")
	return resp
}

// authorize follows a sign-in from start through the provider's pages as
// acct and returns the callback URL the provider sends the browser to.
func (h *harness) authorize(c *apptest.Client, start string, acct account) *url.URL {
	h.t.Helper()
	t := h.t
	resp := c.Get(start)
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("GET %s = %d, want 302 to the provider; body: %s", start, resp.StatusCode, resp.Body)
	}
	h.checkHSTS(resp, "GET "+start)
	if cookie(resp, "ndiro_session") != nil {
		t.Errorf("GET %s set a session cookie: sign-in state belongs in its attempt cookie", start)
	}
	// The sign-in attempt's own cookie: Secure, HttpOnly, Lax, 10 minutes.
	var attempt *http.Cookie
	for _, ck := range resp.Cookies() {
		if strings.HasPrefix(ck.Name, "ndiro_signin_") && ck.MaxAge > 0 {
			attempt = ck
		}
	}
	if attempt == nil || !attempt.Secure || !attempt.HttpOnly || attempt.SameSite != http.SameSiteLaxMode || attempt.Path != "/" || attempt.MaxAge != 600 {
		t.Errorf("GET %s: attempt cookie %s Max-Age=%d, want Secure=true HttpOnly=true SameSite=Lax Path=\"/\" Max-Age=600", start, describe(attempt), maxAge(attempt))
	}
	authURL, err := url.Parse(resp.Location())
	if err != nil {
		t.Fatal(err)
	}
	q := authURL.Query()
	if !strings.HasPrefix(authURL.String(), h.issuer+"/") {
		t.Fatalf("sign-in goes to %s, want the provider at %s", authURL, h.issuer)
	}
	for k, want := range map[string]string{
		"response_type":         "code",
		"client_id":             h.s.ClientID,
		"redirect_uri":          h.base + "/auth/callback",
		"code_challenge_method": "S256",
	} {
		if got := q.Get(k); got != want {
			t.Errorf("authorization request %s = %q, want %q", k, got, want)
		}
	}
	if scopes := strings.Fields(q.Get("scope")); !contains(scopes, "openid") || !contains(scopes, "email") {
		t.Errorf("authorization request scope = %q, want openid and email", q.Get("scope"))
	}
	state := q.Get("state")
	for _, k := range []string{"state", "nonce", "code_challenge"} {
		if q.Get(k) == "" {
			t.Fatalf("authorization request has no %s: %s", k, authURL)
		}
		h.secrets = append(h.secrets, q.Get(k))
	}

	// The provider's pages, as a person clicks through them.
	at := authURL.String()
	resp = c.Get(at)
	var sawLogin, sawConsent bool
	var callback *url.URL
	for hop := 0; callback == nil; hop++ {
		if hop == 12 {
			t.Fatalf("no callback after 12 steps at the provider; last %s = %d", at, resp.StatusCode)
		}
		switch {
		case resp.StatusCode >= 300 && resp.StatusCode < 400:
			next := resolve(t, at, resp.Location())
			if strings.HasPrefix(next, h.base+"/auth/callback?") {
				callback, _ = url.Parse(next)
				continue
			}
			at, resp = next, c.Get(next)
		case resp.StatusCode == http.StatusOK:
			form := resp.Doc().Find("form").First()
			action, _ := form.Attr("action")
			prompt, _ := form.Find(`input[name=prompt]`).Attr("value")
			fields := url.Values{"prompt": {prompt}}
			switch prompt {
			case "login":
				sawLogin = true
				fields.Set("login", acct.id)
				fields.Set("password", "any password")
			case "consent":
				sawConsent = true
			default:
				t.Fatalf("provider page %s has no login or consent form: %s", at, resp.Body)
			}
			at = resolve(t, at, action)
			resp = c.PostForm(at, fields)
		default:
			t.Fatalf("provider %s = %d: %s", at, resp.StatusCode, resp.Body)
		}
	}
	if !sawLogin || !sawConsent {
		t.Errorf("sign-in as %s: login page shown %v, consent page shown %v; want both", acct.id, sawLogin, sawConsent)
	}
	cq := callback.Query()
	if cq.Get("state") != state || cq.Get("code") == "" || cq.Get("iss") != h.issuer {
		t.Errorf("callback query %v, want the request's state, a code and iss=%s", cq, h.issuer)
	}
	h.secrets = append(h.secrets, cq.Get("code"))
	return callback
}

func resolve(t *testing.T, base, ref string) string {
	t.Helper()
	b, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	r, err := url.Parse(ref)
	if err != nil {
		t.Fatal(err)
	}
	return b.ResolveReference(r).String()
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestProductionPath runs the release binary as production runs it and
// uses it as people would: an admin signs in, invites a friend, the friend
// signs up, logs a meal with a photo, sees the month and the photo (then
// 304), and signs out; the process stops cleanly on SIGTERM. Along the way
// it checks what only AWS mode does: Secure cookies, HSTS, JSON logs that
// leak nothing, the start-up check of the tables.
func TestProductionPath(t *testing.T) {
	s := loadSettings(t)
	ctx := context.Background()
	db, s3c := clients(s)
	run := randomHex(t, 4)
	tablePrefix := "e2e-" + run + "-"
	tables := dynamo.NewTables(tablePrefix)
	bucket := "ndiro-e2e-" + run

	cert, pool := selfSigned(t)
	h := &harness{t: t, s: s, base: "https://" + s.ProxyAddr, issuer: s.Issuer}
	h.rec = &recorder{base: &http.Transport{TLSClientConfig: tlsConfig(pool)}}

	env := []string{
		"NDIRO_MODE=aws",
		"NDIRO_ADDR=127.0.0.1:0",
		"NDIRO_BASE_URL=" + h.base,
		"NDIRO_TABLE_PREFIX=" + tablePrefix,
		"NDIRO_BUCKET=" + bucket,
		"ADMIN_EMAILS=" + admin.email,
		"AWS_REGION=" + region,
		"AWS_ACCESS_KEY_ID=" + accessKey,
		"AWS_SECRET_ACCESS_KEY=" + secretKey,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL_DYNAMODB=" + s.DynamoDB,
		"AWS_ENDPOINT_URL_S3=" + s.S3,
		"NDIRO_OIDC_ISSUER=" + s.Issuer,
		"NDIRO_OIDC_CLIENT_ID=" + s.ClientID,
		"NDIRO_OIDC_CLIENT_SECRET=" + s.ClientSecret,
		"NDIRO_OIDC_NAME=" + providerName,
	}

	// Before the tables exist the binary refuses to start, naming each.
	p := start(t, s.Bin, env)
	if !p.exited(30 * time.Second) {
		t.Fatal("ndiro kept running without its tables")
	}
	if code := p.exitCode(); code != 1 {
		t.Errorf("ndiro without tables exited with %d, want 1", code)
	}
	for _, tb := range tables.All() {
		if want := "dynamodb table " + tb.Name + ": does not exist"; !strings.Contains(p.stderr.String(), want) {
			t.Errorf("start-up error does not say %q:\n%s", want, p.stderr)
		}
	}

	// Tables and bucket from the definitions Terraform is tested against.
	if err := dynamo.CreateTables(ctx, db, tables); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}

	// An issuer that differs from the provider's own by a trailing slash
	// (a common slip: Authentik's issuers end in one, Keycloak's do not)
	// stops start-up with a message naming the setting.
	p = start(t, s.Bin, append(env[:len(env):len(env)], "NDIRO_OIDC_ISSUER="+s.Issuer+"/"))
	if !p.exited(30*time.Second) || p.exitCode() != 1 {
		t.Fatal("ndiro started with a wrong NDIRO_OIDC_ISSUER")
	}
	if e := p.stderr.String(); !strings.Contains(e, "NDIRO_OIDC_ISSUER") || !strings.Contains(e, "did not match the issuer URL returned by provider") {
		t.Errorf("start-up error for a wrong issuer does not name NDIRO_OIDC_ISSUER and the mismatch:\n%s", e)
	}

	p = start(t, s.Bin, env)
	px := startProxy(t, s.ProxyAddr, cert)
	px.forward(p.listenAddr(t))

	home := h.client().Get("/")
	if home.StatusCode != http.StatusOK {
		t.Fatalf("GET / = %d", home.StatusCode)
	}
	h.checkHSTS(home, "GET /")
	if cookie(home, "ndiro_session") != nil {
		t.Error("GET / set a session cookie for an anonymous visitor")
	}
	if got := home.Text(`a[href="/login"]`); got != "Sign in with "+providerName {
		t.Errorf("home page sign-in button = %q, want %q (NDIRO_OIDC_NAME)", got, "Sign in with "+providerName)
	}

	// The admin signs in (ADMIN_EMAILS: no invite needed).
	ac := h.client()
	resp := h.signIn(ac, "/login", admin)
	if resp.StatusCode != http.StatusSeeOther || resp.Location() != "/meals" {
		t.Fatalf("admin sign-in = %d %q, want 303 /meals; body: %s", resp.StatusCode, resp.Location(), resp.Body)
	}
	h.checkSessionCookie(resp, "admin callback")
	if r := ac.Get("/meals"); r.StatusCode != http.StatusOK {
		t.Fatalf("admin GET /meals = %d", r.StatusCode)
	}

	// … and invites the friend by email.
	tok := ac.CreateInvite(url.Values{"role": {"owner"}, "email": {friend.email}, "expiry_days": {"7"}})
	h.secrets = append(h.secrets, tok)

	// Someone without an invite, and someone whose provider has not
	// verified the email, are turned away.
	if r := h.signIn(h.client(), "/login", stranger); r.StatusCode != http.StatusForbidden || r.Text("h1") != "You need an invite" {
		t.Errorf("stranger sign-in = %d %q, want 403 You need an invite", r.StatusCode, r.Text("h1"))
	}
	if r := h.signIn(h.client(), "/login?invite="+tok, unverified); r.StatusCode != http.StatusForbidden || r.Text("h1") != "Email not verified" {
		t.Errorf("unverified sign-in = %d %q, want 403 Email not verified", r.StatusCode, r.Text("h1"))
	} else if msg := r.Text("main p"); !strings.Contains(msg, "not verified at "+providerName+".") {
		t.Errorf("unverified sign-in message %q does not name the provider %s", msg, providerName)
	}
	// The provider really requires PKCE (its settings fail silently when
	// misspelled): the app's own request without the challenge is refused.
	pc := h.client()
	noPKCE := mustURL(t, pc.Get("/login").Location())
	q := noPKCE.Query()
	q.Del("code_challenge")
	q.Del("code_challenge_method")
	noPKCE.RawQuery = q.Encode()
	if r := pc.Get(noPKCE.String()); r.StatusCode < 300 || r.StatusCode > 399 || mustURL(t, r.Location()).Query().Get("error") != "invalid_request" {
		t.Errorf("authorization request without PKCE = %d to %q, want a redirect with error=invalid_request", r.StatusCode, r.Location())
	}
	// The provider promises iss on every answer (RFC 9207): one without it
	// is refused.
	sc := h.client()
	cb := h.authorize(sc, "/login", admin)
	q = cb.Query()
	q.Del("iss")
	cb.RawQuery = q.Encode()
	if r := sc.Get(cb.String()); r.StatusCode != http.StatusBadRequest || r.Text("h1") != "Sign-in refused" {
		t.Errorf("callback without iss = %d %q, want 400 Sign-in refused", r.StatusCode, r.Text("h1"))
	}

	// The friend opens the invite and signs up with it.
	fc := h.client()
	landing := fc.Get("/invite/" + tok)
	if landing.StatusCode != http.StatusOK || landing.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("invite landing = %d, Referrer-Policy %q; want 200 no-referrer", landing.StatusCode, landing.Header.Get("Referrer-Policy"))
	}
	if got := landing.Text(`a.button[href="/login?invite=` + tok + `"]`); got != "Sign in with "+providerName {
		t.Errorf("invite landing sign-in button = %q, want %q", got, "Sign in with "+providerName)
	}
	resp = h.signIn(fc, "/login?invite="+tok, friend)
	if resp.StatusCode != http.StatusSeeOther || resp.Location() != "/meals" {
		t.Fatalf("friend sign-up = %d %q, want 303 /meals; body: %s", resp.StatusCode, resp.Location(), resp.Body)
	}
	h.checkSessionCookie(resp, "friend callback")
	users := ac.Get("/admin/users").Doc().Find("tbody tr")
	if n := users.Length(); n != 2 || !strings.Contains(users.Text(), friend.email) {
		t.Errorf("admin users page lists %d users (%q), want 2 with %s", n, strings.Join(strings.Fields(users.Text()), " "), friend.email)
	}

	// The friend logs a lunch with a photo.
	const date, month = "2026-09-14", "2026-09"
	resp = fc.PostMultipart("/meals",
		url.Values{"date": {date}, "time": {"12:30"}, "kind": {"lunch"}, "notes": {"Lentil soup"}, "kcal": {"512.5"}},
		apptest.File{Field: "photo", Name: "lunch.jpg", Body: testJPEG(t, 800, 600)})
	prefix := "/meals?month=" + month + "#meal-"
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Location(), prefix) {
		t.Fatalf("add meal = %d %q, want 303 to %s…; body: %s", resp.StatusCode, resp.Location(), prefix, resp.Body)
	}
	mealID := strings.TrimPrefix(resp.Location(), prefix)
	if c := cookie(resp, "ndiro_flash"); c == nil || !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" {
		t.Errorf("add meal: flash cookie %s, want Secure=true HttpOnly=true SameSite=Lax Path=\"/\"", describe(c))
	}

	// The month page lists it, read back from the meals table.
	page := fc.Get("/meals?month=" + month)
	if page.StatusCode != http.StatusOK {
		t.Fatalf("month page = %d", page.StatusCode)
	}
	h.checkHSTS(page, "month page")
	li := page.Doc().Find("#meal-" + mealID)
	if got := strings.TrimSpace(li.Find(".notes").Text()); got != "Lentil soup" {
		t.Errorf("month page notes = %q, want Lentil soup", got)
	}
	// kcal shown whole; the export below keeps 512.5 as typed.
	if got := strings.TrimSpace(li.Find(".kcal").Text()); got != "513 kcal" {
		t.Errorf("month page kcal = %q, want 513 kcal", got)
	}
	thumbURL, _ := li.Find("img").Attr("src")
	// The thumbnail leads to the meal's page, which shows the display size.
	detailURL, _ := li.Find("a").Attr("href")
	if detailURL != "/meals/"+date+"/"+mealID {
		t.Errorf("thumbnail links to %q, want the meal's page /meals/%s/%s", detailURL, date, mealID)
	}
	displayURL, _ := fc.Get(detailURL).Doc().Find("img.photo").Attr("src")
	if !strings.HasPrefix(thumbURL, "/photo/"+date+"/"+mealID+"?") || !strings.HasPrefix(displayURL, "/photo/"+date+"/"+mealID+"?") {
		t.Fatalf("photo URLs %q and %q, want /photo/%s/%s?…", thumbURL, displayURL, date, mealID)
	}

	// The photo: 200 with the stored bytes, then 304.
	ph := fc.Get(displayURL)
	if ph.StatusCode != http.StatusOK {
		t.Fatalf("GET photo = %d: %s", ph.StatusCode, ph.Body)
	}
	h.checkHSTS(ph, "photo")
	for k, want := range map[string]string{"Content-Type": "image/jpeg", "Cache-Control": wantPhotoCache, "Set-Cookie": ""} {
		if got := ph.Header.Get(k); got != want {
			t.Errorf("photo %s = %q, want %q", k, got, want)
		}
	}
	if cfg, err := jpeg.DecodeConfig(strings.NewReader(ph.Body)); err != nil || cfg.Width != 800 || cfg.Height != 600 {
		t.Errorf("photo decodes as %dx%d (%v), want an 800x600 JPEG", cfg.Width, cfg.Height, err)
	}
	key := "users/" + friend.id + "/meals/" + date + "/" + mealID + ".jpg"
	if stored := getObject(t, s3c, bucket, key); !bytes.Equal(stored, []byte(ph.Body)) {
		t.Errorf("served %d bytes, s3rver holds %d under %s; want the same bytes", len(ph.Body), len(stored), key)
	}
	if keys := listKeys(t, s3c, bucket); !equal(keys, []string{key, strings.TrimSuffix(key, ".jpg") + ".thumb.jpg"}) {
		t.Errorf("bucket holds %q, want the display and thumbnail copies", keys)
	}
	th := fc.Get(thumbURL)
	if cfg, err := jpeg.DecodeConfig(strings.NewReader(th.Body)); th.StatusCode != http.StatusOK || err != nil || cfg.Width != 480 || cfg.Height != 360 {
		t.Errorf("thumbnail = %d, %dx%d (%v), want 200 480x360", th.StatusCode, cfg.Width, cfg.Height, err)
	}
	etag := ph.Header.Get("ETag")
	req, _ := http.NewRequest(http.MethodGet, h.base+displayURL, nil)
	req.Header.Set("If-None-Match", etag)
	again := fc.Do(req)
	if etag == "" || again.StatusCode != http.StatusNotModified || again.Body != "" || again.Header.Get("ETag") != etag {
		t.Errorf("photo with If-None-Match %s = %d, %d bytes, ETag %q; want 304, none, the same ETag", etag, again.StatusCode, len(again.Body), again.Header.Get("ETag"))
	}
	h.checkHSTS(again, "photo 304")

	// A share link over the meal's day: a recipient without an account
	// sees the meal and its photo (revalidated on every view), and once the
	// owner revokes the link, neither.
	shareTok := fc.CreateShare(url.Values{"label": {"Dr. Rossi"}, "from": {date}, "to": {date}, "expiry": {"7"}, "notes": {"1"}, "numbers": {"1"}})
	h.secrets = append(h.secrets, shareTok)
	recipient := h.client()
	sp := recipient.Get("/s/" + shareTok)
	if sp.StatusCode != http.StatusOK || sp.Header.Get("Referrer-Policy") != "no-referrer" || sp.Header.Get("Set-Cookie") != "" {
		t.Fatalf("share page = %d, Referrer-Policy %q, Set-Cookie %q; want 200, no-referrer, none", sp.StatusCode, sp.Header.Get("Referrer-Policy"), sp.Header.Get("Set-Cookie"))
	}
	h.checkHSTS(sp, "share page")
	if !strings.Contains(sp.Text("main"), "Lentil soup") {
		t.Errorf("share page does not show the meal's notes")
	}
	sharedThumb, _ := sp.Doc().Find("main img").First().Attr("src")
	if !strings.HasPrefix(sharedThumb, "/s/"+shareTok+"/photo/"+date+"/"+mealID) {
		t.Fatalf("share page photo %q, want one under /s/{token}/photo/%s/%s", sharedThumb, date, mealID)
	}
	sph := recipient.Get(sharedThumb)
	if sph.StatusCode != http.StatusOK || sph.Header.Get("Cache-Control") != "private, no-cache" || sph.Body != th.Body {
		t.Errorf("shared photo = %d, Cache-Control %q, %d bytes; want 200, private, no-cache, the thumbnail's %d bytes", sph.StatusCode, sph.Header.Get("Cache-Control"), len(sph.Body), len(th.Body))
	}
	if r := fc.PostForm("/shares/"+shareTok+"/revoke", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke share = %d; body: %s", r.StatusCode, r.Body)
	}
	for _, u := range []string{"/s/" + shareTok, sharedThumb} {
		if r := recipient.Get(u); r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s after revoking = %d, want 404", u, r.StatusCode)
		}
	}

	// The export carries the number as a JSON number and the photo's
	// public URL.
	h.checkExport(fc, h.base+displayURL)

	// Edit the notes, move the meal to another day through the same form
	// (the photo is copied to the new keys), then delete it: every write
	// path of a meal against dynalite and s3rver.
	editPath := "/meals/" + date + "/" + mealID
	resp = fc.PostMultipart(editPath, url.Values{"date": {date}, "time": {"12:30"}, "kind": {"lunch"}, "notes": {"Lentil soup, bread"}, "kcal": {"512.5"}, "version": {h.version(fc, editPath)}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("edit meal = %d; body: %s", resp.StatusCode, resp.Body)
	}
	const newDate = "2026-09-20"
	resp = fc.PostMultipart(editPath, url.Values{"date": {newDate}, "time": {"19:05"}, "kind": {"lunch"}, "notes": {"Lentil soup, bread"}, "kcal": {"512.5"}, "version": {h.version(fc, editPath)}})
	movedPrefix := "/meals?month=" + month + "#meal-"
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Location(), movedPrefix) {
		t.Fatalf("move meal = %d %q, want 303 to %s…; body: %s", resp.StatusCode, resp.Location(), movedPrefix, resp.Body)
	}
	movedID := strings.TrimPrefix(resp.Location(), movedPrefix)
	li = fc.Get("/meals?month=" + month).Doc().Find("#meal-" + movedID)
	if got := strings.TrimSpace(li.Find(".notes").Text()); got != "Lentil soup, bread" {
		t.Errorf("moved meal notes = %q, want the edited ones", got)
	}
	movedURL, _ := fc.Get("/meals/" + newDate + "/" + movedID).Doc().Find("img.photo").Attr("src")
	if r := fc.Get(movedURL); r.StatusCode != http.StatusOK || r.Body != ph.Body {
		t.Errorf("moved photo = %d with %d bytes, want 200 with the %d bytes of the original", r.StatusCode, len(r.Body), len(ph.Body))
	}
	movedKey := "users/" + friend.id + "/meals/" + newDate + "/" + movedID + ".jpg"
	if keys := listKeys(t, s3c, bucket); !equal(keys, []string{movedKey, strings.TrimSuffix(movedKey, ".jpg") + ".thumb.jpg"}) {
		t.Errorf("after the move the bucket holds %q, want only the new keys", keys)
	}
	resp = fc.PostForm("/meals/"+newDate+"/"+movedID+"/delete", nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete meal = %d; body: %s", resp.StatusCode, resp.Body)
	}
	if keys := listKeys(t, s3c, bucket); len(keys) != 0 {
		t.Errorf("after deleting the meal the bucket holds %q, want nothing", keys)
	}
	if empty := fc.Get("/meals?month=" + month).Doc().Find("#empty"); empty.Length() != 1 {
		t.Error("the month page after the delete does not say it is empty")
	}

	// Signing out ends the session on the server, not only in the browser.
	old := fc.HTTP.Jar.Cookies(mustURL(t, h.base))
	resp = fc.PostForm("/logout", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Location() != "/" {
		t.Fatalf("sign out = %d %q, want 303 /", resp.StatusCode, resp.Location())
	}
	if c := cookie(resp, "ndiro_session"); c == nil || c.MaxAge >= 0 || !c.Secure {
		t.Errorf("sign out: session cookie %s MaxAge=%d, want it expired (and Secure)", describe(c), maxAge(c))
	}
	if r := fc.Get("/meals"); r.StatusCode != http.StatusSeeOther || r.Location() != "/login?next=%2Fmeals" {
		t.Errorf("GET /meals after sign out = %d %q, want 303 to /login?next=%%2Fmeals", r.StatusCode, r.Location())
	}
	replay := h.client()
	replay.HTTP.Jar.SetCookies(mustURL(t, h.base), old)
	if r := replay.Get("/meals"); r.StatusCode != http.StatusSeeOther {
		t.Errorf("the signed-out session cookie replayed: GET /meals = %d, want 303 to sign-in", r.StatusCode)
	}

	// SIGTERM: a clean, quick exit.
	stopAt := time.Now()
	p.terminate(t)
	if !p.exited(10 * time.Second) {
		t.Fatal("ndiro still running 10 s after SIGTERM")
	}
	if took := time.Since(stopAt); took > 5*time.Second {
		t.Errorf("shutdown took %v, want under 5 s", took)
	}
	if code := p.exitCode(); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0; stderr: %s", code, p.stderr)
	}
	if e := p.stderr.String(); e != "" {
		t.Errorf("stderr is not empty:\n%s", e)
	}
	// Successful owner photo requests are not logged (a month page makes
	// up to 90); refused ones are, and the recipient's refused photo is.
	h.checkLogs(p.stdout.String(), map[string]int{"listening": 1, "user signed up": 2, "shutting down": 1},
		"/login", "/auth/callback", "/invite/{token}", "/meals", "/shares", "/s/{token}", "/s/{token}/photo/{date}/{meal_id}", "/logout")

	// A provider that sends the email only from its userinfo endpoint, not
	// in the ID token (OIDC Core 5.4, oidc-provider's default): the same
	// binary and data with NDIRO_OIDC_ISSUER pointing there. The admin's
	// subject is the same at both, so the admin signs straight in.
	strictEnv := append(env[:len(env):len(env)], "NDIRO_OIDC_ISSUER="+s.StrictIssuer)
	p = start(t, s.Bin, strictEnv)
	px.forward(p.listenAddr(t))
	h.issuer = s.StrictIssuer
	sa := h.client()
	if r := h.signIn(sa, "/login", admin); r.StatusCode != http.StatusSeeOther || r.Location() != "/meals" {
		t.Errorf("admin sign-in at the strict provider = %d %q (%s), want 303 /meals", r.StatusCode, r.Location(), r.Text("h1"))
	} else if r := sa.Get("/meals"); r.StatusCode != http.StatusOK {
		t.Errorf("GET /meals after signing in at the strict provider = %d, want 200", r.StatusCode)
	}
	if r := h.signIn(h.client(), "/login", unverified); r.StatusCode != http.StatusForbidden || r.Text("h1") != "Email not verified" {
		t.Errorf("unverified sign-in at the strict provider = %d %q, want 403 Email not verified", r.StatusCode, r.Text("h1"))
	}
	p.terminate(t)
	if !p.exited(10*time.Second) || p.exitCode() != 0 {
		t.Errorf("second run: no clean exit after SIGTERM; stderr: %s", p.stderr)
	}
	h.checkLogs(p.stdout.String(), map[string]int{"listening": 1, "user signed up": 0, "shutting down": 1}, "/login", "/auth/callback", "/meals")
}

// checkLogs checks that every line of stdout is a JSON log record, that
// it holds count records of each message in counts and an access log
// record for each of routes, and that no secret, session cookie or email
// appears anywhere.
func (h *harness) checkLogs(out string, counts map[string]int, routes ...string) {
	t := h.t
	t.Helper()
	msgs := map[string]int{}
	logged := map[string]bool{}
	for i, line := range logLines(out) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("log line %d is not JSON (%v): %s", i+1, err, line)
			continue
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("log line %d has no %q: %s", i+1, k, line)
			}
		}
		msg, _ := rec["msg"].(string)
		msgs[msg]++
		if r, ok := rec["route"].(string); ok {
			logged[r] = true
		}
	}
	for msg, want := range counts {
		if msgs[msg] != want {
			t.Errorf("%d %q log records, want %d", msgs[msg], msg, want)
		}
	}
	for _, r := range routes {
		if !logged[r] {
			t.Errorf("no access log record for route %s", r)
		}
	}

	forbidden := map[string]string{
		"client secret": h.s.ClientSecret,
	}
	for _, a := range []account{admin, friend, stranger, unverified} {
		forbidden["email "+a.email] = a.email
	}
	for i, v := range h.secrets {
		forbidden[fmt.Sprintf("token or OAuth value #%d", i)] = v
	}
	sessions := h.rec.sessionValues()
	if len(sessions) < 3 {
		t.Errorf("recorded %d session cookie values, want at least one per sign-in", len(sessions))
	}
	for i, v := range sessions {
		forbidden[fmt.Sprintf("session cookie #%d", i)] = v
	}
	var names []string
	for name := range forbidden {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if v := forbidden[name]; v != "" && strings.Contains(out, v) {
			t.Errorf("the logs contain the %s (%q)", name, v)
		}
	}
}

// version reads the meal's version from its edit form, as the browser
// sends it back.
func (h *harness) version(c *apptest.Client, mealPath string) string {
	h.t.Helper()
	v, ok := c.Get(mealPath + "/edit").Doc().Find(`form.meal-form input[name=version]`).Attr("value")
	if !ok || v == "" {
		h.t.Fatalf("the edit form of %s has no version", mealPath)
	}
	return v
}

// checkExport downloads the account export and checks its one meal: kcal
// a JSON number, the photo URL on the public origin.
func (h *harness) checkExport(c *apptest.Client, photoURL string) {
	t := h.t
	t.Helper()
	resp := c.Get("/account/export.json")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("export = %d %q, want 200 JSON", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var export struct {
		Meals []struct {
			Kcal  any `json:"kcal"`
			Photo struct {
				URL string `json:"url"`
			} `json:"photo"`
		} `json:"meals"`
	}
	dec := json.NewDecoder(strings.NewReader(resp.Body))
	dec.UseNumber()
	if err := dec.Decode(&export); err != nil {
		t.Fatalf("export is not JSON: %v", err)
	}
	if len(export.Meals) != 1 {
		t.Fatalf("export has %d meals, want 1", len(export.Meals))
	}
	m := export.Meals[0]
	if n, ok := m.Kcal.(json.Number); !ok || n.String() != "512.5" {
		t.Errorf("export kcal = %#v, want the JSON number 512.5", m.Kcal)
	}
	if m.Photo.URL != photoURL {
		t.Errorf("export photo URL = %q, want %q", m.Photo.URL, photoURL)
	}
}

func getObject(t *testing.T, c *s3.Client, bucket, key string) []byte {
	t.Helper()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s from s3rver: %v", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func listKeys(t *testing.T, c *s3.Client, bucket string) []string {
	t.Helper()
	out, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	sort.Strings(keys)
	return keys
}

func equal(a, b []string) bool {
	sort.Strings(b)
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func maxAge(c *http.Cookie) int {
	if c == nil {
		return 0
	}
	return c.MaxAge
}
