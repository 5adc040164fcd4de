package meal_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/shopspring/decimal"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/share"
	"ndiro/internal/store"
)

// comment returns a comment written at at through the link shareID.
func comment(at time.Time, shareID, text string) meal.Comment {
	return meal.Comment{ID: meal.NewCommentID(at), ShareID: shareID, Label: "Dr. Rossi", Text: text, At: at.UTC().Truncate(time.Millisecond)}
}

func get(t *testing.T, s *meal.Store, m *meal.Meal) *meal.Meal {
	t.Helper()
	got, err := s.Get(context.Background(), m.UserID, date(t, m.Date), m.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func texts(cs []meal.Comment) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Text)
	}
	return out
}

// TestAddComment: the first comment makes the map, later ones go into
// it, each counted in comment_rev; the owner's fields are not touched; a
// meal gone is ErrNotFound, one holding the link's MaxLinkComments
// ErrCommentsFull (another link's comments never count), and the same
// comment sent twice is stored once.
func TestAddComment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newStore(t)
	m := add(t, s, "u1", "2026-09-02", "12:30:00")
	at := time.Date(2026, 9, 3, 18, 7, 0, 0, time.UTC)
	first, second := comment(at, "share-a", "More greens?"), comment(at.Add(time.Minute), "share-b", "Good portion.")
	for _, c := range []meal.Comment{first, second} {
		if err := s.AddComment(ctx, "u1", date(t, m.Date), m.ID, c); err != nil {
			t.Fatalf("AddComment(%q) = %v", c.Text, err)
		}
	}
	got := get(t, s, m)
	if d := cmp.Diff([]meal.Comment{first, second}, got.SortedComments()); d != "" {
		t.Errorf("comments (-want +got):\n%s", d)
	}
	if got.CommentRev != 2 || got.Version != m.Version || got.Notes != m.Notes {
		t.Errorf("after two comments: comment_rev %d, version %d, notes %q; want 2, %d, %q", got.CommentRev, got.Version, got.Notes, m.Version, m.Notes)
	}
	if d := cmp.Diff([]string{"Good portion."}, texts(got.CommentsFrom("share-b"))); d != "" {
		t.Errorf("CommentsFrom(share-b) (-want +got):\n%s", d)
	}
	// Sent again (a retry after a lost answer): stored once.
	if err := s.AddComment(ctx, "u1", date(t, m.Date), m.ID, first); err != nil {
		t.Errorf("AddComment of the same comment again = %v, want nil", err)
	}
	if n := len(get(t, s, m).Comments); n != 2 {
		t.Errorf("after a repeat: %d comments, want 2", n)
	}
	if err := s.AddComment(ctx, "u1", date(t, m.Date), "123000-000000", comment(at, "share-a", "x")); !errors.Is(err, meal.ErrNotFound) {
		t.Errorf("AddComment on a missing meal = %v, want ErrNotFound", err)
	}
	if err := s.AddComment(ctx, "u2", date(t, m.Date), m.ID, comment(at, "share-a", "x")); !errors.Is(err, meal.ErrNotFound) {
		t.Errorf("AddComment on another owner's meal ID = %v, want ErrNotFound", err)
	}
	// share-a has 1, share-b 1: share-a fills its share of the meal.
	for i := 1; i < meal.MaxLinkComments; i++ {
		if err := s.AddComment(ctx, "u1", date(t, m.Date), m.ID, comment(at.Add(time.Duration(i)*time.Hour), "share-a", fmt.Sprint(i))); err != nil {
			t.Fatalf("share-a's comment %d = %v", i+1, err)
		}
	}
	if err := s.AddComment(ctx, "u1", date(t, m.Date), m.ID, comment(at.Add(99*time.Hour), "share-a", "one too many")); !errors.Is(err, meal.ErrCommentsFull) {
		t.Errorf("share-a's comment %d = %v, want ErrCommentsFull", meal.MaxLinkComments+1, err)
	}
	if err := s.AddComment(ctx, "u1", date(t, m.Date), m.ID, comment(at.Add(100*time.Hour), "share-b", "still mine to write")); err != nil {
		t.Errorf("share-b's comment after share-a filled its share = %v, want nil", err)
	}
	if n := len(get(t, s, m).Comments); n != meal.MaxLinkComments+2 {
		t.Errorf("%d comments stored, want %d", n, meal.MaxLinkComments+2)
	}
	if err := s.AddComment(ctx, "u1", date(t, m.Date), m.ID, meal.Comment{ID: "u1-#x", Text: "x"}); err == nil {
		t.Error("AddComment with a malformed comment ID = nil, want an error")
	}
}

