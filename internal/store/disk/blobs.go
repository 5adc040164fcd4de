package disk

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"ndiro/internal/store"
)

// A blob's bytes are a file under the blob directory, at the path its key
// maps to (blobPath); what S3 keeps beside an object (size, content type,
// user metadata, modification time) is a row of the blobs table, which
// lists keys in S3's byte order. A Put writes the file to a temporary
// name, fsyncs it, renames it into place and fsyncs the directory, and
// only then commits the row: a row never names bytes that are not on
// disk. A file with no row (a crash between the two) is never listed or
// served, and the next Put of its key replaces it.

const blobSchema = `
CREATE TABLE IF NOT EXISTS blobs (
	key          TEXT PRIMARY KEY,
	size         INTEGER NOT NULL,
	content_type TEXT NOT NULL,
	meta         TEXT NOT NULL,
	modified     INTEGER NOT NULL
) WITHOUT ROWID;
`

// maxComponent is the longest path component blobPath writes as it is;
// a longer one is cut and given a digest, well under the 255 bytes
// every Linux file system takes.
const maxComponent = 200

// tmpPrefix starts the temporary files of Put; blobPath never starts a
// component with a dot.
const tmpPrefix = ".tmp-"

// FS is the file operations blobs make, for tests to record or fail;
// the zero Blobs uses the operating system's.
type FS interface {
	// CreateTemp creates a new file in dir (os.CreateTemp).
	CreateTemp(dir, pattern string) (File, error)
	Rename(from, to string) error
	Remove(path string) error
	MkdirAll(path string, perm fs.FileMode) error
	// SyncDir makes the entries of dir (a rename into it) durable.
	SyncDir(dir string) error
	Open(path string) (*os.File, error)
}

// File is a file being written.
type File interface {
	io.Writer
	Name() string
	Sync() error
	Close() error
}

// osFS is FS on the operating system.
type osFS struct{}

func (osFS) CreateTemp(dir, pattern string) (File, error) { return os.CreateTemp(dir, pattern) }
func (osFS) Rename(from, to string) error                 { return os.Rename(from, to) }
func (osFS) Remove(path string) error                     { return os.Remove(path) }
func (osFS) MkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }
func (osFS) Open(path string) (*os.File, error)           { return os.Open(path) }
func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Blobs is the blob engine: store.Blobs in files under dir, indexed in
// the database of items.
type Blobs struct {
	dir    string
	db     *Items
	fs     FS
	now    func() time.Time
	health *health // nil: no write health kept (OpenBlobs alone)
}

var _ store.Blobs = (*Blobs)(nil)

// OpenBlobs returns the blobs under dir (created 0700 if missing),
// indexed in db; fsys nil is the operating system's, now nil the wall
// clock.
func OpenBlobs(dir string, db *Items, fsys FS, now func() time.Time) (*Blobs, error) {
	if fsys == nil {
		fsys = osFS{}
	}
	if now == nil {
		now = time.Now
	}
	if err := fsys.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("disk: blob directory: %w", err)
	}
	if _, err := db.w.Exec(blobSchema); err != nil {
		return nil, fmt.Errorf("disk: blobs table: %w", err)
	}
	return &Blobs{dir: dir, db: db, fs: fsys, now: now}, nil
}

// blobPath maps key to its file: each '/'-separated part escaped on its
// own (letters, digits, '-', '_' and a '.' that does not start the part
// kept; every other byte %XX), so no part is "", "." or "..", holds a
// separator or starts like a temporary file; a part escaped to more than
// maxComponent bytes is its start, '~' and a digest of the part. Keys
// map to distinct paths.
func (b *Blobs) blobPath(key string) string {
	parts := strings.Split(key, "/")
	for i, p := range parts {
		parts[i] = escapePart(p)
	}
	return filepath.Join(append([]string{b.dir}, parts...)...)
}

func escapePart(p string) string {
	var sb strings.Builder
	if p == "" {
		return "%"
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' && i > 0 {
			sb.WriteByte(c)
			continue
		}
		fmt.Fprintf(&sb, "%%%02X", c)
	}
	s := sb.String()
	if len(s) <= maxComponent {
		return s
	}
	sum := sha256.Sum256([]byte(p))
	cut := maxComponent - 65
	if i := strings.LastIndexByte(s[:cut], '%'); i >= cut-2 {
		cut = i
	}
	return s[:cut] + "~" + hex.EncodeToString(sum[:])
}

