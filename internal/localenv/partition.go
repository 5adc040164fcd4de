package localenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"sync"
)

// partitioned sits in front of the DynamoDB emulator (minidyn) and makes
// a read cost what it reads. The emulator answers a Query by walking every
// item of its table and evaluating the key condition on each, so a month
// page cost grew with every meal of every owner (0.2 s at 20,000 meals),
// and each new item re-sorts the table's keys, so restoring a snapshot
// grew with the square of its size. partitioned keeps:
//
//   - each partition of a table with a sort key (the meals of one owner)
//     in an emulator table of its own, created on the partition's first
//     write and dropped when its last item goes, named "<table>#<n>" ('#'
//     is never in a DynamoDB table name). The table under the logical
//     name itself stays empty: requests for a partition that holds nothing
//     go there, so the emulator still validates and answers them;
//   - a table with a partition key only (users, shares, invites) as one
//     emulator table, whose items are each a partition of one;
//   - the sorted keys of every partition (sort keys) or flat table
//     (partition keys), kept from the emulator's answers under a write
//     lock: the emulator orders string keys byte-wise, as DynamoDB does.
//
// A Query is answered from its partition alone: the key condition is
// resolved here (parseKeyCondition) to the span of sorted keys it allows,
// and the emulator is sent the same request with an ExclusiveStartKey
// just before that span and a Limit of its length, so it evaluates the
// span's items only (filter, projection and key condition included, as
// before) and skips the rest with a string comparison each. Count and
// ScannedCount are those items: Count what the filter kept, ScannedCount
// what was read. A Limit below the span's length is honoured, and
// LastEvaluatedKey then names the last item read, as in DynamoDB.
//
// A Scan walks the partitions in the order of their keys, each in its own
// order, with the same Limit semantics: at most Limit items read per page,
// across partitions; ExclusiveStartKey resumes in the partition it names
// (or the next one, if that partition is gone), also after the item it
// names was deleted. Select COUNT returns counts without items. A parallel
// Scan gets every item in segment 0 and none in the others: correct (each
// item in exactly one segment) and no slower, as the emulator serves one
// request at a time anyway.
//
// GetItem, PutItem, UpdateItem and DeleteItem go to the item's partition;
// BatchGetItem, BatchWriteItem, TransactGetItems and TransactWriteItems are
// rewritten so that each of their items names its partition's table, and
// are sent to the emulator as one request: a transaction across owners is
// as atomic as the emulator makes one across tables, and conditional
// writes are evaluated by the emulator exactly as before. Answers name
// the logical tables (UnprocessedItems, UnprocessedKeys, Responses, and
// error messages).
//
// Every key attribute must be a string (S), as every key of ndiro's tables
// is (dynamo.Table), and tables have no secondary indexes: CreateTable
// refuses anything else with a ValidationException, rather than serving
// it wrongly. A table created around it (there is none) is passed through.
type partitioned struct {
	emu http.Handler

	// mu is held shared by reads and exclusively by writes and table
	// changes: a Scan across partitions, or a span computed from the
	// sorted keys, sees no write half done.
	mu     sync.RWMutex
	tables map[string]*ptable
	seq    int
}

func newPartitioned(emu http.Handler) *partitioned {
	return &partitioned{emu: emu, tables: map[string]*ptable{}}
}

// ptable is one logical table: its key schema, its CreateTable request (to
// create partitions with), and either its partitions (with a sort key) or
// its sorted partition keys (without).
type ptable struct {
	name   string
	pk, sk string // key attribute names; sk is "" for a partition key only
	create map[string]json.RawMessage
	// parts and order: the partitions of a table with a sort key, by
	// partition key and in partition key order.
	parts map[string]*partition
	order []*partition
	// keys: the partition keys of a table without a sort key, sorted.
	keys []string
}

func (t *ptable) sharded() bool { return t.sk != "" }

// partition is one partition key's items in a table with a sort key:
// the emulator table holding them and their sort keys, sorted.
type partition struct {
	pk    string
	table string
	keys  []string
}

// run is what one emulator table holds, in its order: a partition (keys
// are sort keys) or a whole table without a sort key (keys are
// partition keys, pk is "").
type run struct {
	table string
	pk    string
	keys  []string
}

