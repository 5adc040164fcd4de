//go:build e2e && faults

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/Shopify/toxiproxy/v2"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"ndiro/internal/apptest"
	"ndiro/internal/dynamo"
	"ndiro/internal/photo"
)

// The fault suite's storage budgets (NDIRO_STORAGE_*): short, so that a
// stalled backend answers in seconds, long enough that dynalite and
// s3rver on a busy 2-core machine answer every call without a fault.
const (
	itemBudget     = 2 * time.Second
	queryBudget    = 4 * time.Second
	transferBudget = 6 * time.Second
	// orphanGrace is NDIRO_ORPHAN_GRACE: the least the settings allow
	// with the budgets above, so the final orphan check counts what the
	// faults left.
	orphanGrace = 2 * (itemBudget + queryBudget + transferBudget)
	// bound is the longest any request may take under a fault: the
	// longest path a page takes when a backend stops answering (a
	// transfer, the clean-up query after it, and an item call), and time
	// for a busy machine.
	bound = transferBudget + queryBudget + itemBudget + 10*time.Second
	// faultFor is how long a fault lasts at least, however soon its
	// request answers: long enough for the background work it starts
	// (an account deletion, the share opens written every 2 s) to meet
	// it too.
	faultFor = 4 * time.Second
)

// fault is one kind of trouble between ndiro and a backend, as
// toxiproxy toxics.
type fault struct {
	name   string
	toxics []toxicSpec
}

type toxicSpec struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Attributes map[string]int `json:"attributes"`
}

// faults are the four kinds: every answer late, a connection that passes
// nothing (a frozen backend), answers cut off by a reset after the
// request went through (a write applied, its answer lost), and a slow
// trickle.
var faults = []fault{
	{"latency 300 ms", []toxicSpec{
		{"lat-up", "latency", "upstream", map[string]int{"latency": 150, "jitter": 50}},
		{"lat-down", "latency", "downstream", map[string]int{"latency": 150, "jitter": 50}},
	}},
	{"stalled", []toxicSpec{
		{"stall-up", "timeout", "upstream", map[string]int{"timeout": 0}},
		{"stall-down", "timeout", "downstream", map[string]int{"timeout": 0}},
	}},
	{"reset answers", []toxicSpec{
		{"reset", "reset_peer", "downstream", map[string]int{"timeout": 0}},
	}},
	{"trickle 4 KB/s", []toxicSpec{
		{"bw-up", "bandwidth", "upstream", map[string]int{"rate": 4}},
		{"bw-down", "bandwidth", "downstream", map[string]int{"rate": 4}},
	}},
}

// faultRun is the suite's one ndiro and what it needs around it.
type faultRun struct {
	t       *testing.T
	h       *harness
	db      *dynamodb.Client // dynalite, directly
	s3c     *s3.Client       // s3rver, directly
	tables  dynamo.Tables
	bucket  string
	proxies map[string]*toxiproxy.Proxy // "DynamoDB", "S3"
	p       *process
	admin   *apptest.Client
	// owner is the friend who makes most of the requests; share is a
	// share link of theirs over the suite's month.
	owner     *apptest.Client
	share     string
	recipient *apptest.Client
	users     int // fault owners signed up so far
	results   []result
	// cut is why the last download ended early (download), nil if it
	// did not.
	cut error
	// metrics is the binary's /metrics URL (NDIRO_METRICS_ADDR).
	metrics string
}

