package user_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/user"
)

// TestRefusalReadFails: when a refused update has to read the row to say
// why and that read fails, the read's error comes back, not ErrNotFound,
// ErrState or ErrNameChosen.
func TestRefusalReadFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	faults := &apptest.Faults{}
	env, tables := apptest.Local(t, faults.DynamoOption())
	s := user.NewStore(env.DynamoDB, tables.Users.Name, time.Now)
	faults.Fail("GetItem", tables.Users.Name, 0)
	calls := map[string]func() error{
		"SetRole":         func() error { return s.SetRole(ctx, "nobody", user.RoleAdmin) },
		"SetDisabled":     func() error { return s.SetDisabled(ctx, "nobody", true) },
		"SetProviderName": func() error { return s.SetProviderName(ctx, "nobody", "Ana") },
	}
	for name, call := range calls {
		err := call()
		if !errors.Is(err, apptest.ErrInjected) {
			t.Errorf("%s with the read failing = %v, want the read's error", name, err)
		}
		for _, se := range []error{user.ErrNotFound, user.ErrState, user.ErrNameChosen} {
			if errors.Is(err, se) {
				t.Errorf("%s with the read failing = %v, a sentinel", name, err)
			}
		}
	}
	faults.Clear()
	for name, call := range calls {
		if err := call(); !errors.Is(err, user.ErrNotFound) {
			t.Errorf("%s of no such row = %v, want ErrNotFound", name, err)
		}
	}
}

// storeWorld is a users Store on its own tables, with a call counter and
// faults on its client and a clock that moves only when told.
type storeWorld struct {
	s      *user.Store
	env    *localenv.Env
	table  string
	clock  *apptest.Clock
	calls  *apptest.Calls
	faults *apptest.Faults
}

func newStore(t *testing.T) *storeWorld {
	t.Helper()
	w := &storeWorld{clock: &apptest.Clock{}, calls: &apptest.Calls{}, faults: &apptest.Faults{}}
	w.clock.Set(time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC))
	env, tables := apptest.Local(t, w.calls.Option(), w.faults.DynamoOption())
	w.env, w.table = env, tables.Users.Name
	w.s = user.NewStore(env.DynamoDB, w.table, w.clock.Now)
	return w
}

