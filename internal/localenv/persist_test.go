package localenv

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"ndiro/internal/dynamo"
)

var testTables = dynamo.NewTables("ndiro-")

// startDir starts the backends on dir with SDK retries off (a refused
// write fails at once) and closes them when the test ends.
func startDir(t testing.TB, dir string, mods ...func(*Options)) *Env {
	t.Helper()
	opts := Options{
		DataDir: dir, Tables: testTables, Bucket: "photos",
		DynamoOptions: []func(*dynamodb.Options){func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }},
	}
	for _, m := range mods {
		m(&opts)
	}
	env, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

// crashCopy copies the DynamoDB files of dir, as a crash at this moment
// would leave them on disk, into a new directory and returns it. The copy
// is taken between writes and folds; every acknowledged write has been
// fsynced by then.
func crashCopy(t *testing.T, env *Env, dir string) string {
	t.Helper()
	to := t.TempDir()
	env.persist.writeMu.Lock()
	defer env.persist.writeMu.Unlock()
	for _, name := range []string{"dynamodb.json", "dynamodb.journal"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// dump returns every item of every table, each as canonical JSON (numbers
// as written), sorted: two dumps are equal exactly when the data is.
func dump(t *testing.T, db *dynamodb.Client) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, tb := range testTables.All() {
		var items []map[string]types.AttributeValue
		pages := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(tb.Name), ConsistentRead: aws.Bool(true)})
		for pages.HasMorePages() {
			page, err := pages.NextPage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			items = append(items, page.Items...)
		}
		for _, it := range items {
			var m map[string]any
			if err := attributevalue.UnmarshalMapWithOptions(it, &m, func(o *attributevalue.DecoderOptions) { o.UseNumber = true }); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(m)
			out[tb.Base] = append(out[tb.Base], string(b))
		}
		sort.Strings(out[tb.Base])
	}
	return out
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func putUser(db *dynamodb.Client, id string) error {
	_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(testTables.Users.Name),
		Item:      map[string]types.AttributeValue{"user_id": s(id), "email": s(id + "@example.com")},
	})
	return err
}

func userIDs(t *testing.T, db *dynamodb.Client) []string {
	t.Helper()
	var ids []string
	for _, it := range dump(t, db)["users"] {
		var m struct {
			UserID string `json:"user_id"`
		}
		json.Unmarshal([]byte(it), &m)
		ids = append(ids, m.UserID)
	}
	return ids
}

func refused(err error) bool {
	var tc *types.TransactionCanceledException
	return dynamo.IsConditionFailed(err) || errors.As(err, &tc)
}