// runs returns the runs of t in scan order.
func (t *ptable) runs() []run {
	if !t.sharded() {
		return []run{{table: t.name, keys: t.keys}}
	}
	out := make([]run, len(t.order))
	for i, p := range t.order {
		out[i] = run{table: p.table, pk: p.pk, keys: p.keys}
	}
	return out
}

// keyJSON returns the key of the item of r whose run key is k, in
// DynamoDB JSON.
func (t *ptable) keyJSON(r run, k string) json.RawMessage {
	key := map[string]map[string]string{}
	if t.sharded() {
		key[t.pk] = map[string]string{"S": r.pk}
		key[t.sk] = map[string]string{"S": k}
	} else {
		key[t.pk] = map[string]string{"S": k}
	}
	b, _ := json.Marshal(key)
	return b
}

// itemKey is an item's key: its partition key value and, in a table with
// a sort key, its sort key value.
type itemKey struct{ pk, sk string }

// runKey is the key the item is sorted by in its run.
func (t *ptable) runKey(k itemKey) string {
	if t.sharded() {
		return k.sk
	}
	return k.pk
}

// errKeySchema is DynamoDB's answer to a key (or item) without the
// table's key attributes as strings.
//
//lint:ignore ST1005 DynamoDB's own message, sent to the client as it is
var errKeySchema = errors.New("The provided key element does not match the schema")

// keyOf reads the key attributes of item (a Key, an Item or an
// ExclusiveStartKey). It returns errKeySchema if one is missing or not a
// string.
func (t *ptable) keyOf(item map[string]json.RawMessage) (itemKey, error) {
	var k itemKey
	var ok bool
	if k.pk, ok = stringValue(item[t.pk]); !ok {
		return itemKey{}, errKeySchema
	}
	if t.sharded() {
		if k.sk, ok = stringValue(item[t.sk]); !ok {
			return itemKey{}, errKeySchema
		}
	}
	return k, nil
}

// insertKey adds k to the sorted keys ks, if it is not there.
func insertKey(ks []string, k string) []string {
	i := sort.SearchStrings(ks, k)
	if i < len(ks) && ks[i] == k {
		return ks
	}
	ks = append(ks, "")
	copy(ks[i+1:], ks[i:])
	ks[i] = k
	return ks
}

// removeKey drops k from the sorted keys ks, if it is there.
func removeKey(ks []string, k string) []string {
	i := sort.SearchStrings(ks, k)
	if i < len(ks) && ks[i] == k {
		return append(ks[:i], ks[i+1:]...)
	}
	return ks
}

// after returns the index in ks of the first key above k.
func after(ks []string, k string) int {
	return sort.Search(len(ks), func(i int) bool { return ks[i] > k })
}

// ServeHTTP serves one DynamoDB JSON API request.
func (p *partitioned) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := operation(r)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeFailure(w, http.StatusBadRequest, "SerializationException", "could not read the request body")
		return
	}
	a := p.serveLocked(op, body)
	for k, v := range a.header {
		w.Header()[k] = v
	}
	w.WriteHeader(a.status)
	w.Write(a.body)
}

// serveLocked serves one request under mu: shared for reads, exclusive
// for everything else.
func (p *partitioned) serveLocked(op string, body []byte) answer {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		return failure(http.StatusBadRequest, "SerializationException", "the request body is not a JSON object")
	}
	if readOps[op] {
		p.mu.RLock()
		defer p.mu.RUnlock()
	} else {
		p.mu.Lock()
		defer p.mu.Unlock()
	}
	return p.serve(op, req, body)
}

// answer is one HTTP answer, the emulator's or ours.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (p *partitioned) serve(op string, req map[string]json.RawMessage, body []byte) answer {
	switch op {
	case "CreateTable":
		return p.createTable(req, body)
	case "DeleteTable":
		return p.deleteTable(req, body)
	case "DescribeTable":
		return p.describeTable(req, body)
	case "GetItem", "PutItem", "UpdateItem", "DeleteItem":
		return p.item(op, req, body)
	case "Query":
		return p.query(req, body)
	case "Scan":
		return p.scan(req, body)
	case "BatchGetItem":
		return p.batchGet(req, body)
	case "BatchWriteItem":
		return p.batchWrite(req, body)
	case "TransactGetItems", "TransactWriteItems":
		return p.transact(op, req, body)
	}
	return p.send(op, body, nil)
}