// unavailableCalls returns ndiro_storage_calls_total{result="unavailable"}
// of backend, summed over its operations, as the binary counts it now
// (the series the documented alert watches).
func (f *faultRun) unavailableCalls(backend string) float64 {
	f.t.Helper()
	resp, err := http.Get(f.metrics)
	if err != nil {
		f.t.Fatalf("scrape %s: %v", f.metrics, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		rest, series := strings.CutPrefix(line, "ndiro_storage_calls_total{")
		labels, value, ok := strings.Cut(rest, "} ")
		if !series || !ok || !strings.Contains(labels, `service="`+backend+`"`) || !strings.Contains(labels, `result="unavailable"`) {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			f.t.Fatalf("metrics line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// download GETs path as c, as a browser saves a file: an answer whose
// body breaks off (a zip export that failed after it started) is kept,
// with what arrived, and f.cut says why.
func (f *faultRun) download(c *apptest.Client, path string) *apptest.Response {
	f.t.Helper()
	f.cut = nil
	req, err := http.NewRequest(http.MethodGet, f.h.base+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		f.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	f.cut = err
	return &apptest.Response{Response: resp, Body: string(body)}
}

// result is one row of the table: a fault on a backend during an
// operation.
type result struct {
	backend, fault, op string
	status             int
	page               string // the page's heading, or where it redirects
	took               time.Duration
	left               string
	recovered          string
}

const suiteMonth, suiteDate = "2026-09", "2026-09-14"

// TestFaults runs the release binary in AWS mode with toxiproxy between
// it and dynalite and between it and s3rver, and injects each fault on
// each backend during each operation: every request answers within
// bound, no meal is left without its photo, the service answers again by
// itself once the fault ends, and once the monitor's orphan check has
// run past its grace no orphan object is left. It prints a table of
// fault × operation: status, time to answer, what was left.
//
// NDIRO_FAULTS_ONLY, if set, runs only the cells whose
// "backend/fault/operation" name contains it (e.g. "S3/stalled");
// NDIRO_FAULTS_DEBUG=1 logs every answer given under a fault.
func TestFaults(t *testing.T) {
	// The toxics log through zerolog's global logger.
	zerolog.SetGlobalLevel(zerolog.Disabled)
	only := os.Getenv("NDIRO_FAULTS_ONLY")
	f := startFaultRun(t)
	for _, backend := range []string{"DynamoDB", "S3"} {
		for _, fl := range faults {
			for _, op := range operations {
				if strings.Contains(backend+"/"+fl.name+"/"+op.name, only) {
					f.cell(backend, fl, op)
				}
			}
		}
	}
	f.checkLogs()
	f.finalOrphanCheck()
	f.printTable()
}

// startFaultRun creates the tables and the bucket, starts the proxies,
// the binary (its backends behind the proxies) and the TLS proxy, and
// signs in the admin and the owner.
func startFaultRun(t *testing.T) *faultRun {
	s := loadSettings(t)
	ctx := context.Background()
	db, s3c := clients(s)
	run := randomHex(t, 4)
	f := &faultRun{t: t, db: db, s3c: s3c, tables: dynamo.NewTables("faults-" + run + "-"), bucket: "ndiro-faults-" + run, proxies: map[string]*toxiproxy.Proxy{}}
	if err := dynamo.CreateTables(ctx, db, f.tables); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(f.bucket)}); err != nil {
		t.Fatal(err)
	}
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	for name, upstream := range map[string]string{"DynamoDB": s.DynamoDB, "S3": s.S3} {
		u, err := url.Parse(upstream)
		if err != nil {
			t.Fatal(err)
		}
		p := toxiproxy.NewProxy(server, name, "127.0.0.1:0", u.Host)
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Stop)
		f.proxies[name] = p
	}

	cert, pool := selfSigned(t)
	f.h = &harness{t: t, s: s, base: "https://" + s.ProxyAddr, issuer: s.Issuer}
	f.h.rec = &recorder{base: &http.Transport{TLSClientConfig: tlsConfig(pool)}}
	env := []string{
		"NDIRO_MODE=aws", "NDIRO_ADDR=127.0.0.1:0", "NDIRO_BASE_URL=" + f.h.base,
		"NDIRO_TABLE_PREFIX=" + strings.TrimSuffix(f.tables.Users.Name, "users"), "NDIRO_BUCKET=" + f.bucket,
		"ADMIN_EMAILS=" + admin.email, "AWS_REGION=" + region,
		"AWS_ACCESS_KEY_ID=" + accessKey, "AWS_SECRET_ACCESS_KEY=" + secretKey, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL_DYNAMODB=http://" + f.proxies["DynamoDB"].Listen,
		"AWS_ENDPOINT_URL_S3=http://" + f.proxies["S3"].Listen,
		"NDIRO_OIDC_ISSUER=" + s.Issuer, "NDIRO_OIDC_CLIENT_ID=" + s.ClientID, "NDIRO_OIDC_CLIENT_SECRET=" + s.ClientSecret,
		"NDIRO_STORAGE_ITEM_TIMEOUT=" + itemBudget.String(),
		"NDIRO_STORAGE_QUERY_TIMEOUT=" + queryBudget.String(),
		"NDIRO_STORAGE_TRANSFER_TIMEOUT=" + transferBudget.String(),
		"NDIRO_STORAGE_ATTEMPTS=2", "NDIRO_STORAGE_MAX_BACKOFF=100ms",
		"NDIRO_ORPHAN_GRACE=" + orphanGrace.String(),
		"NDIRO_METRICS_ADDR=127.0.0.1:0",
	}
	f.p = start(t, s.Bin, env)
	startProxy(t, s.ProxyAddr, cert).forward(f.p.listenAddr(t))
	f.metrics = "http://" + f.p.loggedAddr(t, "metrics listening") + "/metrics"

	f.admin = f.h.client()
	if r := f.h.signIn(f.admin, "/login", admin); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("admin sign-in = %d; %s", r.StatusCode, r.Body)
	}
	f.owner = f.h.client()
	tok := f.admin.CreateInvite(url.Values{"role": {"owner"}})
	if r := f.h.signIn(f.owner, "/login?invite="+tok, friend); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("owner sign-up = %d; %s", r.StatusCode, r.Body)
	}
	f.share = f.owner.CreateShare(url.Values{"label": {"Dr. Fault"}, "from": {suiteMonth + "-01"}, "to": {suiteMonth + "-30"}, "expiry": {"7"}, "notes": {"1"}, "numbers": {"1"}})
	f.recipient = f.h.client()
	return f
}

// cell runs one operation under one fault on one backend and records
// its row.
func (f *faultRun) cell(backend string, fl fault, op operation) {
	t := f.t
	name := backend + "/" + fl.name + "/" + op.name
	st := op.prepare(f)
	orphansBefore := len(f.orphans())

	f.cut = nil
	unavailableBefore := f.unavailableCalls(backend)
	began := time.Now()
	f.inject(backend, fl)
	resp := op.do(f, st)
	took := time.Since(began)
	unavailable := f.unavailableCalls(backend) - unavailableBefore
	if rest := faultFor - took; rest > 0 {
		time.Sleep(rest)
	}
	f.clear(backend)

	status, page := 0, ""
	if resp != nil {
		status, page = resp.StatusCode, pageOf(resp)
		if f.cut != nil {
			// The download began (200, the zip's first entry sent) and
			// broke off: the browser shows it failed, no zip is saved.
			page = "download cut off"
		}
		if os.Getenv("NDIRO_FAULTS_DEBUG") != "" {
			t.Logf("%s: %d %v %q", name, resp.StatusCode, resp.Header, resp.Body[:min(len(resp.Body), 300)])
		}
	}
	if took > bound {
		t.Errorf("%s: answered %d after %v, want within %v", name, status, took, bound)
	}
	if status >= 500 && status != http.StatusServiceUnavailable {
		t.Errorf("%s: answered %d, want success or 503", name, status)
	}
	if status == http.StatusOK && len(resp.Body) == 0 && f.cut == nil {
		t.Errorf("%s: answered 200 with nothing", name)
	}
	if status == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
		t.Errorf("%s: 503 without Retry-After", name)
	}
	if status == http.StatusServiceUnavailable && unavailable == 0 {
		t.Errorf("%s: 503 with no %s call counted unavailable (the alert's series)", name, backend)
	}
	if op.within > 0 && fl.name == "stalled" && took > op.within {
		t.Errorf("%s: answered after %v, want within %v", name, took, op.within)
	}
	recovered := f.recover(name)
	left := op.left(f, st)
	if half := f.halfWritten(); len(half) > 0 {
		t.Errorf("%s: meals without their photo: %v", name, half)
		left += fmt.Sprintf("; %d meals without photo", len(half))
	}
	if n := len(f.orphans()) - orphansBefore; n > 0 {
		left += fmt.Sprintf("; %d orphan objects", n)
	}
	f.wipeMeals(f.ownerID())
	f.results = append(f.results, result{backend: backend, fault: fl.name, op: op.name, status: status, page: page, took: took, left: strings.TrimPrefix(left, "; "), recovered: recovered})
}

