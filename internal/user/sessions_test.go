package user_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/user"
)

// sessionWorld is a session store on a users store of its own, with a
// clock that moves only when told, a call counter and faults.
type sessionWorld struct {
	*storeWorld
	ss *user.Sessions
}

// testData is a session's encoded data as the tests' codec makes it: the
// user ID, then anything.
func testData(uid string) []byte { return []byte(uid + "|data") }

func testUserID(b []byte) string {
	uid, _, _ := strings.Cut(string(b), "|")
	return uid
}

func newSessions(t *testing.T) *sessionWorld {
	t.Helper()
	w := &sessionWorld{storeWorld: newStore(t)}
	w.ss = user.NewSessions(w.s, user.SessionDeps{UserIDOf: testUserID, Log: slog.New(slog.DiscardHandler)})
	return w
}

// signIn commits token's session for uid as a sign-in from Firefox on
// Windows, lasting a day.
func (w *sessionWorld) signIn(t *testing.T, token, uid string) error {
	t.Helper()
	ctx := user.SignIn(context.Background(), user.Device{Browser: "Firefox", Platform: "Windows"})
	return w.ss.CommitCtx(ctx, token, testData(uid), w.clock.Now().Add(24*time.Hour))
}

// found reports whether token opens a session, failing the test on an
// error.
func (w *sessionWorld) found(t *testing.T, token string) bool {
	t.Helper()
	b, found, err := w.ss.Find(token)
	if err != nil {
		t.Fatalf("Find: %v", err)
	}
	if found && string(b) != string(testData(testUserID(b))) {
		t.Errorf("Find = %q, not what was committed", b)
	}
	return found
}

// items returns every item of the users table, read around the store.
func (w *sessionWorld) items(t *testing.T) []map[string]types.AttributeValue {
	t.Helper()
	out, err := localenv.NewDynamoClient(w.env.DynamoEndpoint).Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(w.table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Items
}

// keyItems returns the IDs of the session key items in the users table.
func (w *sessionWorld) keyItems(t *testing.T) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	for _, it := range w.items(t) {
		k := it["user_id"].(*types.AttributeValueMemberS).Value
		if id, ok := strings.CutPrefix(k, "#session#"); ok {
			ids[id] = true
		}
	}
	return ids
}