// table returns the logical table req names, nil if it is not one
// created here (the emulator then answers as it would).
func (p *partitioned) table(req map[string]json.RawMessage) *ptable {
	var name string
	if json.Unmarshal(req["TableName"], &name) != nil {
		return nil
	}
	return p.tables[name]
}

// send passes a request to the emulator and returns its answer, with the
// emulator table names in renames put back to logical ones in an error.
func (p *partitioned) send(op string, body []byte, renames map[string]string) answer {
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	rec := httptest.NewRecorder()
	p.emu.ServeHTTP(rec, req)
	a := answer{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	if a.status != http.StatusOK && len(renames) > 0 {
		// Longest first: "t#12" before "t#1".
		phys := make([]string, 0, len(renames))
		for name := range renames {
			phys = append(phys, name)
		}
		sort.Slice(phys, func(i, j int) bool { return len(phys[i]) > len(phys[j]) })
		for _, name := range phys {
			if name != renames[name] {
				a.body = bytes.ReplaceAll(a.body, []byte(name), []byte(renames[name]))
			}
		}
	}
	return a
}

// sendJSON marshals req and sends it.
func (p *partitioned) sendJSON(op string, req any, renames map[string]string) answer {
	body, err := json.Marshal(req)
	if err != nil {
		return failure(http.StatusInternalServerError, "InternalServerError", "local dynamodb: "+err.Error())
	}
	return p.send(op, body, renames)
}

// failure is an answer of our own in DynamoDB's error shape.
func failure(status int, typ, msg string) answer {
	rec := httptest.NewRecorder()
	writeFailure(rec, status, typ, msg)
	return answer{status: status, header: rec.Header(), body: rec.Body.Bytes()}
}

func validation(msg string) answer {
	return failure(http.StatusBadRequest, "ValidationException", msg)
}

// ok is a 200 answer with body v.
func ok(v any) answer {
	b, err := json.Marshal(v)
	if err != nil {
		return failure(http.StatusInternalServerError, "InternalServerError", "local dynamodb: "+err.Error())
	}
	return answer{status: http.StatusOK, header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}}, body: b}
}

// with returns a copy of req with the given fields replaced (a nil value
// removes the field).
func with(req map[string]json.RawMessage, fields map[string]any) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(req)+len(fields))
	for k, v := range req {
		out[k] = v
	}
	for k, v := range fields {
		if v == nil {
			delete(out, k)
			continue
		}
		if raw, isRaw := v.(json.RawMessage); isRaw {
			out[k] = raw
			continue
		}
		b, _ := json.Marshal(v)
		out[k] = b
	}
	return out
}

// createTable creates a logical table: the emulator's table under its
// name (for a table with a sort key, the empty one), after checking that
// every key is a string and that there are no secondary indexes.
func (p *partitioned) createTable(req map[string]json.RawMessage, body []byte) answer {
	var in struct {
		TableName            string
		AttributeDefinitions []struct{ AttributeName, AttributeType string }
		KeySchema            []struct{ AttributeName, KeyType string }
		GlobalSecondaryIndexes,
		LocalSecondaryIndexes json.RawMessage
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return validation("CreateTable: " + err.Error())
	}
	if len(in.GlobalSecondaryIndexes) > 0 && string(in.GlobalSecondaryIndexes) != "null" ||
		len(in.LocalSecondaryIndexes) > 0 && string(in.LocalSecondaryIndexes) != "null" {
		return validation("the embedded DynamoDB keeps no secondary indexes (ndiro's tables have none)")
	}
	t := &ptable{name: in.TableName, create: req, parts: map[string]*partition{}}
	types := map[string]string{}
	for _, d := range in.AttributeDefinitions {
		types[d.AttributeName] = d.AttributeType
	}
	for _, k := range in.KeySchema {
		if types[k.AttributeName] != "S" {
			return validation(fmt.Sprintf("the embedded DynamoDB keeps string (S) keys only, as every key of ndiro's tables is; %s is %q", k.AttributeName, types[k.AttributeName]))
		}
		switch k.KeyType {
		case "HASH":
			t.pk = k.AttributeName
		case "RANGE":
			t.sk = k.AttributeName
		}
	}
	a := p.send("CreateTable", body, nil)
	if a.status == http.StatusOK && t.pk != "" {
		p.tables[t.name] = t
	}
	return a
}

