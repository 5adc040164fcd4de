package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"

	"ndiro/internal/apptest"
	"ndiro/internal/archive"
	"ndiro/internal/config"
	"ndiro/internal/demo"
	"ndiro/internal/dynamo"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/share"
	"ndiro/internal/user"
)

// Accounts of the backup tests' data dir: the demo owner (meals with
// photos), an owner with no meals and an ID that needs escaping, and an
// account being deleted.
const (
	emptyID    = "github|42/../x y"
	deletingID = "deleting-owner"
	goneID     = "gone-owner" // archives of an account no longer there
)

// backupDataDir makes a local-mode data dir holding the three accounts,
// and returns it with the settings that point at it and the demo owner's
// meals.
func backupDataDir(t *testing.T) (string, func(string) string, []meal.Meal) {
	t.Helper()
	dir := t.TempDir()
	env := map[string]string{"NDIRO_DATA_DIR": dir, "NDIRO_LOG_LEVEL": "warn"}
	getenv := func(k string) string { return env[k] }
	cfg, err := config.Load(getenv)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tables := dynamo.NewTables(cfg.TablePrefix)
	le, err := localenv.Start(ctx, localenv.Options{DataDir: dir, Tables: tables, Bucket: localBucket})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	users := user.NewStore(le.DynamoDB, tables.Users.Name, time.Now)
	meals := meal.NewStore(le.DynamoDB, tables.Meals.Name)
	owner := localenv.Subject(demo.Email)
	if _, err := demo.Seed(ctx, demo.Deps{
		Users: users, Meals: meals, Photos: photo.NewStore(le.S3, localBucket),
		Shares: share.NewStore(le.DynamoDB, tables.Shares.Name, time.Now), Pipeline: photo.NewPipeline(photo.DefaultBudget, photo.DefaultWait),
		Now: time.Now,
	}, demo.Options{OwnerID: owner, Days: 2, PhotoWidth: 64, PhotoHeight: 48}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{emptyID, deletingID} {
		if err := users.Create(ctx, &user.User{ID: id, Email: id + "@example.com", Role: user.RoleOwner, Status: user.StatusActive, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := users.MarkDeleting(ctx, deletingID, "meals", now); err != nil {
		t.Fatal(err)
	}
	ms, err := meals.All(ctx, owner)
	if err != nil || len(ms) == 0 {
		t.Fatalf("demo meals: %d, %v", len(ms), err)
	}
	if err := le.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, getenv, ms
}

// plant writes each name under dir with a few bytes.
func plant(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// files lists every file under dir, slash-separated and sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	names, err := dirTarget(dir).list(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return names
}

// day returns the date d days from today (UTC), as archive names hold it.
func day(d int) string { return time.Now().UTC().AddDate(0, 0, d).Format(time.DateOnly) }

// checkArchive opens the archive at path and compares its meals with ms
// (by content and photo), and checks every photo reads whole.
func checkArchive(t *testing.T, zb []byte, email string, ms []meal.Meal) {
	t.Helper()
	a, err := archive.Open(bytes.NewReader(zb), int64(len(zb)), archive.Limits{})
	if err != nil {
		t.Fatalf("archive.Open(the backup) = %v", err)
	}
	if a.Header().Email != email || len(a.Meals()) != len(ms) {
		t.Fatalf("backup of %s holds %d meals of %q, want %d", email, len(a.Meals()), a.Header().Email, len(ms))
	}
	photos, withPhoto := 0, 0
	for i := range ms {
		if ms[i].HasPhoto() {
			withPhoto++
		}
	}
	for i, m := range a.Meals() {
		if m.Date != ms[i].Date || m.Time != ms[i].Time || m.Notes != ms[i].Notes || (m.Photo != nil) != ms[i].HasPhoto() {
			t.Errorf("meal %d: %s %s %q photo %v, want %s %s %q photo %v", i, m.Date, m.Time, m.Notes, m.Photo != nil, ms[i].Date, ms[i].Time, ms[i].Notes, ms[i].HasPhoto())
		}
		if m.Photo != nil && !m.Photo.Missing {
			photos++
		}
	}
	if err := a.Verify(); err != nil {
		t.Errorf("Verify(the backup) = %v", err)
	}
	if photos != withPhoto {
		t.Errorf("the backup holds %d photos, want the %d the meals have", photos, withPhoto)
	}
}

// TestBackupToDirectory: a backup of a local data dir writes one archive
// per account but the one being deleted, each opening whole with the
// account's meals and photos, and applies the retention: an account's
// archives past --keep-days and every archive of an account gone or
// being deleted are removed; files it did not write stay.
func TestBackupToDirectory(t *testing.T) {
	t.Parallel()
	_, getenv, ms := backupDataDir(t)
	to := t.TempDir()
	owner := escapeID(localenv.Subject(demo.Email))
	plant(t, to,
		owner+"/"+day(-40)+".zip", owner+"/"+day(-3)+".zip",
		escapeID(goneID)+"/"+day(-1)+".zip", escapeID(deletingID)+"/"+day(-1)+".zip",
		escapeID(goneID)+"/notes.txt", "README.txt", "not-an-id.x/"+day(-1)+".zip",
	)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"ndiro", "backup", "--to", to}, getenv, &out); err != nil {
		t.Fatalf("ndiro backup = %v\n%s", err, out.String())
	}
	want := []string{
		"README.txt",
		escapeID(emptyID) + "/" + day(0) + ".zip",
		escapeID(goneID) + "/notes.txt",
		owner + "/" + day(-3) + ".zip",
		owner + "/" + day(0) + ".zip",
		"not-an-id.x/" + day(-1) + ".zip",
	}
	sort.Strings(want)
	if d := cmp.Diff(want, files(t, to)); d != "" {
		t.Errorf("files after the backup (-want +got):\n%s", d)
	}
	if escapeID(emptyID) != "github%7C42%2F%2E%2E%2Fx%20y" {
		t.Errorf("escapeID(%q) = %q", emptyID, escapeID(emptyID))
	}
	zb, err := os.ReadFile(filepath.Join(to, owner, day(0)+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	checkArchive(t, zb, demo.Email, ms)
	zb, err = os.ReadFile(filepath.Join(to, escapeID(emptyID), day(0)+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	checkArchive(t, zb, emptyID+"@example.com", nil)

	// A second run the same day replaces the day's archive, whole.
	if err := run(context.Background(), []string{"ndiro", "backup", "--to", to}, getenv, &out); err != nil {
		t.Fatalf("second ndiro backup = %v", err)
	}
	if d := cmp.Diff(want, files(t, to)); d != "" {
		t.Errorf("files after the second backup (-want +got):\n%s", d)
	}
}

// TestBackupDryRun: --dry-run writes and removes nothing; --user backs up
// that account only and leaves the others' archives as they are.
func TestBackupDryRun(t *testing.T) {
	t.Parallel()
	dir, getenv, _ := backupDataDir(t)
	_ = dir
	to := t.TempDir()
	stale := []string{escapeID(goneID) + "/" + day(-1) + ".zip", escapeID(emptyID) + "/" + day(-99) + ".zip"}
	plant(t, to, stale...)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"ndiro", "backup", "--to", to, "--dry-run"}, getenv, &out); err != nil {
		t.Fatalf("ndiro backup --dry-run = %v", err)
	}
	sort.Strings(stale)
	if d := cmp.Diff(stale, files(t, to)); d != "" {
		t.Errorf("--dry-run changed the files (-before +after):\n%s", d)
	}
	if err := run(context.Background(), []string{"ndiro", "backup", "--to", to, "--user", emptyID}, getenv, &out); err != nil {
		t.Fatalf("ndiro backup --user = %v", err)
	}
	want := []string{escapeID(goneID) + "/" + day(-1) + ".zip", escapeID(emptyID) + "/" + day(0) + ".zip"}
	sort.Strings(want)
	if d := cmp.Diff(want, files(t, to)); d != "" {
		t.Errorf("files after --user (-want +got):\n%s", d)
	}
}

// TestBackupRefuses: bad flags, a data dir an ndiro holds, a missing data
// dir and an unknown --user each stop the backup with a message saying
// what to change, and nothing written.
func TestBackupRefuses(t *testing.T) {
	t.Parallel()
	dir, getenv, _ := backupDataDir(t)
	to := t.TempDir()
	backupErr := func(getenv func(string) string, args ...string) string {
		err := run(context.Background(), append([]string{"ndiro", "backup"}, args...), getenv, io.Discard)
		if err == nil {
			return ""
		}
		return err.Error()
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--to is required"},
		{[]string{"--to", filepath.Join(to, "nowhere")}, "is not a directory"},
		{[]string{"--to", "s3:///prefix"}, "names no bucket"},
		{[]string{"--to", to, "--keep-days", "0"}, "--keep-days is 0; it must be at least 1"},
		{[]string{"--to", to, "extra"}, `unexpected argument "extra"`},
		{[]string{"--to", to, "--user", "nobody"}, `no user "nobody"`},
		{[]string{"--to", to, "--frobnicate"}, "flag provided but not defined"},
	} {
		if got := backupErr(getenv, tc.args...); !strings.Contains(got, tc.want) {
			t.Errorf("ndiro backup %q = %q, want it to say %q", tc.args, got, tc.want)
		}
	}
	empty := t.TempDir()
	if got := backupErr(func(k string) string { return map[string]string{"NDIRO_DATA_DIR": empty}[k] }, "--to", to); !strings.Contains(got, "no ndiro data in "+empty) {
		t.Errorf("backup of an empty data dir = %q", got)
	}
	if _, err := os.Stat(filepath.Join(empty, "s3.bolt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the backup made a data dir where there was none (%v)", err)
	}
	// An ndiro running on the data dir holds its lock.
	cfg, _ := config.Load(getenv)
	le, err := localenv.Start(context.Background(), localenv.Options{DataDir: dir, Tables: dynamo.NewTables(cfg.TablePrefix), Bucket: localBucket})
	if err != nil {
		t.Fatal(err)
	}
	defer le.Close()
	if got := backupErr(getenv, "--to", to); !strings.Contains(got, "an ndiro is running on "+dir+" (NDIRO_DATA_DIR); stop it first") {
		t.Errorf("backup of a data dir in use = %q", got)
	}
	if got := files(t, to); len(got) != 0 {
		t.Errorf("refused backups wrote %q", got)
	}
	var help bytes.Buffer
	if err := run(context.Background(), []string{"ndiro", "backup", "--help"}, getenv, &help); err != nil || !strings.Contains(help.String(), "Usage: ndiro backup --to DIR|s3://BUCKET/PREFIX") || !strings.Contains(help.String(), "-keep-days") {
		t.Errorf("ndiro backup --help = %v\n%s", err, help.String())
	}
}

// TestBackupToS3: a backup to s3://bucket/prefix puts each archive as one
// completed multipart upload under the prefix, and the retention removes
// a gone account's objects there.
func TestBackupToS3(t *testing.T) {
	_, getenv, ms := backupDataDir(t)
	dst, err := localenv.Start(context.Background(), localenv.Options{Tables: dynamo.NewTables("dst-"), Bucket: "backups"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dst.Close() })
	s3URL := apptest.Expose(t, dst.S3Endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL_S3", s3URL)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	env := func(k string) string {
		if k == "AWS_ENDPOINT_URL_S3" {
			return s3URL
		}
		return getenv(k)
	}
	ctx := context.Background()
	gone := "nightly/" + escapeID(goneID) + "/" + day(-1) + ".zip"
	if _, err := dst.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("backups"), Key: aws.String(gone), Body: strings.NewReader("old")}); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"ndiro", "backup", "--to", "s3://backups/nightly"}, env, io.Discard); err != nil {
		t.Fatalf("ndiro backup to S3 = %v", err)
	}
	list, err := dst.S3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("backups")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range list.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	owner := "nightly/" + escapeID(localenv.Subject(demo.Email)) + "/" + day(0) + ".zip"
	want := []string{"nightly/" + escapeID(emptyID) + "/" + day(0) + ".zip", owner}
	sort.Strings(want)
	if d := cmp.Diff(want, keys); d != "" {
		t.Errorf("objects after the backup (-want +got):\n%s", d)
	}
	out, err := dst.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("backups"), Key: aws.String(owner)})
	if err != nil {
		t.Fatal(err)
	}
	zb, _ := io.ReadAll(out.Body)
	out.Body.Close()
	checkArchive(t, zb, demo.Email, ms)
}