// pageOf names what a response shows: where a redirect goes (path
// only), the heading of a page, or the kind of a download.
func pageOf(resp *apptest.Response) string {
	if loc := resp.Location(); loc != "" {
		if u, err := url.Parse(loc); err == nil {
			return "→ " + u.Path
		}
	}
	ct := resp.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "text/html") {
		return ct
	}
	if h1 := resp.Text("h1"); h1 != "" {
		return h1
	}
	if t := resp.Text("title"); t != "" {
		return t
	}
	return fmt.Sprintf("%q (%d bytes)", ct, len(resp.Body))
}

// inject adds the fault's toxics to the backend's proxy.
func (f *faultRun) inject(backend string, fl fault) {
	for _, tx := range fl.toxics {
		b, _ := json.Marshal(tx)
		if _, err := f.proxies[backend].Toxics.AddToxicJson(strings.NewReader(string(b))); err != nil {
			f.t.Fatalf("toxic %s on %s: %v", tx.Name, backend, err)
		}
	}
}

// clear removes every toxic from the backend's proxy.
func (f *faultRun) clear(backend string) {
	f.proxies[backend].Toxics.ResetToxics(context.Background())
}

// recover checks that ndiro serves again by itself once the fault is
// gone: a meal with a photo saved (both backends) and the month page,
// within three tries. It returns how soon.
func (f *faultRun) recover(name string) string {
	for try := 1; try <= 3; try++ {
		c := f.owner.PostMultipart("/meals", mealValues("recovery"), apptest.File{Field: "photo", Name: "r.jpg", Body: testJPEG(f.t, 320, 240)})
		m := f.owner.Get("/meals?month=" + suiteMonth)
		if c.StatusCode == http.StatusSeeOther && m.StatusCode == http.StatusOK {
			if try == 1 {
				return "at once"
			}
			return fmt.Sprintf("after %d tries", try)
		}
	}
	f.t.Errorf("%s: ndiro did not serve again after the fault ended", name)
	return "no"
}

