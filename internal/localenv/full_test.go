package localenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
	"github.com/johannesboyne/gofakes3"

	"ndiro/internal/storage"
)

// countingTransport counts the HTTP requests (SDK attempts) the clients
// it wraps (counted) send.
type countingTransport struct {
	n atomic.Int32
}

func newCounting() *countingTransport { return &countingTransport{} }

// counted is an SDK HTTP client that counts each request in c and sends
// it on through next, the client the local settings gave.
type counted struct {
	c    *countingTransport
	next interface {
		Do(*http.Request) (*http.Response, error)
	}
}

func (h counted) Do(r *http.Request) (*http.Response, error) {
	h.c.n.Add(1)
	return h.next.Do(r)
}

// sdkRetries gives the DynamoDB client the SDK's own retryer (3
// attempts), its attempts counted by c, in place of startDir's single
// attempt: a refusal the SDK retried would show as more than one attempt.
func sdkRetries(c *countingTransport) func(*Options) {
	return func(o *Options) {
		o.DynamoOptions = []func(*dynamodb.Options){func(do *dynamodb.Options) {
			do.RetryMaxAttempts = 3
			do.HTTPClient = counted{c, do.HTTPClient}
		}}
		o.S3Options = []func(*s3.Options){func(so *s3.Options) {
			so.RetryMaxAttempts = 3
			so.HTTPClient = counted{c, so.HTTPClient}
		}}
	}
}

func probeEvery(d time.Duration) func(*Options) {
	return func(o *Options) { o.ProbeEvery = d }
}

// refusedFull checks that err is storage's refusal with code, a 400 the
// SDK sent once (attempts counted by c since the last reset).
func checkRefusal(t *testing.T, what string, err error, code string, c *countingTransport) {
	t.Helper()
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != code {
		t.Fatalf("%s = %v, want an API error of code %s", what, err, code)
	}
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusBadRequest {
		t.Errorf("%s: HTTP status %v, want 400 (not retried by the SDK)", what, err)
	}
	if n := c.n.Swap(0); n != 1 {
		t.Errorf("%s took %d attempts, want 1: the SDK must not retry a storage refusal", what, n)
	}
}

func hasUser(t *testing.T, db *dynamodb.Client, id string) bool {
	t.Helper()
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(testTables.Users.Name), Key: map[string]types.AttributeValue{"user_id": s(id)}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("GetItem %s: %v", id, err)
	}
	return len(out.Item) > 0
}

func putUserIfNew(db *dynamodb.Client, id string) error {
	_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName:           aws.String(testTables.Users.Name),
		Item:                map[string]types.AttributeValue{"user_id": s(id), "email": s(id + "@example.com")},
		ConditionExpression: aws.String("attribute_not_exists(user_id)"),
	})
	return err
}

func size(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// TestFullDiskRefusesWriteWhole fills the disk under a conditional put:
// the put is refused with storage's own error in one attempt (not
// retried, so never refused again by its own condition and taken for a
// lost answer), nothing of it is visible or left in the journal, and
// every write after it is refused before it reaches the tables, a write
// whose condition fails included, while reads go on.
func TestFullDiskRefusesWriteWhole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	disk := NewDiskLimit(dir)
	c := newCounting()
	env := startDir(t, dir, disk.Apply, sdkRetries(c), probeEvery(time.Hour))
	db := env.DynamoDB
	if err := putUserIfNew(db, "u1"); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(dir, "dynamodb.journal")
	durable := size(t, journal)
	disk.Fill(20) // less than a record
	c.n.Store(0)

	checkRefusal(t, "conditional put on a full disk", putUserIfNew(db, "u2"), storage.FullCode, c)
	if disk.Hits() != 1 {
		t.Fatalf("%d writes hit the full disk, want 1", disk.Hits())
	}
	if hasUser(t, db, "u2") {
		t.Error("u2 readable after its write was refused")
	}
	if got := size(t, journal); got != durable {
		t.Errorf("journal is %d bytes after the refused write, want the %d durable bytes (what fitted of the record cut away)", got, durable)
	}
	if err := env.WriteHealth(); !errors.Is(err, storage.ErrFull) {
		t.Errorf("WriteHealth = %v, want storage.ErrFull", err)
	}

	// Refused before the emulator: no journal write is tried, and a write
	// whose condition fails on a durable item is refused all the same.
	c.n.Store(0)
	checkRefusal(t, "put after the disk filled", putUserIfNew(db, "u3"), storage.FullCode, c)
	checkRefusal(t, "put whose condition fails, after the disk filled", putUserIfNew(db, "u1"), storage.FullCode, c)
	if disk.Hits() != 1 {
		t.Errorf("%d writes tried the full disk, want 1: later writes are refused before the tables", disk.Hits())
	}
	if hasUser(t, db, "u3") || !hasUser(t, db, "u1") {
		t.Error("after refusals: want u1 there and u3 not")
	}
	if got, want := userIDs(t, startDir(t, crashCopy(t, env, dir)).DynamoDB), []string{"u1"}; !cmp.Equal(got, want) {
		t.Errorf("users after a crash = %v, want %v", got, want)
	}
}