// TestUpdateMergesComments: an edit made from a read older than a
// comment is written over the newer comments (no conflict, no comment
// lost); an edit older than another edit is still a conflict; a deleted
// comment does not come back through a stale edit.
func TestUpdateMergesComments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newStore(t)
	m := add(t, s, "u1", "2026-09-02", "12:30:00")
	at := time.Date(2026, 9, 3, 18, 7, 0, 0, time.UTC)
	early := comment(at, "share-a", "early")
	if err := s.AddComment(ctx, "u1", date(t, m.Date), m.ID, early); err != nil {
		t.Fatal(err)
	}
	read := get(t, s, m) // the owner opens the edit form
	late := comment(at.Add(time.Hour), "share-a", "late")
	if err := s.AddComment(ctx, "u1", date(t, m.Date), m.ID, late); err != nil {
		t.Fatal(err)
	}
	read.Notes = "edited after the comment was read"
	if err := s.Update(ctx, read); err != nil {
		t.Fatalf("Update from a read older than a comment = %v, want nil", err)
	}
	got := get(t, s, m)
	if got.Notes != read.Notes || got.Version != m.Version+1 {
		t.Errorf("after the edit: notes %q, version %d; want %q, %d", got.Notes, got.Version, read.Notes, m.Version+1)
	}
	if d := cmp.Diff([]string{"early", "late"}, texts(got.SortedComments())); d != "" {
		t.Errorf("comments after the edit (-want +got):\n%s", d)
	}
	if read.Version != got.Version || len(read.Comments) != 2 {
		t.Errorf("Update left m at version %d with %d comments, want %d with 2", read.Version, len(read.Comments), got.Version)
	}

	// A stale edit of the owner's fields is still a conflict.
	stale := *m
	stale.Notes = "from an old window"
	if err := s.Update(ctx, &stale); !errors.Is(err, meal.ErrConflict) {
		t.Errorf("Update from an older version = %v, want ErrConflict", err)
	}

	// The owner deletes a comment; an edit read before the delete keeps
	// it deleted.
	before := get(t, s, m)
	deleted, err := s.DeleteComment(ctx, "u1", date(t, m.Date), m.ID, early.ID)
	if err != nil || deleted.Text != "early" {
		t.Fatalf("DeleteComment = %v, %v", deleted, err)
	}
	before.Notes = "edited again"
	if err := s.Update(ctx, before); err != nil {
		t.Fatalf("Update from a read older than a comment's deletion = %v", err)
	}
	got = get(t, s, m)
	if d := cmp.Diff([]string{"late"}, texts(got.SortedComments())); d != "" || got.Notes != "edited again" {
		t.Errorf("after delete and stale edit: notes %q, comments (-want +got):\n%s", got.Notes, d)
	}
	if _, err := s.DeleteComment(ctx, "u1", date(t, m.Date), m.ID, early.ID); !errors.Is(err, meal.ErrNoComment) {
		t.Errorf("DeleteComment of a deleted comment = %v, want ErrNoComment", err)
	}
	if _, err := s.DeleteComment(ctx, "u1", date(t, m.Date), "123000-000000", early.ID); !errors.Is(err, meal.ErrNotFound) {
		t.Errorf("DeleteComment on a missing meal = %v, want ErrNotFound", err)
	}
	// The last one: the meal reads back without comments, and takes a
	// new first one.
	if _, err := s.DeleteComment(ctx, "u1", date(t, m.Date), m.ID, late.ID); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, m); len(got.Comments) != 0 || got.Notes != "edited again" {
		t.Errorf("after deleting the last comment: %d comments, notes %q", len(got.Comments), got.Notes)
	}
	if err := s.AddComment(ctx, "u1", date(t, m.Date), m.ID, comment(at.Add(2*time.Hour), "share-a", "again")); err != nil {
		t.Errorf("a first comment after the last was deleted = %v", err)
	}
}