func mealValues(notes string, kv ...string) url.Values {
	v := url.Values{"date": {suiteDate}, "time": {"12:30"}, "kind": {"lunch"}, "notes": {notes}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// opState is what an operation prepared before its fault.
type opState struct {
	path    string  // the meal's /meals/{date}/{id}
	version string  // its version, for an edit
	photo   string  // a photo URL
	acct    account // a throwaway owner (account deletion)
	client  *apptest.Client
}

// operation is one kind of request, prepared without a fault, sent
// under one, and judged after it.
type operation struct {
	name string
	// within, if set, is how soon the operation answers when its backend
	// stalls: its storage budget and a margin for a busy machine.
	within  time.Duration
	prepare func(f *faultRun) opState
	do      func(f *faultRun, st opState) *apptest.Response
	left    func(f *faultRun, st opState) string
}

var operations = []operation{
	{
		name:    "create",
		prepare: func(f *faultRun) opState { return opState{} },
		do: func(f *faultRun, st opState) *apptest.Response {
			return f.owner.PostMultipart("/meals", mealValues("under fault"), apptest.File{Field: "photo", Name: "f.jpg", Body: testJPEG(f.t, 800, 600)})
		},
		left: func(f *faultRun, st opState) string { return f.mealsLeft("under fault") },
	},
	{
		name:    "edit",
		prepare: func(f *faultRun) opState { return f.mealWithPhoto("to edit") },
		do: func(f *faultRun, st opState) *apptest.Response {
			return f.owner.PostMultipart(st.path, mealValues("edited", "version", st.version))
		},
		left: func(f *faultRun, st opState) string {
			return f.mealsLeft("edited") + ", " + f.mealsLeft("to edit")
		},
	},
	{
		name:    "move",
		prepare: func(f *faultRun) opState { return f.mealWithPhoto("to move") },
		do: func(f *faultRun, st opState) *apptest.Response {
			return f.owner.PostMultipart(st.path, mealValues("to move", "date", "2026-09-20", "time", "19:05", "version", st.version))
		},
		left: func(f *faultRun, st opState) string { return f.mealsLeft("to move") },
	},
	{
		name:    "delete",
		prepare: func(f *faultRun) opState { return f.mealWithPhoto("to delete") },
		do: func(f *faultRun, st opState) *apptest.Response {
			return f.owner.PostForm(st.path+"/delete", nil)
		},
		left: func(f *faultRun, st opState) string { return f.mealsLeft("to delete") },
	},
	{
		// A photo never read before: not in the cache, so S3 is asked.
		name:    "photo read",
		within:  transferBudget + 2*time.Second,
		prepare: func(f *faultRun) opState { return f.mealWithPhoto("to read") },
		do:      func(f *faultRun, st opState) *apptest.Response { return f.owner.Get(st.photo) },
		left:    func(*faultRun, opState) string { return "" },
	},
	{
		name:    "month page",
		prepare: func(f *faultRun) opState { return f.mealWithPhoto("in the month") },
		do:      func(f *faultRun, st opState) *apptest.Response { return f.owner.Get("/meals?month=" + suiteMonth) },
		left:    func(*faultRun, opState) string { return "" },
	},
	{
		name:    "share page",
		prepare: func(f *faultRun) opState { return f.mealWithPhoto("shared") },
		do:      func(f *faultRun, st opState) *apptest.Response { return f.recipient.Get("/s/" + f.share) },
		left:    func(*faultRun, opState) string { return "" },
	},
	{
		name:    "export",
		prepare: func(f *faultRun) opState { return f.mealWithPhoto("exported") },
		do:      func(f *faultRun, st opState) *apptest.Response { return f.download(f.owner, "/account/export.zip") },
		left:    func(*faultRun, opState) string { return "" },
	},
	{
		name:    "account deletion",
		prepare: func(f *faultRun) opState { return f.throwawayOwner() },
		do: func(f *faultRun, st opState) *apptest.Response {
			return st.client.PostForm("/account/delete", url.Values{"email": {st.acct.email}})
		},
		left: func(f *faultRun, st opState) string { return f.deletionLeft(st) },
	},
}

// mealWithPhoto logs a meal with a photo as the owner, without a fault,
// and returns its path, version and photo URL (never read yet, so not
// in ndiro's photo cache).
func (f *faultRun) mealWithPhoto(notes string) opState {
	t := f.t
	resp := f.owner.PostMultipart("/meals", mealValues(notes), apptest.File{Field: "photo", Name: "p.jpg", Body: testJPEG(t, 800, 600)})
	prefix := "/meals?month=" + suiteMonth + "#meal-"
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Location(), prefix) {
		t.Fatalf("prepare %q: create = %d %q", notes, resp.StatusCode, resp.Location())
	}
	path := "/meals/" + suiteDate + "/" + strings.TrimPrefix(resp.Location(), prefix)
	edit := f.owner.Get(path + "/edit").Doc()
	version, _ := edit.Find(`form.meal-form input[name=version]`).Attr("value")
	src, _ := f.owner.Get(path).Doc().Find("img.photo").Attr("src")
	if version == "" || src == "" {
		t.Fatalf("prepare %q: no version (%q) or photo (%q) on the meal's pages", notes, version, src)
	}
	return opState{path: path, version: version, photo: src}
}

// throwawayOwner signs up a new owner through an invite, gives them a
// meal with a photo, and returns them for their account to be deleted.
func (f *faultRun) throwawayOwner() opState {
	f.users++
	acct := account{fmt.Sprintf("acct-fault-%d", f.users), fmt.Sprintf("fault-%d@example.com", f.users)}
	c := f.h.client()
	tok := f.admin.CreateInvite(url.Values{"role": {"owner"}})
	if r := f.h.signIn(c, "/login?invite="+tok, acct); r.StatusCode != http.StatusSeeOther {
		f.t.Fatalf("sign-up of %s = %d; %s", acct.id, r.StatusCode, r.Body)
	}
	if r := c.PostMultipart("/meals", mealValues("theirs"), apptest.File{Field: "photo", Name: "t.jpg", Body: testJPEG(f.t, 320, 240)}); r.StatusCode != http.StatusSeeOther {
		f.t.Fatalf("meal of %s = %d", acct.id, r.StatusCode)
	}
	return opState{acct: acct, client: c}
}

// deletionLeft waits for the throwaway owner's account to be gone (its
// deletion runs in the background and retries its steps), resuming it
// as the admin would if it stopped, or asking again if the request to
// delete was refused; it says what it took.
func (f *faultRun) deletionLeft(st opState) string {
	t := f.t
	deadline := time.Now().Add(3 * time.Minute)
	var how []string
	for time.Now().Before(deadline) {
		if f.accountGone(st.acct.id) {
			if len(how) == 0 {
				return "account gone"
			}
			return "account gone (" + strings.Join(how, ", ") + ")"
		}
		switch row := f.userRow(st.acct.id); {
		case row == nil:
			// Gone, objects still going: look again.
		case row["status"] != "deleting":
			// The request to delete was refused: the person asks again.
			if r := st.client.PostForm("/account/delete", url.Values{"email": {st.acct.email}}); r.StatusCode == http.StatusSeeOther {
				how = append(how, "asked again")
			}
		case f.deletionStopped(st.acct.id):
			if r := f.admin.PostForm("/admin/users/"+st.acct.id+"/resume", nil); r.StatusCode == http.StatusSeeOther {
				how = append(how, "resumed by the admin")
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Errorf("account deletion of %s: still not done 3 minutes after the fault", st.acct.id)
	return "account NOT gone"
}

// deletionStopped reports whether the admin users page shows the
// account's deletion as stopped (a Resume button).
func (f *faultRun) deletionStopped(id string) bool {
	return f.admin.Get("/admin/users").Doc().Find(`tr[data-user="`+id+`"] .stopped`).Length() > 0
}

// accountGone reports whether the account has no users row, no meals and
// no photo objects left.
func (f *faultRun) accountGone(id string) bool {
	return f.userRow(id) == nil && len(f.mealRows(id)) == 0 && len(f.objects(photo.UserPrefix(id))) == 0
}

func (f *faultRun) userRow(id string) map[string]string {
	out, err := f.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(f.tables.Users.Name), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: id}},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	if out.Item == nil {
		return nil
	}
	row := map[string]string{}
	for k, v := range out.Item {
		if s, ok := v.(*types.AttributeValueMemberS); ok {
			row[k] = s.Value
		}
	}
	return row
}

// mealRow is what the suite reads of a meal row: its key, notes, photo
// version ("" for none) and the copies it names (photo_set; "" for the
// display copy and thumbnail of a row the variant job has not reached).
type mealRow struct{ userID, date, id, notes, photoV, photoSet string }

// photoKeys are the object keys of the copies the row names: the sized
// copies the variant job recorded are the meal's, not orphans.
func (r mealRow) photoKeys() []string {
	set, _ := strconv.ParseUint(r.photoSet, 10, 32)
	var keys []string
	for _, size := range photo.Set(set).Sizes() {
		keys = append(keys, photo.Key(r.userID, r.date, r.id, size))
	}
	return keys
}

func rowOf(item map[string]types.AttributeValue) mealRow {
	str := func(k string) string {
		switch v := item[k].(type) {
		case *types.AttributeValueMemberS:
			return v.Value
		case *types.AttributeValueMemberN:
			return v.Value
		}
		return ""
	}
	return mealRow{str("user_id"), str("date"), str("meal_id"), str("notes"), str("photo_v"), str("photo_set")}
}

// mealRows reads every meal row of userID ("" for every user's).
func (f *faultRun) mealRows(userID string) []mealRow {
	ctx := context.Background()
	var rows []mealRow
	var start map[string]types.AttributeValue
	for {
		out, err := f.db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(f.tables.Meals.Name), ExclusiveStartKey: start, ConsistentRead: aws.Bool(true)})
		if err != nil {
			f.t.Fatal(err)
		}
		for _, it := range out.Items {
			if r := rowOf(it); userID == "" || r.userID == userID {
				rows = append(rows, r)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return rows
		}
		start = out.LastEvaluatedKey
	}
}

// objects lists the keys under prefix.
func (f *faultRun) objects(prefix string) []string {
	var keys []string
	p := s3.NewListObjectsV2Paginator(f.s3c, &s3.ListObjectsV2Input{Bucket: aws.String(f.bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			f.t.Fatal(err)
		}
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// halfWritten lists the meals whose photo objects are not all there.
// The rows are read before the objects are listed, and a meal found
// short is looked at twice: a row names only objects written before it
// (the variant job's copies, still being made under a slow S3, may join
// a row between two readings), so a meal short at both is half-written.
func (f *faultRun) halfWritten() []string {
	short := func() map[string]bool {
		rows := f.mealRows("")
		have := map[string]bool{}
		for _, k := range f.objects("users/") {
			have[k] = true
		}
		half := map[string]bool{}
		for _, r := range rows {
			if r.photoV == "" {
				continue
			}
			for _, k := range r.photoKeys() {
				if !have[k] {
					half[r.userID+" "+r.date+" "+r.id] = true
					break
				}
			}
		}
		return half
	}
	first := short()
	if len(first) == 0 {
		return nil
	}
	var half []string
	for m := range short() {
		if first[m] {
			half = append(half, m)
		}
	}
	sort.Strings(half)
	return half
}

// orphans lists the photo objects no meal row names.
func (f *faultRun) orphans() []string {
	named := map[string]bool{}
	for _, r := range f.mealRows("") {
		if r.photoV != "" {
			for _, k := range r.photoKeys() {
				named[k] = true
			}
		}
	}
	var out []string
	for _, k := range f.objects("users/") {
		if !named[k] {
			out = append(out, k)
		}
	}
	return out
}

// mealsLeft says how many of the owner's meals have notes, with a photo
// or without.
func (f *faultRun) mealsLeft(notes string) string {
	with, without := 0, 0
	for _, r := range f.mealRows(f.ownerID()) {
		if r.notes != notes {
			continue
		}
		if r.photoV != "" {
			with++
		} else {
			without++
		}
	}
	s := fmt.Sprintf("%d %q", with+without, notes)
	if without > 0 {
		s += fmt.Sprintf(" (%d without photo)", without)
	}
	return s
}

// wipeMeals deletes userID's meal rows and the objects they name,
// straight from dynalite and s3rver, so that each cell starts from an
// empty month; orphan objects stay for the final check.
func (f *faultRun) wipeMeals(userID string) {
	ctx := context.Background()
	for _, r := range f.mealRows(userID) {
		if _, err := f.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(f.tables.Meals.Name), Key: map[string]types.AttributeValue{
			"user_id": &types.AttributeValueMemberS{Value: r.userID}, "sk": &types.AttributeValueMemberS{Value: r.date + "#" + r.id},
		}}); err != nil {
			f.t.Fatal(err)
		}
		if r.photoV == "" {
			continue
		}
		for _, k := range r.photoKeys() {
			if _, err := f.s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(k)}); err != nil {
				f.t.Fatal(err)
			}
		}
	}
}

