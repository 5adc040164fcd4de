package localenv

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"sync"
)

// The journal file is a sequence of records, each
//
//	length  uint32, little-endian: payload bytes, 1 to maxRecord
//	crc     uint32, little-endian: CRC-32C (Castagnoli) of the four length
//	        bytes followed by the payload
//	payload one JSON-encoded entry (see persist.go)
//
// with nothing before, between or after them. A record is appended whole
// and fsynced before the write it describes is acknowledged.
const (
	recordHeader = 8
	maxRecord    = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRecord appends payload, framed as one journal record, to buf.
func appendRecord(buf, payload []byte) []byte {
	var h [recordHeader]byte
	binary.LittleEndian.PutUint32(h[:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[4:], recordCRC(h[:4], payload))
	return append(append(buf, h[:]...), payload...)
}

func recordCRC(length, payload []byte) uint32 {
	return crc32.Update(crc32.Update(0, castagnoli, length), castagnoli, payload)
}

// damage is journal damage that is not a torn final record, at a byte
// offset of the file.
type damage struct {
	offset int64
	reason string
}

func (d *damage) Error() string { return fmt.Sprintf("byte %d: %s", d.offset, d.reason) }

// readRecords calls fn with the offset and payload of each record in data,
// a whole journal file, in order. It stops at the first damaged record.
//
// A crash in the middle of an append leaves the file ending inside the
// batch being written: a header cut short, a payload running past the end
// of the file, or (on file systems that extend the size before the data
// lands) a stretch of zero bytes. Such a damaged record with nothing but
// zero bytes after it is a torn final record: readRecords returns its
// offset as torn (-1 when the file ends cleanly) and no error, and the
// caller drops it. Any other damage, a bad record followed by more data,
// cannot come from a crash while appending: it returns a *damage error
// naming the offset, and nothing after it is read. (A damaged length that
// points past the end of the file looks the same as a torn append; the
// caller logs how many bytes it drops.)
func readRecords(data []byte, fn func(offset int64, payload []byte) error) (torn int64, err error) {
	off := 0
	for off < len(data) {
		rest := data[off:]
		if len(rest) < recordHeader {
			return int64(off), nil
		}
		n := binary.LittleEndian.Uint32(rest[:4])
		if n == 0 || n > maxRecord {
			if allZero(rest) {
				return int64(off), nil
			}
			return -1, &damage{int64(off), fmt.Sprintf("record length %d out of range", n)}
		}
		end := recordHeader + int(n)
		if end > len(rest) {
			return int64(off), nil
		}
		payload := rest[recordHeader:end]
		if recordCRC(rest[:4], payload) != binary.LittleEndian.Uint32(rest[4:8]) {
			if allZero(rest[end:]) {
				return int64(off), nil
			}
			return -1, &damage{int64(off), "checksum mismatch"}
		}
		if err := fn(int64(off), payload); err != nil {
			return -1, err
		}
		off += end
	}
	return -1, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// journal appends records to an open journal file with group commit:
// append queues a record in memory, wait makes it durable. The first
// waiter that finds no flush running writes everything queued with one
// write and one fsync; records queued while that fsync runs are covered by
// the next one, however many there are. Offsets are logical (bytes
// appended since open), so they stay valid across truncate; base maps
// them to the file.
//
// The first failed write, fsync or truncate is sticky: every later append
// and wait beyond the durable end returns it. After a failed fsync the
// kernel may have dropped the unwritten pages, so nothing after the
// durable end could be trusted to be on disk: cut then drops it, from the
// file too, and the persister replaces the journal once a probe finds the
// disk writable again (persist.go).
type journal struct {
	path  string
	f     *os.File
	sync  func(*os.File) error
	write func(*os.File, []byte) (int, error)

	mu       sync.Mutex
	cond     sync.Cond
	queued   []byte // records appended but not yet handed to a flush
	spare    []byte // the last flushed batch's buffer, reused
	appended int64  // logical end of the appended records
	durable  int64  // logical end of the records written and fsynced
	base     int64  // logical offset of the file's first byte
	flushing bool
	waiting  int // callers of wait waiting for a flush (tests watch it)
	records  int // records appended since the file was last truncated
	err      error
	// cutDone: after a failure, the file has been cut back to the durable
	// records and that is fsynced.
	cutDone bool
}

func newJournal(path string, f *os.File, sync func(*os.File) error, write func(*os.File, []byte) (int, error)) *journal {
	j := &journal{path: path, f: f, sync: sync, write: write}
	j.cond.L = &j.mu
	return j
}

// append queues payload as one record and returns the logical offset its
// durability is to be waited for with wait. The caller orders appends (the
// journal order is the order writes were applied).
func (j *journal) append(payload []byte) (int64, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return 0, j.err
	}
	if len(payload) == 0 || len(payload) > maxRecord {
		return 0, fmt.Errorf("localenv: journal record of %d bytes, want 1 to %d", len(payload), maxRecord)
	}
	j.queued = appendRecord(j.queued, payload)
	j.appended += int64(recordHeader + len(payload))
	j.records++
	return j.appended, nil
}

// end returns the logical end of every record appended so far: once it is
// durable, so is every write applied before the call.
func (j *journal) end() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.appended
}

// durableEnd returns the logical end of the records known durable.
func (j *journal) durableEnd() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.durable
}

