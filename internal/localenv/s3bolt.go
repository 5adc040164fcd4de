package localenv

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3bolt"
	bolt "go.etcd.io/bbolt"
)

// stableBolt is gofakes3's bolt backend made safe for concurrent reads and
// writes. Its GetObject and HeadObject (and CopyObject, through them) hand
// back object bytes and hashes that still point into bolt's memory map
// after their read transaction has ended. A write running at the same time
// may grow and remap the file, or reuse the pages: the reader then crashes
// the process (SIGSEGV, seen copying a photo during a move while other
// uploads ran) or reads another object's bytes. Here a read copies the
// object out while no write runs, a copy reads its source the same way,
// and writes run one at a time (bolt runs them one at a time anyway).
//
// It also keeps the memory map from filling the process's resident set:
// every object read maps its pages in, and they would stay counted
// against the process (photos read from disk, on top of the photo cache)
// until the kernel needed the memory. After every releaseEvery bytes
// read or written, the map's pages are handed back (releaseMap; the page
// cache keeps them, and the next read maps them in again).
type stableBolt struct {
	gofakes3.Backend
	db *bolt.DB
	mu sync.RWMutex
	// touched counts the bytes read or written since the map's pages were
	// last released.
	touched atomic.Int64
}

// releaseEvery is how many bytes of objects pass through bolt's memory map
// between two releases of its pages.
const releaseEvery = 8 << 20

func newStableBolt(db *bolt.DB) *stableBolt {
	return &stableBolt{Backend: s3bolt.New(db), db: db}
}

// passed counts n bytes through the map and, once releaseEvery have
// passed, hands the map's pages back, holding the write lock so that no
// write can remap the file meanwhile. The caller holds no lock. A failed
// release only leaves the pages resident.
func (b *stableBolt) passed(n int64) {
	if b.touched.Add(n) < releaseEvery {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.touched.Load() < releaseEvery {
		return // another caller released them
	}
	b.touched.Store(0)
	releaseMap(b.db)
}

// detach returns obj with its contents and hash copied out of bolt's
// memory. The caller holds b.mu.
func detach(obj *gofakes3.Object, err error) (*gofakes3.Object, error) {
	if err != nil {
		return obj, err
	}
	defer obj.Contents.Close()
	body, err := io.ReadAll(obj.Contents)
	if err != nil {
		return nil, fmt.Errorf("localenv: read object %s: %w", obj.Name, err)
	}
	obj.Contents = io.NopCloser(bytes.NewReader(body))
	obj.Hash = bytes.Clone(obj.Hash)
	return obj, nil
}

func (b *stableBolt) GetObject(bucket, key string, rng *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	b.mu.RLock()
	obj, err := detach(b.Backend.GetObject(bucket, key, rng))
	b.mu.RUnlock()
	if err == nil {
		b.passed(obj.Size)
	}
	return obj, err
}

func (b *stableBolt) HeadObject(bucket, key string) (*gofakes3.Object, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return detach(b.Backend.HeadObject(bucket, key))
}

func (b *stableBolt) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, cond *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	b.mu.Lock()
	res, err := b.Backend.PutObject(bucket, key, meta, input, size, cond)
	b.mu.Unlock()
	b.passed(size)
	return res, err
}

// CopyObject reads the source and writes the copy, as gofakes3's own
// helper does, but detaches the source first: the helper uses the
// source's hash after its own write, which may have remapped the file.
func (b *stableBolt) CopyObject(srcBucket, srcKey, dstBucket, dstKey string, meta map[string]string) (gofakes3.CopyObjectResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	src, err := detach(b.Backend.GetObject(srcBucket, srcKey, nil))
	if err != nil {
		return gofakes3.CopyObjectResult{}, err
	}
	if _, err := b.Backend.PutObject(dstBucket, dstKey, meta, src.Contents, src.Size, nil); err != nil {
		return gofakes3.CopyObjectResult{}, err
	}
	return gofakes3.CopyObjectResult{ETag: `"` + hex.EncodeToString(src.Hash) + `"`, LastModified: gofakes3.NewContentTime(time.Now())}, nil
}

func (b *stableBolt) DeleteObject(bucket, key string) (gofakes3.ObjectDeleteResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Backend.DeleteObject(bucket, key)
}

func (b *stableBolt) DeleteMulti(bucket string, keys ...string) (gofakes3.MultiDeleteResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Backend.DeleteMulti(bucket, keys...)
}

func (b *stableBolt) CreateBucket(name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Backend.CreateBucket(name)
}

func (b *stableBolt) DeleteBucket(name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Backend.DeleteBucket(name)
}

func (b *stableBolt) ForceDeleteBucket(name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Backend.ForceDeleteBucket(name)
}