// TestSessionLifecycle: a sign-in stores the session on the users row
// and its key under the token's SHA-256; the same token finds it;
// commits of a session in use write nothing until StampEvery has passed,
// then one UpdateItem; logout ends it and its key.
func TestSessionLifecycle(t *testing.T) {
	t.Parallel()
	w := newSessions(t)
	w.create(t, "u1")
	const tok = "token-one"
	if w.found(t, tok) {
		t.Fatal("Find before any sign-in found a session")
	}
	if err := w.signIn(t, tok, "u1"); err != nil {
		t.Fatal(err)
	}
	if !w.found(t, tok) {
		t.Fatal("Find after the sign-in found nothing")
	}
	if got, want := w.keyItems(t), map[string]bool{user.SessionID(tok): true}; len(got) != 1 || !got[user.SessionID(tok)] {
		t.Errorf("key items = %v, want %v", got, want)
	}
	// Page views: every request commits (the idle timeout); none writes.
	w.calls.Reset()
	for range 20 {
		w.clock.Advance(10 * time.Second)
		if err := w.ss.Commit(tok, testData("u1"), w.clock.Now().Add(24*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if !w.found(t, tok) {
			t.Fatal("session lost between page views")
		}
	}
	if c := w.calls.Counts(); c["UpdateItem"]+c["PutItem"]+c["DeleteItem"] != 0 {
		t.Errorf("20 page views within %s wrote %v, want no write", user.StampEvery, c)
	}
	// Past StampEvery since the sign-in: one stamp of that entry.
	w.clock.Advance(user.StampEvery - 200*time.Second)
	w.found(t, tok) // the row is read again (its cache entry lapsed)
	w.calls.Reset()
	for range 3 {
		if err := w.ss.Commit(tok, testData("u1"), w.clock.Now().Add(24*time.Hour)); err != nil {
			t.Fatal(err)
		}
		w.found(t, tok)
	}
	if c := w.calls.Counts(); c["UpdateItem"] != 1 || c["PutItem"]+c["DeleteItem"]+c["GetItem"] != 0 {
		t.Errorf("commits past StampEvery made %v, want one UpdateItem and no read (the row as written stays cached)", c)
	}
	list, err := w.ss.List(context.Background(), "u1")
	if err != nil || len(list) != 1 {
		t.Fatalf("List = %v, %v; want one session", list, err)
	}
	if d := list[0]; d.ID != user.SessionID(tok) || d.Browser != "Firefox" || d.Platform != "Windows" || !d.Seen.Equal(w.clock.Now()) || !d.Created.Equal(w.clock.Now().Add(-user.StampEvery)) {
		t.Errorf("List()[0] = %+v, want Firefox on Windows, created at the sign-in, seen now (%s)", d, w.clock.Now())
	}
	if err := w.ss.Delete(tok); err != nil {
		t.Fatal(err)
	}
	if w.found(t, tok) {
		t.Error("Find after Delete found the session")
	}
	if k := w.keyItems(t); len(k) != 0 {
		t.Errorf("key items after Delete = %v, want none", k)
	}
	if err := w.ss.Delete(tok); err != nil {
		t.Errorf("Delete of an ended session = %v, want nil", err)
	}
}

// TestSessionTokensHashed: the token is stored nowhere, neither as a key
// nor as a value; only its SHA-256 is.
func TestSessionTokensHashed(t *testing.T) {
	t.Parallel()
	w := newSessions(t)
	w.create(t, "u1")
	const tok = "Secr3tTokenValueThatMustNotBeStored"
	if err := w.signIn(t, tok, "u1"); err != nil {
		t.Fatal(err)
	}
	var dump strings.Builder
	for _, it := range w.items(t) {
		var m map[string]any
		if err := attributevalue.UnmarshalMap(it, &m); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&dump, "%v\n", m)
	}
	if strings.Contains(dump.String(), tok) {
		t.Errorf("the users table holds the raw token:\n%s", dump.String())
	}
	if !strings.Contains(dump.String(), user.SessionID(tok)) {
		t.Errorf("the users table does not hold the token's SHA-256 %s:\n%s", user.SessionID(tok), dump.String())
	}
	if got := user.SessionID("abc"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("SessionID(abc) = %s, want the SHA-256 of abc in hex", got)
	}
}

// TestSessionsSurviveRestart: a new store on the same table (the process
// restarted) finds the session the old one started.
func TestSessionsSurviveRestart(t *testing.T) {
	t.Parallel()
	w := newSessions(t)
	w.create(t, "u1")
	if err := w.signIn(t, "tok", "u1"); err != nil {
		t.Fatal(err)
	}
	fresh := user.NewSessions(user.NewStore(localenv.NewDynamoClient(w.env.DynamoEndpoint), w.table, w.clock.Now),
		user.SessionDeps{UserIDOf: testUserID, Log: slog.New(slog.DiscardHandler)})
	b, found, err := fresh.Find("tok")
	if err != nil || !found || string(b) != string(testData("u1")) {
		t.Errorf("Find on a fresh store = %q, %v, %v; want the session", b, found, err)
	}
	// Past its expiry it is gone, on any store.
	w.clock.Advance(24 * time.Hour)
	if _, found, _ := fresh.Find("tok"); found {
		t.Error("Find past the session's expiry found it")
	}
}

// TestSessionsBounded: an account keeps MaxSessions; each sign-in beyond
// ends the session seen longest ago, key included, and lapsed sessions
// go at the next sign-in.
func TestSessionsBounded(t *testing.T) {
	t.Parallel()
	w := newSessions(t)
	w.create(t, "u1")
	tok := func(i int) string { return fmt.Sprintf("tok-%02d", i) }
	for i := range user.MaxSessions {
		w.clock.Advance(time.Minute)
		if err := w.signIn(t, tok(i), "u1"); err != nil {
			t.Fatal(err)
		}
	}
	// Session 0 is used later, so session 1 is the one seen longest ago.
	w.clock.Advance(user.StampEvery)
	if err := w.ss.Commit(tok(0), testData("u1"), w.clock.Now().Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := w.signIn(t, tok(user.MaxSessions), "u1"); err != nil {
		t.Fatal(err)
	}
	for i := range user.MaxSessions + 1 {
		if got, want := w.found(t, tok(i)), i != 1; got != want {
			t.Errorf("session %d found = %v, want %v", i, got, want)
		}
	}
	if keys := w.keyItems(t); len(keys) != user.MaxSessions || keys[user.SessionID(tok(1))] {
		t.Errorf("%d key items (session 1's: %v), want %d without session 1's", len(keys), keys[user.SessionID(tok(1))], user.MaxSessions)
	}
	// A day on, all have lapsed: the next sign-in drops them, keys too.
	w.clock.Advance(24 * time.Hour)
	if err := w.signIn(t, "late", "u1"); err != nil {
		t.Fatal(err)
	}
	if list, _ := w.ss.List(context.Background(), "u1"); len(list) != 1 || list[0].ID != user.SessionID("late") {
		t.Errorf("List after the others lapsed = %+v, want only the new session", list)
	}
	if keys := w.keyItems(t); len(keys) != 1 || !keys[user.SessionID("late")] {
		t.Errorf("key items after the others lapsed = %v, want only the new one", keys)
	}
}

// TestSessionNotRevived: a commit that is no sign-in never starts a
// session, so a request that ran while its session ended cannot bring it
// back; a stamp of an entry ended meanwhile is refused by its condition.
func TestSessionNotRevived(t *testing.T) {
	t.Parallel()
	w := newSessions(t)
	w.create(t, "u1")
	w.calls.Reset()
	if err := w.ss.Commit("never-signed-in", testData("u1"), w.clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if c := w.calls.Counts(); c["PutItem"]+c["UpdateItem"] != 0 || w.found(t, "never-signed-in") {
		t.Errorf("a commit without a sign-in wrote %v and found %v, want nothing", c, w.found(t, "never-signed-in"))
	}
	if err := w.signIn(t, "tok", "u1"); err != nil {
		t.Fatal(err)
	}
	// Ended by another process's view of the row (written around this
	// store's cache), then committed by a request that began before.
	other := user.NewSessions(user.NewStore(w.env.DynamoDB, w.table, w.clock.Now), user.SessionDeps{UserIDOf: testUserID, Log: slog.New(slog.DiscardHandler)})
	if n, err := other.EndAll(context.Background(), "u1"); err != nil || n != 1 {
		t.Fatalf("EndAll = %d, %v", n, err)
	}
	w.clock.Advance(user.StampEvery)
	if err := w.ss.Commit("tok", testData("u1"), w.clock.Now().Add(time.Hour)); err != nil {
		t.Errorf("stamp of an ended session = %v, want it skipped", err)
	}
	w.clock.Advance(user.CacheTTL)
	if w.found(t, "tok") {
		t.Error("the ended session was stamped back to life")
	}
}

// TestSessionEnds: End signs out one session of the account, EndAll every
// one; other accounts keep theirs; keys go with them.
func TestSessionEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newSessions(t)
	w.create(t, "u1")
	w.create(t, "u2")
	for _, s := range []struct{ tok, uid string }{{"a1", "u1"}, {"a2", "u1"}, {"a3", "u1"}, {"b1", "u2"}} {
		if err := w.signIn(t, s.tok, s.uid); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.ss.End(ctx, "u1", user.SessionID("a2")); err != nil {
		t.Fatal(err)
	}
	if err := w.ss.End(ctx, "u1", user.SessionID("a2")); !errors.Is(err, user.ErrNoSession) {
		t.Errorf("End of an ended session = %v, want ErrNoSession", err)
	}
	if err := w.ss.End(ctx, "u1", user.SessionID("b1")); !errors.Is(err, user.ErrNoSession) {
		t.Errorf("End of another account's session = %v, want ErrNoSession", err)
	}
	for tok, want := range map[string]bool{"a1": true, "a2": false, "a3": true, "b1": true} {
		if got := w.found(t, tok); got != want {
			t.Errorf("after End(a2): %s found = %v, want %v", tok, got, want)
		}
	}
	if n, err := w.ss.EndAll(ctx, "u1"); err != nil || n != 2 {
		t.Errorf("EndAll(u1) = %d, %v; want 2 ended", n, err)
	}
	for tok, want := range map[string]bool{"a1": false, "a3": false, "b1": true} {
		if got := w.found(t, tok); got != want {
			t.Errorf("after EndAll(u1): %s found = %v, want %v", tok, got, want)
		}
	}
	if keys := w.keyItems(t); len(keys) != 1 || !keys[user.SessionID("b1")] {
		t.Errorf("key items = %v, want only b1's", keys)
	}
	if n, err := w.ss.EndAll(ctx, "u1"); err != nil || n != 0 {
		t.Errorf("EndAll again = %d, %v; want 0", n, err)
	}
	if n, err := w.ss.EndAll(ctx, "nobody"); err != nil || n != 0 {
		t.Errorf("EndAll(nobody) = %d, %v; want 0", n, err)
	}
}

// TestSessionFindAccount: FindAccount finds what Find finds and, from
// the same cached read, the users row the session lives on and whether
// it is in use, with no GetItem on a warm lookup; a disabled row is
// reported inactive (the guard ends the session), a row gone finds no
// session, and a sign-in held in memory reports no row (the guard reads
// it itself).
func TestSessionFindAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newSessions(t)
	w.create(t, "u1")
	w.create(t, "u2")
	for tok, uid := range map[string]string{"a": "u1", "b": "u2"} {
		if err := w.signIn(t, tok, uid); err != nil {
			t.Fatal(err)
		}
	}
	find := func(tok string) ([]byte, user.Account, bool) {
		t.Helper()
		b, acct, found, err := w.ss.FindAccount(ctx, tok)
		if err != nil {
			t.Fatalf("FindAccount(%s): %v", tok, err)
		}
		return b, acct, found
	}
	w.ss.Find("a") // warm
	w.calls.Reset()
	if b, acct, found := find("a"); !found || string(b) != string(testData("u1")) || acct != (user.Account{UserID: "u1", Active: true}) {
		t.Errorf("FindAccount(a) = %q, %+v, found %v; want u1's data on u1's active row", b, acct, found)
	}
	if n := w.calls.Counts()["GetItem"]; n != 0 {
		t.Errorf("a warm FindAccount made %d GetItems, want 0", n)
	}
	if err := w.s.SetDisabled(ctx, "u1", true); err != nil {
		t.Fatal(err)
	}
	if _, acct, found := find("a"); !found || acct != (user.Account{UserID: "u1", Active: false}) {
		t.Errorf("FindAccount(a) of a disabled account = %+v, found %v; want u1's row, not active", acct, found)
	}
	if _, acct, found := find("b"); !found || acct != (user.Account{UserID: "u2", Active: true}) {
		t.Errorf("FindAccount(b) = %+v, found %v; want u2's active row", acct, found)
	}
	if err := w.s.Delete(ctx, "u2"); err != nil {
		t.Fatal(err)
	}
	if b, acct, found := find("b"); found || b != nil || acct != (user.Account{}) {
		t.Errorf("FindAccount(b) of a deleted row = %q, %+v, found %v; want nothing", b, acct, found)
	}
	if _, acct, found := find(""); found || acct != (user.Account{}) {
		t.Errorf("FindAccount of no token = %+v, found %v; want nothing", acct, found)
	}
	w.create(t, "u3")
	w.faults.DiskFull("PutItem", w.table, 0)
	w.faults.DiskFull("UpdateItem", w.table, 0)
	if err := w.signIn(t, "held", "u3"); err != nil {
		t.Fatalf("sign-in on a full disk = %v, want it held", err)
	}
	if b, acct, found := find("held"); !found || string(b) != string(testData("u3")) || acct != (user.Account{}) {
		t.Errorf("FindAccount of a held sign-in = %q, %+v, found %v; want its data and no row", b, acct, found)
	}
}

// TestSessionDeleteKeys: the deletion step deletes every key item that
// names the account, those an end failed to delete too, and can be
// re-run; the row's removal then takes the sessions.
func TestSessionDeleteKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newSessions(t)
	w.create(t, "u1")
	w.create(t, "u2")
	for _, s := range []struct{ tok, uid string }{{"a1", "u1"}, {"a2", "u1"}, {"a3", "u1"}, {"b1", "u2"}} {
		if err := w.signIn(t, s.tok, s.uid); err != nil {
			t.Fatal(err)
		}
	}
	// a3 signs out, but its key's delete fails: the entry is gone, the
	// key is left.
	w.faults.Fail("DeleteItem", w.table, 0)
	if err := w.ss.Delete("a3"); err != nil {
		t.Fatal(err)
	}
	w.faults.Clear()
	if keys := w.keyItems(t); !keys[user.SessionID("a3")] {
		t.Fatal("the failed key delete left no key: the test sets up nothing")
	}
	w.faults.Fail("BatchWriteItem", w.table, 0)
	if _, err := w.ss.DeleteKeys(ctx, "u1"); !errors.Is(err, apptest.ErrInjected) {
		t.Errorf("DeleteKeys with the batch failing = %v, want its error", err)
	}
	w.faults.Clear()
	if n, err := w.ss.DeleteKeys(ctx, "u1"); err != nil || n != 3 {
		t.Errorf("DeleteKeys(u1) = %d, %v; want 3 (a1, a2 and the left a3)", n, err)
	}
	if n, err := w.ss.DeleteKeys(ctx, "u1"); err != nil || n != 0 {
		t.Errorf("DeleteKeys(u1) again = %d, %v; want 0", n, err)
	}
	if keys := w.keyItems(t); len(keys) != 1 || !keys[user.SessionID("b1")] {
		t.Errorf("key items after DeleteKeys(u1) = %v, want only b1's", keys)
	}
	fresh := user.NewSessions(user.NewStore(localenv.NewDynamoClient(w.env.DynamoEndpoint), w.table, w.clock.Now),
		user.SessionDeps{UserIDOf: testUserID, Log: slog.New(slog.DiscardHandler)})
	if _, found, _ := fresh.Find("a1"); found {
		t.Error("a session whose key is gone was found")
	}
	if err := w.s.Delete(ctx, "u1"); err != nil {
		t.Fatal(err)
	}
	if n, err := w.ss.DeleteKeys(ctx, "u1"); err != nil || n != 0 {
		t.Errorf("DeleteKeys after the row went = %d, %v; want 0", n, err)
	}
}

// TestSessionSignInRefused: a session never starts on an account being
// deleted or disabled, or one without a row, and leaves no key behind.
func TestSessionSignInRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newSessions(t)
	w.create(t, "off")
	w.create(t, "going")
	if err := w.s.SetDisabled(ctx, "off", true); err != nil {
		t.Fatal(err)
	}
	if _, err := w.s.MarkDeleting(ctx, "going", "photos", w.clock.Now()); err != nil {
		t.Fatal(err)
	}
	for uid, want := range map[string]error{"off": user.ErrState, "going": user.ErrState, "nobody": user.ErrNotFound} {
		if err := w.signIn(t, "tok-"+uid, uid); !errors.Is(err, want) {
			t.Errorf("sign-in of %s = %v, want %v", uid, err, want)
		}
		if w.found(t, "tok-"+uid) {
			t.Errorf("sign-in of %s left a session", uid)
		}
	}
	if keys := w.keyItems(t); len(keys) != 0 {
		t.Errorf("refused sign-ins left keys %v", keys)
	}
}

