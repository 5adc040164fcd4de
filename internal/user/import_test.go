package user_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"ndiro/internal/user"
)

// TestImportState: an import starts only on an active account with no
// import running; its state is saved only while it is the running one
// and the account is not being deleted; the next request reads it.
func TestImportState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newStore(t)
	w.create(t, "u1")
	start := w.clock.Now().UTC()
	imp := user.Import{ID: "imp1", Prefix: "pending/u1/import/imp1/", Size: 100, PartSize: 8 << 20, State: user.ImportRunning, Total: 3, StartedAt: start}
	if err := w.s.StartImport(ctx, "u1", imp); err != nil {
		t.Fatal(err)
	}
	if err := w.s.StartImport(ctx, "u1", user.Import{ID: "imp2", State: user.ImportRunning}); !errors.Is(err, user.ErrImportRunning) {
		t.Fatalf("StartImport while one runs = %v, want ErrImportRunning", err)
	}
	imp.Next, imp.Imported = 2, 1
	imp.Note(user.ImportNote{Index: 1, Date: "2026-09-01", Time: "12:00:00", Kind: "photo", Msg: "no photo"})
	if err := w.s.SaveImport(ctx, "u1", imp); err != nil {
		t.Fatal(err)
	}
	u, err := w.s.Get(ctx, "u1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(&imp, u.Import); d != "" {
		t.Errorf("import as read (-saved +read):\n%s", d)
	}
	if got, err := w.s.ListImporting(ctx); err != nil || len(got) != 1 || got[0].ID != "u1" {
		t.Errorf("ListImporting = %v, %v; want u1", got, err)
	}
	// Another import's save is refused: only the running one writes.
	other := imp
	other.ID = "imp2"
	if err := w.s.SaveImport(ctx, "u1", other); !errors.Is(err, user.ErrState) {
		t.Errorf("SaveImport of another import = %v, want ErrState", err)
	}
	done := w.clock.Now().UTC()
	imp.State, imp.FinishedAt = user.ImportDone, &done
	if err := w.s.SaveImport(ctx, "u1", imp); err != nil {
		t.Fatal(err)
	}
	if err := w.s.SaveImport(ctx, "u1", imp); !errors.Is(err, user.ErrState) {
		t.Errorf("SaveImport of a finished import = %v, want ErrState", err)
	}
	if got, err := w.s.ListImporting(ctx); err != nil || len(got) != 0 {
		t.Errorf("ListImporting after the end = %v, %v; want none", got, err)
	}
	// A finished import is replaced by the next.
	next := user.Import{ID: "imp3", State: user.ImportRunning, StartedAt: start}
	if err := w.s.StartImport(ctx, "u1", next); err != nil {
		t.Fatalf("StartImport after one finished: %v", err)
	}
	// A deletion stops every write of the import.
	if _, err := w.s.MarkDeleting(ctx, "u1", "photos", w.clock.Now()); err != nil {
		t.Fatal(err)
	}
	next.Next = 1
	if err := w.s.SaveImport(ctx, "u1", next); !errors.Is(err, user.ErrState) {
		t.Errorf("SaveImport while deleting = %v, want ErrState", err)
	}
	if err := w.s.StartImport(ctx, "nobody", user.Import{ID: "x", State: user.ImportRunning}); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("StartImport of no such row = %v, want ErrNotFound", err)
	}
	w.create(t, "u2")
	if err := w.s.SetDisabled(ctx, "u2", true); err != nil {
		t.Fatal(err)
	}
	if err := w.s.StartImport(ctx, "u2", user.Import{ID: "x", State: user.ImportRunning}); !errors.Is(err, user.ErrState) {
		t.Errorf("StartImport on a disabled account = %v, want ErrState", err)
	}
}

// TestImportNotesBounded: notes past MaxImportNotes are counted, not kept.
func TestImportNotesBounded(t *testing.T) {
	t.Parallel()
	var imp user.Import
	for i := range user.MaxImportNotes + 7 {
		imp.Note(user.ImportNote{Index: i})
	}
	if len(imp.Notes) != user.MaxImportNotes || imp.Dropped != 7 || imp.Notes[0].Index != 0 {
		t.Errorf("after %d notes: %d kept, %d dropped; want %d and 7", user.MaxImportNotes+7, len(imp.Notes), imp.Dropped, user.MaxImportNotes)
	}
}

// TestMovedImport: the import a move stopped is written on the new row of
// a move from the old ID, again by a re-run, and nowhere else: not on a
// row that is not moving, not from another old ID, not over another
// import, and never as running.
func TestMovedImport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newStore(t)
	old := w.create(t, "u1")
	w.create(t, "u3")
	if _, err := w.s.CreateMoving(ctx, old, "u2", "https://issuer.example", "photos"); err != nil {
		t.Fatal(err)
	}
	done := w.clock.Now().UTC()
	imp := user.Import{ID: "imp1", Prefix: "pending/u1/import/imp1/", Size: 10, PartSize: 10,
		State: user.ImportFailed, Error: "moved", Total: 4, Next: 2, Imported: 2, StartedAt: done, FinishedAt: &done}
	for range 2 {
		if err := w.s.MovedImport(ctx, "u2", "u1", imp); err != nil {
			t.Fatalf("MovedImport on the new row = %v, want nil (twice: a re-run)", err)
		}
	}
	u, err := w.s.Get(ctx, "u2")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(&imp, u.Import); d != "" {
		t.Errorf("import on the new row (-written +read):\n%s", d)
	}
	other := imp
	other.ID = "imp2"
	for _, c := range []struct {
		name, id, from string
		imp            user.Import
	}{
		{"a row not moving", "u3", "u1", imp},
		{"another old ID", "u2", "u9", imp},
		{"over another import", "u2", "u1", other},
	} {
		if err := w.s.MovedImport(ctx, c.id, c.from, c.imp); !errors.Is(err, user.ErrState) {
			t.Errorf("MovedImport on %s = %v, want ErrState", c.name, err)
		}
	}
	running := imp
	running.State = user.ImportRunning
	if err := w.s.MovedImport(ctx, "u2", "u1", running); err == nil {
		t.Error("MovedImport of a running import = nil, want an error")
	}
}
