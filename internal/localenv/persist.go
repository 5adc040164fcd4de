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
	"time"

	"ndiro/internal/dynamo"
	"ndiro/internal/storage"
)

// persister keeps the in-process DynamoDB emulator's tables on disk so
// that a write acknowledged to a client survives a crash of the process,
// kill -9 included (DESIGN.md, Modes). It sits in front of the emulator:
//
//   - Every write the emulator answers with 200 is journaled before the
//     answer goes back: under one lock the items it may change are read
//     (their before-images), the write is applied, and the items it changed
//     are read back and queued as one journal record; outside the lock the
//     record is written and fsynced (group commit: one fsync covers every
//     record queued while the previous one ran); only then is the
//     emulator's answer sent.
//   - No answer, a read's or a refused write's included, goes out before
//     every write applied ahead of it is durable: a read or a condition
//     check never shows a write that could still be lost.
//   - At start the last snapshot is loaded, the journal replayed onto it,
//     both folded into a new snapshot and the journal truncated. The same
//     fold runs in the background every foldEvery records and at Close,
//     so the journal stays short.
//
// Once a journal write or fsync fails (a full disk: ENOSPC), the tables
// are put back to exactly their durable state before any answer goes out:
// the before-images of every write not durable are put back, newest first,
// and the file is cut back to its durable records (journal.cut). Every
// write that waited on the failed fsync, and every write after it, is
// refused with an API error of code storage.FullCode (storage.FailedCode
// for other I/O errors) and HTTP 400, which the SDK does not retry; reads
// go on. So the SDK's retry of a refused write never finds the write's own
// item (and takes it for a lost answer), and no restart brings back a
// refused write. A probe, after probeEvery and then backing off
// (probePause), tries a fold (a whole new snapshot, then a fresh journal
// file, each fsynced): once that fits on the disk, writes are taken again,
// without a restart (README, What survives a crash).
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
	emu        http.Handler
	tables     dynamo.Tables
	byName     map[string]dynamo.Table
	byBase     map[string]dynamo.Table
	snapPath   string
	jPath      string
	foldEvery  int
	probeEvery time.Duration
	sync       func(*os.File) error
	writeFile  func(*os.File, []byte) (int, error)
	log        *slog.Logger

	// writeMu orders every state change: a write's apply, after-image
	// reads and append happen under it, so the journal's order is the order
	// writes were applied; a fold holds it so its snapshot and truncate see
	// no write in between.
	writeMu sync.Mutex
	// applyMu is held exclusively, inside writeMu, while a write is applied
	// and its record queued and while a rollback puts items back; reads
	// hold it shared while the emulator answers them. So every write a
	// read can see has its record queued when the read ends, and the read
	// waits for those records (journal.end) before its answer goes out.
	applyMu sync.RWMutex
	j       *journal // nil until open succeeds and after close
	// undo holds the before-images of the writes whose records are not
	// yet known durable, oldest first (trimmed as records become durable).
	undo []undoRecord
	// broken is set if a rollback could not put the tables back: nothing
	// is answered from them any more (a restart reloads them).
	broken error
	// rolled is the failed journal whose writes not durable have been put
	// back (the probe then runs), nil while the journal is healthy.
	rolled *journal
	// foldAfter paces background folds after one failed (a nearly full
	// disk holds the journal's appends but not a snapshot).
	foldAfter time.Time
	foldc     chan struct{}
	stopc     chan struct{}
	wg        sync.WaitGroup
}

// undoRecord is what a rollback puts back for one journal record: the
// items its write changed, as they were before it (Item nil: absent).
type undoRecord struct {
	end    int64
	before []change
}

// maxProbeEvery caps the probe's backoff: writes resume at most this long
// after space is freed.
const maxProbeEvery = 30 * time.Second

// probePause returns the pause after a failed probe that waited pause:
// twice as long, up to 15 times the first pause (first) and at most
// maxProbeEvery: 2, 4, 8, 16 and then 30 s by default.
func probePause(pause, first time.Duration) time.Duration {
	return min(2*pause, 15*first, maxProbeEvery)
}