// Put implements store.Blobs.
func (b *Blobs) Put(ctx context.Context, key string, body io.Reader, size int64, meta store.Meta) (err error) {
	if err := b.health.ensure(); err != nil {
		return err
	}
	defer func() { err = b.health.failed(err) }()
	path := b.blobPath(key)
	dir := filepath.Dir(path)
	if err := b.fs.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("disk: put %s: %w", key, err)
	}
	f, err := b.fs.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return fmt.Errorf("disk: put %s: %w", key, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			b.fs.Remove(f.Name())
		}
	}()
	n, err := io.Copy(f, body)
	if err != nil {
		return fmt.Errorf("disk: put %s: %w", key, err)
	}
	if n != size {
		return fmt.Errorf("disk: put %s: %d bytes, want %d", key, n, size)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("disk: put %s: sync: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("disk: put %s: %w", key, err)
	}
	if err := b.fs.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("disk: put %s: %w", key, err)
	}
	if err := b.fs.SyncDir(dir); err != nil {
		return fmt.Errorf("disk: put %s: sync directory: %w", key, err)
	}
	return b.index(ctx, key, size, meta)
}

// index commits key's row.
func (b *Blobs) index(ctx context.Context, key string, size int64, meta store.Meta) error {
	user, err := json.Marshal(meta.User)
	if err != nil {
		return fmt.Errorf("disk: put %s: %w", key, err)
	}
	_, err = b.db.w.ExecContext(ctx, "INSERT OR REPLACE INTO blobs (key, size, content_type, meta, modified) VALUES (?, ?, ?, ?, ?)",
		key, size, meta.ContentType, string(user), b.now().UnixNano())
	if err != nil {
		return fmt.Errorf("disk: put %s: index: %w", key, err)
	}
	return nil
}

// Head implements store.Blobs.
func (b *Blobs) Head(ctx context.Context, key string) (store.Info, error) {
	var info store.Info
	var user string
	var modified int64
	err := b.db.r.QueryRowContext(ctx, "SELECT key, size, content_type, meta, modified FROM blobs WHERE key = ?", key).
		Scan(&info.Key, &info.Size, &info.Meta.ContentType, &user, &modified)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Info{}, store.ErrNoBlob
	}
	if err != nil {
		return store.Info{}, fmt.Errorf("disk: head %s: %w", key, err)
	}
	if err := json.Unmarshal([]byte(user), &info.Meta.User); err != nil {
		return store.Info{}, fmt.Errorf("disk: head %s: %w", key, err)
	}
	info.Modified = time.Unix(0, modified)
	return info, nil
}

// Get implements store.Blobs.
func (b *Blobs) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, store.Info, error) {
	info, err := b.Head(ctx, key)
	if err != nil {
		return nil, store.Info{}, err
	}
	f, err := b.fs.Open(b.blobPath(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, store.Info{}, fmt.Errorf("disk: get %s: the file is gone: %w", key, store.ErrNoBlob)
	}
	if err != nil {
		return nil, store.Info{}, fmt.Errorf("disk: get %s: %w", key, err)
	}
	if off == 0 && n < 0 {
		return f, info, nil
	}
	if n < 0 {
		n = info.Size - off
	}
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, off, n), f}, info, nil
}

// Copy implements store.Blobs: the bytes are copied through a new
// temporary file, as Put writes them.
func (b *Blobs) Copy(ctx context.Context, src, dst string, meta *store.Meta) error {
	r, info, err := b.Get(ctx, src, 0, -1)
	if err != nil {
		return err
	}
	defer r.Close()
	if meta == nil {
		meta = &info.Meta
	}
	return b.Put(ctx, dst, r, info.Size, *meta)
}

// Delete implements store.Blobs: the rows go first, so a crash leaves at
// worst a file no row names.
func (b *Blobs) Delete(ctx context.Context, keys ...string) (err error) {
	if err := b.health.ensure(); err != nil {
		return err
	}
	defer func() { err = b.health.failed(err) }()
	for _, key := range keys {
		if _, err := b.db.w.ExecContext(ctx, "DELETE FROM blobs WHERE key = ?", key); err != nil {
			return fmt.Errorf("disk: delete %s: %w", key, err)
		}
		if err := b.fs.Remove(b.blobPath(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("disk: delete %s: %w", key, err)
		}
	}
	return nil
}

// List implements store.Blobs.
func (b *Blobs) List(ctx context.Context, prefix, after string, limit int) ([]store.Info, string, error) {
	if limit <= 0 {
		limit = 1000
	}
	rows, err := b.db.r.QueryContext(ctx, "SELECT key, size, content_type, meta, modified FROM blobs WHERE key >= ? AND key < ? AND key > ? ORDER BY key LIMIT ?",
		prefix, prefix+"\xff", after, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("disk: list %s: %w", prefix, err)
	}
	defer rows.Close()
	var out []store.Info
	for rows.Next() {
		var info store.Info
		var user string
		var modified int64
		if err := rows.Scan(&info.Key, &info.Size, &info.Meta.ContentType, &user, &modified); err != nil {
			return nil, "", fmt.Errorf("disk: list %s: %w", prefix, err)
		}
		if err := json.Unmarshal([]byte(user), &info.Meta.User); err != nil {
			return nil, "", fmt.Errorf("disk: list %s: %w", prefix, err)
		}
		info.Modified = time.Unix(0, modified)
		out = append(out, info)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("disk: list %s: %w", prefix, err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].Key
	}
	return out, next, nil
}