// TestSessionSignInRace: sign-ins of one account at once, their writes
// held until all have read the row, all end up on it (none overwrites
// another's session).
func TestSessionSignInRace(t *testing.T) {
	t.Parallel()
	const n = 4
	w := newSessions(t)
	w.create(t, "u1")
	// The same table through a client that holds each sessions write
	// until n of them wait.
	raced := user.NewSessions(user.NewStore(localenv.NewDynamoClient(w.env.DynamoEndpoint, sessionsWriteBarrier(n)), w.table, w.clock.Now),
		user.SessionDeps{UserIDOf: testUserID, Log: slog.New(slog.DiscardHandler)})
	ctx := user.SignIn(context.Background(), user.Device{Browser: "Safari", Platform: "iPhone"})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = raced.CommitCtx(ctx, fmt.Sprintf("tok%d", i), testData("u1"), w.clock.Now().Add(time.Hour))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("sign-in %d: %v", i, err)
		}
	}
	w.clock.Advance(user.CacheTTL) // written around w.ss's cache
	list, err := w.ss.List(context.Background(), "u1")
	if err != nil || len(list) != n {
		t.Errorf("List after %d racing sign-ins = %d sessions, %v; want %d", n, len(list), err, n)
	}
}

// sessionsWriteBarrier holds every UpdateItem until n are waiting, then
// lets them all go: racing writers of one row's sessions have all read it
// before any writes.
func sessionsWriteBarrier(n int) func(*dynamodb.Options) {
	var mu sync.Mutex
	waiting := 0
	release := make(chan struct{})
	return barrier("UpdateItem", func() {
		mu.Lock()
		waiting++
		if waiting == n {
			close(release)
		}
		mu.Unlock()
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
	})
}