// persistOptions configure newPersister.
type persistOptions struct {
	dir        string
	tables     dynamo.Tables
	foldEvery  int
	probeEvery time.Duration
	sync       func(*os.File) error
	writeFile  func(*os.File, []byte) (int, error)
	log        *slog.Logger
}

func newPersister(emu http.Handler, o persistOptions) *persister {
	p := &persister{
		emu: emu, tables: o.tables,
		byName: map[string]dynamo.Table{}, byBase: map[string]dynamo.Table{},
		snapPath:  filepath.Join(o.dir, "dynamodb.json"),
		jPath:     filepath.Join(o.dir, "dynamodb.journal"),
		foldEvery: o.foldEvery, probeEvery: o.probeEvery, sync: o.sync, writeFile: o.writeFile, log: o.log,
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

// ServeHTTP serves one DynamoDB API request: a write is answered only
// once its journal record is on disk, any answer only once every write
// before it is, and a write is refused while the journal has failed.
func (p *persister) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := operation(r)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeFailure(w, http.StatusBadRequest, "SerializationException", "could not read the request body")
		return
	}
	switch {
	case readOps[op]:
		p.read(w, r, body)
	case writeOps[op]:
		p.write(w, r, op, body)
	default:
		r.Body = io.NopCloser(bytes.NewReader(body))
		p.writeMu.Lock()
		p.emu.ServeHTTP(w, r)
		p.writeMu.Unlock()
	}
}

// read answers a read once every write it may have seen is durable. If
// the journal fails first, the tables are put back and the read served
// again, from the durable state: reads go on while writes are refused.
func (p *persister) read(w http.ResponseWriter, r *http.Request, body []byte) {
	for {
		rec := httptest.NewRecorder()
		r.Body = io.NopCloser(bytes.NewReader(body))
		p.applyMu.RLock()
		j, broken := p.j, p.broken
		if broken == nil {
			p.emu.ServeHTTP(rec, r)
		}
		var end int64
		if j != nil {
			end = j.end()
		}
		p.applyMu.RUnlock()
		if broken != nil {
			writeFailure(w, http.StatusInternalServerError, "InternalServerError", "local dynamodb could not restore its tables after a failed journal write; restart ndiro")
			return
		}
		if j == nil || j.wait(end) == nil {
			forward(w, rec)
			return
		}
		p.rollback(j)
	}
}