// TestDeployBackupUnits checks deploy/ndiro-backup.service and its timer:
// a oneshot in AWS mode on the serving ndiro's settings, whose command
// line ndiro backup takes, sandboxed like ndiro.service, writing only its
// state directory, started nightly and after a missed night. With
// systemd-analyze on the machine it also verifies the service.
func TestDeployBackupUnits(t *testing.T) {
	path := filepath.Join(deployDir, "ndiro-backup.service")
	u := parseUnit(t, path)
	want := map[string]string{
		"Service/Type":            "oneshot",
		"Service/EnvironmentFile": "/etc/ndiro/ndiro.env",
		"Service/Environment":     "NDIRO_MODE=aws",
		"Service/StateDirectory":  "ndiro-backup",
		"Service/DynamicUser":     "yes",
		"Service/ProtectSystem":   "strict",
		"Service/NoNewPrivileges": "yes",
		"Service/UMask":           "0077",
	}
	got := map[string]string{}
	for k := range want {
		section, key, _ := strings.Cut(k, "/")
		got[k] = u.one(section, key)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s (-want +unit):\n%s", path, d)
	}
	args := strings.Fields(u.one("Service", "ExecStart"))
	if len(args) < 2 || args[0] != "/usr/local/bin/ndiro" || args[1] != "backup" {
		t.Fatalf("ExecStart = %q, want /usr/local/bin/ndiro backup …", args)
	}
	f, err := parseBackupFlags(args[2:], io.Discard)
	if err != nil || f.to != "/var/lib/ndiro-backup" {
		t.Errorf("ndiro backup refuses the unit's flags %q (%v), or they write elsewhere than the state directory (%q)", args[2:], err, f.to)
	}
	timer := parseUnit(t, filepath.Join(deployDir, "ndiro-backup.timer"))
	for _, kv := range [][3]string{{"Timer", "Unit", "ndiro-backup.service"}, {"Timer", "Persistent", "true"}, {"Timer", "OnCalendar", "*-*-* 03:30:00"}, {"Install", "WantedBy", "timers.target"}} {
		if got := timer.one(kv[0], kv[1]); got != kv[2] {
			t.Errorf("ndiro-backup.timer %s/%s = %q, want %q", kv[0], kv[1], got, kv[2])
		}
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze is not installed: the unit's verify check did not run")
	}
	root := systemdRoot(t, path)
	out, err := exec.Command("systemd-analyze", "verify", "--root="+root, "--man=no", "ndiro.service").CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify ndiro-backup.service: %v\n%q", err, out)
	}
}