// TestSessionWritesStorageRefuses: with storage refusing writes (a full
// disk), a page view's stamp is skipped without an error and tried again
// only StampEvery later; a logout still ends the session in this process
// at once, and a sign-in still signs in, each written once storage takes
// writes again.
func TestSessionWritesStorageRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newSessions(t)
	w.create(t, "u1")
	for _, tok := range []string{"stamped", "logout"} {
		if err := w.signIn(t, tok, "u1"); err != nil {
			t.Fatal(err)
		}
	}
	w.faults.DiskFull("UpdateItem", w.table, 0)
	w.faults.DiskFull("PutItem", w.table, 0)
	w.faults.DiskFull("DeleteItem", w.table, 0)
	w.clock.Advance(user.StampEvery)
	for range 3 {
		if err := w.ss.Commit("stamped", testData("u1"), w.clock.Now().Add(time.Hour)); err != nil {
			t.Errorf("stamp on a full disk = %v, want it skipped", err)
		}
	}
	if n := w.faults.Acted("UpdateItem", w.table); n != 1 {
		t.Errorf("3 commits on a full disk tried %d stamps, want 1 (then none until StampEvery)", n)
	}
	if !w.found(t, "stamped") {
		t.Error("a skipped stamp lost the session")
	}
	if err := w.ss.Delete("logout"); err != nil {
		t.Errorf("logout on a full disk = %v, want nil (ended in memory)", err)
	}
	if w.found(t, "logout") {
		t.Error("the session logged out on a full disk is still found")
	}
	if list, _ := w.ss.List(ctx, "u1"); len(list) != 1 {
		t.Errorf("List after the logout = %d sessions, want 1", len(list))
	}
	// Sign-ins answer: the session holds in this process.
	for _, tok := range []string{"new", "gone-before"} {
		if err := w.signIn(t, tok, "u1"); err != nil {
			t.Errorf("sign-in on a full disk = %v, want it held in memory", err)
		}
		if !w.found(t, tok) {
			t.Errorf("the sign-in %s held in memory is not found", tok)
		}
	}
	if list, _ := w.ss.List(ctx, "u1"); len(list) != 3 {
		t.Errorf("List with two sign-ins held = %d sessions, want 3", len(list))
	}
	if err := w.ss.Delete("gone-before"); err != nil || w.found(t, "gone-before") {
		t.Errorf("logout of a held sign-in = %v, found after: %v; want it ended", err, w.found(t, "gone-before"))
	}
	// Space again: the next write of a session writes the logout and the
	// sign-in held.
	w.faults.Clear()
	w.clock.Advance(user.StampEvery)
	if err := w.ss.Commit("stamped", testData("u1"), w.clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	fresh := user.NewSessions(user.NewStore(localenv.NewDynamoClient(w.env.DynamoEndpoint), w.table, w.clock.Now),
		user.SessionDeps{UserIDOf: testUserID, Log: slog.New(slog.DiscardHandler)})
	for tok, want := range map[string]bool{"logout": false, "stamped": true, "new": true, "gone-before": false} {
		if _, found, _ := fresh.Find(tok); found != want {
			t.Errorf("after space came back, a restarted store finds %s: %v, want %v", tok, found, want)
		}
	}
	if keys := w.keyItems(t); len(keys) != 2 {
		t.Errorf("key items = %d, want 2 (stamped, new)", len(keys))
	}
}

