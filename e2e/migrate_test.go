//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"ndiro/internal/apptest"
	"ndiro/internal/dynamo"
	"ndiro/internal/localenv"
	"ndiro/internal/photo"
)

// migrant is the provider's account of the person whose local diary
// moves to AWS mode: the provider's subject is not the local ID, which
// local mode makes from the email (localenv.Subject).
var migrant = account{"acct-migrant-3e8a", "migrant@example.com"}

// runBin runs the release binary with args and exactly env (nothing
// inherited but PATH and a fresh HOME) to its end, within two minutes.
func runBin(t *testing.T, bin string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return out.String(), errOut.String(), code
}

// localOrigin waits for local mode's "Open http://…" line and returns the
// address.
func localOrigin(t *testing.T, p *process) string {
	t.Helper()
	re := regexp.MustCompile(`ndiro is running in local mode\. Open (http://\S+)`)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(p.stdout.String()); m != nil {
			return m[1]
		}
		if p.exited(100 * time.Millisecond) {
			t.Fatalf("local ndiro exited with %d before listening\nstdout:\n%s\nstderr:\n%s", p.exitCode(), p.stdout, p.stderr)
		}
	}
	t.Fatalf("local ndiro printed no address within a minute\nstdout:\n%s", p.stdout)
	return ""
}