// deleteTable deletes a logical table with all its partitions.
func (p *partitioned) deleteTable(req map[string]json.RawMessage, body []byte) answer {
	t := p.table(req)
	a := p.send("DeleteTable", body, nil)
	if t == nil || a.status != http.StatusOK {
		return a
	}
	for _, part := range t.order {
		p.sendJSON("DeleteTable", map[string]string{"TableName": part.table}, nil)
	}
	delete(p.tables, t.name)
	return a
}

// describeTable describes a logical table, counting the items of all its
// partitions.
func (p *partitioned) describeTable(req map[string]json.RawMessage, body []byte) answer {
	t := p.table(req)
	a := p.send("DescribeTable", body, nil)
	if t == nil || !t.sharded() || a.status != http.StatusOK {
		return a
	}
	var out struct{ Table map[string]json.RawMessage }
	if err := json.Unmarshal(a.body, &out); err != nil || out.Table == nil {
		return a
	}
	n := 0
	for _, part := range t.order {
		n += len(part.keys)
	}
	out.Table["ItemCount"] = json.RawMessage(strconv.Itoa(n))
	return ok(out)
}

// partitionFor returns the emulator table of pk's partition in t,
// creating it if create is set; "" if it does not exist (and create is
// not set). The caller holds mu exclusively if create is set.
func (p *partitioned) partitionFor(t *ptable, pk string, create bool) (*partition, error) {
	if part := t.parts[pk]; part != nil || !create {
		return part, nil
	}
	p.seq++
	part := &partition{pk: pk, table: t.name + "#" + strconv.Itoa(p.seq)}
	a := p.sendJSON("CreateTable", with(t.create, map[string]any{"TableName": part.table}), nil)
	if a.status != http.StatusOK {
		return nil, fmt.Errorf("local dynamodb: create partition table: %d: %s", a.status, a.body)
	}
	t.parts[pk] = part
	i := sort.Search(len(t.order), func(i int) bool { return t.order[i].pk >= pk })
	t.order = append(t.order, nil)
	copy(t.order[i+1:], t.order[i:])
	t.order[i] = part
	return part, nil
}

// resync reads whether the item at k in t exists, as the emulator now
// says (a consistent GetItem).
func (p *partitioned) resync(t *ptable, k itemKey) bool {
	table := t.name
	if t.sharded() {
		part := t.parts[k.pk]
		if part == nil {
			return false
		}
		table = part.table
	}
	key := t.keyJSON(run{pk: k.pk}, t.runKey(k))
	a := p.sendJSON("GetItem", map[string]any{"TableName": table, "Key": key, "ConsistentRead": true}, nil)
	var out struct{ Item map[string]json.RawMessage }
	return a.status == http.StatusOK && json.Unmarshal(a.body, &out) == nil && len(out.Item) > 0
}

// What a write left of an item, as far as its answer tells.
const (
	leftUnknown = iota // read it back (a refused or partly done write)
	leftItem           // the write succeeded and the item exists (a put or update)
	leftNothing        // the write succeeded and the item is gone (a delete)
)

// touched is an item a write may have changed: whether it puts (or
// updates) it rather than deleting it, and what it left.
type touched struct {
	t    *ptable
	k    itemKey
	put  bool
	left int
}

// settle records in the sorted keys what a write left of every item it
// touched (reading back those its answer does not tell), then drops the
// partitions among theirs left empty, deleting each emulator table.
// Dropping only once every item is recorded keeps a partition whose last
// item a batch deleted and another item of which it put. The caller holds
// mu exclusively.
func (p *partitioned) settle(items []touched) {
	for _, it := range items {
		exists := it.left == leftItem
		if it.left == leftUnknown {
			exists = p.resync(it.t, it.k)
		}
		if !it.t.sharded() {
			if exists {
				it.t.keys = insertKey(it.t.keys, it.k.pk)
			} else {
				it.t.keys = removeKey(it.t.keys, it.k.pk)
			}
			continue
		}
		part := it.t.parts[it.k.pk]
		switch {
		case part == nil:
		case exists:
			part.keys = insertKey(part.keys, it.k.sk)
		default:
			part.keys = removeKey(part.keys, it.k.sk)
		}
	}
	for _, it := range items {
		if !it.t.sharded() {
			continue
		}
		if part := it.t.parts[it.k.pk]; part != nil && len(part.keys) == 0 {
			p.dropPartition(it.t, part)
		}
	}
}

