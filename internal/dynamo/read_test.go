package dynamo_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"ndiro/internal/apptest"
	"ndiro/internal/dynamo"
)

// row is an item of the test table (the users table's key, nothing else
// of it).
type row struct {
	ID   string `dynamodbav:"user_id"`
	Name string `dynamodbav:"name"`
}

// clock is a test clock that only moves when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// afterAnswer is a DynamoDB client option that, while armed, holds the
// next GetItem after its answer came back and before the caller sees it:
// answered is closed then, and the call goes on once proceed is closed.
type afterAnswer struct {
	mu sync.Mutex
	// inconsistent counts GetItems sent without ConsistentRead.
	inconsistent int
	armed        bool
	answered     chan struct{}
	proceed      chan struct{}
}

func (a *afterAnswer) arm() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.armed, a.answered, a.proceed = true, make(chan struct{}), make(chan struct{})
}

func (a *afterAnswer) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("afterAnswer",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleInitialize(ctx, in)
				get, ok := in.Parameters.(*dynamodb.GetItemInput)
				if !ok {
					return out, md, err
				}
				a.mu.Lock()
				if !aws.ToBool(get.ConsistentRead) {
					a.inconsistent++
				}
				armed, answered, proceed := a.armed, a.answered, a.proceed
				a.armed = false
				a.mu.Unlock()
				if armed {
					close(answered)
					<-proceed
				}
				return out, md, err
			}), middleware.After)
	})
}

// readWorld is a users table with a cache on it, a call counter and
// faults on the client the cache reads with.
type readWorld struct {
	db     *dynamodb.Client
	table  string
	clock  *clock
	cache  *dynamo.ItemCache[row]
	calls  *apptest.Calls
	faults *apptest.Faults
	hold   *afterAnswer
}

func newReadWorld(t *testing.T) *readWorld {
	t.Helper()
	w := &readWorld{clock: &clock{t: time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)}, calls: &apptest.Calls{}, faults: &apptest.Faults{}, hold: &afterAnswer{}}
	env, tables := apptest.Local(t, w.calls.Option(), w.faults.DynamoOption(), w.hold.option)
	w.db, w.table = env.DynamoDB, tables.Users.Name
	w.cache = dynamo.NewItemCache[row](5*time.Second, 100, w.clock.now)
	return w
}

// put writes r into the table directly, around the cache (an edit made
// outside the app).
func (w *readWorld) put(t *testing.T, r row) {
	t.Helper()
	_, err := w.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(w.table), Item: map[string]types.AttributeValue{
		"user_id": &types.AttributeValueMemberS{Value: r.ID}, "name": &types.AttributeValueMemberS{Value: r.Name},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

// read reads id through the cache and returns what it found and how many
// GetItems it took.
func (w *readWorld) read(t *testing.T, id string) (row, bool, int) {
	t.Helper()
	w.calls.Reset()
	r, found, err := w.cache.Read(context.Background(), w.db, w.table, "user_id", id)
	if err != nil {
		t.Fatalf("Read(%s) = %v", id, err)
	}
	return r, found, w.calls.Counts()["GetItem"]
}

func TestReadCachesItemsAndAbsences(t *testing.T) {
	t.Parallel()
	w := newReadWorld(t)
	if _, found, gets := w.read(t, "u1"); found || gets != 1 {
		t.Fatalf("first Read(u1) = found %v with %d GetItems, want no item with 1", found, gets)
	}
	if w.hold.inconsistent != 0 {
		t.Error("Read's GetItem is not strongly consistent: a revoke or a deletion mark could be missed")
	}
	w.put(t, row{ID: "u1", Name: "Ana"}) // around the cache
	if _, found, gets := w.read(t, "u1"); found || gets != 0 {
		t.Errorf("second Read(u1) = found %v with %d GetItems, want the cached absence with 0", found, gets)
	}
	w.clock.advance(5 * time.Second) // the TTL: edits outside the app show
	if r, found, gets := w.read(t, "u1"); !found || r.Name != "Ana" || gets != 1 {
		t.Errorf("Read(u1) after the TTL = %+v, %v with %d GetItems, want Ana with 1", r, found, gets)
	}
	w.put(t, row{ID: "u1", Name: "Bea"})
	if r, _, gets := w.read(t, "u1"); r.Name != "Ana" || gets != 0 {
		t.Errorf("Read(u1) within the TTL = %+v with %d GetItems, want the cached Ana with 0", r, gets)
	}
	w.clock.advance(5*time.Second - time.Nanosecond)
	if r, _, gets := w.read(t, "u1"); r.Name != "Ana" || gets != 0 {
		t.Errorf("Read(u1) just before the TTL = %+v with %d GetItems, want the cached Ana with 0", r, gets)
	}
}

// TestReadOverlappingWrite: a read whose GetItem answered before a write
// of the item finished hands back what it read, and the cache does not
// keep it: the next read sees the write.
func TestReadOverlappingWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newReadWorld(t)
	w.put(t, row{ID: "u1", Name: "old"})
	w.hold.arm()
	type result struct {
		r   row
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, _, err := w.cache.Read(ctx, w.db, w.table, "user_id", "u1")
		done <- result{r, err}
	}()
	<-w.hold.answered // the GetItem read "old"
	if err := w.cache.Write("u1", func() error { w.put(t, row{ID: "u1", Name: "new"}); return nil }); err != nil {
		t.Fatal(err)
	}
	close(w.hold.proceed)
	if res := <-done; res.err != nil || res.r.Name != "old" {
		t.Fatalf("overlapped Read = %+v, %v, want what it read (old)", res.r, res.err)
	}
	if r, _, gets := w.read(t, "u1"); r.Name != "new" || gets != 1 {
		t.Errorf("Read after the write = %+v with %d GetItems, want new with 1: the overlapped read was kept", r, gets)
	}
}

// TestWriteInvalidatesWhateverTheOutcome: a refused or failed write
// still drops the entry, so the next read goes to the table.
func TestWriteInvalidatesWhateverTheOutcome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newReadWorld(t)
	w.put(t, row{ID: "u1", Name: "Ana"})
	w.read(t, "u1")
	failed := errors.New("timed out, outcome unknown")
	if err := w.cache.Write("u1", func() error { w.put(t, row{ID: "u1", Name: "Bea"}); return failed }); err != failed {
		t.Fatalf("Write = %v, want the write's own error", err)
	}
	if r, _, gets := w.read(t, "u1"); r.Name != "Bea" || gets != 1 {
		t.Errorf("Read after a failed write = %+v with %d GetItems, want Bea with 1", r, gets)
	}
	_, err := w.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(w.table), Item: map[string]types.AttributeValue{
		"user_id": &types.AttributeValueMemberS{Value: "u1"}}, ConditionExpression: aws.String("attribute_not_exists(user_id)")})
	if !dynamo.IsConditionFailed(err) {
		t.Fatalf("conditional put of an existing row = %v, want a refusal", err)
	}
	if err := w.cache.Write("u1", func() error { return err }); !dynamo.IsConditionFailed(err) {
		t.Fatalf("Write = %v, want the refusal", err)
	}
	if _, _, gets := w.read(t, "u1"); gets != 1 {
		t.Errorf("Read after a refused write took %d GetItems, want 1", gets)
	}
}