// failure returns the journal's sticky error, nil while it is healthy.
func (j *journal) failure() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// wait returns once every record up to the logical offset end is written
// and fsynced, or the journal's sticky error if that can no longer happen.
func (j *journal) wait(end int64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.durable < end {
		if j.err != nil {
			return j.err
		}
		if j.flushing {
			j.waiting++
			j.cond.Wait()
			j.waiting--
			continue
		}
		batch, target := j.queued, j.appended
		j.queued, j.flushing = j.spare[:0], true
		j.mu.Unlock()
		_, err := j.write(j.f, batch)
		if err == nil {
			err = j.sync(j.f)
		}
		j.mu.Lock()
		j.spare, j.flushing = batch, false
		if err != nil {
			j.err = fmt.Errorf("localenv: journal %s: %w", j.path, err)
		} else {
			j.durable = target
		}
		j.cond.Broadcast()
	}
	return nil
}

// drain waits until every record appended so far is durable.
func (j *journal) drain() error {
	return j.wait(j.end())
}

// count returns the records appended since the last truncate.
func (j *journal) count() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.records
}

// truncate empties the file once a snapshot holds everything in it. The
// caller has drained the journal and keeps appends out until it returns.
func (j *journal) truncate() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	err := j.f.Truncate(0)
	if err == nil {
		err = j.sync(j.f)
	}
	if err != nil {
		j.err = fmt.Errorf("localenv: journal %s: truncate: %w", j.path, err)
		return j.err
	}
	j.records, j.base = 0, j.appended
	return nil
}

// fail makes err the journal's sticky error (a write that could not be
// journaled as the journal failed under it).
func (j *journal) fail(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		j.err = err
	}
}

// cut drops every record that is not durable, once the journal has
// failed: it waits for a flush still running, moves the logical end back
// to the durable end (so end, and with it every read, waits for nothing
// more) and truncates the file to the durable records, fsynced, so that
// no restart replays a write that was refused. A failed truncate is
// returned (those records may then still be in the file) and tried again
// by the next cut.
func (j *journal) cut() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.flushing {
		j.cond.Wait()
	}
	j.queued, j.appended = j.queued[:0], j.durable
	if j.cutDone {
		return nil
	}
	err := j.f.Truncate(j.durable - j.base)
	if err == nil {
		err = j.sync(j.f)
	}
	if err != nil {
		return fmt.Errorf("localenv: journal %s: cut back to its durable records: %w", j.path, err)
	}
	j.cutDone = true
	return nil
}

// close closes the file.
func (j *journal) close() error {
	return j.f.Close()
}