// create writes an active owner with id and returns it.
func (w *storeWorld) create(t *testing.T, id string) *user.User {
	t.Helper()
	u := &user.User{ID: id, Email: id + "@example.com", Role: user.RoleOwner, Status: user.StatusActive, CreatedAt: w.clock.Now()}
	if err := w.s.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

// get reads id through the store and returns the row, the GetItems the
// read took and its error.
func (w *storeWorld) get(t *testing.T, id string) (*user.User, int, error) {
	t.Helper()
	w.calls.Reset()
	u, err := w.s.Get(context.Background(), id)
	return u, w.calls.Counts()["GetItem"], err
}

func TestCreateAndGet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newStore(t)
	u := w.create(t, "u1")
	// The row written is cached: the sign-in's next request reads nothing.
	got, gets, err := w.get(t, "u1")
	if err != nil || gets != 0 {
		t.Fatalf("Get after Create = %v with %d GetItems, want the row with 0", err, gets)
	}
	if diff := cmp.Diff(u, got); diff != "" {
		t.Errorf("Get after Create differs (-created +got):\n%s", diff)
	}
	got.Email = "changed@example.com" // a copy: the cache is not changed
	if again, _, _ := w.get(t, "u1"); again.Email != "u1@example.com" {
		t.Errorf("Get after changing the copy it returned = %q, want the cached row unchanged", again.Email)
	}
	// Read back from the table, the row is the same.
	w.clock.Advance(user.CacheTTL)
	got, gets, err = w.get(t, "u1")
	if err != nil || gets != 1 {
		t.Fatalf("Get after the TTL = %v with %d GetItems, want a read", err, gets)
	}
	if diff := cmp.Diff(u, got); diff != "" {
		t.Errorf("row read back differs (-created +read):\n%s", diff)
	}

	if err := w.s.Create(ctx, &user.User{ID: "u1", Email: "other@example.com", Role: user.RoleAdmin}); !errors.Is(err, user.ErrExists) {
		t.Errorf("Create of an existing ID = %v, want ErrExists", err)
	}
	if got, _, _ := w.get(t, "u1"); got.Email != "u1@example.com" || got.Role != user.RoleOwner {
		t.Errorf("row after a refused Create = %+v, want the first one", got)
	}
	if err := w.s.Create(ctx, &user.User{Email: "x@example.com"}); err == nil {
		t.Error("Create with an empty ID = nil error")
	}
	if _, gets, err := w.get(t, "nobody"); !errors.Is(err, user.ErrNotFound) || gets != 1 {
		t.Errorf("Get(nobody) = %v with %d GetItems, want ErrNotFound with 1", err, gets)
	}
	if _, gets, err := w.get(t, "nobody"); !errors.Is(err, user.ErrNotFound) || gets != 0 {
		t.Errorf("Get(nobody) again = %v with %d GetItems, want the cached ErrNotFound with 0", err, gets)
	}
	if ok, err := w.s.Active(ctx, "nobody"); ok || !errors.Is(err, user.ErrNotFound) {
		t.Errorf("Active(nobody) = %v, %v, want false, ErrNotFound", ok, err)
	}
	w.faults.FailOnce("GetItem", w.table, 0)
	if _, err := w.s.Active(ctx, "other"); !errors.Is(err, apptest.ErrInjected) {
		t.Errorf("Active with the read failing = %v, want its error", err)
	}
	w.faults.FailOnce("GetItem", w.table, 0)
	if _, err := w.s.Get(ctx, "other"); !errors.Is(err, apptest.ErrInjected) {
		t.Errorf("Get with the read failing = %v, want its error", err)
	}
	w.faults.FailOnce("PutItem", w.table, 0)
	if err := w.s.Create(ctx, &user.User{ID: "u9", Role: user.RoleOwner}); !errors.Is(err, apptest.ErrInjected) || errors.Is(err, user.ErrExists) {
		t.Errorf("Create with the write failing = %v, want its error", err)
	}
}

// guardWrite is a write through the Store and what the next read of the
// row must show after it ("" if it does).
type guardWrite struct {
	name  string
	write func(s *user.Store) error
	check func(u *user.User, err error) string
}

// guardWrites are the writes the guard must see at once.
func guardWrites(ctx context.Context) []guardWrite {
	return []guardWrite{
		{"disable", func(s *user.Store) error { return s.SetDisabled(ctx, "u1", true) }, func(u *user.User, err error) string {
			if err != nil || !u.Disabled() || u.Active() {
				return "want the row disabled"
			}
			return ""
		}},
		{"deletion mark", func(s *user.Store) error {
			_, err := s.MarkDeleting(ctx, "u1", "photos", time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC))
			return err
		}, func(u *user.User, err error) string {
			if err != nil || !u.Deleting() || u.Active() || u.DeletionStep != "photos" {
				return "want the row marked deleting at step photos"
			}
			return ""
		}},
		{"role change", func(s *user.Store) error { return s.SetRole(ctx, "u1", user.RoleAdmin) }, func(u *user.User, err error) string {
			if err != nil || !u.IsAdmin() {
				return "want an admin"
			}
			return ""
		}},
		{"delete", func(s *user.Store) error { return s.Delete(ctx, "u1") }, func(u *user.User, err error) string {
			if !errors.Is(err, user.ErrNotFound) {
				return "want ErrNotFound"
			}
			return ""
		}},
		{"time zone", func(s *user.Store) error { return s.SetTimeZone(ctx, "u1", "Europe/Berlin") }, func(u *user.User, err error) string {
			if err != nil || u.TimeZone != "Europe/Berlin" {
				return "want Europe/Berlin"
			}
			return ""
		}},
		{"name", func(s *user.Store) error { return s.SetName(ctx, "u1", "Ana Lima") }, func(u *user.User, err error) string {
			if err != nil || u.Name != "Ana Lima" || !u.NameSet {
				return "want the chosen name"
			}
			return ""
		}},
		{"provider name", func(s *user.Store) error { return s.SetProviderName(ctx, "u1", "Ana") }, func(u *user.User, err error) string {
			if err != nil || u.Name != "Ana" || u.NameSet {
				return "want the provider's name"
			}
			return ""
		}},
	}
}

