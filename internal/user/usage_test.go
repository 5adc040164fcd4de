package user_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"ndiro/internal/user"
	"ndiro/internal/web"
)

// TestAddUsage: AddUsage adds to the row's counts and moves its revision
// on, keeps the row as written in the cache (the next Get reads no
// item), reads back exactly (a count of 64 GiB and a byte, no exponent), and makes
// no row for an account that has none.
func TestAddUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newStore(t)
	w.create(t, "u1")
	steps := []struct {
		add, want user.Usage
	}{
		{user.Usage{Meals: 1, PhotoBytes: 380_000}, user.Usage{Meals: 1, PhotoBytes: 380_000}},
		{user.Usage{Meals: 1}, user.Usage{Meals: 2, PhotoBytes: 380_000}},
		{user.Usage{Meals: -1, PhotoBytes: -380_000}, user.Usage{Meals: 1}},
		{user.Usage{PhotoBytes: 64<<30 + 1}, user.Usage{Meals: 1, PhotoBytes: 64<<30 + 1}},
	}
	for i, st := range steps {
		got, err := w.s.AddUsage(ctx, "u1", st.add)
		if err != nil || got != st.want {
			t.Fatalf("step %d: AddUsage(%+v) = %+v, %v, want %+v", i, st.add, got, err, st.want)
		}
		u, gets, err := w.get(t, "u1")
		if err != nil || gets != 0 || u.Usage != st.want || u.UsageRev != int64(i+1) {
			t.Fatalf("step %d: Get = %+v rev %d with %d GetItems, %v; want %+v rev %d from the cache", i, u.Usage, u.UsageRev, gets, err, st.want, i+1)
		}
	}
	w.clock.Advance(user.CacheTTL)
	u, gets, err := w.get(t, "u1")
	if err != nil || gets != 1 || u.Usage != steps[len(steps)-1].want || u.UsageRev != int64(len(steps)) {
		t.Errorf("read back = %+v rev %d (%d GetItems, %v), want %+v rev %d", u.Usage, u.UsageRev, gets, err, steps[len(steps)-1].want, len(steps))
	}
	if got, err := w.s.AddUsage(ctx, "u1", user.Usage{}); err != nil || got != (user.Usage{}) {
		t.Errorf("AddUsage of nothing = %+v, %v, want the zero Usage and no write", got, err)
	}

	if _, err := w.s.AddUsage(ctx, "gone", user.Usage{Meals: 1}); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("AddUsage of no row = %v, want ErrNotFound", err)
	}
	w.clock.Advance(user.CacheTTL)
	if _, err := w.s.Get(ctx, "gone"); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("after AddUsage of no row, Get = %v, want still no row", err)
	}
}

// TestRepairUsage: the monitor's repair writes the recount only if no
// write changed the usage since it was read (the revision), the account
// is active and no import runs on it.
func TestRepairUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newStore(t)
	counted := user.Usage{Meals: 7, PhotoBytes: 7_000}
	read := func(id string) *user.User {
		t.Helper()
		w.clock.Advance(user.CacheTTL)
		u, err := w.s.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}

	// Never counted: revision 0.
	w.create(t, "fresh")
	if ok, err := w.s.RepairUsage(ctx, "fresh", 0, counted); !ok || err != nil {
		t.Fatalf("RepairUsage of a row never counted = %v, %v, want written", ok, err)
	}
	if u := read("fresh"); u.Usage != counted || u.UsageRev != 1 {
		t.Errorf("after the repair: %+v rev %d, want %+v rev 1", u.Usage, u.UsageRev, counted)
	}

	// A write since the recount began moved the revision on: kept.
	w.create(t, "busy")
	if _, err := w.s.AddUsage(ctx, "busy", user.Usage{Meals: 2}); err != nil {
		t.Fatal(err)
	}
	seen := read("busy").UsageRev
	if _, err := w.s.AddUsage(ctx, "busy", user.Usage{Meals: -1}); err != nil {
		t.Fatal(err)
	}
	if ok, err := w.s.RepairUsage(ctx, "busy", seen, counted); ok || err != nil {
		t.Errorf("RepairUsage after a write since = %v, %v, want not written", ok, err)
	}
	if u := read("busy"); u.Usage != (user.Usage{Meals: 1}) {
		t.Errorf("after a refused repair: %+v, want the writes' count kept", u.Usage)
	}
	if ok, err := w.s.RepairUsage(ctx, "busy", read("busy").UsageRev, counted); !ok || err != nil {
		t.Errorf("RepairUsage at the current revision = %v, %v, want written", ok, err)
	}

	// An import running, or an account not active: kept.
	w.create(t, "importing")
	if err := w.s.StartImport(ctx, "importing", user.Import{ID: "imp1", State: user.ImportRunning, Prefix: "p"}); err != nil {
		t.Fatal(err)
	}
	w.create(t, "off")
	if err := w.s.SetDisabled(ctx, "off", true); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"importing", "off", "nobody"} {
		if ok, err := w.s.RepairUsage(ctx, id, 0, counted); ok || err != nil {
			t.Errorf("RepairUsage(%s) = %v, %v, want not written", id, ok, err)
		}
	}
	if u := read("importing"); u.Usage != (user.Usage{}) {
		t.Errorf("repair with an import running wrote %+v", u.Usage)
	}
	if _, err := w.s.Get(ctx, "nobody"); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("repair of no row made one: %v", err)
	}
}

func TestQuotaRefuse(t *testing.T) {
	t.Parallel()
	q := user.Quota{Meals: 100_000, PhotoBytes: 64 << 30}
	for _, c := range []struct {
		name      string
		q         user.Quota
		u         user.Usage
		photoOnly bool
		want      string // in the message; "" is no refusal
	}{
		{name: "below", q: q, u: user.Usage{Meals: 99_999, PhotoBytes: 64<<30 - 1}},
		{name: "meals at the bound", q: q, u: user.Usage{Meals: 100_000}, want: "it holds 100,000 meals"},
		{name: "meals past the bound", q: q, u: user.Usage{Meals: 100_002}, want: "it holds 100,002 meals"},
		{name: "one meal", q: user.Quota{Meals: 1}, u: user.Usage{Meals: 1}, want: "it holds 1 meal,"},
		{name: "bytes at the bound", q: q, u: user.Usage{PhotoBytes: 64 << 30}, want: "its photos take 64.0 GB"},
		{name: "a photo, meals at the bound", q: q, u: user.Usage{Meals: 100_000}, photoOnly: true},
		{name: "a photo, bytes at the bound", q: q, u: user.Usage{PhotoBytes: 64 << 30}, photoOnly: true, want: "photos or meals you no longer need"},
		{name: "no bounds", u: user.Usage{Meals: 1 << 40, PhotoBytes: 1 << 50}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.q.Refuse(c.u, c.photoOnly)
			if c.want == "" {
				if err != nil {
					t.Fatalf("Refuse(%+v) = %v, want nil", c.u, err)
				}
				return
			}
			var we *web.Error
			if !errors.As(err, &we) || we.Status != http.StatusForbidden || !errors.Is(err, user.ErrQuota) || !strings.Contains(we.Msg, c.want) {
				t.Fatalf("Refuse(%+v) = %v, want a 403 wrapping ErrQuota saying %q", c.u, err, c.want)
			}
			if !strings.HasPrefix(we.Msg, "Your diary is full: ") || !strings.Contains(we.Msg, "so nothing was saved") {
				t.Errorf("message %q does not say the diary is full and nothing was saved", we.Msg)
			}
		})
	}
}