// write applies a write and answers it once it, and everything before it,
// is durable; while the journal has failed it is refused before it reaches
// the emulator.
func (p *persister) write(w http.ResponseWriter, r *http.Request, op string, body []byte) {
	rec := httptest.NewRecorder()
	p.writeMu.Lock()
	j := p.j
	if j == nil {
		p.writeMu.Unlock()
		writeFailure(w, http.StatusInternalServerError, "InternalServerError", "local dynamodb is not open for writes")
		return
	}
	if err := p.refusal(j); err != nil {
		p.writeMu.Unlock()
		p.refuse(w, err)
		return
	}
	p.trimUndo(j)
	p.applyMu.Lock()
	before, err := p.beforeImages(op, body)
	if err != nil {
		p.applyMu.Unlock()
		p.writeMu.Unlock()
		writeFailure(w, http.StatusBadRequest, "SerializationException", err.Error())
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	p.emu.ServeHTTP(rec, r)
	var end int64
	if rec.Code == http.StatusOK {
		end, err = p.record(j, op, body, rec.Body.Bytes())
		switch {
		case err != nil:
			// Applied but not journaled: put it back before anyone reads it.
			if uerr := p.put(before); uerr != nil {
				p.broken = fmt.Errorf("localenv: undo a write that was not journaled: %w", uerr)
				p.log.Error("local dynamodb tables could not be put back; restart ndiro", "err", p.broken)
			}
			if j.failure() != nil {
				p.rollbackLocked(j)
			}
		case end > 0:
			p.undo = append(p.undo, undoRecord{end: end, before: before})
		}
	}
	end = max(end, j.end())
	p.applyMu.Unlock()
	p.writeMu.Unlock()
	if err != nil && j.failure() == nil {
		p.log.Error("local dynamodb write not journaled", "op", op, "err", err)
		writeFailure(w, http.StatusBadRequest, "ValidationException", "the write could not be journaled: "+err.Error())
		return
	}
	if err == nil {
		err = j.wait(end)
	}
	if err != nil {
		p.rollback(j)
		p.refuse(w, err)
		return
	}
	forward(w, rec)
	if rec.Code == http.StatusOK && j.count() >= p.foldEvery {
		select {
		case p.foldc <- struct{}{}:
		default:
		}
	}
}

// forward sends the emulator's recorded answer.
func forward(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}

// refusal returns the error a write is refused with while j has failed
// (nil while it is healthy).
func (p *persister) refusal(j *journal) error {
	if p.broken != nil {
		return p.broken
	}
	return j.failure()
}

// refuse answers a write refused because the journal failed (cause): HTTP
// 400 with __type storage.FullCode or storage.FailedCode, which the SDK
// does not retry.
func (p *persister) refuse(w http.ResponseWriter, cause error) {
	writeFailure(w, http.StatusBadRequest, storage.Code(storage.Cause(cause)),
		"local dynamodb refused the write, as its journal cannot be written ("+cause.Error()+"); writes resume once the disk has room")
}

// health returns nil while writes are taken, else why they are refused,
// wrapping storage.ErrFull or storage.ErrFailed.
func (p *persister) health() error {
	p.applyMu.RLock()
	j, broken := p.j, p.broken
	p.applyMu.RUnlock()
	if broken != nil {
		return fmt.Errorf("local dynamodb: %w: %w", storage.ErrFailed, broken)
	}
	if j == nil {
		return nil
	}
	if err := j.failure(); err != nil {
		return fmt.Errorf("local dynamodb refuses writes until its journal can be written again: %w: %w", storage.Cause(err), err)
	}
	return nil
}

// trimUndo drops the before-images of records now durable. The caller
// holds writeMu.
func (p *persister) trimUndo(j *journal) {
	durable := j.durableEnd()
	n := 0
	for n < len(p.undo) && p.undo[n].end <= durable {
		n++
	}
	p.undo = p.undo[n:]
}

// rollback puts the tables back to the durable state of the failed
// journal j, unless that is done already.
func (p *persister) rollback(j *journal) {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	p.rollbackLocked(j)
}

// rollbackLocked is rollback for a caller holding writeMu and applyMu:
// once the failed flush (if one runs) has ended, it puts back the
// before-images of every record past the durable end, newest first, cuts
// the journal back (journal.cut) and starts the probe.
func (p *persister) rollbackLocked(j *journal) {
	if p.j != j || j.failure() == nil || p.rolled == j {
		return // already rolled back (and perhaps recovered), or healthy
	}
	p.rolled = j
	cutErr := j.cut()
	durable := j.durableEnd()
	refused := 0
	for i := len(p.undo) - 1; i >= 0 && p.undo[i].end > durable; i-- {
		refused++
		if err := p.put(p.undo[i].before); err != nil && p.broken == nil {
			p.broken = fmt.Errorf("localenv: put back a write that was not durable: %w", err)
		}
	}
	p.undo = nil
	p.log.Error("local dynamodb journal failed; writes are refused until it can be written again", "file", p.jPath, "refused_writes", refused, "err", j.failure())
	if cutErr != nil {
		p.log.Error("local dynamodb journal not cut back; a restart before writes resume may bring refused writes back", "err", cutErr)
	}
	if p.broken != nil {
		p.log.Error("local dynamodb tables could not be put back; restart ndiro", "err", p.broken)
		return
	}
	p.startProbe()
}

// startProbe starts the probe goroutine, unless the persister is closing.
// The caller holds writeMu.
func (p *persister) startProbe() {
	select {
	case <-p.stopc:
		return
	default:
	}
	p.wg.Add(1)
	go p.probe()
}

// probe tries to resume writes (reopen) after probeEvery, and then after
// longer pauses (probePause), until it succeeds or the persister closes.
func (p *persister) probe() {
	defer p.wg.Done()
	pause := p.probeEvery
	for tries := 1; ; tries++ {
		t := time.NewTimer(pause)
		select {
		case <-p.stopc:
			t.Stop()
			return
		case <-t.C:
		}
		err := p.reopen()
		if err == nil {
			return
		}
		if tries == 1 {
			p.log.Warn("local dynamodb still cannot write its journal; trying again", "every_max", min(15*p.probeEvery, maxProbeEvery).String(), "err", err)
		}
		pause = probePause(pause, p.probeEvery)
	}
}

// reopen resumes writes after the journal failed, if the disk takes them
// again: it writes a whole new snapshot of the tables (which hold exactly
// the durable state since the rollback) and replaces the journal with a
// fresh, empty file, each fsynced; only then are writes taken again. A
// snapshot fits only where there is room for every table, so a disk with
// a few bytes free does not pass.
func (p *persister) reopen() error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	return p.reopenLocked()
}

