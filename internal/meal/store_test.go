package meal_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"ndiro/internal/apptest"
	"ndiro/internal/dynamo"
	"ndiro/internal/meal"
)

func newStore(t *testing.T) (*meal.Store, *dynamodb.Client, dynamo.Tables) {
	t.Helper()
	env, tables := apptest.Local(t)
	return meal.NewStore(env.DynamoDB, tables.Meals.Name), env.DynamoDB, tables
}

func date(t *testing.T, s string) meal.Date {
	t.Helper()
	d, err := meal.ParseDate(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func add(t *testing.T, s *meal.Store, userID, day, tod string) *meal.Meal {
	t.Helper()
	m := &meal.Meal{UserID: userID, Date: day, Time: tod, Kind: meal.Snack, Notes: day + " " + tod}
	if err := s.Create(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	return m
}

func notes(ms []meal.Meal) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Notes
	}
	return out
}

// TestQueryBoundaries puts meals at the first and last second of the days
// around each edge and checks exactly the right ones come back.
func TestQueryBoundaries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newStore(t)
	s.SetPageLimit(3) // every query spans several pages
	days := []string{
		"2026-08-27", "2026-08-28", "2026-08-31", "2026-09-01", "2026-09-03", "2026-09-04",
		"2026-09-30", "2026-10-01", "2026-03-31", "2026-04-01", "2026-04-30", "2026-05-01",
		"2028-01-31", "2028-02-01", "2028-02-29", "2028-03-01",
	}
	for _, d := range days {
		add(t, s, "u1", d, "00:00:00")
		add(t, s, "u1", d, "23:59:59")
		add(t, s, "u2", d, "12:00:00") // another owner, never returned
	}

	both := func(ds ...string) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d+" 00:00:00", d+" 23:59:59")
		}
		sort.Strings(out)
		return out
	}
	win, err := s.Window(ctx, "u1", date(t, "2026-08-28"), date(t, "2026-09-03"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(both("2026-08-28", "2026-08-31", "2026-09-01", "2026-09-03"), notes(win)); d != "" {
		t.Errorf("window 08-28..09-03 (-want +got):\n%s", d)
	}
	one, err := s.Window(ctx, "u1", date(t, "2028-02-29"), date(t, "2028-02-29"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(both("2028-02-29"), notes(one)); d != "" {
		t.Errorf("one-day window (-want +got):\n%s", d)
	}

	for _, tc := range []struct {
		month string
		want  []string
	}{
		{"2026-09", both("2026-09-01", "2026-09-03", "2026-09-04", "2026-09-30")}, // 30 days
		{"2026-08", both("2026-08-27", "2026-08-28", "2026-08-31")},               // 31 days
		{"2026-03", both("2026-03-31")},
		{"2026-04", both("2026-04-01", "2026-04-30")},
		{"2028-02", both("2028-02-01", "2028-02-29")}, // leap February
		{"2028-03", both("2028-03-01")},
		{"2027-02", nil},
	} {
		m, _ := meal.ParseMonth(tc.month)
		got, err := s.Month(ctx, "u1", m)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tc.want, notes(got), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("month %s (-want +got):\n%s", tc.month, d)
		}
	}

	if _, err := s.Window(ctx, "u1", date(t, "2026-09-03"), date(t, "2026-08-28")); !errors.Is(err, meal.ErrBadRange) {
		t.Errorf("reversed window = %v, want ErrBadRange", err)
	}
	if _, err := s.Window(ctx, "u1", date(t, "2026-01-01"), date(t, "2026-12-31")); !errors.Is(err, meal.ErrLongRange) {
		t.Errorf("year window = %v, want ErrLongRange", err)
	}
}

func TestUpdateNeverResurrects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db, tables := newStore(t)
	m := add(t, s, "u1", "2026-09-01", "08:00:00")
	kcal, _ := meal.ParseNumber("400", meal.MaxKcal)
	m.Kcal, m.Notes = kcal, "porridge"
	if err := s.Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "u1", date(t, "2026-09-01"), m.ID)
	if err != nil || got.Notes != "porridge" || got.Kcal == nil || got.Kcal.String() != "400" {
		t.Fatalf("after update: %+v, %v", got, err)
	}

	// Blanking a number removes the attribute: absent, not 0, not NULL.
	m.Kcal = nil
	if err := s.Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tables.Meals.Name), Key: map[string]types.AttributeValue{
		"user_id": &types.AttributeValueMemberS{Value: "u1"}, "sk": &types.AttributeValueMemberS{Value: m.SK}}})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := out.Item["kcal"]; ok {
		t.Errorf("blank kcal stored as %#v, want no attribute", v)
	}

	// A write from a stale read is refused, and changes nothing.
	stale := *m
	stale.Version--
	stale.Notes = "stale"
	if err := s.Update(ctx, &stale); !errors.Is(err, meal.ErrConflict) {
		t.Fatalf("update from a stale version = %v, want ErrConflict", err)
	}
	if got, _ := s.Get(ctx, "u1", date(t, "2026-09-01"), m.ID); got.Notes != "porridge" {
		t.Errorf("stale update wrote notes %q", got.Notes)
	}

	if _, err := s.Delete(ctx, "u1", date(t, "2026-09-01"), m.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, m); !errors.Is(err, meal.ErrNotFound) {
		t.Fatalf("update after delete = %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, "u1", date(t, "2026-09-01"), m.ID); !errors.Is(err, meal.ErrNotFound) {
		t.Errorf("meal came back after an update of a deleted meal: %v", err)
	}
	if _, err := s.Delete(ctx, "u1", date(t, "2026-09-01"), m.ID); !errors.Is(err, meal.ErrNotFound) {
		t.Errorf("second delete = %v, want ErrNotFound", err)
	}
	// Another owner's key is simply not found.
	other := add(t, s, "u2", "2026-09-01", "09:00:00")
	if _, err := s.Get(ctx, "u1", date(t, "2026-09-01"), other.ID); !errors.Is(err, meal.ErrNotFound) {
		t.Errorf("u1 reading u2's meal = %v, want ErrNotFound", err)
	}
}

