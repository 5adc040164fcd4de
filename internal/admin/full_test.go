package admin_test

import (
	"net/http"
	"testing"
	"time"

	"ndiro/internal/admin"
	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/photo"
)

// TestCleanWaitsOutAFullDisk: a clean-up whose deletes storage refuses (a
// full disk) neither fails nor stops half-way: it waits, and once writes
// are taken again it repairs what is left.
func TestCleanWaitsOutAFullDisk(t *testing.T) {
	t.Parallel()
	f := &apptest.Faults{}
	app := apptest.New(t, apptest.Options{Faults: f})
	c := app.Client()
	c.SignIn(adminEmail)
	owner := localenv.Subject(adminEmail)
	for _, id := range []string{"100000-aaaaaa", "110000-bbbbbb", "120000-cccccc"} {
		putObject(t, app, photo.Key(owner, "2026-09-03", id, photo.SizeDisplay), "7")
	}
	app.Clock.Advance(2 * admin.Grace)
	if r := c.PostForm("/admin/monitor/check", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("check = %d", r.StatusCode)
	}
	if err := app.Monitor.WaitOrphans(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.DiskFull("DeleteObjects", "test-photos", 0)
	if r := c.PostForm("/admin/monitor/clean/photos-without-meal", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("clean = %d", r.StatusCode)
	}
	for deadline := time.Now().Add(30 * time.Second); f.Acted("DeleteObjects", "test-photos") < 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: %d deletes refused, want 3", f.Acted("DeleteObjects", "test-photos"))
		}
		if st := app.Monitor.Orphans(); !st.Running {
			t.Fatalf("the clean-up ended (error %q) after %d deletes refused, while storage refused writes", st.Err, f.Acted("DeleteObjects", "test-photos"))
		}
	}
	if st := app.Monitor.Orphans(); !st.Running || st.Err != "" || st.Phase != "waiting for storage to take writes" {
		t.Fatalf("clean-up on a full disk: running %v, phase %q, last error %q; want running, waiting, no error", st.Running, st.Phase, st.Err)
	}
	f.Clear()
	if err := app.Monitor.WaitOrphans(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := app.Monitor.Orphans(); st.Err != "" {
		t.Errorf("clean-up after the disk has room: last error %q", st.Err)
	}
	if got := keys(t, app, photo.UserPrefix(owner)); len(got) != 0 {
		t.Errorf("objects left after the clean-up: %v", got)
	}
}