func (p *persister) reopenLocked() error {
	old := p.j
	if old == nil || old.failure() == nil {
		return nil
	}
	if p.broken != nil {
		return p.broken
	}
	if err := old.cut(); err != nil {
		return err
	}
	if err := saveSnapshot(p.emu, p.snapPath, p.tables, p.writeFile); err != nil {
		return err
	}
	f, err := os.OpenFile(p.jPath, os.O_RDWR|os.O_CREATE|os.O_APPEND|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("localenv: reopen journal: %w", err)
	}
	if err := p.sync(f); err != nil {
		f.Close()
		return fmt.Errorf("localenv: reopen journal %s: %w", p.jPath, err)
	}
	if err := syncDir(filepath.Dir(p.jPath)); err != nil {
		f.Close()
		return err
	}
	p.applyMu.Lock()
	p.j, p.undo, p.rolled = newJournal(p.jPath, f, p.sync, p.writeFile), nil, nil
	p.applyMu.Unlock()
	old.close()
	p.log.Info("local dynamodb journal writable again; writes resume", "file", p.jPath)
	return nil
}

// record queues the after-images of the applied write op (request body,
// response resp) as one journal record, returning its logical end (0 if
// the write touched no persisted table). On an error the write is applied
// in memory but not journaled: the caller puts it back.
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
		return 0, fmt.Errorf("localenv: journal %s: %s: %w", p.jPath, op, err)
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

// touchedItem is one persisted item a write names: its table, its key
// (nil if only the whole item is given), and the item a put writes.
type touchedItem struct {
	table     dynamo.Table
	key, item map[string]json.RawMessage
}

// keyOf returns the item's key: the key given, or the key attributes of
// the put item.
func (ti touchedItem) keyOf() map[string]json.RawMessage {
	if ti.key != nil {
		return ti.key
	}
	key := map[string]json.RawMessage{ti.table.PartitionKey: ti.item[ti.table.PartitionKey]}
	if ti.table.SortKey != "" {
		key[ti.table.SortKey] = ti.item[ti.table.SortKey]
	}
	return key
}

