package localenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"ndiro/internal/dynamo"
)

// persister keeps the in-process DynamoDB emulator's tables on disk so
// that a write acknowledged to a client survives a crash of the process,
// kill -9 included (DESIGN.md, Modes). It sits in front of the emulator:
//
//   - Every write the emulator answers with 200 is journaled before the
//     answer goes back: under one lock the write is applied and the items
//     it changed are read back and queued as one journal record; outside
//     the lock the record is written and fsynced (group commit: one fsync
//     covers every record queued while the previous one ran); only then is
//     the emulator's answer sent.
//   - At start the last snapshot is loaded, the journal replayed onto it,
//     both folded into a new snapshot and the journal truncated. The same
//     fold runs in the background every foldEvery records and at Close,
//     so the journal stays short.
//
// Records hold after-images, not requests: for each item a write changed,
// the item as it stands after the write (or its key alone if it is gone).
// Replaying a recorded request would re-evaluate its condition and update
// expressions, which reproduces the state only if everything before it was
// replayed exactly and the emulator evaluates expressions the same way as
// the run that wrote it (a minidyn upgrade could change that). An
// after-image needs neither: replay is a plain PutItem or DeleteItem per
// item, a conditional write that succeeded comes back as its result and a
// failed one was never journaled. Replay is idempotent, so a record
// replayed onto a snapshot that already holds it (a crash between writing
// the snapshot and truncating the journal) changes nothing; and all items
// of one transaction or batch share one record, so they come back together
// or, torn, not at all. A put's after-image is its request's item and a
// delete's is the key alone; an update's is read back with one GetItem,
// inside the emulator, while the write lock is held.
//
// Only the tables in tables persist; writes to any other table are served
// but neither journaled nor snapshotted.
type persister struct {
	emu       http.Handler
	tables    dynamo.Tables
	byName    map[string]dynamo.Table
	byBase    map[string]dynamo.Table
	snapPath  string
	jPath     string
	foldEvery int
	sync      func(*os.File) error
	log       *slog.Logger

	// writeMu orders every state change: a write's apply, after-image
	// reads and append happen under it, so the journal's order is the order
	// writes were applied; a fold holds it so its snapshot and truncate see
	// no write in between.
	writeMu sync.Mutex
	j       *journal // nil until open succeeds and after close
	foldc   chan struct{}
	stopc   chan struct{}
	wg      sync.WaitGroup
}

// persistOptions configure newPersister.
type persistOptions struct {
	dir       string
	tables    dynamo.Tables
	foldEvery int
	sync      func(*os.File) error
	log       *slog.Logger
}

func newPersister(emu http.Handler, o persistOptions) *persister {
	p := &persister{
		emu: emu, tables: o.tables,
		byName: map[string]dynamo.Table{}, byBase: map[string]dynamo.Table{},
		snapPath:  filepath.Join(o.dir, "dynamodb.json"),
		jPath:     filepath.Join(o.dir, "dynamodb.journal"),
		foldEvery: o.foldEvery, sync: o.sync, log: o.log,
		foldc: make(chan struct{}, 1), stopc: make(chan struct{}),
	}
	for _, t := range o.tables.All() {
		p.byName[t.Name], p.byBase[t.Base] = t, t
	}
	return p
}

// entry is one journal record's payload: the after-images of the items one
// acknowledged write changed, in the order the write named them.
type entry struct {
	Changes []change `json:"changes"`
}

// change is one item after a write. Table is the base name ("meals"), as in
// the snapshot, so the data follows a change of table prefix.
type change struct {
	Table string                     `json:"table"`
	Key   map[string]json.RawMessage `json:"key"`
	// Item is the whole item after the write; absent if it was deleted.
	Item map[string]json.RawMessage `json:"item,omitempty"`
}

// writeOps are the DynamoDB operations that change items: journaled.
var writeOps = map[string]bool{
	"PutItem": true, "UpdateItem": true, "DeleteItem": true,
	"BatchWriteItem": true, "TransactWriteItems": true,
}

// readOps change nothing and pass straight through. Any other operation
// (CreateTable, DeleteTable, …) runs under the write lock, unjournaled.
var readOps = map[string]bool{
	"GetItem": true, "Query": true, "Scan": true, "BatchGetItem": true,
	"TransactGetItems": true, "DescribeTable": true,
}

func operation(r *http.Request) string {
	target := r.Header.Get("X-Amz-Target")
	return target[strings.LastIndexByte(target, '.')+1:]
}