// TestWriteThroughKeepsTheRowWritten: a create's row is read back from
// the cache without a GetItem.
func TestWriteThroughKeepsTheRowWritten(t *testing.T) {
	t.Parallel()
	w := newReadWorld(t)
	w.read(t, "u1") // an absence, cached
	r := row{ID: "u1", Name: "Ana"}
	if err := w.cache.WriteThrough("u1", r, func() error { w.put(t, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if got, found, gets := w.read(t, "u1"); !found || got != r || gets != 0 {
		t.Errorf("Read after WriteThrough = %+v, %v with %d GetItems, want %+v with 0", got, found, gets, r)
	}
}

func TestReadErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newReadWorld(t)
	w.faults.FailOnce("GetItem", w.table, 0)
	if _, _, err := w.cache.Read(ctx, w.db, w.table, "user_id", "u1"); !errors.Is(err, apptest.ErrInjected) {
		t.Errorf("Read with GetItem failing = %v, want its error", err)
	}
	if _, found, gets := w.read(t, "u1"); found || gets != 1 {
		t.Errorf("Read after a failed one = found %v with %d GetItems, want a read (1): nothing may be kept from a failure", found, gets)
	}
	// An item that does not decode as V: a bool where a string belongs.
	w.clock.advance(5 * time.Second)
	_, err := w.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(w.table), Item: map[string]types.AttributeValue{
		"user_id": &types.AttributeValueMemberS{Value: "u1"}, "name": &types.AttributeValueMemberBOOL{Value: true}}})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		w.calls.Reset()
		if _, _, err := w.cache.Read(ctx, w.db, w.table, "user_id", "u1"); err == nil || !strings.HasPrefix(err.Error(), "decode: ") {
			t.Errorf("Read of an item that does not decode = %v, want a decode error", err)
		}
		if gets := w.calls.Counts()["GetItem"]; gets != 1 {
			t.Errorf("Read of an item that does not decode took %d GetItems, want 1 each time", gets)
		}
	}
}

func TestReadWithoutCaching(t *testing.T) {
	t.Parallel()
	w := newReadWorld(t)
	w.cache = dynamo.NewItemCache[row](0, 100, w.clock.now)
	w.put(t, row{ID: "u1", Name: "Ana"})
	for i := range 2 {
		if r, found, gets := w.read(t, "u1"); !found || r.Name != "Ana" || gets != 1 {
			t.Errorf("Read #%d with TTL 0 = %+v, %v with %d GetItems, want Ana with 1", i+1, r, found, gets)
		}
	}
}