// outcome is what a write with answer status left of an item it puts
// (put) or deletes.
func outcome(status int, put bool) int {
	switch {
	case status != http.StatusOK:
		return leftUnknown
	case put:
		return leftItem
	}
	return leftNothing
}

// dropPartition deletes an empty partition's emulator table.
func (p *partitioned) dropPartition(t *ptable, part *partition) {
	p.sendJSON("DeleteTable", map[string]string{"TableName": part.table}, nil)
	delete(t.parts, part.pk)
	for i, o := range t.order {
		if o == part {
			t.order = append(t.order[:i], t.order[i+1:]...)
			break
		}
	}
}

// route returns the emulator table for the item at k of t: its
// partition's (created if create is set), the logical table's when the
// partition does not exist (it holds nothing) or t has no sort key.
func (p *partitioned) route(t *ptable, k itemKey, create bool) (string, error) {
	if !t.sharded() {
		return t.name, nil
	}
	part, err := p.partitionFor(t, k.pk, create)
	if err != nil || part == nil {
		return t.name, err
	}
	return part.table, nil
}

// item serves GetItem, PutItem, UpdateItem and DeleteItem: sent to the
// item's partition, and for a write, the partition's keys updated from
// what the emulator then holds.
func (p *partitioned) item(op string, req map[string]json.RawMessage, body []byte) answer {
	t := p.table(req)
	if t == nil {
		return p.send(op, body, nil)
	}
	field := "Key"
	if op == "PutItem" {
		field = "Item"
	}
	var item map[string]json.RawMessage
	json.Unmarshal(req[field], &item)
	k, err := t.keyOf(item)
	if err != nil {
		return validation(err.Error())
	}
	create := op == "PutItem" || op == "UpdateItem"
	table, err := p.route(t, k, create)
	if err != nil {
		return failure(http.StatusInternalServerError, "InternalServerError", err.Error())
	}
	a := p.sendJSON(op, with(req, map[string]any{"TableName": table}), map[string]string{table: t.name})
	if op != "GetItem" {
		p.settle([]touched{{t, k, create, outcome(a.status, create)}})
	}
	return a
}

// pageIn is what Query and Scan read of their request.
type pageIn struct {
	ExclusiveStartKey         map[string]json.RawMessage
	Limit                     *int64
	Select                    string
	IndexName                 *string
	ScanIndexForward          *bool
	KeyConditionExpression    *string
	KeyConditions             json.RawMessage
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues map[string]json.RawMessage
	Segment, TotalSegments    *int64
}

// page is a Query's or Scan's answer, built here: the items the filter
// kept, how many items were read, and where the next page starts.
type page struct {
	Items            []json.RawMessage
	ScannedCount     int
	LastEvaluatedKey json.RawMessage
}

// limit returns the page's Limit (0: none), or an answer refusing it.
func (in pageIn) limit() (int, *answer) {
	if in.Limit == nil {
		return 0, nil
	}
	if *in.Limit < 1 {
		a := validation(fmt.Sprintf("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", *in.Limit))
		return 0, &a
	}
	return int(min(*in.Limit, 1<<31-1)), nil
}

