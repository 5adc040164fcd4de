package localenv_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"

	"ndiro/internal/apptest"
	"ndiro/internal/dynamo"
	"ndiro/internal/localenv"
	"ndiro/internal/user"
)

// TestDataSurvivesRestart writes a users row and an S3 object, stops the
// backends, starts them again on the same directory, and reads both back.
func TestDataSurvivesRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	tables := dynamo.NewTables("ndiro-")
	photo := apptest.Photo(t, "small.jpg")
	opts := localenv.Options{DataDir: dir, Tables: tables, Bucket: "photos"}

	env, err := localenv.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := &user.User{ID: "sub-1", Email: "a@example.com", Role: user.RoleOwner, Status: user.StatusActive, CreatedAt: time.Date(2026, 9, 1, 8, 0, 0, 0, time.UTC)}
	if err := user.NewStore(env.DynamoDB, tables.Users.Name, time.Now).Create(ctx, want); err != nil {
		t.Fatal(err)
	}
	_, err = env.S3.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String("photos"), Key: aws.String("users/sub-1/meals/2026-09-01/x.jpg"),
		Body: bytes.NewReader(photo), ContentType: aws.String("image/jpeg"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}

	env, err = localenv.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	got, err := user.NewStore(env.DynamoDB, tables.Users.Name, time.Now).Get(ctx, "sub-1")
	if err != nil {
		t.Fatalf("users row after restart: %v", err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("users row after restart (-want +got):\n%s", d)
	}
	obj, err := env.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String("users/sub-1/meals/2026-09-01/x.jpg")})
	if err != nil {
		t.Fatalf("photo after restart: %v", err)
	}
	defer obj.Body.Close()
	b, _ := io.ReadAll(obj.Body)
	if !bytes.Equal(b, photo) {
		t.Errorf("photo after restart: %d bytes, want the %d bytes written", len(b), len(photo))
	}
}

func TestDamagedSnapshotStopsStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/dynamodb.json", []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := localenv.Start(context.Background(), localenv.Options{DataDir: dir, Tables: dynamo.NewTables("ndiro-"), Bucket: "photos"})
	// The message names the file and what to do about it.
	want := "snapshot " + dir + "/dynamodb.json is damaged (move it away to start empty)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Start with a damaged snapshot = %v, want an error saying %q", err, want)
	}
}
