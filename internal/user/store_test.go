package user_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"ndiro/internal/apptest"
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