// gateSync holds every journal fsync until the test releases it with a
// result (nil: the fsync goes ahead), until letGo.
type gateSync struct {
	entered chan struct{}
	release chan error
	free    atomic.Bool
	calls   atomic.Int32
	done    chan struct{}
}

// newGateSync returns a gate that lets everything through once t's
// cleanups reach it: create it before starting the backends, so that
// it is still letting fsyncs through while they close.
func newGateSync(t *testing.T) *gateSync {
	g := &gateSync{entered: make(chan struct{}, 16), release: make(chan error), done: make(chan struct{})}
	t.Cleanup(func() { close(g.done) })
	return g
}

func (g *gateSync) sync(f *os.File) error {
	g.calls.Add(1)
	if !g.free.Load() {
		g.entered <- struct{}{}
		select {
		case err := <-g.release:
			if err != nil {
				return err
			}
		case <-g.done:
		}
	}
	return f.Sync()
}

// letGo lets every fsync from now on through, held ones included.
func (g *gateSync) letGo() {
	if g.free.Swap(true) {
		return
	}
	go func() {
		for {
			select {
			case <-g.entered:
			case g.release <- nil:
			case <-g.done:
				return
			}
		}
	}()
}

// startGated starts on dir with every fsync held by g (let go before the
// backends close).
func startGated(t *testing.T, dir string, g *gateSync, mods ...func(*Options)) *Env {
	env := startDir(t, dir, append([]func(*Options){func(o *Options) { o.syncFile = g.sync }, probeEvery(time.Hour)}, mods...)...)
	t.Cleanup(g.letGo)
	return env
}

// waitFor polls cond until it holds (10 s at most): for states of the
// persister the test reaches through other goroutines.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %s", what)
		}
	}
}

func (j *journal) waiters() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.waiting
}

// TestFailedGroupCommitRefusesEveryWrite fails the one fsync eight writes
// share (an I/O error after their bytes were written): each is refused
// with storage's error, none is readable, and none comes back after a
// crash, as their bytes are cut from the journal; the writes before stay.
func TestFailedGroupCommitRefusesEveryWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	g := newGateSync(t)
	c := newCounting()
	env := startGated(t, dir, g, sdkRetries(c))
	db := env.DynamoDB
	c.n.Store(0) // start-up's table creation

	go func() { <-g.entered; g.release <- nil }()
	if err := putUser(db, "before"); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { first <- putUser(db, "first") }()
	<-g.entered // first's fsync held
	const writers = 8
	errs := make(chan error, writers)
	for i := range writers {
		go func() { errs <- putUser(db, fmt.Sprint("u", i)) }()
	}
	waitFor(t, "8 writes queued behind the held fsync", func() bool { return env.persist.j.count() == 2+writers })
	g.release <- nil // first is durable; the next fsync covers all eight
	<-g.entered
	g.release <- &fs.PathError{Op: "fsync", Path: "dynamodb.journal", Err: syscall.EIO}
	g.letGo() // the cut's fsync
	if err := <-first; err != nil {
		t.Fatalf("first = %v", err)
	}
	for range writers {
		var api smithy.APIError
		if err := <-errs; !errors.As(err, &api) || api.ErrorCode() != storage.FailedCode {
			t.Errorf("write sharing the failed fsync = %v, want code %s", err, storage.FailedCode)
		}
	}
	if n := g.calls.Load(); n != 4 {
		t.Errorf("%d fsyncs, want 4 (before, first, the eight together, the cut)", n)
	}
	if n := c.n.Load(); n != 2+writers {
		t.Errorf("%d attempts for %d writes, want one each", n, 2+writers)
	}
	for i := range writers {
		if hasUser(t, db, fmt.Sprint("u", i)) {
			t.Errorf("u%d readable after its fsync failed", i)
		}
	}
	if err := env.WriteHealth(); !errors.Is(err, storage.ErrFailed) {
		t.Errorf("WriteHealth = %v, want storage.ErrFailed", err)
	}
	if got, want := userIDs(t, startDir(t, crashCopy(t, env, dir)).DynamoDB), []string{"before", "first"}; !cmp.Equal(got, want) {
		t.Errorf("users after a crash = %v, want %v", got, want)
	}
}