// readRun asks the emulator for the items of run r from index from
// (after the item at from-1, which it skips to) for n items, with the
// rest of req as sent (filter, projection, consistency). n is at least 1.
func (p *partitioned) readRun(t *ptable, op string, req map[string]json.RawMessage, r run, from, n int, backward bool) ([]json.RawMessage, *answer) {
	fields := map[string]any{"TableName": r.table, "Limit": n, "ExclusiveStartKey": nil, "Select": nil, "Segment": nil, "TotalSegments": nil}
	switch {
	case !backward && from > 0:
		fields["ExclusiveStartKey"] = t.keyJSON(r, r.keys[from-1])
	case backward && from+n < len(r.keys):
		fields["ExclusiveStartKey"] = t.keyJSON(r, r.keys[from+n])
	}
	a := p.sendJSON(op, with(req, fields), map[string]string{r.table: t.name})
	if a.status != http.StatusOK {
		return nil, &a
	}
	var out struct{ Items []json.RawMessage }
	if err := json.Unmarshal(a.body, &out); err != nil {
		f := failure(http.StatusInternalServerError, "InternalServerError", "local dynamodb: "+err.Error())
		return nil, &f
	}
	return out.Items, nil
}

// probe sends req to the emulator against table with nothing to read
// (ExclusiveStartKey at its last key, Limit 1), so that it validates the
// request as it would have; nil if it accepts it.
func (p *partitioned) probe(t *ptable, op string, req map[string]json.RawMessage, table string, last json.RawMessage) *answer {
	fields := map[string]any{"TableName": table, "Limit": 1, "ExclusiveStartKey": nil, "Select": nil, "Segment": nil, "TotalSegments": nil}
	if last != nil {
		fields["ExclusiveStartKey"] = last
	}
	a := p.sendJSON(op, with(req, fields), map[string]string{table: t.name})
	if a.status != http.StatusOK {
		return &a
	}
	return nil
}

// finish answers a page: Count is the items kept, and they are sent
// unless Select is COUNT.
func finish(pg page, in pageIn) answer {
	out := map[string]any{"Count": len(pg.Items), "ScannedCount": pg.ScannedCount}
	if in.Select != "COUNT" {
		if pg.Items == nil {
			pg.Items = []json.RawMessage{}
		}
		out["Items"] = pg.Items
	}
	if pg.LastEvaluatedKey != nil {
		out["LastEvaluatedKey"] = pg.LastEvaluatedKey
	}
	return ok(out)
}

// query answers a Query from the span of its partition its key condition
// allows (see partitioned).
func (p *partitioned) query(req map[string]json.RawMessage, body []byte) answer {
	t := p.table(req)
	var in pageIn
	if t == nil || json.Unmarshal(body, &in) != nil {
		return p.send("Query", body, nil)
	}
	if in.IndexName != nil {
		return validation("the embedded DynamoDB keeps no secondary indexes; IndexName " + strconv.Quote(*in.IndexName) + " does not exist")
	}
	if len(in.KeyConditions) > 0 && string(in.KeyConditions) != "null" || in.KeyConditionExpression == nil {
		return validation("Query needs a KeyConditionExpression (the legacy KeyConditions parameter is not supported here)")
	}
	limit, refused := in.limit()
	if refused != nil {
		return *refused
	}
	kc, err := parseKeyCondition(*in.KeyConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, t.pk, t.sk)
	if err != nil {
		return validation(err.Error())
	}
	backward := in.ScanIndexForward != nil && !*in.ScanIndexForward

	// The run holding the partition and the span of it the condition allows.
	var r run
	var i, j int
	if t.sharded() {
		r = run{table: t.name, pk: kc.pk}
		if part := t.parts[kc.pk]; part != nil {
			r = run{table: part.table, pk: part.pk, keys: part.keys}
		}
		i, j = kc.sk.span(r.keys)
	} else {
		r = t.runs()[0]
		i, j = keyRange{op: "=", a: kc.pk}.span(r.keys)
	}
	if in.ExclusiveStartKey != nil {
		k, err := t.keyOf(in.ExclusiveStartKey)
		if err != nil {
			return validation("The provided starting key is invalid: " + err.Error())
		}
		if k.pk != kc.pk {
			return validation("The provided starting key is outside query boundaries based on provided conditions")
		}
		if backward {
			j = min(j, sort.SearchStrings(r.keys, t.runKey(k)))
		} else {
			i = max(i, after(r.keys, t.runKey(k)))
		}
	}
	if j <= i {
		var last json.RawMessage
		if len(r.keys) > 0 {
			last = t.keyJSON(r, r.keys[len(r.keys)-1])
		}
		if a := p.probe(t, "Query", req, r.table, last); a != nil {
			return *a
		}
		return finish(page{}, in)
	}
	n := j - i
	if limit > 0 && limit < n {
		n = limit
	}
	from := i
	if backward {
		from = j - n
	}
	items, a := p.readRun(t, "Query", req, r, from, n, backward)
	if a != nil {
		return *a
	}
	pg := page{Items: items, ScannedCount: n}
	if limit > 0 && limit <= j-i {
		last := from + n - 1
		if backward {
			last = from
		}
		pg.LastEvaluatedKey = t.keyJSON(r, r.keys[last])
	}
	return finish(pg, in)
}