// TestReplayReproducesWrites applies each kind of write, conditional ones
// that succeed and ones that are refused, and after each one restarts on a
// crash copy: the journal alone (no snapshot is written in between) must
// bring back exactly the same items.
func TestReplayReproducesWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	env := startDir(t, dir)
	db := env.DynamoDB
	users, meals, invites := aws.String(testTables.Users.Name), aws.String(testTables.Meals.Name), aws.String(testTables.Invites.Name)
	uKey := func(id string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"user_id": s(id)}
	}
	mKey := func(sk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"user_id": s("u1"), "sk": s(sk)}
	}
	meal := func(sk, notes string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"user_id": s("u1"), "sk": s(sk), "notes": s(notes), "kcal": n("512.5")}
	}
	for _, tc := range []struct {
		name    string
		write   func() error
		refused bool // the write's condition fails: nothing changes
	}{
		{"conditional put", func() error {
			_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: users, Item: map[string]types.AttributeValue{"user_id": s("u1"), "n": n("1"), "version": n("1")},
				ConditionExpression: aws.String("attribute_not_exists(user_id)")})
			return err
		}, false},
		{"conditional put refused", func() error {
			_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: users, Item: map[string]types.AttributeValue{"user_id": s("u1"), "n": n("99")},
				ConditionExpression: aws.String("attribute_not_exists(user_id)")})
			return err
		}, true},
		{"update with version condition", func() error {
			_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: users, Key: uKey("u1"),
				UpdateExpression:          aws.String("SET n = n + :one, version = version + :one, email = :e"),
				ConditionExpression:       aws.String("version = :v"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1"), ":v": n("1"), ":e": s("u1@example.com")}})
			return err
		}, false},
		{"update refused", func() error {
			_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: users, Key: uKey("u1"),
				UpdateExpression:          aws.String("SET n = :zero"),
				ConditionExpression:       aws.String("version = :v"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":zero": n("0"), ":v": n("1")}})
			return err
		}, true},
		{"update creates an item", func() error {
			_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: users, Key: uKey("u2"),
				UpdateExpression:          aws.String("SET email = :e"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":e": s("u2@example.com")}})
			return err
		}, false},
		{"conditional delete", func() error {
			_, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: users, Key: uKey("u2"), ConditionExpression: aws.String("attribute_exists(user_id)")})
			return err
		}, false},
		{"conditional delete refused", func() error {
			_, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: users, Key: uKey("u2"), ConditionExpression: aws.String("attribute_exists(user_id)")})
			return err
		}, true},
		{"put replaces an item whole", func() error {
			if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: meals, Item: meal("2026-09-01#120000-aaaaaa", "soup")}); err != nil {
				return err
			}
			_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: meals, Item: map[string]types.AttributeValue{"user_id": s("u1"), "sk": s("2026-09-01#120000-aaaaaa")}})
			return err
		}, false},
		{"batch write", func() error {
			_, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
				*meals: {
					{PutRequest: &types.PutRequest{Item: meal("2026-09-02#080000-bbbbbb", "toast")}},
					{PutRequest: &types.PutRequest{Item: meal("2026-09-02#130000-cccccc", "salad")}},
					{DeleteRequest: &types.DeleteRequest{Key: mKey("2026-09-01#120000-aaaaaa")}},
				},
				*users: {{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"user_id": s("u3")}}}},
			}})
			return err
		}, false},
		{"transaction", func() error {
			_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Put: &types.Put{TableName: invites, Item: map[string]types.AttributeValue{"invite_token": s("i1"), "role": s("owner")}, ConditionExpression: aws.String("attribute_not_exists(invite_token)")}},
				{Update: &types.Update{TableName: users, Key: uKey("u3"), UpdateExpression: aws.String("SET claimed = :i"), ExpressionAttributeValues: map[string]types.AttributeValue{":i": s("i1")}}},
				{Delete: &types.Delete{TableName: meals, Key: mKey("2026-09-02#080000-bbbbbb")}},
				{ConditionCheck: &types.ConditionCheck{TableName: users, Key: uKey("u1"), ConditionExpression: aws.String("attribute_exists(user_id)")}},
			}})
			return err
		}, false},
		{"transaction refused", func() error {
			_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Put: &types.Put{TableName: invites, Item: map[string]types.AttributeValue{"invite_token": s("i2")}}},
				{ConditionCheck: &types.ConditionCheck{TableName: users, Key: uKey("u9"), ConditionExpression: aws.String("attribute_exists(user_id)")}},
			}})
			return err
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.write()
			if tc.refused != refused(err) || (!tc.refused && err != nil) {
				t.Fatalf("write = %v, want refused %v", err, tc.refused)
			}
			copyDir := crashCopy(t, env, dir)
			if _, err := os.Stat(filepath.Join(copyDir, "dynamodb.json")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a snapshot exists (%v); the state must come from the journal alone", err)
			}
			want := dump(t, db)
			if got := dump(t, startDir(t, copyDir).DynamoDB); !cmp.Equal(got, want) {
				t.Errorf("items after replay differ (-want +got):\n%s", cmp.Diff(want, got))
			}
		})
	}
	// The writes above did change something: a replay that lost them all
	// would not pass by comparing two empty dumps.
	want := map[string]int{"users": 2, "meals": 1, "invites": 1}
	got := map[string]int{}
	for k, v := range dump(t, db) {
		if len(v) > 0 {
			got[k] = len(v)
		}
	}
	if !cmp.Equal(got, want) {
		t.Errorf("items per table = %v, want %v", got, want)
	}
}