// touched returns the persisted items the write op (decoded request req)
// may change, in the order the request names them, with whether the
// emulator's result must be read back for an after-image (an update, and
// any item of a batch the emulator may have left unprocessed: partly).
func (p *persister) touched(op string, req *writeRequest, partly bool) (items []touchedItem, readBack []bool) {
	add := func(table string, key, item map[string]json.RawMessage, rb bool) {
		if t, ok := p.byName[table]; ok {
			items, readBack = append(items, touchedItem{table: t, key: key, item: item}), append(readBack, rb)
		}
	}
	switch op {
	case "PutItem", "DeleteItem":
		add(req.TableName, req.Key, req.Item, false)
	case "UpdateItem":
		add(req.TableName, req.Key, nil, true)
	case "BatchWriteItem":
		for table, reqs := range req.RequestItems {
			for _, wr := range reqs {
				for _, ref := range []*itemRef{wr.PutRequest, wr.DeleteRequest} {
					if ref != nil {
						add(table, ref.Key, ref.Item, partly)
					}
				}
			}
		}
	case "TransactWriteItems":
		// All or nothing; ConditionCheck items change nothing.
		for _, ti := range req.TransactItems {
			for _, ref := range []*itemRef{ti.Put, ti.Delete} {
				if ref != nil {
					add(ref.TableName, ref.Key, ref.Item, false)
				}
			}
			if ti.Update != nil {
				add(ti.Update.TableName, ti.Update.Key, nil, true)
			}
		}
	}
	return items, readBack
}

// getItem reads one item of table t from the emulator, consistently; nil
// if there is none.
func (p *persister) getItem(t dynamo.Table, key map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	var out struct{ Item map[string]json.RawMessage }
	if err := call(p.emu, "GetItem", map[string]any{"TableName": t.Name, "Key": key, "ConsistentRead": true}, &out); err != nil {
		return nil, fmt.Errorf("read back %s: %w", t.Name, err)
	}
	return out.Item, nil
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
	partly := false
	if op == "BatchWriteItem" {
		var out struct{ UnprocessedItems map[string][]json.RawMessage }
		if err := json.Unmarshal(resp, &out); err != nil {
			return entry{}, fmt.Errorf("decode response: %w", err)
		}
		partly = len(out.UnprocessedItems) > 0
	}
	var e entry
	items, readBack := p.touched(op, &req, partly)
	for i, ti := range items {
		item := ti.item
		if readBack[i] {
			var err error
			if item, err = p.getItem(ti.table, ti.keyOf()); err != nil {
				return entry{}, err
			}
		}
		e.Changes = append(e.Changes, change{Table: ti.table.Base, Key: ti.keyOf(), Item: item})
	}
	return e, nil
}

// beforeImages returns the persisted items the write op (request body)
// may change, as they are before it runs: what a rollback puts back if
// the write's record does not become durable. It costs one GetItem per
// item, inside the emulator, under the write lock.
func (p *persister) beforeImages(op string, body []byte) ([]change, error) {
	var req writeRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("decode request: %w", err)
	}
	items, _ := p.touched(op, &req, false)
	before := make([]change, 0, len(items))
	for _, ti := range items {
		key := ti.keyOf()
		item, err := p.getItem(ti.table, key)
		if err != nil {
			return nil, err
		}
		before = append(before, change{Table: ti.table.Base, Key: key, Item: item})
	}
	return before, nil
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
// logged. A fold that does not fit on the disk does not stop it: the
// tables are served as replayed, writes refused until the probe finds
// room (a full disk keeps ndiro readable).
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
	records, good, err := p.replayJournal(data)
	if err != nil {
		return err
	}
	j := newJournal(p.jPath, f, p.sync, p.writeFile)
	if len(data) > 0 {
		ferr := saveSnapshot(p.emu, p.snapPath, p.tables, p.writeFile)
		if ferr == nil {
			ferr = j.truncate()
		}
		if ferr != nil {
			// The replayed records stay the journal (a torn tail cut
			// away): durable, and all the tables hold.
			j.appended, j.durable = good, good
			j.fail(ferr)
			j.cut()
		} else {
			p.log.Info("local dynamodb journal replayed", "records", records)
		}
	}
	if err := syncDir(filepath.Dir(p.jPath)); err != nil && j.failure() == nil {
		return err
	}
	p.writeMu.Lock()
	p.applyMu.Lock()
	p.j = j
	p.applyMu.Unlock()
	if j.failure() != nil {
		p.rolled = j
		p.log.Error("local dynamodb starts with writes refused: its journal cannot be folded", "file", p.jPath, "err", j.failure())
		p.startProbe()
	}
	p.writeMu.Unlock()
	p.wg.Add(1)
	go p.folder()
	return nil
}