// TestReservedKeysHidden: session keys and the lease item are no users:
// List, ListDeleting, Count and IDs leave them out, Get never finds them,
// and Create refuses a reserved ID.
func TestReservedKeysHidden(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newSessions(t)
	w.s.SetPageLimit(1) // many pages, a reserved item alone on some
	w.create(t, "u1")
	if err := w.signIn(t, "tok", "u1"); err != nil {
		t.Fatal(err)
	}
	lease := map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: user.LeaseKey}, "status": &types.AttributeValueMemberS{Value: string(user.StatusDeleting)}}
	if _, err := w.env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(w.table), Item: lease}); err != nil {
		t.Fatal(err)
	}
	if len(w.items(t)) != 3 {
		t.Fatalf("users table holds %d items, want 3 (a row, a session key, the lease)", len(w.items(t)))
	}
	if all, err := w.s.List(ctx); err != nil || len(all) != 1 || all[0].ID != "u1" {
		t.Errorf("List = %+v, %v; want u1 only", all, err)
	}
	if del, err := w.s.ListDeleting(ctx); err != nil || len(del) != 0 {
		t.Errorf("ListDeleting = %+v, %v; want none (the lease item says deleting)", del, err)
	}
	free := func(context.Context, int) error { return nil }
	if c, err := w.s.Count(ctx, free); err != nil || c != (user.Counts{Total: 1}) {
		t.Errorf("Count = %+v, %v; want 1 user, none deleting", c, err)
	}
	if ids, err := w.s.IDs(ctx, free); err != nil || len(ids) != 1 || !ids["u1"] {
		t.Errorf("IDs = %v, %v; want u1 only", ids, err)
	}
	if _, err := w.s.Get(ctx, user.LeaseKey); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("Get(lease key) = %v, want ErrNotFound", err)
	}
	if err := w.s.Create(ctx, &user.User{ID: "#session#x", Role: user.RoleOwner}); err == nil {
		t.Error("Create of a reserved ID = nil error")
	}
}