func (f *faultRun) ownerID() string { return friend.id }

// finalOrphanCheck waits out the orphan grace, runs the monitor's orphan
// check and every clean-up it offers, as an admin would, and then wants
// no orphan object left, by the monitor's count and by the suite's own.
func (f *faultRun) finalOrphanCheck() {
	t := f.t
	left := f.orphans()
	t.Logf("orphan objects the faults left: %d", len(left))
	time.Sleep(orphanGrace + time.Second)
	found := f.monitorCheck()
	if got, want := found["photos-without-meal"]+found["photos-without-user"], len(left); got != want {
		t.Errorf("the monitor counts %d orphan objects (%v), the bucket holds %d", got, found, want)
	}
	if found["missing-photos"] != 0 {
		t.Errorf("the monitor counts %d meals whose photo is missing, want 0", found["missing-photos"])
	}
	for _, kind := range []string{"photos-without-meal", "photos-without-user"} {
		if found[kind] == 0 {
			continue
		}
		if r := f.admin.PostForm("/admin/monitor/clean/"+kind, nil); r.StatusCode != http.StatusSeeOther {
			t.Errorf("clean %s = %d", kind, r.StatusCode)
		}
		f.waitMonitor()
	}
	if rest := f.orphans(); len(rest) > 0 {
		t.Errorf("orphan objects left after the monitor's clean-up: %v", rest)
	}
	if again := f.monitorCheck(); again["photos-without-meal"]+again["photos-without-user"] != 0 {
		t.Errorf("the monitor still counts orphans after its clean-up: %v", again)
	}
}