// TestMonthWithComments: the owner's month page with comments on 30 of
// its 90 meals is still ONE Query reading exactly the 90 meals items
// (comments live on them, not beside them), and shows 30 badges.
func TestMonthWithComments(t *testing.T) {
	t.Parallel()
	app, c := signedIn(t)
	ctx := context.Background()
	owner := localenv.Subject(admin)
	at := time.Date(2026, 9, 30, 20, 0, 0, 0, time.UTC)
	for i := range 90 {
		m := &meal.Meal{UserID: owner, Date: fmt.Sprintf("2026-09-%02d", i/3+1), Time: fmt.Sprintf("%02d:00:00", 8+5*(i%3)), Kind: meal.Lunch, Notes: "meal"}
		if err := app.Meals.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
		if i%3 == 1 {
			for j := range 1 + i%4 {
				if err := app.Meals.AddComment(ctx, owner, date(t, m.Date), m.ID, comment(at.Add(time.Duration(i*10+j)*time.Second), "share-a", "comment")); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	app.Calls.Reset()
	resp := c.Get("/meals?month=2026-09")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("month = %d", resp.StatusCode)
	}
	if n := app.Calls.Counts()["Query"]; n != 1 {
		t.Errorf("the month made %d Queries, want 1", n)
	}
	if n := app.Calls.Scanned()["Query"]; n != 90 {
		t.Errorf("the month's Query read %d items, want the 90 meals", n)
	}
	doc := resp.Doc()
	if n := doc.Find("li.meal").Length(); n != 90 {
		t.Errorf("%d cards, want 90", n)
	}
	if n := doc.Find(".comments-badge").Length(); n != 30 {
		t.Errorf("%d comment badges, want 30", n)
	}
}

// TestDeleteVersionSeesComments: the row a move retires must be the one
// it copied, comments included: a newer comment_rev refuses the delete.
func TestDeleteVersionSeesComments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newStore(t)
	m := add(t, s, "u1", "2026-09-02", "12:30:00")
	read := get(t, s, m)
	if err := s.AddComment(ctx, "u1", date(t, m.Date), m.ID, comment(time.Now(), "share-a", "x")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteVersion(ctx, read); !errors.Is(err, meal.ErrConflict) {
		t.Errorf("DeleteVersion from before a comment = %v, want ErrConflict", err)
	}
	if err := s.DeleteVersion(ctx, get(t, s, m)); err != nil {
		t.Errorf("DeleteVersion of the current row = %v", err)
	}
}

// TestAdjacent: the neighbours of a meal within a range, never past its
// ends, with one Query each.
func TestAdjacent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newStore(t)
	before := add(t, s, "u1", "2026-08-31", "23:59:59") // outside
	a := add(t, s, "u1", "2026-09-01", "00:00:00")
	b := add(t, s, "u1", "2026-09-01", "00:00:00")
	c := add(t, s, "u1", "2026-09-03", "12:00:00")
	after := add(t, s, "u1", "2026-09-04", "00:00:00") // outside
	add(t, s, "u2", "2026-09-02", "12:00:00")          // another owner
	if a.SK > b.SK {
		a, b = b, a
	}
	lo, hi := meal.DayBounds(date(t, "2026-09-01"), date(t, "2026-09-03"))
	for _, tc := range []struct {
		from   *meal.Meal
		before bool
		want   *meal.Meal
	}{
		{a, true, nil}, {a, false, b}, {b, true, a}, {b, false, c}, {c, true, b}, {c, false, nil},
	} {
		got, err := s.Adjacent(ctx, "u1", tc.from.SK, lo, hi, tc.before)
		switch {
		case tc.want == nil && !errors.Is(err, meal.ErrNotFound):
			t.Errorf("Adjacent(%s, before %v) = %v, %v; want ErrNotFound (not %s or %s)", tc.from.SK, tc.before, got, err, before.SK, after.SK)
		case tc.want != nil && (err != nil || got.SK != tc.want.SK):
			t.Errorf("Adjacent(%s, before %v) = %v, %v; want %s", tc.from.SK, tc.before, got, err, tc.want.SK)
		}
	}
	if _, err := s.Adjacent(ctx, "u1", "2026-09-01#bad", lo, hi, false); !errors.Is(err, meal.ErrNotFound) {
		t.Errorf("Adjacent of a malformed key = %v, want ErrNotFound", err)
	}
}

// TestMoveCarriesComments: a move copies the meal's comments, and a
// comment written on the old row while the move copied it (held between
// the copy and the delete of the old row) reaches the new row too; the
// old row goes.
func TestMoveCarriesComments(t *testing.T) {
	t.Parallel()
	app, c, f := faulty(t)
	m, editURL := mealWithPhoto(t, app, c)
	ctx := context.Background()
	owner := localenv.Subject(admin)
	d, err := meal.ParseDate(m.Date)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	if err := app.Meals.AddComment(ctx, owner, d, m.ID, comment(at, "share-a", "before the move")); err != nil {
		t.Fatal(err)
	}
	held, release := f.Hold("DeleteItem", app.Tables.Meals.Name)
	done := make(chan *apptest.Response, 1)
	go func() {
		done <- c.PostForm(editURL, mealForm("date", m.Date, "time", "19:45", "notes", "moved", "version", strconv.FormatInt(m.Version, 10)))
	}()
	<-held // the new row is written; the old one not yet deleted
	if err := app.Meals.AddComment(ctx, owner, d, m.ID, comment(at.Add(time.Second), "share-a", "during the move")); err != nil {
		t.Fatal(err)
	}
	release()
	if resp := <-done; resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("move = %d, want 303; %s", resp.StatusCode, resp.Text("main"))
	}
	ms := allMeals(t, app, admin)
	if len(ms) != 1 || ms[0].Time != "19:45:00" || ms[0].Notes != "moved" {
		t.Fatalf("meals after the move = %+v, want one at 19:45", ms)
	}
	if d := cmp.Diff([]string{"before the move", "during the move"}, texts(ms[0].SortedComments())); d != "" {
		t.Errorf("comments of the moved meal (-want +got):\n%s", d)
	}
	if !strings.HasPrefix(ms[0].ID, "194500-") {
		t.Errorf("moved meal ID = %s", ms[0].ID)
	}
}

