package meal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"ndiro/internal/dynamo"
	"ndiro/internal/photo"
	"ndiro/internal/user"
)

// RecordSet records on m's row, read at m.Version and m.CommentRev,
// that its photo's copies are set (photo_set): the variant job's write.
// It is a whole-item write conditional on the row being as read
// (readCondition), and keeps version and updated_at as they were, so it
// never turns an owner's open edit form into a conflict; comments written
// since the read are carried over and the write made again, as Update
// does. A row gone is ErrNotFound, one changed meanwhile (its photo
// replaced, its fields edited) ErrConflict. On success m.PhotoSet is set.
//
// Not an UpdateItem: the in-process emulator rewrites every number of an
// item it updates through a float64, which would round photo_v (19
// digits) and with it every URL of the photo.
func (s *Store) RecordSet(ctx context.Context, m *Meal, set photo.Set) error {
	for attempt := 1; ; attempt++ {
		rec := *m
		rec.PhotoSet = set
		err := s.replace(ctx, &rec, m.Version, m.CommentRev)
		var cc *commentsChanged
		if errors.As(err, &cc) && attempt < commentAttempts {
			m.Comments, m.CommentRev = cc.latest.Comments, cc.latest.CommentRev
			continue
		}
		if err != nil {
			return fmt.Errorf("meal: record set: %w", err)
		}
		m.PhotoSet = set
		return nil
	}
}

// VariantDeps are what the variant job reads, writes and how.
type VariantDeps struct {
	Rows interface {
		Get(ctx context.Context, userID string, d Date, id string) (*Meal, error)
		RecordSet(ctx context.Context, m *Meal, set photo.Set) error
		ScanPhotos(ctx context.Context, pace dynamo.Pace, fn func(*Meal) error) error
	}
	Objects interface {
		Get(ctx context.Context, ownerID, key string) (*photo.Object, error)
		Put(ctx context.Context, key string, body []byte, v photo.Version) error
		Delete(ctx context.Context, ownerID string, keys ...string) error
	}
	// Make makes copies of a display copy (photo.Pipeline.MakeVariants:
	// admitted against the decode budget).
	Make func(ctx context.Context, display []byte, want photo.Set) (map[photo.Size][]byte, error)
	// Gate is the accounts' write gate: the job writes a meal's objects
	// only inside it, so an account's deletion waits for it and is never
	// followed by an object of the job.
	Gate *user.Gate
	// Forget drops a key's bytes from the photo cache.
	Forget func(key string)
	// Usage adds the copies' bytes to their owner's user.Usage once they
	// are recorded (user.Store.AddUsage); nil counts nothing.
	Usage func(ctx context.Context, id string, add user.Usage) (user.Usage, error)
	// Pace pays for the scan's reads (dynamo.ScanPaced); nil is unpaced.
	Pace dynamo.Pace
	// Duty is the share of one core the job's photo work may take over
	// time: after a photo that took d, it rests d × (1/Duty − 1). 0 is
	// DefaultDuty.
	Duty float64
	// Rescan is how often the whole table is looked through again for
	// photos without their copies; 0 is DefaultRescan.
	Rescan time.Duration
	// Sleep waits d or until ctx ends; nil is a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	Log   *slog.Logger
}

// Defaults of the variant job.
const (
	// DefaultDuty: the job takes at most a quarter of a core, leaving
	// the rest of the two to requests and uploads.
	DefaultDuty = 0.25
	// DefaultRescan: a full look through the table every six hours
	// catches any photo a kick missed (a restart, a move, a failure).
	DefaultRescan = 6 * time.Hour
	// kickQueue is how many kicked meals wait at most; more are left to
	// the next scan.
	kickQueue = 256
)

// ref names one meal.
type ref struct{ userID, date, id string }

// Variants is the background job that gives every photo its sized copies
// (photo.Full: square thumbnails and display sizes, JPEG and WebP),
// DESIGN.md, photos. An upload stores the display copy and the thumbnail
// as before and kicks the job, which makes the rest from the display copy
// within seconds; at start and every Rescan it looks through the whole
// table (paced) for photos stored before sizing, or whose copies a
// failure left unmade. Pages show what a meal's PhotoSet holds, so until
// the job has been by, a photo is served from the copies it has; no
// request ever writes a copy.
//
// Each photo is done inside its owner's write gate: the row read again,
// the display copy read and checked to be of the row's photo_v, the
// copies made (admitted against the decode budget, WebP in its worker),
// put, then recorded with RecordSet. A photo replaced, moved or deleted
// meanwhile makes RecordSet fail, and the copies just put are deleted:
// no row names them. The job works one photo at a time, and rests after
// each (Duty).
type Variants struct {
	d    VariantDeps
	kick chan ref
}

