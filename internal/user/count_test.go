package user_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"ndiro/internal/apptest"
	"ndiro/internal/user"
)

// TestCountAcrossPages counts users over pages of 3 rows: most pages of
// the filtered counts hold no match and still carry a LastEvaluatedKey, and
// every one must be read.
func TestCountAcrossPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var emptyPages int
	watch := func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("watchPages",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					out, md, err := next.HandleInitialize(ctx, in)
					if r, ok := out.Result.(*dynamodb.ScanOutput); ok && r.Count == 0 && len(r.LastEvaluatedKey) > 0 {
						emptyPages++
					}
					return out, md, err
				}), middleware.After)
		})
	}
	env, tables := apptest.Local(t, watch)
	s := user.NewStore(env.DynamoDB, tables.Users.Name, time.Now)
	for i := range 20 {
		st := user.StatusActive
		switch {
		case i == 4 || i == 17:
			st = user.StatusDisabled
		case i == 11:
			st = user.StatusDeleting
		}
		if err := s.Create(ctx, &user.User{ID: fmt.Sprintf("u%02d", i), Email: fmt.Sprintf("u%d@example.com", i), Role: user.RoleOwner, Status: st}); err != nil {
			t.Fatal(err)
		}
	}
	s.SetPageLimit(3)
	pages := 0
	got, err := s.Count(ctx, func(context.Context, int) error { pages++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if want := (user.Counts{Total: 20, Disabled: 2, Deleting: 1}); got != want {
		t.Errorf("Count = %+v, want %+v", got, want)
	}
	if pages < 3*7 {
		t.Errorf("%d pages paced, want every page of the three 20-row scans in pages of 3 (at least 21)", pages)
	}
	if emptyPages == 0 {
		t.Error("no page came back empty with a LastEvaluatedKey: the test checks nothing of that case")
	}
}
