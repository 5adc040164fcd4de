// Package demo fills an empty local ndiro with a demo owner: six weeks of
// meals with generated food photos, notes and numbers, and a share link,
// so that someone trying ndiro sees the product at once (make demo,
// NDIRO_DEMO=1). The users row is written last and is the record that the
// demo was seeded: a second start finds it and seeds nothing.
package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/jpeg"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/shopspring/decimal"
	"golang.org/x/sync/errgroup"

	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/share"
	"ndiro/internal/user"
)

// Email is the demo owner's email: sign in as it on local mode's sign-in
// page.
const Email = "demo@example.com"

// Name is the demo owner's display name, the heading of the share link.
const Name = "Sam (demo)"

// Defaults of Options.
const (
	DefaultDays        = 42
	DefaultPhotoWidth  = 1024
	DefaultPhotoHeight = 768
)

// Deps are the stores Seed writes to.
type Deps struct {
	Users    *user.Store
	Meals    *meal.Store
	Photos   *photo.Store
	Shares   *share.Store
	Pipeline *photo.Pipeline
	// Now is the clock: the six weeks end today, in UTC.
	Now func() time.Time
}

// Options shape the demo data. The zero value is the full demo.
type Options struct {
	// OwnerID is the demo owner's user ID: the subject local sign-in gives
	// Email (localenv.Subject(Email)). Required.
	OwnerID string
	// Days of meals, ending today; 0 is DefaultDays.
	Days int
	// PhotoWidth and PhotoHeight are the generated photos' size before the
	// upload pipeline; 0 is 1024×768. Tests use small ones.
	PhotoWidth, PhotoHeight int
}

// Result says what Seed found or did.
type Result struct {
	// Seeded is false when the demo owner existed already and nothing was
	// written.
	Seeded bool
	// Meals is how many meals were written.
	Meals int
	// ShareToken is the demo owner's share link token ("" if none).
	ShareToken string
}

