package localenv

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3bolt"
	bolt "go.etcd.io/bbolt"

	"ndiro/internal/storage"
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
//
// And it refuses writes once a bolt commit has failed (a full disk): bolt
// rolls the failed transaction back, so nothing of it is stored, but the
// next commit would fail the same way. The failed write and every write
// after it get an S3 error of code storage.FullCode (storage.FailedCode
// for other I/O errors), which storageStatus turns into a 400 the SDK
// does not retry; reads go on. A probe after probeEvery (then backing off,
// probePause) commits probeBytes and deletes them again; once that
// fits, writes are taken again.
type stableBolt struct {
	gofakes3.Backend
	db *bolt.DB
	mu sync.RWMutex
	// touched counts the bytes read or written since the map's pages were
	// last released.
	touched atomic.Int64

	probeEvery time.Duration
	log        *slog.Logger
	// fail is why writes are refused (wrapping storage.ErrFull or
	// storage.ErrFailed), nil while they are taken; guarded by mu.
	fail   error
	closed bool
	stopc  chan struct{}
	wg     sync.WaitGroup
}

// releaseEvery is how many bytes of objects pass through bolt's memory map
// between two releases of its pages.
const releaseEvery = 8 << 20

// probeBucket holds the probe's bytes between its two commits; no S3
// bucket can be called so (ListBuckets leaves it out all the same).
const probeBucket = "_ndiro_probe"

// probeBytes is what the probe commits: room for a phone photo's two
// copies, so that writes do not resume onto a disk with a few bytes free.
const probeBytes = 2 << 20

func newStableBolt(db *bolt.DB, probeEvery time.Duration, log *slog.Logger) *stableBolt {
	return &stableBolt{Backend: s3bolt.New(db), db: db, probeEvery: probeEvery, log: log, stopc: make(chan struct{})}
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

// refusal is the S3 error a write gets while writes are refused (fail):
// its code makes storageStatus answer 400 and storage.Refused see it.
func refusal(fail error) error {
	return gofakes3.ErrorMessage(gofakes3.ErrorCode(storage.Code(storage.Cause(fail))),
		"local s3 refused the write, as s3.bolt cannot be written ("+fail.Error()+"); writes resume once the disk has room")
}

// refusing returns the refusal for a write while writes are refused, nil
// while they are taken. The caller holds b.mu for writing.
func (b *stableBolt) refusing() error {
	if b.fail != nil {
		return refusal(b.fail)
	}
	return nil
}

// failed looks at the error of a write: an S3 error (no such bucket, a
// failed condition) or the client's body failing (bodyErr) is the write's
// own, returned as it is; anything else comes from bolt's commit (a
// write, an fsync or a file resize of s3.bolt) and makes writes refused
// from now on, starting the probe. The caller holds b.mu for writing.
func (b *stableBolt) failed(err, bodyErr error) error {
	var s3err gofakes3.Error
	if err == nil || bodyErr != nil || errors.As(err, &s3err) {
		return err
	}
	b.fail = fmt.Errorf("localenv: s3.bolt: %w", err)
	b.log.Error("local s3 commit failed; writes are refused until s3.bolt can be written again", "err", err)
	if !b.closed {
		b.wg.Add(1)
		go b.probe()
	}
	return refusal(b.fail)
}

// health returns nil while writes are taken, else why they are refused,
// wrapping storage.ErrFull or storage.ErrFailed.
func (b *stableBolt) health() error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.fail == nil {
		return nil
	}
	return fmt.Errorf("local s3 refuses writes until s3.bolt can be written again: %w: %w", storage.Cause(b.fail), b.fail)
}

// probe commits probeBytes to s3.bolt and deletes them again, every
// probeEvery and then less often, until both commits succeed (writes are
// taken again) or close.
func (b *stableBolt) probe() {
	defer b.wg.Done()
	pause := b.probeEvery
	for tries := 1; ; tries++ {
		t := time.NewTimer(pause)
		select {
		case <-b.stopc:
			t.Stop()
			return
		case <-t.C:
		}
		err := b.tryWrite()
		if err == nil {
			b.log.Info("local s3 writable again; writes resume")
			return
		}
		if tries == 1 {
			b.log.Warn("local s3 still cannot write s3.bolt; trying again", "every_max", min(15*b.probeEvery, maxProbeEvery).String(), "err", err)
		}
		pause = probePause(pause, b.probeEvery)
	}
}