// ServeHTTP serves one DynamoDB API request; a write is answered only once
// its journal record is on disk.
func (p *persister) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := operation(r)
	if readOps[op] {
		p.emu.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeFailure(w, http.StatusBadRequest, "SerializationException", "could not read the request body")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if !writeOps[op] {
		p.writeMu.Lock()
		p.emu.ServeHTTP(w, r)
		p.writeMu.Unlock()
		return
	}

	rec := httptest.NewRecorder()
	p.writeMu.Lock()
	j := p.j
	if j == nil {
		p.writeMu.Unlock()
		writeFailure(w, http.StatusInternalServerError, "InternalServerError", "local dynamodb is not open for writes")
		return
	}
	p.emu.ServeHTTP(rec, r)
	var end int64
	if rec.Code == http.StatusOK {
		end, err = p.record(j, op, body, rec.Body.Bytes())
	}
	p.writeMu.Unlock()
	if err == nil && end > 0 {
		err = j.wait(end)
	}
	if err != nil {
		p.log.Error("local dynamodb write not journaled", "op", op, "err", err)
		writeFailure(w, http.StatusInternalServerError, "InternalServerError", "the write could not be journaled")
		return
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
	if end > 0 && j.count() >= p.foldEvery {
		select {
		case p.foldc <- struct{}{}:
		default:
		}
	}
}

// record queues the after-images of the applied write op (request body,
// response resp) as one journal record, returning its logical end (0 if
// the write touched no persisted table). Any failure here leaves a write
// applied in memory but not journaled, so it also fails the journal for
// good: no later write may be acknowledged on top of it.
func (p *persister) record(j *journal, op string, body, resp []byte) (int64, error) {
	e, err := p.afterImages(op, body, resp)
	if err == nil && len(e.Changes) == 0 {
		return 0, nil
	}
	var payload []byte
	if err == nil {
		payload, err = json.Marshal(e)
	}
	var end int64
	if err == nil {
		end, err = j.append(payload)
	}
	if err != nil {
		err = fmt.Errorf("localenv: journal %s: %s: %w", p.jPath, op, err)
		j.fail(err)
		return 0, err
	}
	return end, nil
}

// writeRequest holds the parts of the five write operations' requests
// that name the items they change.
type writeRequest struct {
	itemRef
	RequestItems map[string][]struct {
		PutRequest    *itemRef
		DeleteRequest *itemRef
	}
	TransactItems []struct {
		Put, Update, Delete *itemRef
	}
}

// itemRef names an item by its key or by the whole item; TableName is
// empty inside BatchWriteItem, which names tables outside.
type itemRef struct {
	TableName string
	Item      map[string]json.RawMessage
	Key       map[string]json.RawMessage
}

// afterImages returns the persisted items the applied write op (request
// body, 200 response resp) changed, as they now are. A put leaves exactly
// its request's item and a delete leaves nothing, so only an update's
// result is read back from the emulator (GetItem), and a batch's whenever
// the emulator left some of it unprocessed.
func (p *persister) afterImages(op string, body, resp []byte) (entry, error) {
	var req writeRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return entry{}, fmt.Errorf("decode request: %w", err)
	}
	var e entry
	add := func(table string, key, item map[string]json.RawMessage, readBack bool) error {
		t, ok := p.byName[table]
		if !ok {
			return nil
		}
		if key == nil {
			key = map[string]json.RawMessage{t.PartitionKey: item[t.PartitionKey]}
			if t.SortKey != "" {
				key[t.SortKey] = item[t.SortKey]
			}
		}
		if readBack {
			var out struct{ Item map[string]json.RawMessage }
			if err := call(p.emu, "GetItem", map[string]any{"TableName": table, "Key": key, "ConsistentRead": true}, &out); err != nil {
				return fmt.Errorf("read back %s: %w", table, err)
			}
			item = out.Item
		}
		e.Changes = append(e.Changes, change{Table: t.Base, Key: key, Item: item})
		return nil
	}
	var err error
	switch op {
	case "PutItem", "DeleteItem":
		err = add(req.TableName, req.Key, req.Item, false)
	case "UpdateItem":
		err = add(req.TableName, req.Key, nil, true)
	case "BatchWriteItem":
		var out struct{ UnprocessedItems map[string][]json.RawMessage }
		if err := json.Unmarshal(resp, &out); err != nil {
			return entry{}, fmt.Errorf("decode response: %w", err)
		}
		partly := len(out.UnprocessedItems) > 0
		for table, reqs := range req.RequestItems {
			for _, wr := range reqs {
				for _, ref := range []*itemRef{wr.PutRequest, wr.DeleteRequest} {
					if ref != nil && err == nil {
						err = add(table, ref.Key, ref.Item, partly)
					}
				}
			}
		}
	case "TransactWriteItems":
		// All or nothing; ConditionCheck items change nothing.
		for _, ti := range req.TransactItems {
			for _, ref := range []*itemRef{ti.Put, ti.Delete} {
				if ref != nil && err == nil {
					err = add(ref.TableName, ref.Key, ref.Item, false)
				}
			}
			if ti.Update != nil && err == nil {
				err = add(ti.Update.TableName, ti.Update.Key, nil, true)
			}
		}
	}
	return e, err
}