// Seed writes the demo owner's meals (photos first, then the row, as an
// upload does), a share link over the last 14 days, and last the users
// row. If that row exists, Seed writes nothing and returns the existing
// share link. A seed cut short is finished by the next one: meal IDs come
// from a seeded random source, so meals already written are skipped
// (meal.ErrExists), and a share is made only if the owner has none.
func Seed(ctx context.Context, d Deps, o Options) (*Result, error) {
	if o.OwnerID == "" {
		return nil, errors.New("demo: no owner id")
	}
	days, w, h := o.Days, o.PhotoWidth, o.PhotoHeight
	if days <= 0 {
		days = DefaultDays
	}
	if w <= 0 || h <= 0 {
		w, h = DefaultPhotoWidth, DefaultPhotoHeight
	}
	res := &Result{}
	if _, err := d.Users.Get(ctx, o.OwnerID); err == nil {
		res.ShareToken, err = shareToken(ctx, d, o.OwnerID)
		return res, err
	} else if !errors.Is(err, user.ErrNotFound) {
		return nil, fmt.Errorf("demo: %w", err)
	}

	now := d.Now().UTC()
	today := meal.DateOf(now)
	var plan []planned
	for i := days - 1; i >= 0; i-- {
		plan = append(plan, planDay(today.AddDays(-i), now)...)
	}
	var (
		mu   sync.Mutex
		used user.Usage // every meal's, those a seed cut short wrote too
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(2)
	for i, p := range plan {
		g.Go(func() error {
			m, created, err := write(gctx, d, o.OwnerID, p, photo.Version(now.UnixNano()+int64(i)), w, h)
			mu.Lock()
			defer mu.Unlock()
			if created {
				res.Meals++
			}
			if m != nil {
				used.Meals++
				used.PhotoBytes += m.PhotoBytes
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	tok, err := shareToken(ctx, d, o.OwnerID)
	if err != nil {
		return nil, err
	}
	if tok == "" {
		sh, err := d.Shares.Create(ctx, share.Share{
			OwnerID: o.OwnerID, Label: "Dr. Rossi, dietitian (demo)",
			From: today.AddDays(-13).String(), To: today.String(),
			Notes: true, Numbers: true, CreatedAt: now,
		})
		if err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		tok = sh.Token
	}
	res.ShareToken = tok
	err = d.Users.Create(ctx, &user.User{
		ID: o.OwnerID, Email: Email, Role: user.RoleOwner, Status: user.StatusActive,
		Name: Name, NameSet: true, CreatedAt: now, Usage: used,
	})
	if err != nil && !errors.Is(err, user.ErrExists) {
		return nil, fmt.Errorf("demo: %w", err)
	}
	res.Seeded = true
	return res, nil
}

// shareToken returns the token of one of ownerID's share links, "" if it
// has none.
func shareToken(ctx context.Context, d Deps, ownerID string) (string, error) {
	shares, err := d.Shares.ListByOwner(ctx, ownerID)
	if err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	if len(shares) == 0 {
		return "", nil
	}
	return shares[0].Token, nil
}

// planned is one demo meal and the seed of its photo.
type planned struct {
	meal  meal.Meal
	dish  dish
	seed  uint64
	photo bool
}

// planDay returns the meals of day d, each decided by a random source
// seeded with the date, so that a re-run plans the same meals with the
// same IDs. On today, only meals before now.
func planDay(d meal.Date, now time.Time) []planned {
	seed := uint64(d.Time().Unix() / 86400)
	rng := rand.New(rand.NewPCG(seed, 0xd1e7))
	var out []planned
	add := func(kind meal.Kind, h, m int) {
		at := time.Date(d.Time().Year(), d.Time().Month(), d.Time().Day(), h, m, rng.IntN(60), 0, time.UTC)
		if at.After(now) {
			return
		}
		tod := meal.TimeOfDayOf(at)
		menu := menus[kind]
		ds := menu[rng.IntN(len(menu))]
		mm := meal.Meal{
			ID:   fmt.Sprintf("%02d%02d%02d-%06x", h, m, at.Second(), rng.Uint32()&0xffffff),
			Date: d.String(), Time: tod.String(), Kind: kind, Notes: ds.name,
		}
		if rng.IntN(10) > 0 { // now and then a meal without numbers
			vary := func(base int) *meal.Number {
				n := meal.NumberOf(decimal.New(int64(base*(90+rng.IntN(21))/10), -1))
				return &n
			}
			mm.Kcal = vary(ds.kcal)
			mm.ProteinG, mm.CarbsG, mm.FatG = vary(ds.protein), vary(ds.carbs), vary(ds.fat)
		}
		if kind != meal.Drink && rng.IntN(3) == 0 {
			hunger, full := 2+rng.IntN(3), 3+rng.IntN(3)
			mm.Hunger, mm.Fullness = &hunger, &full
		}
		out = append(out, planned{meal: mm, dish: ds, seed: rng.Uint64(), photo: rng.IntN(12) > 0})
	}
	add(meal.Breakfast, 7+rng.IntN(2), rng.IntN(60))
	if rng.IntN(10) < 3 {
		add(meal.Drink, 10, rng.IntN(60))
	}
	add(meal.Lunch, 12+rng.IntN(2), rng.IntN(45))
	if rng.IntN(2) == 0 {
		add(meal.Snack, 15+rng.IntN(2), rng.IntN(60))
	}
	if rng.IntN(10) < 9 {
		add(meal.Dinner, 18+rng.IntN(3), rng.IntN(60))
	}
	return out
}

// write stores one planned meal: its photo through the upload pipeline
// (both copies, tagged with v), then its row, and returns the meal as
// stored (nil on error). created is false for a meal a cut-short seed had
// already written.
func write(ctx context.Context, d Deps, ownerID string, p planned, v photo.Version, w, h int) (_ *meal.Meal, created bool, err error) {
	m := p.meal
	m.UserID = ownerID
	if had, err := d.Meals.Get(ctx, ownerID, meal.DateOf(m.DateTime()), m.ID); err == nil {
		return had, false, nil // written by a seed cut short: keep it and its photo
	} else if !errors.Is(err, meal.ErrNotFound) {
		return nil, false, fmt.Errorf("demo: %w", err)
	}
	now := d.Now().UTC()
	m.CreatedAt, m.UpdatedAt = now, now
	if p.photo {
		img := drawPhoto(rand.New(rand.NewPCG(p.seed, 1)), p.dish, w, h)
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
			return nil, false, fmt.Errorf("demo: encode photo: %w", err)
		}
		proc, err := d.Pipeline.Process(ctx, buf.Bytes())
		if err != nil {
			return nil, false, fmt.Errorf("demo: photo: %w", err)
		}
		m.Photo = meal.PhotoOf(proc, v)
		keys := m.PhotoKeys()
		if err := d.Photos.Put(ctx, keys[0], proc.Display, v); err != nil {
			return nil, false, err
		}
		if err := d.Photos.Put(ctx, keys[1], proc.Thumb, v); err != nil {
			return nil, false, err
		}
	}
	err = d.Meals.Create(ctx, &m)
	if errors.Is(err, meal.ErrExists) {
		return &m, false, nil // the same planned meal, written meanwhile
	}
	if err != nil {
		return nil, false, fmt.Errorf("demo: %w", err)
	}
	return &m, true, nil
}
