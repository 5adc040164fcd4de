package localenv_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"ndiro/internal/dynamo"
	"ndiro/internal/localenv"
	"ndiro/internal/user"
)

// TestOpenReadOnly: a stopped ndiro's data dir is served as its snapshot
// and journal hold it (a torn last record dropped) without a byte of it
// changing; while it is open no ndiro starts on it; a running ndiro's
// data dir, and a directory that is none, are refused.
func TestOpenReadOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	tables := dynamo.NewTables("ndiro-")
	opts := localenv.Options{DataDir: dir, Tables: tables, Bucket: "photos"}
	create := func(env *localenv.Env, id string) {
		t.Helper()
		if err := user.NewStore(env.DynamoDB, tables.Users.Name, time.Now).Create(ctx, &user.User{ID: id, Email: id + "@example.com", Role: user.RoleOwner, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	env, err := localenv.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	create(env, "in-snapshot")
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	env, err = localenv.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	create(env, "in-journal")
	if _, err := env.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("photos"), Key: aws.String("users/in-journal/x.jpg"), Body: bytes.NewReader([]byte("photo"))}); err != nil {
		t.Fatal(err)
	}

	// Held by the running ndiro: refused, naming why.
	if _, err := localenv.OpenReadOnly(ctx, localenv.Options{DataDir: dir, Tables: tables, Bucket: "photos"}); !errors.Is(err, localenv.ErrDataDirHeld) {
		t.Errorf("OpenReadOnly of a running ndiro's data dir = %v, want ErrDataDirHeld", err)
	}

	// Its files as a crash would leave them (the journal not folded),
	// plus a torn last record.
	stopped := t.TempDir()
	for _, f := range []string{"dynamodb.json", "dynamodb.journal", "s3.bolt"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "dynamodb.journal" {
			if len(b) == 0 {
				t.Fatal("the journal holds nothing: the test needs a write only it has")
			}
			b = append(b, 0, 0, 1, 0, 7) // a record header cut short
		}
		if err := os.WriteFile(filepath.Join(stopped, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	before := digest(t, stopped)
	ro, err := localenv.OpenReadOnly(ctx, localenv.Options{DataDir: stopped, Tables: dynamo.NewTables("other-"), Bucket: "photos"})
	if err != nil {
		t.Fatal(err)
	}
	users := user.NewStore(ro.DynamoDB, "other-users", time.Now)
	for _, id := range []string{"in-snapshot", "in-journal"} {
		if _, err := users.Get(ctx, id); err != nil {
			t.Errorf("read-only Get(%s) = %v, want the row", id, err)
		}
	}
	obj, err := ro.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String("users/in-journal/x.jpg")})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(obj.Body)
	obj.Body.Close()
	if string(body) != "photo" {
		t.Errorf("read-only object = %q, want %q", body, "photo")
	}
	if _, err := ro.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("photos"), Key: aws.String("users/x/y.jpg"), Body: bytes.NewReader([]byte("no"))}); err == nil {
		t.Error("a photo write to the read-only data dir succeeded")
	}
	if _, err := localenv.Start(ctx, localenv.Options{DataDir: stopped, Tables: tables, Bucket: "photos"}); err == nil {
		t.Error("an ndiro started on the data dir while it was open read-only")
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if after := digest(t, stopped); after != before {
		t.Errorf("the data dir changed:\nbefore %s\nafter  %s", before, after)
	}

	// No data dir at all.
	if _, err := localenv.OpenReadOnly(ctx, localenv.Options{DataDir: t.TempDir(), Tables: tables, Bucket: "photos"}); !errors.Is(err, localenv.ErrNoDataDir) {
		t.Errorf("OpenReadOnly of an empty directory = %v, want ErrNoDataDir", err)
	}
}

// digest lists dir's files with their sizes and SHA-256s.
func digest(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%s %d %x\n", e.Name(), len(b), sha256.Sum256(b))
	}
	return out.String()
}