// TestAddCommentKeepsEveryAttribute: a comment changes the row's
// comments and comment_rev and nothing else, to the digit: photo_v is a
// nanosecond time past 2^53, which an update expression evaluated as
// float64 (the in-process emulator's) would round, breaking the photo's
// version.
func TestAddCommentKeepsEveryAttribute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db, tables := newStore(t)
	kcal, err := meal.ParseNumber("523.5", decimal.NewFromInt(100000))
	if err != nil {
		t.Fatal(err)
	}
	m := &meal.Meal{UserID: "u1", Date: "2026-09-02", Time: "12:30:00", Kind: meal.Lunch, Notes: "soup", Kcal: kcal,
		Photo: meal.Photo{PhotoV: 1_790_000_000_000_000_001, PhotoW: 1536, PhotoH: 2048, ThumbW: 480, ThumbH: 640, PhotoSet: 0x7fff}}
	if err := s.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	raw := func() map[string]types.AttributeValue {
		t.Helper()
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tables.Meals.Name), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: "u1"}, "sk": &types.AttributeValueMemberS{Value: m.SK}}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item
	}
	before := raw()
	at := time.Date(2026, 9, 3, 18, 7, 0, 0, time.UTC)
	for _, c := range []meal.Comment{comment(at, "share-a", "More greens?"), comment(at.Add(time.Minute), "share-a", "And water.")} {
		if err := s.AddComment(ctx, "u1", date(t, m.Date), m.ID, c); err != nil {
			t.Fatal(err)
		}
	}
	after := raw()
	if n, ok := after["photo_v"].(*types.AttributeValueMemberN); !ok || n.Value != "1790000000000000001" {
		t.Errorf("photo_v after two comments = %#v, want N 1790000000000000001", after["photo_v"])
	}
	for _, k := range []string{"comments", "comment_rev"} {
		delete(before, k)
		delete(after, k)
	}
	if d := cmp.Diff(before, after, cmpopts.IgnoreUnexported(types.AttributeValueMemberN{}, types.AttributeValueMemberS{},
		types.AttributeValueMemberM{}, types.AttributeValueMemberBOOL{}, types.AttributeValueMemberL{})); d != "" {
		t.Errorf("attributes a comment changed besides its own (-before +after):\n%s", d)
	}
}

