package share

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"ndiro/internal/meal"
)

// crowding says why a link taking comments cannot cover from..to: the
// days where meal.MaxCommentLinks links take comments already (first and
// last of them) and those links' names, for the owner only.
type crowding struct {
	first, last meal.Date
	names       []string
}

// message words c for the create form's "comments" field.
func (c *crowding) message() string {
	return fmt.Sprintf("On %s, %d links take comments already: %s. A day may have at most %d, so that each keeps room on every meal. Untick “Let them comment”, choose other days, or revoke one of them (a link no longer working counts until its comments on those days are deleted).",
		rangeText(c.first, c.last), meal.MaxCommentLinks, strings.Join(c.names, ", "), meal.MaxCommentLinks)
}

// crowded returns why ownerID may not make another link taking comments
// over from..to at now, or nil if they may (DESIGN.md, comments through a
// link). A day counts the owner's links that take comments, have not
// expired and cover it, and on each of its meals also the links gone
// since (revoked, expired, imported) whose comments the meal holds: each
// meal must keep room for every link that may comment on it. It reads
// the owner's links (a Scan, as the list page does) and the range's
// meals, one Query per PageDays.
func (h *Handler) crowded(ctx context.Context, ownerID string, from, to meal.Date, now time.Time) (*crowding, error) {
	links, err := h.store.ListByOwner(ctx, ownerID)
	if err != nil {
		return nil, err
	}
	var live []*Share
	for i := range links {
		sh := &links[i]
		lf, lt := sh.Range()
		if sh.Comments && !sh.Expired(now) && !lt.Before(from) && !to.Before(lf) {
			live = append(live, sh)
		}
	}
	var c *crowding
	names := map[string]string{} // link ID → its name in the message
	crowd := func(d meal.Date, ids map[string]string) {
		if len(ids) < meal.MaxCommentLinks {
			return
		}
		if c == nil {
			c = &crowding{first: d}
		}
		c.last = d
		for id, name := range ids {
			names[id] = name
		}
	}
	for ws := from; !to.Before(ws); ws = ws.AddDays(PageDays) {
		we := ws.AddDays(PageDays - 1)
		if to.Before(we) {
			we = to
		}
		meals, err := h.meals.Window(ctx, ownerID, ws, we)
		if err != nil {
			return nil, err
		}
		byDay := map[string][]*meal.Meal{}
		for i := range meals {
			byDay[meals[i].Date] = append(byDay[meals[i].Date], &meals[i])
		}
		for d := ws; !we.Before(d); d = d.AddDays(1) {
			day := map[string]string{}
			for _, sh := range live {
				if sh.Contains(d) {
					day[ID(sh.Token)] = "“" + sh.Label + "”"
				}
			}
			crowd(d, day)
			for _, m := range byDay[d.String()] {
				ids := make(map[string]string, len(day))
				for id, name := range day {
					ids[id] = name
				}
				for _, cm := range m.Comments {
					if _, ok := ids[cm.ShareID]; !ok {
						ids[cm.ShareID] = "“" + cm.Label + "” (no longer working)"
					}
				}
				crowd(d, ids)
			}
		}
	}
	if c != nil {
		for _, name := range names {
			c.names = append(c.names, name)
		}
		sort.Strings(c.names)
	}
	return c, nil
}

// ownerLocks holds one lock per owner, taken while a link taking comments
// is checked (crowded) and written, so that two made at once cannot both
// pass the check: one process makes every write (the lease, the data
// directory's lock), so an in-process lock is exact. The zero value is
// ready to use.
type ownerLocks struct {
	mu   sync.Mutex
	held map[string]*ownerLock
}

type ownerLock struct {
	mu    sync.Mutex
	users int
}

// lock takes ownerID's lock and returns its release.
func (l *ownerLocks) lock(ownerID string) (unlock func()) {
	l.mu.Lock()
	if l.held == nil {
		l.held = map[string]*ownerLock{}
	}
	o := l.held[ownerID]
	if o == nil {
		o = &ownerLock{}
		l.held[ownerID] = o
	}
	o.users++
	l.mu.Unlock()
	o.mu.Lock()
	return func() {
		o.mu.Unlock()
		l.mu.Lock()
		if o.users--; o.users == 0 {
			delete(l.held, ownerID)
		}
		l.mu.Unlock()
	}
}