// monitorCheck runs the orphan check and returns its counts by kind.
func (f *faultRun) monitorCheck() map[string]int {
	if r := f.admin.PostForm("/admin/monitor/check", nil); r.StatusCode != http.StatusSeeOther {
		f.t.Fatalf("orphan check = %d", r.StatusCode)
	}
	doc := f.waitMonitor()
	found := map[string]int{}
	doc.Find("tr[id^=kind-]").Each(func(_ int, s *goquery.Selection) {
		id, _ := s.Attr("id")
		var n int
		fmt.Sscan(strings.TrimSpace(s.Find(".found").Text()), &n)
		found[strings.TrimPrefix(id, "kind-")] = n
	})
	return found
}

// waitMonitor waits until the monitor shows no job running and returns
// its page.
func (f *faultRun) waitMonitor() *goquery.Document {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		page := f.admin.Get("/admin/monitor")
		doc := page.Doc()
		if page.StatusCode == http.StatusOK && doc.Find("#orphan-progress").Length() == 0 {
			return doc
		}
		time.Sleep(250 * time.Millisecond)
	}
	f.t.Fatal("the monitor's orphan job did not finish within 2 minutes")
	return nil
}

// checkLogs checks the binary's log: JSON lines only, WARN lines for the
// stalls, at most one a minute per backend and kind of call, and none of
// the run's secrets.
func (f *faultRun) checkLogs() {
	t := f.t
	last := map[string]time.Time{}
	warned := 0
	for i, line := range logLines(f.p.stdout.String()) {
		var rec struct {
			Time    time.Time
			Level   string
			Msg     string
			Service string
			Kind    string
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("log line %d is not JSON: %s", i+1, line)
			continue
		}
		if rec.Msg != "storage not answering" {
			continue
		}
		warned++
		key := rec.Service + " " + rec.Kind
		if prev, ok := last[key]; ok && rec.Time.Sub(prev) < time.Minute {
			t.Errorf("two WARN lines for %s within %v", key, rec.Time.Sub(prev))
		}
		last[key] = rec.Time
	}
	if warned == 0 {
		t.Error("no WARN line storage not answering in the log, want one per stalled backend and kind of call")
	}
	t.Logf("%d WARN lines storage not answering", warned)
}

// printTable prints the results as a Markdown table, also to the file
// named by NDIRO_FAULTS_TABLE if set.
func (f *faultRun) printTable() {
	var b strings.Builder
	fmt.Fprintf(&b, "budgets: item %v, query %v, transfer %v, 2 attempts; bound %v per request\n\n", itemBudget, queryBudget, transferBudget, bound)
	b.WriteString("| backend | fault | operation | status | page | answered in | left | recovered |\n|---|---|---|---|---|---|---|---|\n")
	rows := append([]result(nil), f.results...)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].backend < rows[j].backend })
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %.1f s | %s | %s |\n", r.backend, r.fault, r.op, r.status, r.page, r.took.Seconds(), r.left, r.recovered)
	}
	fmt.Println(b.String())
	if path := os.Getenv("NDIRO_FAULTS_TABLE"); path != "" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			f.t.Error(err)
		}
	}
}
