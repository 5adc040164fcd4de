// Package disk is the storage seam's engine for one machine (local and
// server mode): items in one SQLite database, blobs as plain files, both
// under the data directory. It only translates the seam's requests
// (package store): a conditional write is one BEGIN IMMEDIATE
// transaction on the one writer connection that reads the item, checks
// the condition, and writes; a Query is a range of the primary key.
package disk

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	_ "github.com/ncruces/go-sqlite3/driver" // the "sqlite3" database/sql driver, CGo-free
	"github.com/shopspring/decimal"

	"ndiro/internal/store"
)

// DBFile is the database's file name in the data directory; SQLite keeps
// DBFile+"-wal" and DBFile+"-shm" beside it.
const DBFile = "ndiro.db"

// maxPageBytes is where a Query or Scan page ends at the latest, as
// DynamoDB's pages do: 1 MB of items read.
const maxPageBytes = 1 << 20

// schema is the one table every item lives in, keyed (table, partition
// key, sort key), so that one partition's range is one B-tree range;
// sk is "" in tables without a sort key. expires copies the table's TTL
// attribute, for the sweep of expired items.
const schema = `
CREATE TABLE IF NOT EXISTS items (
	tbl     TEXT NOT NULL,
	pk      TEXT NOT NULL,
	sk      TEXT NOT NULL,
	item    BLOB NOT NULL,
	expires INTEGER,
	PRIMARY KEY (tbl, pk, sk)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS items_expires ON items (expires) WHERE expires IS NOT NULL;
`

// Items is the item engine: store.Items on a SQLite database.
type Items struct {
	w      *sql.DB // the one writer connection
	r      *sql.DB // readers
	health *health // nil: no write health kept (OpenItems alone)
}

var _ store.Items = (*Items)(nil)

// OpenItems opens (creating if needed) the database at path in WAL mode
// with synchronous=FULL: a write is on disk before it is acknowledged.
// Close it when done.
func OpenItems(path string) (*Items, error) {
	// The file is made the owner's only before SQLite creates it; its
	// -wal and -shm files take the same mode.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("disk: open %s: %w", path, err)
	}
	f.Close()
	// busy_timeout first (the driver runs pragmas in order); auto_vacuum
	// takes effect on a new database only (the schema below creates the
	// first table); WAL is a property of the file, kept; synchronous is
	// named, as the driver's default under WAL is NORMAL (no fsync per
	// commit).
	w, err := sql.Open("sqlite3", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=auto_vacuum(INCREMENTAL)"+
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("disk: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	if _, err := w.Exec(schema); err != nil {
		w.Close()
		return nil, fmt.Errorf("disk: open %s: %w", path, err)
	}
	r, err := sql.Open("sqlite3", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)&_txlock=deferred")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("disk: open %s: %w", path, err)
	}
	// Readers no more than the cores: CPU-bound readers beyond them starve
	// the one writer.
	n := min(max(runtime.GOMAXPROCS(0), 2), 4)
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	return &Items{w: w, r: r}, nil
}

// Close closes the database.
func (d *Items) Close() error {
	return errors.Join(d.r.Close(), d.w.Close())
}

// Get implements store.Items. Every read sees every committed write.
func (d *Items) Get(ctx context.Context, t store.Table, k store.Key, r store.Read) (store.Item, bool, error) {
	var b []byte
	err := d.r.QueryRowContext(ctx, "SELECT item FROM items WHERE tbl = ? AND pk = ? AND sk = ?", t.Name, k.PK, k.SK).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("disk: get %s: %w", t.Name, err)
	}
	item, err := decode(b)
	if err != nil {
		return nil, false, fmt.Errorf("disk: get %s %q: %w", t.Name, k.PK, err)
	}
	return store.Project(item, r.Project), true, nil
}

// Put implements store.Items.
func (d *Items) Put(ctx context.Context, t store.Table, item store.Item, cond store.Cond) (store.Item, error) {
	k, ok := t.KeyOf(item)
	if !ok {
		return nil, fmt.Errorf("disk: put %s: the item has no key (%s, %s)", t.Name, t.PK, t.SK)
	}
	if err := store.CheckSize(item); err != nil {
		return nil, err
	}
	old, _, err := d.write(ctx, t, k, func(old store.Item) (store.Item, error) {
		if !cond.Matches(old) {
			return nil, &store.ConditionFailedError{Current: old}
		}
		return item, nil
	})
	return old, err
}