// TestAnswersWaitForDurability holds the fsync of a put while a read of
// its item, and a conditional put its item refuses, arrive: neither is
// answered from the put before it is durable. If the fsync then fails,
// the read finds no item and the conditional put is refused by storage,
// not by its condition; if it succeeds, they see the put.
func TestAnswersWaitForDurability(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		fsync     error
		wantItem  bool
		wantCode  string
		putResult func(error) bool
	}{
		{"fsync fails", &fs.PathError{Op: "write", Path: "dynamodb.journal", Err: syscall.ENOSPC}, false, storage.FullCode, storage.IsFull},
		{"fsync succeeds", nil, true, "ConditionalCheckFailedException", func(err error) bool { return err == nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGateSync(t)
			env := startGated(t, t.TempDir(), g)
			db := env.DynamoDB
			put := make(chan error, 1)
			go func() { put <- putUser(db, "u1") }()
			<-g.entered
			type read struct {
				found bool
				err   error
			}
			got := make(chan read, 1)
			go func() {
				out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(testTables.Users.Name), Key: map[string]types.AttributeValue{"user_id": s("u1")}, ConsistentRead: aws.Bool(true)})
				if err != nil {
					got <- read{err: err}
					return
				}
				got <- read{found: len(out.Item) > 0}
			}()
			cond := make(chan error, 1)
			go func() { cond <- putUserIfNew(db, "u1") }()
			waitFor(t, "the read and the conditional put waiting for the held fsync (or answered)", func() bool {
				return env.persist.j.waiters() == 2 || len(got) > 0 || len(cond) > 0
			})
			select {
			case r := <-got:
				t.Fatalf("read answered (%+v) while the put it saw was not durable", r)
			case err := <-cond:
				t.Fatalf("conditional put answered (%v) while the put it saw was not durable", err)
			default:
			}
			g.release <- tc.fsync
			g.letGo()
			if err := <-put; !tc.putResult(err) {
				t.Errorf("put = %v", err)
			}
			if r := <-got; r.err != nil || r.found != tc.wantItem {
				t.Errorf("read = found %v, %v; want found %v", r.found, r.err, tc.wantItem)
			}
			var api smithy.APIError
			if err := <-cond; !errors.As(err, &api) || api.ErrorCode() != tc.wantCode {
				t.Errorf("conditional put = %v, want code %s", err, tc.wantCode)
			}
		})
	}
}

// TestWritesResumeWhenSpaceComesBack fills the disk, lets the probe fail
// on it (a snapshot does not fit), then frees space: writes are taken
// again without a restart, onto a new snapshot and an empty journal, and
// a crash after that brings back everything acknowledged and nothing
// refused.
func TestWritesResumeWhenSpaceComesBack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	disk := NewDiskLimit(dir)
	env := startDir(t, dir, disk.Apply, probeEvery(time.Millisecond))
	db := env.DynamoDB
	if err := putUser(db, "u1"); err != nil {
		t.Fatal(err)
	}
	disk.Fill(20)
	if err := putUser(db, "u2"); !storage.IsFull(err) {
		t.Fatalf("put on a full disk = %v, want storage full", err)
	}
	waitFor(t, "a probe trying the full disk", func() bool { return disk.Hits() >= 3 })
	if err := env.WriteHealth(); !errors.Is(err, storage.ErrFull) {
		t.Fatalf("WriteHealth while the disk is still full = %v, want storage.ErrFull", err)
	}
	if err := putUser(db, "u3"); !storage.IsFull(err) {
		t.Fatalf("put while the disk is still full = %v, want storage full", err)
	}
	disk.Free()
	waitFor(t, "writes taken again after space came back", func() bool { return env.WriteHealth() == nil })
	if err := putUser(db, "u4"); err != nil {
		t.Fatalf("put after space came back = %v", err)
	}
	if n := env.persist.j.count(); n != 1 {
		t.Errorf("%d records in the new journal, want 1 (u4)", n)
	}
	if got, want := userIDs(t, startDir(t, crashCopy(t, env, dir)).DynamoDB), []string{"u1", "u4"}; !cmp.Equal(got, want) {
		t.Errorf("users after a crash = %v, want %v", got, want)
	}
}