// TestMealAtTheCommentBound writes the largest meals item the bounds
// allow: notes of meal.MaxNotes characters, every number and photo
// attribute, a user ID of 255 bytes, and from each of
// meal.MaxCommentLinks links meal.MaxLinkComments comments of
// meal.MaxCommentText characters with labels of share.MaxLabel, as many
// again standing for the owner's replies, every character 4 bytes of
// UTF-8. It reads back whole and is at most boundItemBytes as DynamoDB
// counts it (DESIGN.md, comments through a link). Filled past the bound
// to within one comment of the limit, AddComment refuses the next. Under
// make dynamodb its twin, each character written as four ASCII ones (the
// bytes DynamoDB counts; dynalite counts UTF-16 units, half for a 4-byte
// character), is written too, and the server refuses it with that one
// comment more.
func TestMealAtTheCommentBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db, tables := newStore(t)
	owner := strings.Repeat("u", 255)
	for _, tc := range []struct {
		name string
		char string
	}{{"4-byte characters", "😀"}, {"ASCII of the same bytes", "abcd"}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.char == "abcd" && os.Getenv(apptest.DynamoEndpointEnv) == "" {
				t.Skip("the twin is for a server that enforces the limit: make dynamodb")
			}
			text := func(n int) string { return strings.Repeat(tc.char, n) }
			num := func(s string) *meal.Number {
				n, err := meal.ParseNumber(s, decimal.NewFromInt(100_000))
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			h, f := 5, 5
			m := &meal.Meal{UserID: owner, Date: "2026-09-02", Time: "12:30:00", Kind: meal.Breakfast, Notes: text(meal.MaxNotes),
				Kcal: num("9999.9"), ProteinG: num("999.9"), CarbsG: num("999.9"), FatG: num("999.9"), Hunger: &h, Fullness: &f,
				ImportID: strings.Repeat("i", 43)}
			if tc.char == "abcd" {
				m.Time = "12:31:00"
			}
			m.PhotoV, m.PhotoW, m.PhotoH, m.ThumbW, m.ThumbH, m.PhotoTaken, m.PhotoSet = 1_790_000_000_123_456_789, 2048, 2048, 480, 480, "2026-09-02T12:29:59", ^photoSetNone
			if err := s.Create(ctx, m); err != nil {
				t.Fatal(err)
			}
			d := date(t, m.Date)
			at := time.Date(2026, 9, 3, 18, 7, 0, 123456789, time.UTC)
			full := func(link, i int) meal.Comment {
				c := meal.Comment{ID: meal.NewCommentID(at.Add(time.Duration(link*100+i) * time.Minute)), ShareID: fmt.Sprintf("%016x", link),
					Label: text(share.MaxLabel), Text: text(meal.MaxCommentText), At: at.Add(time.Duration(link*100+i) * time.Minute)}
				return c
			}
			// Written at once (a comment at a time costs a minute under
			// the race detector); AddComment's per-link rule has its own
			// test.
			all := map[string]meal.Comment{}
			for link := range meal.MaxCommentLinks {
				for i := range 2 * meal.MaxLinkComments { // from 5: the replies' room
					c := full(link, i)
					all[c.ID] = c
				}
			}
			if err := s.CopyComments(ctx, m, all); err != nil {
				t.Fatalf("comments and the replies' room = %v", err)
			}
			got := get(t, s, m)
			if len(got.Comments) != 2*meal.MaxComments || got.Notes != m.Notes {
				t.Fatalf("read back %d comments, notes of %d bytes; want %d and %d", len(got.Comments), len(got.Notes), 2*meal.MaxComments, len(m.Notes))
			}
			out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tables.Meals.Name), ConsistentRead: aws.Bool(true),
				Key: map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: owner}, "sk": &types.AttributeValueMemberS{Value: got.SK}}})
			if err != nil {
				t.Fatal(err)
			}
			size := store.Size(out.Item)
			t.Logf("item at the bound: %d bytes as DynamoDB counts them, %d under its limit", size, store.MaxItemBytes-size)
			if size > boundItemBytes {
				t.Errorf("item at the bound = %d bytes, over the %d DESIGN.md allows", size, boundItemBytes)
			}

			// Past the bound (comments a move or an import brought, say):
			// filled to within one comment of the limit, the next is
			// refused before it is written.
			var probe, one meal.Meal
			one.Comments = map[string]meal.Comment{"x": full(0, 0)}
			entry := itemSize(t, &one) - itemSize(t, &probe)
			fit := (store.MaxItemBytes - size) / entry
			more := map[string]meal.Comment{}
			for i := range fit {
				c := full(meal.MaxCommentLinks+1, i)
				more[c.ID] = c
			}
			if err := s.CopyComments(ctx, m, more); err != nil {
				t.Fatalf("%d more comments, within the limit = %v", fit, err)
			}
			last := full(meal.MaxCommentLinks+2, 0)
			if err := s.AddComment(ctx, owner, d, m.ID, last); !errors.Is(err, meal.ErrNoRoom) {
				t.Errorf("a comment past the item's limit = %v, want ErrNoRoom", err)
			}
			if os.Getenv(apptest.DynamoEndpointEnv) == "" {
				return
			}
			over := get(t, s, m)
			over.Comments[last.ID] = last
			item, err := attributevalue.MarshalMap(over)
			if err != nil {
				t.Fatal(err)
			}
			_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tables.Meals.Name), Item: item})
			if tc.char == "abcd" && (err == nil || !strings.Contains(err.Error(), "size")) {
				t.Errorf("the server took an item of %d bytes (%v); want it refused as over its size limit", store.Size(item), err)
			}
		})
	}
}

// itemSize is m's size as a meals item, as DynamoDB counts it.
func itemSize(t *testing.T, m *meal.Meal) int {
	t.Helper()
	item, err := attributevalue.MarshalMap(m)
	if err != nil {
		t.Fatal(err)
	}
	return store.Size(item)
}

// boundItemBytes is the size DESIGN.md gives for a meals item at the
// comment bound (comments through a link).
const boundItemBytes = 360_000

// photoSetNone is the empty photo set: its complement names every copy.
const photoSetNone photo.Set = 0
