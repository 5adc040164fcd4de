package localenv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/truora/minidyn/server"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"ndiro/internal/dynamo"
)

// ErrDataDirHeld is wrapped by OpenReadOnly's refusal when a running
// ndiro holds the data dir (the lock on its s3.bolt).
var ErrDataDirHeld = errors.New("localenv: a running ndiro holds the data dir")

// ErrNoDataDir is wrapped by OpenReadOnly's refusal when the directory
// holds no s3.bolt: it is no data dir of a local or server mode ndiro.
var ErrNoDataDir = errors.New("localenv: not an ndiro data dir")

// OpenReadOnly serves the data dir opts.DataDir of a local or server mode
// ndiro that is not running, for reading: the tables as the last
// snapshot and the journal hold them (a torn final journal record
// dropped, as a start would), loaded into an in-memory emulator, and the
// photos of s3.bolt, opened read-only. Nothing in the directory is
// written: no fold, no truncated journal, no new bucket, and writes to
// the returned clients are never persisted (a photo write fails). opts
// Tables name the emulator's tables (the snapshot keys them by base
// name); Bucket is the bucket whose objects are served; Logger,
// DynamoOptions and S3Options apply as for Start, the rest is ignored.
//
// While the Env is open it holds a shared lock on s3.bolt, so no ndiro
// can start on the directory (it needs the lock alone), and a running
// one makes OpenReadOnly refuse after a second with an error wrapping
// ErrDataDirHeld. A directory without s3.bolt is refused with
// ErrNoDataDir; a damaged snapshot or journal with an error naming the
// file (and the byte offset). Close releases the lock.
func OpenReadOnly(ctx context.Context, opts Options) (_ *Env, err error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	dir := opts.DataDir
	path := filepath.Join(dir, "s3.bolt")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s has no s3.bolt (give the NDIRO_DATA_DIR of the local ndiro, ./var by default)", ErrNoDataDir, dir)
	} else if err != nil {
		return nil, fmt.Errorf("localenv: data dir %s: %w", dir, err)
	}
	e := &Env{log: opts.Logger}
	defer func() {
		if err != nil {
			e.stop()
		}
	}()
	e.bolt, err = bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: an ndiro is running on %s (it holds the lock on s3.bolt); stop it first, so that nothing changes the data while it is read", ErrDataDirHeld, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("localenv: open %s read-only: %w", path, err)
	}

	emu := newPartitioned(server.NewServer())
	e.DynamoEndpoint = e.serve(dynamoHost, emu)
	e.DynamoDB = NewDynamoClient(e.DynamoEndpoint, opts.DynamoOptions...)
	if err := dynamo.CreateTables(ctx, e.DynamoDB, opts.Tables); err != nil {
		return nil, fmt.Errorf("localenv: %w", err)
	}
	p := newPersister(emu, persistOptions{dir: dir, tables: opts.Tables, log: opts.Logger})
	if err := loadSnapshot(emu, p.snapPath, opts.Tables); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p.jPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("localenv: read journal %s: %w", p.jPath, err)
	}
	if _, _, err := p.replayJournal(data); err != nil {
		return nil, err
	}

	e.s3 = newStableBolt(e.bolt, time.Hour, opts.Logger)
	if ok, err := e.s3.BucketExists(opts.Bucket); err != nil {
		return nil, fmt.Errorf("localenv: bucket %s: %w", opts.Bucket, err)
	} else if !ok {
		return nil, fmt.Errorf("localenv: %s holds no bucket %s: it is not the data dir of a local ndiro", path, opts.Bucket)
	}
	e.S3Endpoint = e.serve(s3Host, storageStatus(gofakes3.New(e.s3).Server()))
	e.S3 = NewS3Client(e.S3Endpoint, opts.S3Options...)
	return e, nil
}