// journalWith starts on a fresh dir, writes users ids and returns the
// journal's bytes and the offset where each write's record starts.
func journalWith(t *testing.T, ids ...string) ([]byte, []int) {
	t.Helper()
	dir := t.TempDir()
	env := startDir(t, dir)
	for _, id := range ids {
		if err := putUser(env.DynamoDB, id); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(crashCopy(t, env, dir), "dynamodb.journal"))
	if err != nil {
		t.Fatal(err)
	}
	var offsets []int
	for off := 0; off < len(b); off += recordHeader + int(binary.LittleEndian.Uint32(b[off:])) {
		offsets = append(offsets, off)
	}
	if len(offsets) != len(ids) {
		t.Fatalf("%d records for %d writes", len(offsets), len(ids))
	}
	return b, offsets
}

// syncWriter is a log destination tests read while the app may write.
type syncWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func logTo(w *syncWriter) func(*Options) {
	return func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(w, nil)) }
}

// TestTornFinalRecordIsDropped appends the ways a crash in the middle of an
// append can leave the last record: start-up drops it with a log line,
// keeps every record before it, and appends cleanly after it.
func TestTornFinalRecordIsDropped(t *testing.T) {
	t.Parallel()
	full, offsets := journalWith(t, "u1", "u2", "u3")
	good, last := full[:offsets[2]], full[offsets[2]:] // u3's record is torn below
	flipped := bytes.Clone(last)
	flipped[len(flipped)-1] ^= 0xff
	zeroed := bytes.Clone(last)
	clear(zeroed[len(zeroed)/2:])
	for _, tc := range []struct {
		name string
		tail []byte
	}{
		{"header cut short", last[:5]},
		{"payload cut short", last[:len(last)-3]},
		{"last byte wrong", flipped},
		{"second half never landed", zeroed},
		{"size extended, nothing landed", make([]byte, len(last))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "dynamodb.journal"), append(bytes.Clone(good), tc.tail...), 0o600); err != nil {
				t.Fatal(err)
			}
			var logs syncWriter
			env := startDir(t, dir, logTo(&logs))
			if got, want := userIDs(t, env.DynamoDB), []string{"u1", "u2"}; !cmp.Equal(got, want) {
				t.Errorf("users after start = %v, want %v", got, want)
			}
			wantLog := fmt.Sprintf("local dynamodb journal ends in a torn record; dropped\" file=%s offset=%d bytes=%d", filepath.Join(dir, "dynamodb.journal"), len(good), len(tc.tail))
			if !strings.Contains(logs.String(), wantLog) {
				t.Errorf("log = %q, want a line containing %q", logs.String(), wantLog)
			}
			// The torn bytes were folded away: a write after them is read
			// back on the next start instead of stopping it.
			if err := putUser(env.DynamoDB, "u4"); err != nil {
				t.Fatal(err)
			}
			if got, want := userIDs(t, startDir(t, crashCopy(t, env, dir)).DynamoDB), []string{"u1", "u2", "u4"}; !cmp.Equal(got, want) {
				t.Errorf("users after a write and another crash = %v, want %v", got, want)
			}
		})
	}
}

