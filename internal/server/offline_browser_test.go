package server_test

import (
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cachestorage"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/indexeddb"
	"github.com/chromedp/cdproto/serviceworker"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
)

// cut is the network between the browser and the app: while down, every
// request, the page's and the service worker's alike, ends with its
// connection closed unanswered, as with no signal.
type cut struct{ down atomic.Bool }

func (c *cut) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.down.Load() {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					tc.SetLinger(0)
				}
				conn.Close()
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// waitLong bounds each wait: long, for a loaded machine; a wait ends as
// soon as its condition holds.
const waitLong = 2 * time.Minute

func poll(js string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(waitLong), chromedp.WithPollingInterval(50*time.Millisecond))
}

// warmed waits until the service worker is active and keeps the Add form
// (and so its files) in the signed-in person's cache. The page itself may
// be uncontrolled (loaded while the worker was installing); every
// navigation after it goes through the worker.
var warmed = poll(`(async () => {
	const reg = await navigator.serviceWorker.getRegistration();
	if (!reg || !reg.active || reg.active.state !== "activated") return false;
	const h = document.querySelector('meta[name="ndiro-user"]').content;
	const c = await caches.open("ndiro-pages-" + h);
	return !!(await c.match("/meals/new"));
})()`)

// workerState says what the page knows of its service worker and caches,
// for a failure message.
func workerState(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(async () => {
		const reg = await navigator.serviceWorker.getRegistration();
		const names = await caches.keys();
		const kept = {};
		for (const n of names) kept[n] = (await (await caches.open(n)).keys()).map(r => new URL(r.url).pathname);
		return JSON.stringify({controller: !!navigator.serviceWorker.controller, active: reg && reg.active && reg.active.state,
			installing: !!(reg && reg.installing), waiting: !!(reg && reg.waiting), kept});
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		return "worker state unknown: " + err.Error()
	}
	return "worker state " + s
}

// offlineApp starts the app behind a cut and Chromium signed in as email,
// its service worker installed and warm.
func offlineApp(t *testing.T, email string) (*apptest.App, *cut, context.Context) {
	t.Helper()
	return offlineAppWith(t, email, apptest.Options{})
}

// offlineAppWith is offlineApp with o's options (its Wrap goes inside
// the cut).
func offlineAppWith(t *testing.T, email string, o apptest.Options) (*apptest.App, *cut, context.Context) {
	t.Helper()
	ctx := apptest.Browser(t, 390, 844, 8*time.Minute)
	net := &cut{}
	inner := o.Wrap
	o.Wrap = func(h http.Handler) http.Handler {
		if inner != nil {
			h = inner(h)
		}
		return net.wrap(h)
	}
	app := apptest.New(t, o)
	if err := chromedp.Do(ctx, app.BrowserSignIn(email), chromedp.Navigate(app.URL+"/meals"), warmed); err != nil {
		t.Fatalf("sign in and install the service worker: %v; %s", err, workerState(ctx))
	}
	return app, net, ctx
}

// addOffline fills the Add form (served by the service worker) and saves
// it with no network: the meal goes to the outbox, waiting count n.
func addOffline(photo, date, tod, notes string, n int) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.WaitVisible(chromedp.CSS(`form.meal-form`)),
		// upload.js has taken the form (it sets the meal's key).
		poll(`!!window.NdiroOutbox && document.querySelector('input[name="idem"]').value.length === 22`),
		chromedp.SetValue(chromedp.CSS(`#date`), date),
		chromedp.SetValue(chromedp.CSS(`#time`), tod),
		chromedp.SetValue(chromedp.CSS(`#notes`), notes),
		chromedp.SetUploadFiles(chromedp.CSS(`#photo`), []string{photo}),
		chromedp.Click(chromedp.CSS(`form.meal-form button[type=submit]`)),
		poll(`document.querySelector(".upload-text").textContent.startsWith("Saved on this device") &&
			document.querySelectorAll("#outbox .outbox-item").length === `+itoa(n)+` &&
			document.getElementById("outbox-badge").textContent === "`+waiting(n)+`" &&
			document.querySelector("#notes").value === ""`),
	)
}