// tryWrite is one probe: two commits, holding the write lock; on success
// writes are taken again.
func (b *stableBolt) tryWrite() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	err := b.db.Update(func(tx *bolt.Tx) error {
		pb, err := tx.CreateBucketIfNotExists([]byte(probeBucket))
		if err != nil {
			return err
		}
		return pb.Put([]byte("probe"), make([]byte, probeBytes))
	})
	if err == nil {
		err = b.db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte(probeBucket)) })
	}
	if err == nil {
		b.fail = nil
	}
	return err
}

// close stops the probe and waits for it.
func (b *stableBolt) close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.stopc)
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// bodyReader remembers the error reading an upload's body gave: the
// client's failure, not the disk's.
type bodyReader struct {
	io.Reader
	err error
}

func (r *bodyReader) Read(p []byte) (int, error) {
	n, err := r.Reader.Read(p)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}

func (b *stableBolt) ListBuckets() ([]gofakes3.BucketInfo, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	all, err := b.Backend.ListBuckets()
	return slices.DeleteFunc(all, func(bi gofakes3.BucketInfo) bool { return bi.Name == probeBucket }), err
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
	if err := b.refusing(); err != nil {
		b.mu.Unlock()
		io.Copy(io.Discard, input) // the client hears the refusal, not a reset
		return gofakes3.PutObjectResult{}, err
	}
	body := &bodyReader{Reader: input}
	res, err := b.Backend.PutObject(bucket, key, meta, body, size, cond)
	err = b.failed(err, body.err)
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
	if err := b.refusing(); err != nil {
		return gofakes3.CopyObjectResult{}, err
	}
	src, err := detach(b.Backend.GetObject(srcBucket, srcKey, nil))
	if err != nil {
		return gofakes3.CopyObjectResult{}, err
	}
	if _, err := b.Backend.PutObject(dstBucket, dstKey, meta, src.Contents, src.Size, nil); err != nil {
		return gofakes3.CopyObjectResult{}, b.failed(err, nil)
	}
	return gofakes3.CopyObjectResult{ETag: `"` + hex.EncodeToString(src.Hash) + `"`, LastModified: gofakes3.NewContentTime(time.Now())}, nil
}

func (b *stableBolt) DeleteObject(bucket, key string) (gofakes3.ObjectDeleteResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.refusing(); err != nil {
		return gofakes3.ObjectDeleteResult{}, err
	}
	res, err := b.Backend.DeleteObject(bucket, key)
	return res, b.failed(err, nil)
}

func (b *stableBolt) DeleteMulti(bucket string, keys ...string) (gofakes3.MultiDeleteResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.refusing(); err != nil {
		return gofakes3.MultiDeleteResult{}, err
	}
	res, err := b.Backend.DeleteMulti(bucket, keys...)
	return res, b.failed(err, nil)
}

func (b *stableBolt) CreateBucket(name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.refusing(); err != nil {
		return err
	}
	return b.failed(b.Backend.CreateBucket(name), nil)
}

func (b *stableBolt) DeleteBucket(name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.refusing(); err != nil {
		return err
	}
	return b.failed(b.Backend.DeleteBucket(name), nil)
}

func (b *stableBolt) ForceDeleteBucket(name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.refusing(); err != nil {
		return err
	}
	return b.failed(b.Backend.ForceDeleteBucket(name), nil)
}

// storageStatus gives gofakes3's answer to a write that storage refused
// (an error of code storage.FullCode or storage.FailedCode, which gofakes3
// answers with 500, a status the SDK retries) the status 400, which it
// does not: the refusal reaches the app at once. Only error answers of
// writes are held back and looked at; they are small.
func storageStatus(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		sw.finish()
	})
}

// statusWriter holds back a 5xx answer's status and body until finish.
type statusWriter struct {
	http.ResponseWriter
	status int // a held 5xx status; 0 if none
	wrote  bool
	body   bytes.Buffer
}

func (w *statusWriter) WriteHeader(code int) {
	if w.wrote || w.status != 0 {
		return
	}
	if code >= 500 {
		w.status = code
		return
	}
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status != 0 {
		return w.body.Write(p)
	}
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

// finish sends a held answer: 400 if its XML names a storage refusal's
// code, else with the status it had.
func (w *statusWriter) finish() {
	if w.status == 0 {
		return
	}
	status, b := w.status, w.body.Bytes()
	if bytes.Contains(b, []byte("<Code>"+storage.FullCode+"</Code>")) || bytes.Contains(b, []byte("<Code>"+storage.FailedCode+"</Code>")) {
		status = http.StatusBadRequest
	}
	w.ResponseWriter.WriteHeader(status)
	w.ResponseWriter.Write(b)
}