// TestDamagedRecordStopsStart damages a record that has more data after
// it: start-up stops with the file and the record's byte offset, and
// leaves the journal as it was.
func TestDamagedRecordStopsStart(t *testing.T) {
	t.Parallel()
	full, offsets := journalWith(t, "u1", "u2", "u3")
	damaged := func(at int, mod func(b []byte)) []byte {
		b := bytes.Clone(full)
		mod(b[at:])
		return b
	}
	for _, tc := range []struct {
		name   string
		data   []byte
		offset int
		reason string
	}{
		{"payload byte of the first record", damaged(offsets[0], func(b []byte) { b[recordHeader+3] ^= 1 }), offsets[0], "checksum mismatch"},
		{"payload byte of a middle record", damaged(offsets[1], func(b []byte) { b[recordHeader+10] ^= 0x40 }), offsets[1], "checksum mismatch"},
		{"checksum of a middle record", damaged(offsets[1], func(b []byte) { b[5] ^= 1 }), offsets[1], "checksum mismatch"},
		{"length of a middle record", damaged(offsets[1], func(b []byte) { binary.LittleEndian.PutUint32(b, 0xfffffff0) }), offsets[1], "record length 4294967280 out of range"},
		{"a middle record zeroed", damaged(offsets[1], func(b []byte) { clear(b[:offsets[2]-offsets[1]]) }), offsets[1], "record length 0 out of range"},
		{"last record damaged, data after it", append(damaged(offsets[2], func(b []byte) { b[recordHeader] ^= 1 }), 'x'), offsets[2], "checksum mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "dynamodb.journal")
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Start(context.Background(), Options{DataDir: dir, Tables: testTables, Bucket: "photos"})
			want := fmt.Sprintf("localenv: journal %s is damaged at byte %d (%s)", path, tc.offset, tc.reason)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Start = %v, want an error containing %q", err, want)
			}
			if b, _ := os.ReadFile(path); !bytes.Equal(b, tc.data) {
				t.Errorf("journal changed by the failed start: %d bytes, want the %d bytes it had", len(b), len(tc.data))
			}
			if _, err := os.Stat(filepath.Join(dir, "dynamodb.json")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("failed start wrote a snapshot (stat: %v)", err)
			}
		})
	}
}

// TestFoldLosesNothing folds every few writes in the background; a crash
// copy taken after any write, whatever the folds have done by then, brings
// back the same items. So does the moment between a fold's snapshot and
// its truncate, when both files hold the same writes.
func TestFoldLosesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	env := startDir(t, dir, func(o *Options) { o.FoldEvery = 3 })
	db := env.DynamoDB
	for i := range 12 {
		id := fmt.Sprintf("u%d", i%5)
		var err error
		switch i % 3 {
		case 0, 1:
			err = putUser(db, id+fmt.Sprint(i))
		case 2:
			_, err = db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(testTables.Users.Name),
				Key: map[string]types.AttributeValue{"user_id": s(fmt.Sprintf("u%d%d", (i-2)%5, i-2))}})
		}
		if err != nil {
			t.Fatal(err)
		}
		want := dump(t, db)
		if got := dump(t, startDir(t, crashCopy(t, env, dir)).DynamoDB); !cmp.Equal(got, want) {
			t.Fatalf("after write %d, items after a crash differ (-want +got):\n%s", i, cmp.Diff(want, got))
		}
	}
	// The folds ran: a snapshot exists and the journal is short.
	deadline := time.Now().Add(10 * time.Second)
	for env.persist.j.count() >= 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := env.persist.j.count(); n >= 3 {
		t.Errorf("%d records in the journal 10 s after 12 writes with FoldEvery 3; want fewer than 3", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "dynamodb.json")); err != nil {
		t.Errorf("no snapshot after folds: %v", err)
	}

	t.Run("crash between snapshot and truncate", func(t *testing.T) {
		if err := putUser(db, "late"); err != nil {
			t.Fatal(err)
		}
		p := env.persist
		p.writeMu.Lock()
		err := saveSnapshot(p.emu, p.snapPath, p.tables, p.writeFile)
		p.writeMu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		want := dump(t, db)
		if got := dump(t, startDir(t, crashCopy(t, env, dir)).DynamoDB); !cmp.Equal(got, want) {
			t.Errorf("items differ (-want +got):\n%s", cmp.Diff(want, got))
		}
	})
}

// heldSync is a journal fsync that counts its calls and, until free is
// set, reports each on entered and waits for a release.
type heldSync struct {
	entered chan struct{}
	release chan struct{}
	free    atomic.Bool
	calls   atomic.Int32
}

func newHeldSync() *heldSync {
	return &heldSync{entered: make(chan struct{}, 1), release: make(chan struct{})}
}

func (h *heldSync) sync(f *os.File) error {
	h.calls.Add(1)
	if !h.free.Load() {
		select {
		case h.entered <- struct{}{}:
		default:
		}
		<-h.release
	}
	return f.Sync()
}