// scan answers a Scan by walking the runs of its table in order (see
// partitioned).
func (p *partitioned) scan(req map[string]json.RawMessage, body []byte) answer {
	t := p.table(req)
	var in pageIn
	if t == nil || json.Unmarshal(body, &in) != nil {
		return p.send("Scan", body, nil)
	}
	if in.IndexName != nil {
		return validation("the embedded DynamoDB keeps no secondary indexes; IndexName " + strconv.Quote(*in.IndexName) + " does not exist")
	}
	limit, refused := in.limit()
	if refused != nil {
		return *refused
	}
	if a := checkSegments(in); a != nil {
		return *a
	}
	runs := t.runs()
	ri, pos := 0, 0
	if in.ExclusiveStartKey != nil {
		k, err := t.keyOf(in.ExclusiveStartKey)
		if err != nil {
			return validation("The provided starting key is invalid: " + err.Error())
		}
		if t.sharded() {
			ri = sort.Search(len(runs), func(i int) bool { return runs[i].pk >= k.pk })
			if ri < len(runs) && runs[ri].pk == k.pk {
				pos = after(runs[ri].keys, k.sk)
			}
		} else {
			pos = after(runs[0].keys, k.pk)
		}
	}
	var pg page
	read := false
	if in.Segment == nil || *in.Segment == 0 {
		for ; ri < len(runs) && (limit == 0 || pg.ScannedCount < limit); ri, pos = ri+1, 0 {
			r := runs[ri]
			n := len(r.keys) - pos
			if limit > 0 {
				n = min(n, limit-pg.ScannedCount)
			}
			if n <= 0 {
				continue
			}
			items, a := p.readRun(t, "Scan", req, r, pos, n, false)
			if a != nil {
				return *a
			}
			read = true
			pg.Items = append(pg.Items, items...)
			pg.ScannedCount += n
			if limit > 0 && pg.ScannedCount == limit {
				pg.LastEvaluatedKey = t.keyJSON(r, r.keys[pos+n-1])
			}
		}
	}
	if !read {
		if a := p.probe(t, "Scan", req, t.name, lastKey(t)); a != nil {
			return *a
		}
	}
	return finish(pg, in)
}

// lastKey is the key of the last item of a table without a sort key (nil
// if it is empty, or for a table with one, whose own emulator table is
// empty).
func lastKey(t *ptable) json.RawMessage {
	if t.sharded() || len(t.keys) == 0 {
		return nil
	}
	return t.keyJSON(run{}, t.keys[len(t.keys)-1])
}

// checkSegments refuses a parallel scan's Segment and TotalSegments as
// DynamoDB does: both or neither, 1 ≤ TotalSegments ≤ 1,000,000, 0 ≤
// Segment < TotalSegments.
func checkSegments(in pageIn) *answer {
	if in.Segment == nil && in.TotalSegments == nil {
		return nil
	}
	var a answer
	switch {
	case in.Segment == nil || in.TotalSegments == nil:
		a = validation("The TotalSegments parameter is required but was not present in the request when Segment parameter is present")
		if in.Segment == nil {
			a = validation("The Segment parameter is required but was not present in the request when parameter TotalSegments is present")
		}
	case *in.TotalSegments < 1 || *in.TotalSegments > 1_000_000:
		a = validation(fmt.Sprintf("1 validation error detected: Value '%d' at 'totalSegments' failed to satisfy constraint: Member must have value between 1 and 1000000", *in.TotalSegments))
	case *in.Segment < 0 || *in.Segment >= *in.TotalSegments:
		a = validation(fmt.Sprintf("The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: %d is not less than TotalSegments: %d", *in.Segment, *in.TotalSegments))
	default:
		return nil
	}
	return &a
}