// TestMonthSpansPages fills one month with more than 1 MB of meals: the
// month must come back whole, following LastEvaluatedKey (DynamoDB and
// dynalite cut Query pages at 1 MB).
func TestMonthSpansPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	calls := &apptest.Calls{}
	env, tables := apptest.Local(t, calls.Option())
	s, db := meal.NewStore(env.DynamoDB, tables.Meals.Name), env.DynamoDB
	// ASCII: dynalite measures strings in UTF-16 units, DynamoDB in bytes.
	long := strings.Repeat("x", meal.MaxNotes)
	const n = 600 // about 1.2 MB
	var reqs []types.WriteRequest
	flush := func() {
		for len(reqs) > 0 {
			req := map[string][]types.WriteRequest{tables.Meals.Name: reqs}
			out, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: req})
			if err != nil {
				t.Fatal(err)
			}
			reqs = out.UnprocessedItems[tables.Meals.Name]
		}
	}
	for i := 0; i < n; i++ {
		item := mealItem("u1", fmt.Sprintf("2026-09-%02d", i%30+1), fmt.Sprintf("1200%02d-%06x", i%60, i))
		item["notes"] = &types.AttributeValueMemberS{Value: long}
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
		if len(reqs) == 25 {
			flush()
		}
	}
	flush()
	m, _ := meal.ParseMonth("2026-09")
	external := os.Getenv(apptest.DynamoEndpointEnv) != ""
	if !external {
		// The in-process emulator ignores the 1 MB page limit: cap pages by
		// item count instead, so the month still spans several.
		s.SetPageLimit(100)
	}
	calls.Reset()
	got, err := s.Month(ctx, "u1", m)
	if err != nil {
		t.Fatal(err)
	}
	if pages := calls.Counts()["Query"]; pages < 2 {
		t.Errorf("%d Query pages for %d bytes of meals (external endpoint: %v), want at least 2", pages, n*len(long), external)
	}
	if len(got) != n {
		t.Errorf("month returned %d meals, want %d", len(got), n)
	}
	seen := map[string]bool{}
	for i, x := range got {
		if seen[x.SK] || (i > 0 && got[i-1].SK >= x.SK) {
			t.Fatalf("meal %d (%s) repeated or out of sort-key order", i, x.SK)
		}
		seen[x.SK] = true
	}
}

// TestUpdateRefusalReadFails: when a refused update has to read the meal to
// say why and that read fails, the read's error comes back, not
// ErrNotFound or ErrConflict.
func TestUpdateRefusalReadFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	faults := &apptest.Faults{}
	env, tables := apptest.Local(t, faults.DynamoOption())
	s := meal.NewStore(env.DynamoDB, tables.Meals.Name)
	m := add(t, s, "u1", "2026-09-01", "08:00:00")
	if _, err := s.Delete(ctx, "u1", date(t, "2026-09-01"), m.ID); err != nil {
		t.Fatal(err)
	}
	faults.Fail("GetItem", tables.Meals.Name, 0)
	err := s.Update(ctx, m)
	if !errors.Is(err, apptest.ErrInjected) || errors.Is(err, meal.ErrNotFound) || errors.Is(err, meal.ErrConflict) {
		t.Errorf("update of a deleted meal with the read failing = %v, want the read's error", err)
	}
	faults.Clear()
	if err := s.Update(ctx, m); !errors.Is(err, meal.ErrNotFound) {
		t.Errorf("update of a deleted meal = %v, want ErrNotFound", err)
	}
}