// TestStartOnFullDisk starts on a journal it cannot fold (the disk is
// full): the tables are served as replayed, writes refused, and once
// space comes back they are taken again.
func TestStartOnFullDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := startDir(t, dir)
	for _, id := range []string{"u1", "u2"} {
		if err := putUser(env.DynamoDB, id); err != nil {
			t.Fatal(err)
		}
	}
	full := crashCopy(t, env, dir)
	disk := NewDiskLimit(full)
	disk.Fill(0)
	var logs syncWriter
	env = startDir(t, full, disk.Apply, probeEvery(time.Millisecond), logTo(&logs))
	if got, want := userIDs(t, env.DynamoDB), []string{"u1", "u2"}; !cmp.Equal(got, want) {
		t.Errorf("users on a full disk = %v, want %v", got, want)
	}
	if err := putUser(env.DynamoDB, "u3"); !storage.IsFull(err) {
		t.Errorf("put on a full disk = %v, want storage full", err)
	}
	if want := "local dynamodb starts with writes refused"; !strings.Contains(logs.String(), want) {
		t.Errorf("log = %q, want a line saying %q", logs.String(), want)
	}
	disk.Free()
	waitFor(t, "writes taken again", func() bool { return env.WriteHealth() == nil })
	if err := putUser(env.DynamoDB, "u4"); err != nil {
		t.Fatal(err)
	}
	if got, want := userIDs(t, startDir(t, crashCopy(t, env, full)).DynamoDB), []string{"u1", "u2", "u4"}; !cmp.Equal(got, want) {
		t.Errorf("users after a crash = %v, want %v", got, want)
	}
}

// failingBackend is gofakes3's bolt backend whose writes fail, while
// fail is set, as a bolt commit on a full disk does: after the body is
// read, with the file error.
type failingBackend struct {
	gofakes3.Backend
	fail  atomic.Bool
	calls atomic.Int32
}

var errDiskFull = &fs.PathError{Op: "write", Path: "s3.bolt", Err: syscall.ENOSPC}

func (f *failingBackend) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, cond *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	f.calls.Add(1)
	if f.fail.Load() {
		io.Copy(io.Discard, input)
		return gofakes3.PutObjectResult{}, errDiskFull
	}
	return f.Backend.PutObject(bucket, key, meta, input, size, cond)
}

func (f *failingBackend) DeleteMulti(bucket string, keys ...string) (gofakes3.MultiDeleteResult, error) {
	f.calls.Add(1)
	if f.fail.Load() {
		return gofakes3.MultiDeleteResult{}, errDiskFull
	}
	return f.Backend.DeleteMulti(bucket, keys...)
}

func putObject(c *s3.Client, key string, body []byte) error {
	_, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("photos"), Key: aws.String(key), Body: bytes.NewReader(body)})
	return err
}