// TestCheckSubject: the subjects sign-in takes and the ones it refuses.
func TestCheckSubject(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sub string
		ok  bool
	}{
		{"110169484474386276334", true},
		{"local-0123456789abcdef0123", true},
		{"f81d4fae-7dec-11d0-a765-00a0c91e6bf6", true},
		{"CiQwOGE4Njg0Yi1kYjg4LTRiNzMtOTBhOS0zY2QxNjYxZjU0NjYSBWxvY2Fs", true},
		{"a b~!", true},
		{strings.Repeat("x", 255), true},
		{"", false},
		{strings.Repeat("x", 256), false},
		{"#lease", false},
		{"#session#abc", false},
		{"tab\there", false},
		{"nul\x00", false},
		{"del\x7f", false},
		{"ünïcode", false},
	} {
		err := user.CheckSubject(tc.sub)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, user.ErrSubject) {
			t.Errorf("CheckSubject(%.20q) = %v, want ok %v", tc.sub, err, tc.ok)
		}
	}
}

// barrier is a DynamoDB client option that runs wait before every call
// of op is sent.
func barrier(op string, wait func()) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("sessionsBarrier",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					if awsmiddleware.GetOperationName(ctx) == op {
						wait()
					}
					return next.HandleFinalize(ctx, in)
				}), middleware.Before)
		})
	}
}