// letGo releases the held fsync and lets every later one through.
func (h *heldSync) letGo() {
	if !h.free.Swap(true) {
		close(h.release)
	}
}

// startHeld starts on a fresh dir with fsyncs held by h, released before
// the backends close even when the test fails early.
func startHeld(t *testing.T, h *heldSync) *Env {
	env := startDir(t, t.TempDir(), func(o *Options) { o.syncFile = h.sync })
	t.Cleanup(h.letGo)
	return env
}

// TestNoAnswerBeforeFsync holds the journal's fsync: the write is not
// answered until it completes.
func TestNoAnswerBeforeFsync(t *testing.T) {
	t.Parallel()
	h := newHeldSync()
	env := startHeld(t, h)
	done := make(chan error, 1)
	go func() { done <- putUser(env.DynamoDB, "u1") }()
	<-h.entered
	select {
	case err := <-done:
		t.Fatalf("PutItem answered (err %v) while its journal fsync was still running", err)
	case <-time.After(300 * time.Millisecond):
	}
	h.letGo()
	if err := <-done; err != nil {
		t.Fatalf("PutItem after the fsync = %v", err)
	}
}

// TestGroupCommit holds one fsync while more writes arrive: all of them
// are then covered by one more fsync, not one each.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	h := newHeldSync()
	env := startHeld(t, h)
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers+1)
	write := func(id string) {
		defer wg.Done()
		errs <- putUser(env.DynamoDB, id)
	}
	wg.Add(1)
	go write("first")
	<-h.entered
	for i := range writers {
		wg.Add(1)
		go write(fmt.Sprint("u", i))
	}
	// Wait until all of them are queued behind the held fsync.
	for deadline := time.Now().Add(10 * time.Second); env.persist.j.count() < writers+1; {
		if time.Now().After(deadline) {
			t.Fatalf("%d records queued after 10 s, want %d", env.persist.j.count(), writers+1)
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.letGo()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := h.calls.Load(); got != 2 {
		t.Errorf("fsyncs for 1 + %d writes, %d arriving during the first fsync = %d, want 2", writers, writers, got)
	}
}

// TestFailedFsyncRefusesWrites fails one fsync: that write and every later
// one is refused (an error, never an acknowledgement), reads still work.
func TestFailedFsyncRefusesWrites(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	env := startDir(t, t.TempDir(), func(o *Options) {
		o.syncFile = func(f *os.File) error {
			if fail.Load() {
				return errors.New("input/output error")
			}
			return f.Sync()
		}
	})
	if err := putUser(env.DynamoDB, "u1"); err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	if err := putUser(env.DynamoDB, "u2"); err == nil {
		t.Error("PutItem with a failing fsync = nil error, want an error")
	}
	fail.Store(false)
	if err := putUser(env.DynamoDB, "u3"); err == nil {
		t.Error("PutItem after a failed fsync = nil error, want an error")
	}
	out, err := env.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(testTables.Users.Name), Key: map[string]types.AttributeValue{"user_id": s("u1")}})
	if err != nil || len(out.Item) == 0 {
		t.Errorf("GetItem u1 after a failed fsync = %v, %v; want the item", out, err)
	}
}

// TestSecondStartLeavesDataAlone starts twice on one data dir: the second
// start fails on the lock before reading, let alone folding, the first
// one's journal.
func TestSecondStartLeavesDataAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := startDir(t, dir)
	if err := putUser(env.DynamoDB, "u1"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "dynamodb.journal")
	before, _ := os.ReadFile(path)
	_, err := Start(context.Background(), Options{DataDir: dir, Tables: testTables, Bucket: "photos"})
	if want := "is another ndiro running on it?"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("second Start = %v, want an error saying %q", err, want)
	}
	if after, _ := os.ReadFile(path); len(before) == 0 || !bytes.Equal(after, before) {
		t.Errorf("journal after a second start: %d bytes, want the %d bytes the first had written", len(after), len(before))
	}
	if _, err := os.Stat(filepath.Join(dir, "dynamodb.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("second start wrote a snapshot (stat: %v)", err)
	}
}