func getObject(c *s3.Client, key string) ([]byte, error) {
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

// TestBoltCommitFailureRefusesWrites fails an s3.bolt commit: the upload
// gets storage's error as a 400 in one attempt, and every write after it
// is refused before bolt, reads going on, until a probe commit succeeds.
func TestBoltCommitFailureRefusesWrites(t *testing.T) {
	t.Parallel()
	c := newCounting()
	env := startDir(t, t.TempDir(), sdkRetries(c), probeEvery(time.Hour))
	if err := putObject(env.S3, "kept.jpg", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	fb := &failingBackend{Backend: env.s3.Backend}
	env.s3.Backend = fb
	fb.fail.Store(true)
	c.n.Store(0)
	checkRefusal(t, "upload whose commit fails", putObject(env.S3, "lost.jpg", []byte("lost")), storage.FullCode, c)
	if err := env.WriteHealth(); !errors.Is(err, storage.ErrFull) {
		t.Errorf("WriteHealth = %v, want storage.ErrFull", err)
	}
	checkRefusal(t, "upload after a failed commit", putObject(env.S3, "later.jpg", []byte("later")), storage.FullCode, c)
	_, err := env.S3.DeleteObjects(context.Background(), &s3.DeleteObjectsInput{Bucket: aws.String("photos"), Delete: &s3types.Delete{Objects: []s3types.ObjectIdentifier{{Key: aws.String("kept.jpg")}}}})
	checkRefusal(t, "delete after a failed commit", err, storage.FullCode, c)
	if n := fb.calls.Load(); n != 1 {
		t.Errorf("bolt asked to write %d times, want 1: writes after the failure are refused before it", n)
	}
	if b, err := getObject(env.S3, "kept.jpg"); err != nil || string(b) != "kept" {
		t.Errorf("read after a failed commit = %q, %v; want the object", b, err)
	}
	for _, key := range []string{"lost.jpg", "later.jpg"} {
		if _, err := getObject(env.S3, key); !isNoSuchKey(err) {
			t.Errorf("refused %s: read = %v, want NoSuchKey", key, err)
		}
	}
	fb.fail.Store(false)
	if err := env.s3.tryWrite(); err != nil {
		t.Fatalf("probe = %v", err)
	}
	if err := putObject(env.S3, "later.jpg", []byte("later")); err != nil {
		t.Fatalf("upload after the probe = %v", err)
	}
	out, err := env.S3.ListBuckets(context.Background(), &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range out.Buckets {
		if aws.ToString(b.Name) == probeBucket {
			t.Errorf("ListBuckets lists the probe's bucket %s", probeBucket)
		}
	}
}

func isNoSuchKey(err error) bool {
	var nsk *s3types.NoSuchKey
	return errors.As(err, &nsk)
}

// TestBoltFullTmpfs fills a real file system under uploads: the upload
// that does not fit is refused and absent, those before it stay whole
// (also after a restart), and once space is freed uploads are taken
// again without a restart.
func TestBoltFullTmpfs(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(MountTmpfs(t, "12m"), "data")
	c := newCounting()
	env := startDir(t, dir, sdkRetries(c), probeEvery(time.Millisecond))
	free := FillDisk(t, filepath.Dir(dir), 1<<20)
	body := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 200<<10) }
	var kept []string
	var err error
	for i := 0; i < 40; i++ {
		key := fmt.Sprintf("p%d.jpg", i)
		c.n.Store(0)
		if err = putObject(env.S3, key, body(i)); err != nil {
			checkRefusal(t, "upload onto a full disk", err, storage.FullCode, c)
			if _, gerr := getObject(env.S3, key); !isNoSuchKey(gerr) {
				t.Errorf("refused %s: read = %v, want NoSuchKey", key, gerr)
			}
			break
		}
		kept = append(kept, key)
	}
	if err == nil {
		t.Fatalf("40 uploads of 200 KB fitted in about 1 MB")
	}
	if err := env.WriteHealth(); !errors.Is(err, storage.ErrFull) {
		t.Errorf("WriteHealth = %v, want storage.ErrFull", err)
	}
	check := func(when string, c *s3.Client) {
		for i, key := range kept {
			if b, err := getObject(c, key); err != nil || !bytes.Equal(b, body(i)) {
				t.Errorf("%s: %s = %d bytes, %v; want its %d bytes", when, key, len(b), err, len(body(i)))
			}
		}
	}
	check("on the full disk", env.S3)
	free()
	waitFor(t, "uploads taken again", func() bool { return env.WriteHealth() == nil })
	if err := putObject(env.S3, "after.jpg", []byte("after")); err != nil {
		t.Fatalf("upload after space came back = %v", err)
	}
	kept = append(kept, "after.jpg")
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	body0 := body
	body = func(i int) []byte {
		if i == len(kept)-1 {
			return []byte("after")
		}
		return body0(i)
	}
	check("after a restart", startDir(t, dir).S3)
}