// TestBackupAWSMode: in AWS mode the backup reads the tables and bucket
// it is pointed at and writes nothing there: no writer lease is taken, so
// it runs beside the serving ndiro (which holds it).
func TestBackupAWSMode(t *testing.T) {
	env, tables := apptest.Local(t)
	dynamoURL, s3URL := apptest.Expose(t, env.DynamoEndpoint), apptest.Expose(t, env.S3Endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", dynamoURL)
	t.Setenv("AWS_ENDPOINT_URL_S3", s3URL)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	ctx := context.Background()
	users := user.NewStore(env.DynamoDB, tables.Users.Name, time.Now)
	if err := users.Create(ctx, &user.User{ID: "g-1", Email: "ana@example.org", Role: user.RoleOwner, Status: user.StatusActive, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	meals := meal.NewStore(env.DynamoDB, tables.Meals.Name)
	if err := meals.Create(ctx, &meal.Meal{UserID: "g-1", Date: "2026-09-01", Time: "12:30:00", Kind: meal.Lunch, Notes: "soup", CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{
		"NDIRO_MODE": "aws", "AWS_REGION": "us-east-1",
		"GOOGLE_CLIENT_ID": "id", "GOOGLE_CLIENT_SECRET": "secret",
		"NDIRO_BASE_URL": "https://ndiro.example.org", "ADMIN_EMAILS": "admin@example.org",
		"AWS_ENDPOINT_URL_S3": s3URL, "AWS_ENDPOINT_URL_DYNAMODB": dynamoURL,
		"NDIRO_TABLE_PREFIX": strings.TrimSuffix(tables.Users.Name, "users"), "NDIRO_BUCKET": "test-photos",
	}
	to := t.TempDir()
	var out bytes.Buffer
	if err := run(ctx, []string{"ndiro", "backup", "--to", to}, func(k string) string { return settings[k] }, &out); err != nil {
		t.Fatalf("ndiro backup in AWS mode = %v\n%s", err, out.String())
	}
	got, err := meals.All(ctx, "g-1")
	if err != nil {
		t.Fatal(err)
	}
	zb, err := os.ReadFile(filepath.Join(to, "g-1", day(0)+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	checkArchive(t, zb, "ana@example.org", got)
	if _, err := users.Get(ctx, user.LeaseKey); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("the users table has a lease item after the backup (%v); a backup takes none", err)
	}
	scan, err := env.DynamoDB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tables.Users.Name)})
	if err != nil || scan.Count != 1 {
		t.Errorf("users table holds %d items after the backup (%v), want the 1 account", scan.Count, err)
	}
}

// TestBackupLongIDs: an account ID whose escape runs past a file name's
// 255 bytes still gets a folder of its own (two IDs sharing their first
// 255 bytes included), and the retention finds each account by it: old
// archives and those of a gone account are removed, --user keeps to its
// own folder.
func TestBackupLongIDs(t *testing.T) {
	t.Parallel()
	dir, getenv, _ := backupDataDir(t)
	long := "https://id.example.com/" + strings.Repeat("a/", 120) // escapes to over 255 bytes
	idA, idB, gone := long+"A", long+"B", long+"gone"
	ctx := context.Background()
	tables := dynamo.NewTables("ndiro-")
	le, err := localenv.Start(ctx, localenv.Options{DataDir: dir, Tables: tables, Bucket: localBucket})
	if err != nil {
		t.Fatal(err)
	}
	users := user.NewStore(le.DynamoDB, tables.Users.Name, time.Now)
	for _, id := range []string{idA, idB} {
		if err := users.Create(ctx, &user.User{ID: id, Email: "x@example.com", Role: user.RoleOwner, Status: user.StatusActive, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := le.Close(); err != nil {
		t.Fatal(err)
	}
	a, b, g := folderName(idA), folderName(idB), folderName(gone)
	for _, n := range []string{a, b, g} {
		if len(n) > maxFolderName || !isFolderName(n) || strings.ContainsAny(n, "/\x00") {
			t.Errorf("folderName = %q (%d bytes): want a folder name of at most %d bytes that isFolderName knows", n, len(n), maxFolderName)
		}
	}
	if a == b || a == g {
		t.Fatalf("folderName gives IDs sharing their start one folder: %q", a)
	}
	to := t.TempDir()
	plant(t, to, a+"/"+day(-40)+".zip", a+"/"+day(-3)+".zip", g+"/"+day(-1)+".zip", b+"/"+day(-40)+".zip")
	if err := run(ctx, []string{"ndiro", "backup", "--to", to, "--user", idA}, getenv, io.Discard); err != nil {
		t.Fatalf("ndiro backup --user = %v", err)
	}
	want := []string{a + "/" + day(-3) + ".zip", a + "/" + day(0) + ".zip", b + "/" + day(-40) + ".zip", g + "/" + day(-1) + ".zip"}
	sort.Strings(want)
	if d := cmp.Diff(want, files(t, to)); d != "" {
		t.Errorf("files after --user (-want +got):\n%s", d)
	}
	if err := run(ctx, []string{"ndiro", "backup", "--to", to}, getenv, io.Discard); err != nil {
		t.Fatalf("ndiro backup = %v", err)
	}
	for _, n := range files(t, to) {
		if strings.HasPrefix(n, g+"/") || n == b+"/"+day(-40)+".zip" {
			t.Errorf("retention left %s", n)
		}
	}
	if got := files(t, to); !slices.Contains(got, b+"/"+day(0)+".zip") || !slices.Contains(got, a+"/"+day(-3)+".zip") {
		t.Errorf("files after the backup = %q: want each long ID's archive of today, and A's of 3 days ago", got)
	}
}

// TestFolderNameCutsBeforeAnEscape: the start kept of a long ID's escape
// never ends inside a %XX, whatever its length.
func TestFolderNameCutsBeforeAnEscape(t *testing.T) {
	for pad := range 4 {
		id := strings.Repeat("a", pad) + strings.Repeat("/", 200)
		n := folderName(id)
		start, _, ok := strings.Cut(n, hashMark)
		if !ok || len(n) > maxFolderName || !isFolderName(n) {
			t.Errorf("folderName(%d a's and 200 slashes) = %q: want a start, %s and a digest within %d bytes", pad, n, hashMark, maxFolderName)
		}
		if _, err := url.PathUnescape(start); err != nil {
			t.Errorf("folderName cut inside an escape: start %q", start[len(start)-4:])
		}
	}
	if isFolderName("a" + hashMark + strings.Repeat("0", 64)) {
		t.Error("isFolderName took a short name with a digest: only names cut at 255 bytes carry one")
	}
}