// replayJournal replays the journal's bytes data onto the emulator and
// returns how many records it replayed and the length of the part that
// holds whole records (a torn final record is dropped and logged). A
// journal damaged anywhere else is an error naming the file and offset.
func (p *persister) replayJournal(data []byte) (records int, good int64, err error) {
	torn, err := readRecords(data, func(off int64, payload []byte) error {
		records++
		if err := p.replay(payload); err != nil {
			return fmt.Errorf("localenv: journal %s: record at byte %d: %w", p.jPath, off, err)
		}
		return nil
	})
	if d := (*damage)(nil); errors.As(err, &d) {
		return 0, 0, fmt.Errorf("localenv: journal %s is damaged at byte %d (%s): the writes from there on cannot be trusted; moving the file away starts from the last snapshot, without the writes journaled since", p.jPath, d.offset, d.reason)
	}
	if err != nil {
		return 0, 0, err
	}
	good = int64(len(data))
	if torn >= 0 {
		good = torn
		p.log.Warn("local dynamodb journal ends in a torn record; dropped", "file", p.jPath, "offset", torn, "bytes", int64(len(data))-torn)
	}
	return records, good, nil
}

// replay applies one journal record's after-images to the emulator.
func (p *persister) replay(payload []byte) error {
	var e entry
	if err := json.Unmarshal(payload, &e); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	return p.put(e.Changes)
}

// put writes each change's item to the emulator (PutItem), or deletes its
// key (DeleteItem) if it has none: a journal record replayed, or a write's
// before-images put back.
func (p *persister) put(changes []change) error {
	for _, c := range changes {
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
// closes. After a failed fold the next waits for probeEvery.
func (p *persister) folder() {
	defer p.wg.Done()
	for {
		select {
		case <-p.stopc:
			return
		case <-p.foldc:
			if time.Now().Before(p.foldAfter) {
				continue
			}
			if err := p.fold(); err != nil {
				p.foldAfter = time.Now().Add(p.probeEvery)
				p.log.Error("local dynamodb fold failed", "err", err)
			}
		}
	}
}

// fold writes a snapshot holding every journaled write and truncates the
// journal. Writes wait meanwhile. A crash at any point leaves a snapshot
// and a journal that together hold every acknowledged write: the journal
// is truncated only once the new snapshot is durable, and replaying it onto
// a snapshot that already holds it changes nothing. A snapshot that does
// not fit leaves the journal as it was, taking writes; a journal that
// fails here fails as it would under a write. On a failed journal, fold
// is reopen.
func (p *persister) fold() error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	j := p.j
	if j == nil {
		return nil
	}
	if j.failure() != nil {
		return p.reopenLocked()
	}
	if err := j.drain(); err != nil {
		p.applyMu.Lock()
		p.rollbackLocked(j)
		p.applyMu.Unlock()
		return err
	}
	if j.count() == 0 {
		return nil
	}
	if err := saveSnapshot(p.emu, p.snapPath, p.tables, p.writeFile); err != nil {
		return err
	}
	if err := j.truncate(); err != nil {
		p.applyMu.Lock()
		p.rollbackLocked(j)
		p.applyMu.Unlock()
		return err
	}
	p.undo = nil // all durable
	return nil
}

// close stops background folds and the probe, folds a last time (on a
// failed journal: tries to reopen it, so that a disk with room again
// leaves a clean snapshot) and closes the journal. A persister that never
// opened (start-up failed, perhaps on a damaged journal) touches no file.
func (p *persister) close() error {
	p.writeMu.Lock()
	opened := p.j != nil
	if opened {
		close(p.stopc) // under writeMu: no probe starts after it
	}
	p.writeMu.Unlock()
	if !opened {
		return nil
	}
	p.wg.Wait()
	err := p.fold()
	p.writeMu.Lock()
	if cerr := p.j.close(); err == nil {
		err = cerr
	}
	p.applyMu.Lock()
	p.j = nil
	p.applyMu.Unlock()
	p.writeMu.Unlock()
	return err
}