// TestWritesReachTheNextRead is the guard cache's rule in its own
// package: with the row cached and the clock standing still (no TTL can
// lapse), every write through the Store decides the very next Get and
// Active, and a write the table refused or that failed drops the entry
// too.
func TestWritesReachTheNextRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range guardWrites(ctx) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newStore(t)
			w.create(t, "u1")
			if _, gets, err := w.get(t, "u1"); err != nil || gets != 0 {
				t.Fatalf("warm Get = %v with %d GetItems, want the cached row", err, gets)
			}
			if err := tc.write(w.s); err != nil {
				t.Fatal(err)
			}
			u, _, err := w.get(t, "u1")
			if msg := tc.check(u, err); msg != "" {
				t.Errorf("Get right after the write = %+v, %v: %s", u, err, msg)
			}
			active, aerr := w.s.Active(ctx, "u1")
			if wantActive := err == nil && u.Active(); active != wantActive || (aerr == nil) != (err == nil) {
				t.Errorf("Active right after the write = %v, %v, want %v as Get saw", active, aerr, wantActive)
			}
		})
	}
	t.Run("refused or failed", func(t *testing.T) {
		t.Parallel()
		w := newStore(t)
		w.create(t, "u1")
		// Edited around the store (as the console would), then refused
		// and failed writes: each drops the cached row, so the edit shows
		// at once instead of after the TTL.
		for _, write := range []func() error{
			func() error { return w.s.SetDisabled(ctx, "u1", true) }, // refused: disabled already
			func() error {
				w.faults.FailOnce("UpdateItem", w.table, 0)
				return w.s.SetRole(ctx, "u1", user.RoleAdmin)
			},
		} {
			w.get(t, "u1")
			disableAround(t, w)
			if err := write(); err == nil {
				t.Fatal("the write went through, want a refusal or a failure")
			}
			if u, gets, err := w.get(t, "u1"); err != nil || !u.Disabled() || gets != 1 {
				t.Errorf("Get after a refused write = %+v, %v with %d GetItems, want the row read again (disabled)", u, err, gets)
			}
			w.clock.Advance(user.CacheTTL) // and back to active for the next round
			if err := w.s.SetDisabled(ctx, "u1", false); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// disableAround sets u1's status to disabled with an UpdateItem that does
// not go through the Store.
func disableAround(t *testing.T, w *storeWorld) {
	t.Helper()
	_, err := w.env.DynamoDB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(w.table),
		Key:                       map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: "u1"}},
		UpdateExpression:          aws.String("SET #s = :d"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": &types.AttributeValueMemberS{Value: string(user.StatusDisabled)}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestEditsOutsideTheAppShowAfterTheTTL: a row changed around the Store
// is seen once CacheTTL has passed, not before.
func TestEditsOutsideTheAppShowAfterTheTTL(t *testing.T) {
	t.Parallel()
	w := newStore(t)
	w.create(t, "u1")
	disableAround(t, w)
	w.clock.Advance(user.CacheTTL - time.Nanosecond)
	if u, gets, _ := w.get(t, "u1"); u.Disabled() || gets != 0 {
		t.Errorf("Get within the TTL = %s with %d GetItems, want the cached active row", u.Status, gets)
	}
	w.clock.Advance(time.Nanosecond)
	if u, gets, _ := w.get(t, "u1"); !u.Disabled() || gets != 1 {
		t.Errorf("Get at the TTL = %s with %d GetItems, want the disabled row read again", u.Status, gets)
	}
}

func TestStatusChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newStore(t)
	w.create(t, "u1")
	legacy := &user.User{ID: "old", Email: "old@example.com", Role: user.RoleOwner} // no status: active
	if err := w.s.Create(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		do   func() error
		want error
	}{
		{"enable an active account", func() error { return w.s.SetDisabled(ctx, "u1", false) }, user.ErrState},
		{"disable", func() error { return w.s.SetDisabled(ctx, "u1", true) }, nil},
		{"disable again", func() error { return w.s.SetDisabled(ctx, "u1", true) }, user.ErrState},
		{"enable", func() error { return w.s.SetDisabled(ctx, "u1", false) }, nil},
		{"disable a row without a status", func() error { return w.s.SetDisabled(ctx, "old", true) }, nil},
		{"disable no such row", func() error { return w.s.SetDisabled(ctx, "nobody", true) }, user.ErrNotFound},
		{"role of no such row", func() error { return w.s.SetRole(ctx, "nobody", user.RoleAdmin) }, user.ErrNotFound},
		{"a role that does not exist", func() error { return w.s.SetRole(ctx, "u1", user.Role("root")) }, nil},
		{"time zone of no such row", func() error { return w.s.SetTimeZone(ctx, "nobody", "UTC") }, user.ErrNotFound},
		{"name of no such row", func() error { return w.s.SetName(ctx, "nobody", "Ana") }, user.ErrNotFound},
		{"deletion progress of an active account", func() error { return w.s.SetDeletionProgress(ctx, "u1", "meals", "") }, user.ErrNotFound},
		{"mark deleting", func() error { _, err := w.s.MarkDeleting(ctx, "u1", "photos", w.clock.Now()); return err }, nil},
		{"role of an account being deleted", func() error { return w.s.SetRole(ctx, "u1", user.RoleAdmin) }, user.ErrState},
		{"disable an account being deleted", func() error { return w.s.SetDisabled(ctx, "u1", true) }, user.ErrState},
		{"enable an account being deleted", func() error { return w.s.SetDisabled(ctx, "u1", false) }, user.ErrState},
		{"deletion progress", func() error { return w.s.SetDeletionProgress(ctx, "u1", "meals", "s3: timeout") }, nil},
		{"mark deleting no such row", func() error { _, err := w.s.MarkDeleting(ctx, "nobody", "photos", w.clock.Now()); return err }, user.ErrNotFound},
		{"deletion progress of no such row", func() error { return w.s.SetDeletionProgress(ctx, "nobody", "meals", "") }, user.ErrNotFound},
	}
	for _, st := range steps {
		err := st.do()
		if st.name == "a role that does not exist" {
			if err == nil || errors.Is(err, user.ErrState) || errors.Is(err, user.ErrNotFound) {
				t.Errorf("%s = %v, want an error naming the role", st.name, err)
			}
			continue
		}
		if !errors.Is(err, st.want) || (st.want == nil) != (err == nil) {
			t.Errorf("%s = %v, want %v", st.name, err, st.want)
		}
	}
	if u, _ := w.s.Get(ctx, "old"); !u.Disabled() {
		t.Errorf("row without a status after disable = %q, want disabled", u.Status)
	}
	// Marking again keeps the step and the start time: a repeated request
	// changes nothing of the deletion's record.
	first, err := w.s.Get(ctx, "u1")
	if err != nil || first.DeletionStep != "meals" || first.DeletionError != "s3: timeout" || first.DeletionStartedAt == nil {
		t.Fatalf("row being deleted = %+v, %v", first, err)
	}
	w.clock.Advance(time.Hour)
	again, err := w.s.MarkDeleting(ctx, "u1", "photos", w.clock.Now())
	if err != nil || again.DeletionStep != "meals" || !again.DeletionStartedAt.Equal(*first.DeletionStartedAt) {
		t.Errorf("MarkDeleting again = %+v, %v, want step meals and the first start time kept", again, err)
	}
	if u, _ := w.s.Get(ctx, "u1"); u.Role != user.RoleOwner {
		t.Errorf("role after refusals = %q, want owner", u.Role)
	}
}

func TestProviderName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newStore(t)
	w.create(t, "u1")
	if err := w.s.SetProviderName(ctx, "u1", "Ana"); err != nil {
		t.Fatal(err)
	}
	if err := w.s.SetProviderName(ctx, "u1", "Ana L."); err != nil {
		t.Fatalf("second provider name = %v, want it to follow", err)
	}
	if err := w.s.SetName(ctx, "u1", ""); err != nil { // the owner chose no name
		t.Fatal(err)
	}
	if err := w.s.SetProviderName(ctx, "u1", "Ana"); !errors.Is(err, user.ErrNameChosen) {
		t.Errorf("provider name after the owner chose one = %v, want ErrNameChosen", err)
	}
	if u, _ := w.s.Get(ctx, "u1"); u.Name != "" || !u.NameSet {
		t.Errorf("row = name %q, set %v, want the owner's empty choice kept", u.Name, u.NameSet)
	}
	if err := w.s.SetProviderName(ctx, "nobody", "Ana"); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("provider name of no such row = %v, want ErrNotFound", err)
	}
}

func TestListsAndIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newStore(t)
	for _, id := range []string{"a", "b", "c", "d"} {
		w.create(t, id)
	}
	for _, id := range []string{"b", "d"} {
		if _, err := w.s.MarkDeleting(ctx, id, "photos", w.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	all, err := w.s.List(ctx)
	if err != nil || len(all) != 4 {
		t.Fatalf("List = %d rows, %v, want 4", len(all), err)
	}
	deleting, err := w.s.ListDeleting(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, u := range deleting {
		ids = append(ids, u.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"b", "d"}) {
		t.Errorf("ListDeleting = %v, want [b d]", ids)
	}
	w.s.SetPageLimit(1)
	got, err := w.s.IDs(ctx, func(context.Context, int) error { return nil })
	if err != nil || len(got) != 4 || !got["a"] || !got["d"] {
		t.Errorf("IDs in pages of 1 = %v, %v, want a, b, c and d", got, err)
	}
	paid := 0
	listed, err := w.s.ListPaced(ctx, func(context.Context, int) error { paid++; return nil })
	var names []string
	for _, u := range listed {
		names = append(names, u.ID+":"+string(u.Status))
	}
	slices.Sort(names)
	if err != nil || !slices.Equal(names, []string{"a:active", "b:deleting", "c:active", "d:deleting"}) || paid < 4 {
		t.Errorf("ListPaced in pages of 1 = %v, %v, paying %d times; want a, b, c and d with their statuses, each page paid for", names, err, paid)
	}
	stop := errors.New("stop")
	if _, err := w.s.ListPaced(ctx, func(context.Context, int) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("ListPaced with the pacer refusing = %v, want its error", err)
	}
	if _, err := w.s.IDs(ctx, func(context.Context, int) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("IDs with the pacer refusing = %v, want its error", err)
	}
	if _, err := w.s.Count(ctx, func(context.Context, int) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("Count with the pacer refusing = %v, want its error", err)
	}
	if err := w.s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := w.s.Delete(ctx, "a"); err != nil {
		t.Errorf("Delete of a deleted row = %v, want nil (re-runnable)", err)
	}
	w.faults.FailOnce("DeleteItem", w.table, 0)
	if err := w.s.Delete(ctx, "b"); !errors.Is(err, apptest.ErrInjected) {
		t.Errorf("Delete failing = %v, want its error", err)
	}
}
