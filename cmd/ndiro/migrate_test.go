package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"ndiro/internal/apptest"
	"ndiro/internal/dynamo"
	"ndiro/internal/lease"
	"ndiro/internal/localenv"
	"ndiro/internal/user"
)

// localDataDir writes a local mode data dir holding one account with a
// meal and its photo, and returns it and the account's ID.
func localDataDir(t *testing.T) (string, string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	tables := dynamo.NewTables("ndiro-")
	env, err := localenv.Start(ctx, localenv.Options{DataDir: dir, Tables: tables, Bucket: localBucket})
	if err != nil {
		t.Fatal(err)
	}
	id := localenv.Subject("owner@example.com")
	if err := user.NewStore(env.DynamoDB, tables.Users.Name, time.Now).Create(ctx, &user.User{ID: id, Email: "owner@example.com", Role: user.RoleOwner, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tables.Meals.Name), Item: map[string]types.AttributeValue{
		"user_id": s(id), "sk": s("2026-09-14#12:30:00#m1"), "notes": s("Lentil soup"), "kcal": &types.AttributeValueMemberN{Value: "512.50"},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(localBucket), Key: aws.String("users/" + id + "/meals/2026-09-14/m1.jpg"), Body: bytes.NewReader([]byte("jpeg bytes"))}); err != nil {
		t.Fatal(err)
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, id
}

// TestMigrateCommand runs ndiro migrate as an operator would, in AWS
// mode against the emulators: --help says what it copies; bad flags,
// another mode, a data dir a running ndiro holds and a lease another
// process renews are each refused with a message saying so (the lease's
// holder named); a run copies, verifies, releases the lease and marks
// the account; a second run copies nothing.
func TestMigrateCommand(t *testing.T) {
	env, tables := apptest.Local(t)
	dynamoURL, s3URL := apptest.Expose(t, env.DynamoEndpoint), apptest.Expose(t, env.S3Endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", dynamoURL)
	t.Setenv("AWS_ENDPOINT_URL_S3", s3URL)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	settings := map[string]string{
		"NDIRO_MODE": "aws", "AWS_REGION": "us-east-1",
		"GOOGLE_CLIENT_ID": "id", "GOOGLE_CLIENT_SECRET": "secret",
		"NDIRO_BASE_URL": "https://ndiro.example.org", "ADMIN_EMAILS": "admin@example.org",
		"NDIRO_TABLE_PREFIX": strings.TrimSuffix(tables.Users.Name, "users"), "NDIRO_BUCKET": "test-photos",
		"NDIRO_STORAGE_ITEM_TIMEOUT": "10s", "NDIRO_STORAGE_QUERY_TIMEOUT": "10s", "NDIRO_STORAGE_TRANSFER_TIMEOUT": "10s",
		"NDIRO_LEASE_TTL": "10m", "NDIRO_LEASE_RENEW": "1s", "NDIRO_MOVE_MARK_DAYS": "7",
		"AWS_ENDPOINT_URL_S3": s3URL, "AWS_ENDPOINT_URL_DYNAMODB": dynamoURL,
	}
	migrateRun := func(extra map[string]string, args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"ndiro", "migrate"}, args...), func(k string) string {
			if v, ok := extra[k]; ok {
				return v
			}
			return settings[k]
		}, &out)
		return out.String(), err
	}
	dir, id := localDataDir(t)

	out, err := migrateRun(nil, "--help")
	if err != nil {
		t.Fatalf("migrate --help = %v", err)
	}
	for _, want := range []string{"Usage: ndiro migrate --from-data-dir DIR [--dry-run]", "-from-data-dir", "-dry-run", "-write-units",
		"Copied: every account's users row, meals", "Not copied: sessions", "pending/", "waiting for its owner"} {
		if !strings.Contains(out, want) {
			t.Errorf("migrate --help does not say %q:\n%s", want, out)
		}
	}

	for _, tc := range []struct {
		name  string
		extra map[string]string
		args  []string
		want  string
	}{
		{"no data dir", nil, nil, "needs --from-data-dir DIR"},
		{"unknown flag", nil, []string{"--from-data-dir", dir, "--force"}, "flag provided but not defined: -force"},
		{"stray argument", nil, []string{"--from-data-dir", dir, "now"}, `unexpected argument "now"`},
		{"no write units", nil, []string{"--from-data-dir", dir, "--write-units", "0"}, "--write-units must be from 1 to 40000"},
		{"local mode", map[string]string{"NDIRO_MODE": "local"}, []string{"--from-data-dir", dir}, "copies into AWS mode"},
		{"not a data dir", nil, []string{"--from-data-dir", t.TempDir()}, "has no s3.bolt"},
	} {
		if _, err := migrateRun(tc.extra, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: migrate = %v, want an error saying %q", tc.name, err, tc.want)
		}
	}

	// A local ndiro running on the data dir.
	held, err := localenv.Start(context.Background(), localenv.Options{DataDir: dir, Tables: dynamo.NewTables("ndiro-"), Bucket: localBucket})
	if err != nil {
		t.Fatal(err)
	}
	_, err = migrateRun(nil, "--from-data-dir", dir)
	held.Close()
	if !errors.Is(err, localenv.ErrDataDirHeld) || !strings.Contains(err.Error(), "stop it first") {
		t.Errorf("migrate while a local ndiro runs on the data dir = %v, want it refused, saying to stop it", err)
	}

	// Another process renewing the lease: refused, naming it; nothing
	// copied.
	other, err := lease.New(lease.Dynamo{DB: env.DynamoDB, Table: tables.Users.Name, PK: "user_id", Key: user.LeaseKey},
		lease.Options{TTL: 10 * time.Second, Renew: 200 * time.Millisecond, Guard: time.Second, Holder: "web-1 pid 4242"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	if err := other.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); other.Run(ctx) }()
	_, err = migrateRun(nil, "--from-data-dir", dir)
	stop()
	<-done
	if err := other.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	var heldErr *lease.HeldError
	if !errors.As(err, &heldErr) || !strings.Contains(err.Error(), "web-1 pid 4242") {
		t.Errorf("migrate while another process holds the lease = %v, want a refusal naming web-1 pid 4242", err)
	}
	if n := len(listObjects(t, env.S3, "test-photos")); n != 0 {
		t.Errorf("the refused run copied %d objects", n)
	}

	// A dry run, then the run, then a second run.
	out, err = migrateRun(nil, "--from-data-dir", dir, "--dry-run")
	if err != nil || !strings.Contains(out, "dry run: would copy 2 items and 1 photo objects") {
		t.Errorf("migrate --dry-run = %v:\n%s", err, out)
	}
	before := time.Now()
	out, err = migrateRun(nil, "--from-data-dir", dir)
	if err != nil {
		t.Fatalf("migrate = %v:\n%s", err, out)
	}
	after := time.Now()
	for _, want := range []string{"copied 2 items and 1 photo objects", "verified: every copied account is equal", id + "  1      1       0"} {
		if !strings.Contains(out, want) {
			t.Errorf("migrate's report does not say %q:\n%s", want, out)
		}
	}
	got, err := user.NewStore(env.DynamoDB, tables.Users.Name, time.Now).Get(context.Background(), id)
	if err != nil || got.AwaitingOwner == nil || got.OwnerMark == nil || got.OwnerMark.By != user.MarkedByMigrate {
		t.Fatalf("the copied account: %+v, %v; want it marked as waiting for its owner by migrate", got, err)
	}
	week := 7 * 24 * time.Hour
	if exp := got.OwnerMark.Expires; exp.Before(before.Add(week).Truncate(time.Second)) || exp.After(after.Add(week)) {
		t.Errorf("the mark expires at %v, want NDIRO_MOVE_MARK_DAYS (7) after the run, %v to %v", exp, before.Add(week), after.Add(week))
	}
	if it, err := env.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(tables.Users.Name),
		Key: map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: user.LeaseKey}}, ConsistentRead: aws.Bool(true)}); err != nil || len(it.Item) != 0 {
		t.Errorf("after the run the lease item is %v (%v), want it released", it.Item, err)
	}
	out, err = migrateRun(nil, "--from-data-dir", dir)
	if err != nil || !strings.Contains(out, "copied nothing: all 2 items and 1 photo objects were already in the target") {
		t.Errorf("second migrate = %v:\n%s", err, out)
	}
}

func listObjects(t *testing.T, c *s3.Client, bucket string) []string {
	t.Helper()
	out, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}