func itoa(n int) string { return string(rune('0' + n)) }

func waiting(n int) string {
	if n == 1 {
		return "1 meal waiting to upload"
	}
	return itoa(n) + " meals waiting to upload"
}

// TestBrowserOfflineOutbox: signed in, the network goes; the Add page
// still opens (from the service worker) and takes three meals with
// photos, which wait in the outbox; the page closed and opened again,
// still offline, shows them; with the network back, the next visit sends
// them: each saved exactly once, with its photo and the time chosen.
func TestBrowserOfflineOutbox(t *testing.T) {
	apptest.NeedBrowser(t)
	t.Parallel()
	app, net, ctx := offlineApp(t, "admin@example.com")
	photo := filepath.Join(apptest.PhotosDir(t), "small.jpg")
	day := time.Now().AddDate(0, 0, -2).Format(time.DateOnly)
	tab, closeTab := chromedp.NewContext(ctx)
	net.down.Store(true)
	err := chromedp.Do(tab,
		chromedp.Navigate(app.URL+"/meals/new"),
		chromedp.WaitVisible(chromedp.CSS(`#offline-note`)),
		addOffline(photo, day, "07:15", "offline porridge", 1),
		addOffline(photo, day, "12:40", "offline soup", 2),
		addOffline(photo, day, "19:05", "offline curry", 3),
	)
	if err != nil {
		t.Fatalf("three meals offline: %v", err)
	}
	closeTab()

	again, closeAgain := chromedp.NewContext(ctx)
	defer closeAgain()
	err = chromedp.Do(again,
		chromedp.Navigate(app.URL+"/meals/new"),
		chromedp.WaitVisible(chromedp.CSS(`#offline-note`)),
		poll(`document.querySelectorAll("#outbox .outbox-item.waiting").length === 3 &&
			[...document.querySelectorAll("#outbox .outbox-what")].map(p => p.textContent).join("|").includes("offline soup")`),
	)
	if err != nil {
		t.Fatalf("reopened offline: %v", err)
	}
	if n := len(mealsOf(t, app, "admin@example.com")); n != 0 {
		t.Fatalf("%d meals on the server while offline", n)
	}

	net.down.Store(false)
	err = chromedp.Do(again,
		chromedp.Reload(),
		poll(`(async () => document.getElementById("outbox-badge").hidden && (await NdiroOutbox.all()).length === 0)()`),
	)
	if err != nil {
		t.Fatalf("the next visit online did not empty the outbox: %v", err)
	}
	ms := mealsOf(t, app, "admin@example.com")
	var got []string
	for _, m := range ms {
		if !m.HasPhoto() {
			t.Errorf("meal %q has no photo", m.Notes)
		}
		got = append(got, m.Date+" "+m.Time+" "+m.Notes)
	}
	sort.Strings(got)
	want := []string{day + " 07:15:00 offline porridge", day + " 12:40:00 offline soup", day + " 19:05:00 offline curry"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("saved meals:\n%s\nwant exactly once each:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func mealsOf(t *testing.T, app *apptest.App, email string) []meal.Meal {
	t.Helper()
	ms, err := app.Meals.All(context.Background(), localenv.Subject(email))
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestBrowserOutboxRefusedAndSignOut: a queued meal the server refuses
// (a date far ahead) stays in the outbox with the server's message; Fix
// opens the Add form filled from it, and once corrected it is saved and
// leaves the outbox. Signing out with a meal waiting asks first, with
// the count, then leaves no outbox entry and no page cache (read through
// CDP). Someone else signing in on the same browser is never shown the
// first person's kept pages.
func TestBrowserOutboxRefusedAndSignOut(t *testing.T) {
	apptest.NeedBrowser(t)
	t.Parallel()
	app, net, ctx := offlineApp(t, "admin@example.com")
	photo := filepath.Join(apptest.PhotosDir(t), "small.jpg")
	ahead := time.Now().AddDate(0, 1, 0).Format(time.DateOnly)
	net.down.Store(true)
	if err := chromedp.Do(ctx, chromedp.Navigate(app.URL+"/meals/new"), addOffline(photo, ahead, "08:00", "too early", 1)); err != nil {
		t.Fatalf("queue offline: %v", err)
	}
	net.down.Store(false)
	err := chromedp.Do(ctx,
		chromedp.Reload(),
		poll(`(() => { const s = document.querySelector("#outbox .outbox-item.refused .outbox-state"); return s && s.textContent === "Not saved: `+meal.MsgFuture+`"; })()`),
		chromedp.Click(chromedp.CSS(`#outbox .outbox-fix`)),
		chromedp.WaitVisible(chromedp.CSS(`#outbox-fix`)),
		poll(`document.querySelector("#date").value === "`+ahead+`" && document.querySelector("#notes").value === "too early" &&
			document.querySelector("#photo").files.length === 1 && !!document.getElementById("outbox-fix")`),
		chromedp.SetValue(chromedp.CSS(`#date`), time.Now().AddDate(0, 0, -1).Format(time.DateOnly)),
		chromedp.Click(chromedp.CSS(`form.meal-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)),
		chromedp.WaitVisible(chromedp.CSS(`.days`)),
		poll(`(async () => (await NdiroOutbox.all()).length === 0)()`),
	)
	if err != nil {
		t.Fatalf("refused, fixed and sent: %v", err)
	}
	ms := mealsOf(t, app, "admin@example.com")
	if len(ms) != 1 || ms[0].Notes != "too early" || !ms[0].HasPhoto() || ms[0].Time != "08:00:00" {
		t.Fatalf("meals after the fix = %+v, want the fixed one with its photo", ms)
	}

	// Signing out with one meal waiting (put straight into the outbox:
	// online, the page would send it).
	asked, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(async () => {
		const h = document.querySelector('meta[name="ndiro-user"]').content;
		await NdiroOutbox.put({id: NdiroOutbox.newKey(), user: h, fields: [["date", "2026-01-01"], ["time", "12:00"]], photo: null, photoName: "",
			queuedAt: Date.now(), state: "refused", message: "kept for the test"});
		return "ok";
	})()`, chromedp.EvalAwaitPromise))
	if err != nil || asked != "ok" {
		t.Fatalf("put an entry: %q %v", asked, err)
	}
	err = chromedp.Do(ctx,
		chromedp.Navigate(app.URL+"/account"),
		chromedp.WaitVisible(chromedp.CSS(`form[action="/logout"] button`)),
		chromedp.Evaluate[chromedp.Void](`window.confirm = (m) => { window.asked = m; return true; }`),
		chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`a[href^="/login"]`)),
	)
	if err != nil {
		t.Fatalf("sign out: %v", err)
	}
	origin := app.URL
	names, err := chromedp.Call(ctx, cachestorage.RequestCacheNames, cachestorage.RequestCacheNamesParams{SecurityOrigin: origin})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range names.Caches {
		if strings.HasPrefix(c.CacheName, "ndiro-pages-") {
			t.Errorf("cache %q left after sign-out", c.CacheName)
		}
	}
	if n := outboxEntries(t, ctx, origin); n != 0 {
		t.Errorf("%d outbox entries left after sign-out", n)
	}

	// Someone else on the same browser: the first person's month page,
	// seen before, is not shown to them offline.
	owner := app.Client()
	owner.SignIn("admin@example.com")
	inv := owner.CreateInvite(url.Values{"role": {"owner"}})
	month := app.URL + "/meals?month=" + ms[0].Date[:7]
	err = chromedp.Do(ctx,
		app.BrowserSignIn("admin@example.com"),
		chromedp.Navigate(month),
		warmed,
		poll(`document.body.textContent.includes("too early")`),
		chromedp.Navigate(app.URL+"/login?invite="+inv),
		chromedp.WaitVisible(chromedp.CSS(`#email`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), "friend@example.com"),
		chromedp.Submit(chromedp.CSS(`#email`)),
		chromedp.WaitVisible(chromedp.CSS(`main h1`)),
		chromedp.Navigate(app.URL+"/meals"),
		warmed,
	)
	if err != nil {
		t.Fatalf("first person's month, then the second person signs in: %v", err)
	}
	net.down.Store(true)
	if err := chromedp.Do(ctx, chromedp.Navigate(month), chromedp.WaitVisible(chromedp.CSS(`main h1`))); err != nil {
		t.Fatalf("offline month: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`body`)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "too early") || !strings.Contains(text, "You are offline") {
		t.Errorf("offline, the second person sees %q: want the offline page, never the first person's meals", text)
	}
}

// outboxEntries counts the entries of the outbox database, read through
// CDP (0 if the database is gone, as after Clear-Site-Data "storage").
func outboxEntries(t *testing.T, ctx context.Context, origin string) int {
	t.Helper()
	dbs, err := chromedp.Call(ctx, indexeddb.RequestDatabaseNames, indexeddb.RequestDatabaseNamesParams{SecurityOrigin: origin})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range dbs.DatabaseNames {
		found = found || n == "ndiro"
	}
	if !found {
		return 0
	}
	data, err := chromedp.Call(ctx, indexeddb.RequestData, indexeddb.RequestDataParams{SecurityOrigin: origin, DatabaseName: "ndiro", ObjectStoreName: "outbox", PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(data.ObjectStoreDataEntries)
}

// TestBrowserOutboxQuotaRefused: a meal queued offline for an account
// at its quota is refused when the network returns:
// the outbox keeps it, shows it as not saved with the quota's message,
// and sends it no more on later visits.
func TestBrowserOutboxQuotaRefused(t *testing.T) {
	apptest.NeedBrowser(t)
	t.Parallel()
	var posts atomic.Int32
	count := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.URL.Path == "/meals" {
				posts.Add(1)
			}
			next.ServeHTTP(w, r)
		})
	}
	app, net, ctx := offlineAppWith(t, "admin@example.com", apptest.Options{Env: map[string]string{"NDIRO_QUOTA_MEALS": "1"}, Wrap: count})
	photo := filepath.Join(apptest.PhotosDir(t), "small.jpg")
	day := time.Now().AddDate(0, 0, -1).Format(time.DateOnly)
	// Another device fills the diary; then this phone, offline, adds a
	// meal.
	other := app.Client()
	other.SignIn("admin@example.com")
	if r := other.PostForm("/meals", url.Values{"date": {day}, "time": {"07:00"}, "kind": {"breakfast"}, "notes": {"from the other phone"}}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("meal from another device = %d", r.StatusCode)
	}
	net.down.Store(true)
	if err := chromedp.Do(ctx, chromedp.Navigate(app.URL+"/meals/new"), addOffline(photo, day, "08:00", "over the quota", 1)); err != nil {
		t.Fatalf("queue offline: %v", err)
	}
	posts.Store(0)
	net.down.Store(false)
	refused := `(() => { const s = document.querySelector("#outbox .outbox-item.refused .outbox-state");
		return document.querySelectorAll("#outbox .outbox-item").length === 1 && !!s && s.textContent.startsWith("Not saved: Your diary is full: it holds 1 meal,"); })()`
	if err := chromedp.Do(ctx, chromedp.Reload(), poll(refused)); err != nil {
		t.Fatalf("the refusal is not shown: %v", err)
	}
	sent := posts.Load()
	if sent != 1 {
		t.Errorf("the outbox sent the meal %d times, want once", sent)
	}
	// Later visits keep it, refused, and send nothing.
	for range 2 {
		if err := chromedp.Do(ctx, chromedp.Reload(), poll(refused), poll(`(async () => { const es = await NdiroOutbox.all(); return es.length === 1 && es[0].state === "refused" && !!es[0].photo; })()`)); err != nil {
			t.Fatalf("after a reload: %v", err)
		}
	}
	if n := posts.Load(); n != sent {
		t.Errorf("later visits sent the refused meal %d more times, want none", n-sent)
	}
	if ms := mealsOf(t, app, "admin@example.com"); len(ms) != 1 || ms[0].Notes != "from the other phone" {
		t.Errorf("meals = %+v, want the other device's alone", ms)
	}
}

// TestBrowserOutboxOnlineAndSync: the two ways a queued meal leaves
// without a visit. With the page open, the browser's "online" event
// sends it (outbox.js listens for it); with no page open, the service
// worker's "sync" event (Background Sync, tag "ndiro-outbox", dispatched
// through DevTools as the browser does when the network returns) sends
// it. Each is saved exactly once, with its photo.
func TestBrowserOutboxOnlineAndSync(t *testing.T) {
	apptest.NeedBrowser(t)
	t.Parallel()
	app, net, ctx := offlineApp(t, "admin@example.com")
	photo := filepath.Join(apptest.PhotosDir(t), "small.jpg")
	day := time.Now().AddDate(0, 0, -1).Format(time.DateOnly)

	// "online" with the page open.
	tab, closeTab := chromedp.NewContext(ctx)
	net.down.Store(true)
	if err := chromedp.Do(tab, chromedp.Navigate(app.URL+"/meals/new"), chromedp.WaitVisible(chromedp.CSS(`#offline-note`)),
		addOffline(photo, day, "08:10", "sent on online", 1)); err != nil {
		t.Fatalf("queue offline: %v", err)
	}
	net.down.Store(false)
	err := chromedp.Do(tab,
		chromedp.Evaluate[chromedp.Void](`window.dispatchEvent(new Event("online"))`),
		poll(`(async () => document.getElementById("outbox-badge").hidden && (await NdiroOutbox.all()).length === 0)()`))
	if err != nil {
		t.Fatalf("the online event did not empty the outbox: %v", err)
	}

	// "sync" with no page of the app open.
	net.down.Store(true)
	if err := chromedp.Do(tab, chromedp.Navigate(app.URL+"/meals/new"), chromedp.WaitVisible(chromedp.CSS(`#offline-note`)),
		addOffline(photo, day, "19:20", "sent on sync", 1)); err != nil {
		t.Fatalf("queue offline again: %v", err)
	}
	regs := chromedp.Events(tab, serviceworker.WorkerRegistrationUpdated)
	if _, err := chromedp.Call(tab, serviceworker.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	var reg serviceworker.RegistrationID
	for ev, err := range regs {
		if err != nil {
			t.Fatalf("service worker registrations: %v", err)
		}
		for _, r := range ev.Registrations {
			if !r.IsDeleted && strings.HasPrefix(r.ScopeURL, app.URL) {
				reg = r.RegistrationID
			}
		}
		if reg != "" {
			break
		}
	}
	if err := chromedp.Do(tab, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	if n := len(mealsOf(t, app, "admin@example.com")); n != 1 {
		t.Fatalf("%d meals on the server before the sync, want the first one", n)
	}
	net.down.Store(false)
	if _, err := chromedp.Call(tab, serviceworker.DispatchSyncEvent,
		serviceworker.DispatchSyncEventParams{Origin: app.URL, RegistrationID: reg, Tag: "ndiro-outbox"}); err != nil {
		t.Fatalf("dispatch the sync event: %v", err)
	}
	// No page is open to send it: the meal reaches the server from the
	// worker, or not at all. (A page opened now would send it itself.)
	deadline := time.Now().Add(waitLong)
	for len(mealsOf(t, app, "admin@example.com")) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the sync event sent nothing in %v; %s", waitLong, workerState(tab))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := chromedp.Do(tab, chromedp.Navigate(app.URL+"/meals/new"),
		poll(`(async () => (await NdiroOutbox.all()).length === 0)()`)); err != nil {
		t.Fatalf("after the sync the outbox is not empty: %v", err)
	}
	closeTab()

	var got []string
	for _, m := range mealsOf(t, app, "admin@example.com") {
		if !m.HasPhoto() {
			t.Errorf("meal %q has no photo", m.Notes)
		}
		got = append(got, m.Time+" "+m.Notes)
	}
	sort.Strings(got)
	if want := []string{"08:10:00 sent on online", "19:20:00 sent on sync"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("saved meals %q, want exactly once each %q", got, want)
	}
}

// TestBrowserOutboxSignInAgain: a meal queued while signed in, sent once
// the session has ended (its cookie gone, as after it expires), is not
// lost: the outbox marks it waiting for a sign-in and links to one, and
// signing in again as the same person sends it, exactly once.
func TestBrowserOutboxSignInAgain(t *testing.T) {
	apptest.NeedBrowser(t)
	t.Parallel()
	const email = "admin@example.com"
	app, net, ctx := offlineApp(t, email)
	photo := filepath.Join(apptest.PhotosDir(t), "small.jpg")
	day := time.Now().AddDate(0, 0, -1).Format(time.DateOnly)
	net.down.Store(true)
	if err := chromedp.Do(ctx, chromedp.Navigate(app.URL+"/meals/new"), chromedp.WaitVisible(chromedp.CSS(`#offline-note`)),
		addOffline(photo, day, "13:30", "after the session ended", 1)); err != nil {
		t.Fatalf("queue offline: %v", err)
	}
	if _, err := chromedp.CallBrowser(ctx, storage.ClearCookies, storage.ClearCookiesParams{}); err != nil {
		t.Fatalf("clear cookies: %v", err)
	}
	net.down.Store(false)
	err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`window.dispatchEvent(new Event("online"))`),
		poll(`(async () => { const es = await NdiroOutbox.all();
			return es.length === 1 && es[0].state === "signin" && !!document.querySelector("#outbox a.outbox-signin"); })()`))
	if err != nil {
		t.Fatalf("the ended session is not asked for: %v", err)
	}
	if n := len(mealsOf(t, app, email)); n != 0 {
		t.Fatalf("%d meals saved without a session", n)
	}
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#outbox a.outbox-signin").getAttribute("href")`))
	if err != nil || href != "/login?next=%2Fmeals%2Fnew" {
		t.Errorf("sign-in link = %q (%v), want /login?next=%%2Fmeals%%2Fnew", href, err)
	}
	err = chromedp.Do(ctx, app.BrowserSignIn(email), chromedp.Navigate(app.URL+"/meals/new"),
		poll(`(async () => document.getElementById("outbox-badge").hidden && (await NdiroOutbox.all()).length === 0)()`))
	if err != nil {
		t.Fatalf("signed in again, the outbox did not empty: %v", err)
	}
	ms := mealsOf(t, app, email)
	if len(ms) != 1 || ms[0].Notes != "after the session ended" || ms[0].Time != "13:30:00" || !ms[0].HasPhoto() {
		t.Errorf("saved meals %+v, want the queued one once, with its photo", ms)
	}
}

// TestBrowserOutboxKeyReused: a queued meal whose key the server already
// took for another meal (a first try, then the entry changed) is refused
// as such (422, X-Ndiro-Idem: reused), not taken for "being saved, try
// later": the outbox keeps it with its photo, shows it refused with the
// server's message, and sends it no more, not on the next visit either.
// It now has a key of its own: Fix, then Save, adds it as another meal.
func TestBrowserOutboxKeyReused(t *testing.T) {
	apptest.NeedBrowser(t)
	t.Parallel()
	ctx := apptest.Browser(t, 390, 844, 8*time.Minute)
	var posts atomic.Int32
	app := apptest.New(t, apptest.Options{Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.URL.Path == "/meals" {
				posts.Add(1)
			}
			next.ServeHTTP(w, r)
		})
	}})
	const key = "key-of-the-first-try_012"
	day := time.Now().AddDate(0, 0, -1).Format(time.DateOnly)
	c := app.Client()
	c.SignIn("admin@example.com")
	first := c.PostMultipart("/meals", url.Values{"idem": {key}, "date": {day}, "time": {"12:30"}, "kind": {"lunch"}, "notes": {"first try"}})
	if first.StatusCode != http.StatusSeeOther {
		t.Fatalf("first = %d; %s", first.StatusCode, first.Text("main"))
	}
	photo := base64.StdEncoding.EncodeToString(apptest.Photo(t, "small.jpg"))
	err := chromedp.Do(ctx, app.BrowserSignIn("admin@example.com"), chromedp.Navigate(app.URL+"/meals/new"),
		chromedp.WaitVisible(chromedp.CSS(`form.meal-form`)),
		poll(`!!window.NdiroOutbox`),
		chromedp.Evaluate[chromedp.Void](`(async () => {
			const bytes = Uint8Array.from(atob("`+photo+`"), c => c.charCodeAt(0));
			await NdiroOutbox.put({id: "`+key+`", user: NdiroOutbox.user(), photo: new Blob([bytes], {type: "image/jpeg"}), photoName: "small.jpg",
				fields: [["date", "`+day+`"], ["time", "12:30"], ["kind", "lunch"], ["notes", "changed since"]],
				queuedAt: Date.now(), state: "waiting", message: ""});
		})()`, chromedp.EvalAwaitPromise),
		chromedp.Reload(),
		poll(`(async () => {
			const es = await NdiroOutbox.all();
			const s = document.querySelector("#outbox .outbox-item.refused .outbox-state");
			return es.length === 1 && es[0].state === "refused" && es[0].id !== "`+key+`" && es[0].photo && es[0].photo.size === `+strconv.Itoa(len(apptest.Photo(t, "small.jpg")))+` &&
				s && s.textContent === "Not saved: `+meal.MsgKeyReused+`";
		})()`),
	)
	if err != nil {
		t.Fatalf("queued meal under a used key: %v", err)
	}
	sent := posts.Load()
	// The next visit sends it no more: the page's flush is over once the
	// badge is drawn after it.
	err = chromedp.Do(ctx, chromedp.Reload(),
		poll(`(async () => { await NdiroOutbox.flush(NdiroOutbox.user()); return document.querySelectorAll("#outbox .outbox-item.refused").length === 1; })()`))
	if err != nil {
		t.Fatalf("next visit: %v", err)
	}
	if n := posts.Load(); n != sent {
		t.Errorf("the refused entry was sent %d more times", n-sent)
	}
	if ms := mealsOf(t, app, "admin@example.com"); len(ms) != 1 || ms[0].Notes != "first try" {
		t.Fatalf("meals = %+v, want the first try alone", ms)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#outbox .outbox-fix`)),
		chromedp.WaitVisible(chromedp.CSS(`#outbox-fix`)),
		poll(`document.querySelector("#notes").value === "changed since" && document.querySelector("#photo").files.length === 1`),
		chromedp.Click(chromedp.CSS(`form.meal-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)),
		poll(`(async () => (await NdiroOutbox.all()).length === 0)()`),
	)
	if err != nil {
		t.Fatalf("fixed and saved: %v", err)
	}
	ms := mealsOf(t, app, "admin@example.com")
	if len(ms) != 2 {
		t.Fatalf("%d meals, want the first try and the fixed entry", len(ms))
	}
	for _, m := range ms {
		if m.Notes == "changed since" && !m.HasPhoto() {
			t.Errorf("fixed entry saved without its photo: %+v", m)
		}
	}
}