// NewVariants returns the job on d; Run runs it.
func NewVariants(d VariantDeps) *Variants {
	if d.Pace == nil {
		d.Pace = func(context.Context, int) error { return nil }
	}
	if d.Duty <= 0 || d.Duty > 1 {
		d.Duty = DefaultDuty
	}
	if d.Rescan <= 0 {
		d.Rescan = DefaultRescan
	}
	if d.Sleep == nil {
		d.Sleep = func(ctx context.Context, t time.Duration) error {
			tm := time.NewTimer(t)
			defer tm.Stop()
			select {
			case <-tm.C:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return &Variants{d: d, kick: make(chan ref, kickQueue)}
}

// Kick asks the job to make m's copies soon (after an upload, a replace
// or a move). It never blocks: with kickQueue meals waiting, m is left to
// the next scan.
func (v *Variants) Kick(m *Meal) {
	if v == nil || !m.HasPhoto() {
		return
	}
	select {
	case v.kick <- ref{m.UserID, m.Date, m.ID}:
	default:
	}
}

// Run scans once, then does kicked meals as they come and scans again
// every Rescan, until ctx ends (its error). A failed photo or scan is
// logged and left to the next scan.
func (v *Variants) Run(ctx context.Context) error {
	scan := time.NewTimer(0)
	defer scan.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case r := <-v.kick:
			if err := v.one(ctx, r); err != nil && ctx.Err() == nil {
				v.d.Log.Warn("photo copies not made", "user_id", r.userID, "err", err)
			}
		case <-scan.C:
			if err := v.Scan(ctx); err != nil && ctx.Err() == nil {
				v.d.Log.Error("photo copies scan failed", "err", err)
			}
			scan.Reset(v.d.Rescan)
		}
	}
}

// Scan looks through every meals row (paced) and makes the copies of each
// photo that lacks some, one at a time, resting after each; it returns
// the scan's error, or ctx's. A photo that fails is logged and skipped.
// It returns how many photos it gave copies.
func (v *Variants) Scan(ctx context.Context) error {
	var todo []ref
	err := v.d.Rows.ScanPhotos(ctx, v.d.Pace, func(m *Meal) error {
		if m.HasPhoto() && m.PhotoSet.Missing(photo.Full(m.PhotoSet, m.PhotoW, m.PhotoH)) != 0 {
			todo = append(todo, ref{m.UserID, m.Date, m.ID})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range todo {
		if err := v.one(ctx, r); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			v.d.Log.Warn("photo copies not made", "user_id", r.userID, "err", err)
		}
	}
	return nil
}

// one makes the missing copies of the meal r, then rests.
func (v *Variants) one(ctx context.Context, r ref) error {
	start := time.Now()
	err := v.Make(ctx, r.userID, r.date, r.id)
	if rest := time.Duration(float64(time.Since(start)) * (1/v.d.Duty - 1)); rest > 0 {
		if serr := v.d.Sleep(ctx, rest); serr != nil && err == nil {
			err = serr
		}
	}
	return err
}

// Make gives the photo of userID's meal id on date the copies it lacks
// (photo.Full), inside the owner's write gate, and returns nil when it
// has them all, or when there is nothing to do: the meal or its photo is
// gone, the account is being deleted, or the display copy is of another
// version than the row (a replace under way: its own kick follows).
func (v *Variants) Make(ctx context.Context, userID, date, id string) error {
	d, err := ParseDate(date)
	if err != nil {
		return nil
	}
	release, err := v.d.Gate.Enter(userID)
	if errors.Is(err, user.ErrClosed) {
		return nil
	}
	if err != nil {
		return err
	}
	defer release()
	m, err := v.d.Rows.Get(ctx, userID, d, id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	missing := m.PhotoSet.Missing(photo.Full(m.PhotoSet, m.PhotoW, m.PhotoH))
	if !m.HasPhoto() || missing == 0 {
		return nil
	}
	display, err := v.d.Objects.Get(ctx, userID, photo.Key(userID, m.Date, m.ID, photo.SizeDisplay))
	if errors.Is(err, photo.ErrNotFound) {
		return nil // the orphan check's business
	}
	if err != nil {
		return err
	}
	if display.Version != m.PhotoV {
		return nil
	}
	made, err := v.d.Make(ctx, display.Body, missing)
	if err != nil {
		return err
	}
	var (
		put   []string
		added int64
	)
	set := m.PhotoSet.Of()
	for _, size := range missing.Sizes() {
		body, ok := made[size]
		if !ok {
			continue
		}
		key := photo.Key(userID, m.Date, m.ID, size)
		if err := v.d.Objects.Put(ctx, key, body, m.PhotoV); err != nil {
			v.undo(ctx, userID, put)
			return err
		}
		v.d.Forget(key)
		put = append(put, key)
		added += int64(len(body))
		set |= photo.SetOf(size)
	}
	if err := v.record(ctx, m, set, added); err != nil {
		v.undo(ctx, userID, put)
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) {
			return nil
		}
		return err
	}
	if v.d.Usage != nil && added > 0 {
		if _, err := v.d.Usage(context.WithoutCancel(ctx), userID, user.Usage{PhotoBytes: added}); err != nil {
			v.d.Log.Warn("usage not counted", "user_id", userID, "err", err)
		}
	}
	return nil
}

// record writes set on m's row (RecordSet), with added, the bytes of the
// copies put, added to its PhotoBytes. A row edited meanwhile with its
// photo kept is read again and written again, up to recordAttempts
// times; ErrConflict once its photo changed, ErrNotFound once it is gone.
func (v *Variants) record(ctx context.Context, m *Meal, set photo.Set, added int64) error {
	var err error
	for range recordAttempts {
		rec := *m
		rec.PhotoBytes += added
		if err = v.d.Rows.RecordSet(ctx, &rec, set); !errors.Is(err, ErrConflict) {
			return err
		}
		latest, gerr := v.d.Rows.Get(ctx, m.UserID, mustDate(m.Date), m.ID)
		if gerr != nil {
			return gerr
		}
		if latest.PhotoV != m.PhotoV {
			return err
		}
		m = latest
	}
	return err
}

// undo deletes the copies put for a photo no row will name, past a
// cancelled ctx too; a failure is logged (the orphan check finds them).
func (v *Variants) undo(ctx context.Context, userID string, keys []string) {
	if len(keys) == 0 {
		return
	}
	if err := v.d.Objects.Delete(context.WithoutCancel(ctx), userID, keys...); err != nil {
		v.d.Log.Error("photo delete failed", "user_id", userID, "err", err)
	}
	for _, k := range keys {
		v.d.Forget(k)
	}
}