// writeFailure answers with a DynamoDB-style error body.
func writeFailure(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}

// open restores the tables (which must exist and be empty) from the
// snapshot and the journal, folds a non-empty journal into a new snapshot,
// and opens the journal for appending. A damaged snapshot, or a journal
// damaged anywhere but in its final record, stops it with an error naming
// the file (and the byte offset); a torn final record is dropped and
// logged.
func (p *persister) open() (err error) {
	if err := loadSnapshot(p.emu, p.snapPath, p.tables); err != nil {
		return err
	}
	f, err := os.OpenFile(p.jPath, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("localenv: open journal: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("localenv: read journal %s: %w", p.jPath, err)
	}
	records := 0
	torn, err := readRecords(data, func(off int64, payload []byte) error {
		records++
		if err := p.replay(payload); err != nil {
			return fmt.Errorf("localenv: journal %s: record at byte %d: %w", p.jPath, off, err)
		}
		return nil
	})
	if d := (*damage)(nil); errors.As(err, &d) {
		return fmt.Errorf("localenv: journal %s is damaged at byte %d (%s): the writes from there on cannot be trusted; moving the file away starts from the last snapshot, without the writes journaled since", p.jPath, d.offset, d.reason)
	}
	if err != nil {
		return err
	}
	if torn >= 0 {
		p.log.Warn("local dynamodb journal ends in a torn record; dropped", "file", p.jPath, "offset", torn, "bytes", int64(len(data))-torn)
	}
	j := newJournal(p.jPath, f, p.sync)
	if len(data) > 0 {
		if err := saveSnapshot(p.emu, p.snapPath, p.tables); err != nil {
			return err
		}
		if err := j.truncate(); err != nil {
			return err
		}
		p.log.Info("local dynamodb journal replayed", "records", records)
	}
	if err := syncDir(filepath.Dir(p.jPath)); err != nil {
		return err
	}
	p.writeMu.Lock()
	p.j = j
	p.writeMu.Unlock()
	p.wg.Add(1)
	go p.folder()
	return nil
}

// replay applies one journal record's after-images to the emulator.
func (p *persister) replay(payload []byte) error {
	var e entry
	if err := json.Unmarshal(payload, &e); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	for _, c := range e.Changes {
		t, ok := p.byBase[c.Table]
		if !ok {
			return fmt.Errorf("unknown table %q", c.Table)
		}
		var err error
		if c.Item != nil {
			err = call(p.emu, "PutItem", map[string]any{"TableName": t.Name, "Item": c.Item}, nil)
		} else {
			err = call(p.emu, "DeleteItem", map[string]any{"TableName": t.Name, "Key": c.Key}, nil)
		}
		if err != nil {
			return fmt.Errorf("replay into %s: %w", t.Name, err)
		}
	}
	return nil
}

// folder folds the journal into a new snapshot whenever asked, until stopc
// closes.
func (p *persister) folder() {
	defer p.wg.Done()
	for {
		select {
		case <-p.stopc:
			return
		case <-p.foldc:
			if err := p.fold(); err != nil {
				p.log.Error("local dynamodb fold failed", "err", err)
			}
		}
	}
}

// fold writes a snapshot holding every journaled write and truncates the
// journal. Writes wait meanwhile. A crash at any point leaves a snapshot
// and a journal that together hold every acknowledged write: the journal
// is truncated only once the new snapshot is durable, and replaying it onto
// a snapshot that already holds it changes nothing.
func (p *persister) fold() error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if p.j == nil {
		return nil
	}
	if err := p.j.drain(); err != nil {
		return err
	}
	if p.j.count() == 0 {
		return nil
	}
	if err := saveSnapshot(p.emu, p.snapPath, p.tables); err != nil {
		return err
	}
	return p.j.truncate()
}

// close stops background folds, folds a last time and closes the journal.
// A persister that never opened (start-up failed, perhaps on a damaged
// journal) touches no file.
func (p *persister) close() error {
	p.writeMu.Lock()
	opened := p.j != nil
	p.writeMu.Unlock()
	if !opened {
		return nil
	}
	close(p.stopc)
	p.wg.Wait()
	err := p.fold()
	p.writeMu.Lock()
	if cerr := p.j.close(); err == nil {
		err = cerr
	}
	p.j = nil
	p.writeMu.Unlock()
	return err
}