// Update implements store.Items.
func (d *Items) Update(ctx context.Context, t store.Table, k store.Key, u store.Update, cond store.Cond) (store.Item, error) {
	_, updated, err := d.write(ctx, t, k, func(old store.Item) (store.Item, error) {
		if !cond.Matches(old) {
			return nil, &store.ConditionFailedError{Current: old}
		}
		item, err := u.Apply(old, t.Attrs(k))
		if err != nil {
			return nil, err
		}
		if nk, ok := t.KeyOf(item); !ok || nk != k {
			return nil, fmt.Errorf("%w: it changes the key", store.ErrBadUpdate)
		}
		return item, store.CheckSize(item)
	})
	return updated, err
}

// Delete implements store.Items.
func (d *Items) Delete(ctx context.Context, t store.Table, k store.Key, cond store.Cond) (store.Item, error) {
	old, _, err := d.write(ctx, t, k, func(old store.Item) (store.Item, error) {
		if !cond.Matches(old) {
			return nil, &store.ConditionFailedError{Current: old}
		}
		return nil, nil
	})
	return old, err
}

// write runs one conditional write of the item at k as one transaction:
// read it, let change decide the new item (nil: delete), write, commit.
// It returns the item before and after.
func (d *Items) write(ctx context.Context, t store.Table, k store.Key, change func(old store.Item) (store.Item, error)) (old, updated store.Item, err error) {
	if err := d.health.ensure(); err != nil {
		return nil, nil, err
	}
	defer func() { err = d.health.failed(err) }()
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("disk: write %s: %w", t.Name, err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	var b []byte
	switch err := tx.QueryRowContext(ctx, "SELECT item FROM items WHERE tbl = ? AND pk = ? AND sk = ?", t.Name, k.PK, k.SK).Scan(&b); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return nil, nil, fmt.Errorf("disk: write %s: read: %w", t.Name, err)
	default:
		if old, err = decode(b); err != nil {
			return nil, nil, fmt.Errorf("disk: write %s %q: %w", t.Name, k.PK, err)
		}
	}
	updated, err = change(old)
	if err != nil {
		return nil, nil, err
	}
	if updated == nil {
		if old != nil {
			if _, err := tx.ExecContext(ctx, "DELETE FROM items WHERE tbl = ? AND pk = ? AND sk = ?", t.Name, k.PK, k.SK); err != nil {
				return nil, nil, fmt.Errorf("disk: delete %s: %w", t.Name, err)
			}
		}
	} else {
		enc, err := encode(updated)
		if err != nil {
			return nil, nil, fmt.Errorf("disk: write %s: %w", t.Name, err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO items (tbl, pk, sk, item, expires) VALUES (?, ?, ?, ?, ?)",
			t.Name, k.PK, k.SK, enc, expiry(t, updated)); err != nil {
			return nil, nil, fmt.Errorf("disk: write %s: %w", t.Name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, nil, fmt.Errorf("disk: write %s: commit: %w", t.Name, err)
	}
	return old, updated, nil
}

// expiry is the item's TTL attribute as epoch seconds, or nil (NULL)
// when its table has none or the item carries no number there.
func expiry(t store.Table, item store.Item) any {
	if t.TTL == "" {
		return nil
	}
	n, ok := item[t.TTL].(*types.AttributeValueMemberN)
	if !ok {
		return nil
	}
	d, err := decimal.NewFromString(n.Value)
	if err != nil {
		return nil
	}
	return d.IntPart()
}

// Query implements store.Items.
func (d *Items) Query(ctx context.Context, q store.Query) (store.Page, error) {
	var sb strings.Builder
	args := []any{q.Table.Name, q.PK}
	sb.WriteString("SELECT pk, sk, item FROM items WHERE tbl = ? AND pk = ?")
	lo, hi := q.SK.Bounds()
	if q.After != nil {
		if q.Reverse {
			hi = tighter(hi, store.Bound{Key: q.After.SK, Set: true}, false)
		} else {
			lo = tighter(lo, store.Bound{Key: q.After.SK, Set: true}, true)
		}
	}
	if lo.Set {
		sb.WriteString(map[bool]string{true: " AND sk >= ?", false: " AND sk > ?"}[lo.Inclusive])
		args = append(args, lo.Key)
	}
	if hi.Set {
		sb.WriteString(map[bool]string{true: " AND sk <= ?", false: " AND sk < ?"}[hi.Inclusive])
		args = append(args, hi.Key)
	}
	sb.WriteString(map[bool]string{false: " ORDER BY sk", true: " ORDER BY sk DESC"}[q.Reverse])
	return d.page(ctx, q.Table, sb.String(), args, q.Limit, q.Filter, q.Project, q.Consistent)
}

// tighter returns the tighter of a range's bound b and a cursor c (an
// exclusive bound): the larger for a lower bound, the smaller for an
// upper one.
func tighter(b, c store.Bound, lower bool) store.Bound {
	if !b.Set {
		return c
	}
	if lower && c.Key >= b.Key || !lower && c.Key <= b.Key {
		return c
	}
	return b
}

// Scan implements store.Items.
func (d *Items) Scan(ctx context.Context, s store.Scan) (store.Page, error) {
	query := "SELECT pk, sk, item FROM items WHERE tbl = ?"
	args := []any{s.Table.Name}
	if s.After != nil {
		query += " AND (pk, sk) > (?, ?)"
		args = append(args, s.After.PK, s.After.SK)
	}
	query += " ORDER BY pk, sk"
	return d.page(ctx, s.Table, query, args, s.Limit, s.Filter, s.Project, s.Consistent)
}

// page runs a Query's or Scan's statement and makes its page: at most
// limit items evaluated (0: no limit) and at most maxPageBytes read,
// filtered and projected after, with the read units DynamoDB would
// count. It reads one row past the page to know whether there is a next.
func (d *Items) page(ctx context.Context, t store.Table, query string, args []any, limit int, filter store.Cond, project []store.Path, consistent bool) (store.Page, error) {
	if limit > 0 {
		query += " LIMIT ?"
		args = append(args, limit+1)
	}
	rows, err := d.r.QueryContext(ctx, query, args...)
	if err != nil {
		return store.Page{}, fmt.Errorf("disk: read %s: %w", t.Name, err)
	}
	defer rows.Close()
	var p store.Page
	var last store.Key
	bytes := 0
	for rows.Next() {
		if limit > 0 && p.Scanned == limit || bytes >= maxPageBytes {
			p.Next = &store.Key{PK: last.PK, SK: last.SK}
			break
		}
		var b []byte
		if err := rows.Scan(&last.PK, &last.SK, &b); err != nil {
			return store.Page{}, fmt.Errorf("disk: read %s: %w", t.Name, err)
		}
		item, err := decode(b)
		if err != nil {
			return store.Page{}, fmt.Errorf("disk: read %s %q: %w", t.Name, last.PK, err)
		}
		p.Scanned++
		bytes += store.Size(item)
		if filter.Matches(item) {
			p.Items = append(p.Items, store.Project(item, project))
		}
	}
	if err := rows.Err(); err != nil {
		return store.Page{}, fmt.Errorf("disk: read %s: %w", t.Name, err)
	}
	p.Units = math.Ceil(float64(bytes) / 4096)
	if !consistent {
		p.Units /= 2
	}
	return p, nil
}

// BatchDelete implements store.Items: one transaction.
func (d *Items) BatchDelete(ctx context.Context, t store.Table, keys []store.Key) (err error) {
	if err := d.health.ensure(); err != nil {
		return err
	}
	defer func() { err = d.health.failed(err) }()
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("disk: delete %s: %w", t.Name, err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	for _, k := range keys {
		if _, err := tx.ExecContext(ctx, "DELETE FROM items WHERE tbl = ? AND pk = ? AND sk = ?", t.Name, k.PK, k.SK); err != nil {
			return fmt.Errorf("disk: delete %s: %w", t.Name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("disk: delete %s: commit: %w", t.Name, err)
	}
	return nil
}