// TestMigrate moves a diary from local mode to AWS mode as a self-hoster
// would: the release binary in local mode keeps an owner's meals and
// photos (with their sized copies) in a data dir; after it stops,
// `ndiro migrate --from-data-dir` copies the data dir into dynalite and
// s3rver, verifying every account (counts and checksums equal), and a
// second run copies nothing; then the binary in AWS mode signs the
// owner in through the e2e provider, whose subject differs from the
// local ID, and the owner finds every meal and its photo.
func TestMigrate(t *testing.T) {
	s := loadSettings(t)
	ctx := context.Background()
	dataDir := filepath.Join(t.TempDir(), "var")

	// The local diary: the admin invites the owner, who logs two meals
	// with photos.
	local := start(t, s.Bin, []string{"NDIRO_DATA_DIR=" + dataDir, "NDIRO_ADDR=127.0.0.1:0", "ADMIN_EMAILS=" + admin.email})
	origin := localOrigin(t, local)
	ac := apptest.NewClient(t, origin)
	ac.SignIn(admin.email)
	tok := ac.CreateInvite(url.Values{"role": {"owner"}, "email": {migrant.email}, "expiry_days": {"7"}})
	oc := apptest.NewClient(t, origin)
	if r := oc.SignInVia("/login?invite="+tok, migrant.email); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("local sign-up = %d; %s", r.StatusCode, r.Body)
	}
	meals := map[string]string{} // meal ID → notes
	for _, m := range []struct{ date, time, notes string }{{"2026-09-14", "12:30", "Lentil soup"}, {"2026-09-15", "19:00", "Grilled fish"}} {
		resp := oc.PostMultipart("/meals", url.Values{"date": {m.date}, "time": {m.time}, "kind": {"lunch"}, "notes": {m.notes}, "kcal": {"512.5"}},
			apptest.File{Field: "photo", Name: "meal.jpg", Body: testJPEG(t, 800, 600)})
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("local add meal = %d; %s", resp.StatusCode, resp.Body)
		}
		meals[resp.Location()[strings.Index(resp.Location(), "#meal-")+len("#meal-"):]] = m.notes
	}
	localID := localenv.Subject(migrant.email)
	local.terminate(t)
	if !local.exited(30*time.Second) || local.exitCode() != 0 {
		t.Fatalf("local ndiro did not stop cleanly (%d): %s", local.exitCode(), local.stderr)
	}

	// The AWS side, empty.
	db, s3c := clients(s)
	run := randomHex(t, 4)
	tablePrefix, bucket := "e2e-"+run+"-", "ndiro-e2e-"+run
	if err := dynamo.CreateTables(ctx, db, dynamo.NewTables(tablePrefix)); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	cert, pool := selfSigned(t)
	h := &harness{t: t, s: s, base: "https://" + s.ProxyAddr, issuer: s.Issuer}
	h.rec = &recorder{base: &http.Transport{TLSClientConfig: tlsConfig(pool)}}
	env := []string{
		"NDIRO_MODE=aws", "NDIRO_ADDR=127.0.0.1:0", "NDIRO_BASE_URL=" + h.base,
		"NDIRO_TABLE_PREFIX=" + tablePrefix, "NDIRO_BUCKET=" + bucket, "ADMIN_EMAILS=" + admin.email,
		"AWS_REGION=" + region, "AWS_ACCESS_KEY_ID=" + accessKey, "AWS_SECRET_ACCESS_KEY=" + secretKey,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_ENDPOINT_URL_DYNAMODB=" + s.DynamoDB, "AWS_ENDPOINT_URL_S3=" + s.S3,
		"NDIRO_OIDC_ISSUER=" + s.Issuer, "NDIRO_OIDC_CLIENT_ID=" + s.ClientID, "NDIRO_OIDC_CLIENT_SECRET=" + s.ClientSecret,
		"NDIRO_OIDC_NAME=" + providerName,
	}

	out, errOut, code := runBin(t, s.Bin, nil, "migrate", "--help")
	if code != 0 {
		t.Fatalf("ndiro migrate --help exited with %d: %s", code, errOut)
	}
	for _, want := range []string{"Usage: ndiro migrate --from-data-dir DIR [--dry-run]", "-from-data-dir", "-dry-run",
		"Copied: every account's users row, meals", "Not copied: sessions", "waiting for its owner"} {
		if !strings.Contains(out, want) {
			t.Errorf("ndiro migrate --help does not say %q:\n%s", want, out)
		}
	}

	out, errOut, code = runBin(t, s.Bin, env, "migrate", "--from-data-dir", dataDir)
	if code != 0 {
		t.Fatalf("ndiro migrate exited with %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	// The owner's row of the table: meals, photos, shares, the two sums.
	row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(localID) + `\s+(\d+)\s+(\d+)\s+(\d+)\s+([0-9a-f]{12})\s+([0-9a-f]{12})\s+(.*)$`).FindStringSubmatch(out)
	if row == nil {
		t.Fatalf("ndiro migrate's table has no equal row for the owner %s:\n%s", localID, out)
	}
	if row[1] != "2" || row[4] != row[5] || !strings.HasPrefix(row[6], "equal; waiting for its owner") {
		t.Errorf("the owner's row: meals %s, sums %s and %s, result %q; want 2 meals, equal sums, equal and waiting for its owner\n%s", row[1], row[4], row[5], row[6], out)
	}
	if !strings.Contains(out, "verified: every copied account is equal in the source and the target") {
		t.Errorf("ndiro migrate does not say it verified:\n%s", out)
	}
	for _, a := range []account{admin, migrant} {
		if strings.Contains(out+errOut, a.email) {
			t.Errorf("ndiro migrate's output or logs name %s; they name accounts by ID only:\n%s\n%s", a.email, out, errOut)
		}
	}
	// The owner's objects in s3rver: each photo's copies, as many as the
	// table counted, each meal's display copy among them.
	var keys []string
	p := s3.NewListObjectsV2Paginator(s3c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(photo.UserPrefix(localID))})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	if n := strings.TrimSpace(row[2]); n != strconv.Itoa(len(keys)) || len(keys) < 2*len(meals) {
		t.Errorf("s3rver holds %d objects of the owner, the table counted %s, want at least %d", len(keys), n, 2*len(meals))
	}

	out, errOut, code = runBin(t, s.Bin, env, "migrate", "--from-data-dir", dataDir)
	if code != 0 || !strings.Contains(out, "copied nothing: all ") {
		t.Errorf("second ndiro migrate = exit %d, want 0 and copied nothing\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	// The owner signs in on AWS mode through the provider and finds the
	// diary whole.
	srv := start(t, s.Bin, env)
	px := startProxy(t, s.ProxyAddr, cert)
	px.forward(srv.listenAddr(t))
	c := h.client()
	if r := h.signIn(c, "/login", migrant); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("the migrated owner's sign-in = %d %q; %s", r.StatusCode, r.Location(), r.Body)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		page := c.Get("/meals?month=2026-09")
		found := 0
		for id, notes := range meals {
			if strings.TrimSpace(page.Doc().Find("#meal-"+id+" .notes").Text()) == notes {
				found++
			}
		}
		if page.StatusCode == http.StatusOK && found == len(meals) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after sign-in the month shows %d of the %d migrated meals (status %d)", found, len(meals), page.StatusCode)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for id := range meals {
		date := "2026-09-14"
		if meals[id] == "Grilled fish" {
			date = "2026-09-15"
		}
		src, _ := c.Get("/meals/" + date + "/" + id).Doc().Find("img.photo").Attr("src")
		ph := c.Get(src)
		if ph.StatusCode != http.StatusOK || ph.Header.Get("Content-Type") != "image/jpeg" || len(ph.Body) == 0 {
			t.Errorf("the migrated meal %s's photo %q = %d %q with %d bytes, want 200 image/jpeg", id, src, ph.StatusCode, ph.Header.Get("Content-Type"), len(ph.Body))
		}
	}
	// The account is the provider's subject's now.
	if got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tablePrefix + "users"),
		Key: map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: migrant.id}}, ConsistentRead: aws.Bool(true)}); err != nil || len(got.Item) == 0 {
		t.Errorf("no users row for the provider's subject %s after the sign-in (%v)", migrant.id, err)
	}
	srv.terminate(t)
	if !srv.exited(10*time.Second) || srv.exitCode() != 0 {
		t.Errorf("no clean exit after SIGTERM (code %d); stderr: %s", srv.exitCode(), srv.stderr)
	}
	if strings.Contains(srv.stdout.String(), migrant.email) {
		t.Errorf("the AWS mode logs name %s", migrant.email)
	}
}
