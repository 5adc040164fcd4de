package localenv

import (
	"encoding/json"
	"net/http"
)

// writeRef is one item a batch or transaction names: its logical table,
// its key, and whether the operation may create it (a put or an update,
// which needs its partition's table to exist).
type writeRef struct {
	t      *ptable
	k      itemKey
	create bool
}

// batchWrite serves BatchWriteItem: every put and delete is sent to its
// partition's table in one emulator request; UnprocessedItems come back
// under the logical table names.
func (p *partitioned) batchWrite(req map[string]json.RawMessage, body []byte) answer {
	var in struct {
		RequestItems map[string][]json.RawMessage
	}
	if json.Unmarshal(body, &in) != nil {
		return p.send("BatchWriteItem", body, nil)
	}
	// Every key is checked before any partition is created.
	refs := map[string][]*writeRef{}
	for name, reqs := range in.RequestItems {
		t := p.tables[name]
		if t == nil {
			continue
		}
		refs[name] = make([]*writeRef, len(reqs))
		for i, raw := range reqs {
			var wr struct {
				PutRequest    *struct{ Item map[string]json.RawMessage }
				DeleteRequest *struct{ Key map[string]json.RawMessage }
			}
			json.Unmarshal(raw, &wr)
			if (wr.PutRequest == nil) == (wr.DeleteRequest == nil) {
				continue // the emulator refuses the whole batch
			}
			item, create := map[string]json.RawMessage(nil), wr.PutRequest != nil
			if create {
				item = wr.PutRequest.Item
			} else {
				item = wr.DeleteRequest.Key
			}
			k, err := t.keyOf(item)
			if err != nil {
				return validation(err.Error())
			}
			refs[name][i] = &writeRef{t: t, k: k, create: create}
		}
	}
	out := map[string][]json.RawMessage{}
	renames := map[string]string{}
	var touch []touched
	for name, reqs := range in.RequestItems {
		for i, raw := range reqs {
			table := name
			if ref := refAt(refs[name], i); ref != nil {
				var err error
				if table, err = p.route(ref.t, ref.k, ref.create); err != nil {
					p.settle(touch)
					return failure(http.StatusInternalServerError, "InternalServerError", err.Error())
				}
				touch = append(touch, touched{ref.t, ref.k, ref.create, leftUnknown})
			}
			out[table] = append(out[table], raw)
			renames[table] = name
		}
	}
	a := p.sendJSON("BatchWriteItem", with(req, map[string]any{"RequestItems": out}), renames)
	var resp map[string]json.RawMessage
	var un map[string][]json.RawMessage
	if a.status != http.StatusOK || json.Unmarshal(a.body, &resp) != nil || json.Unmarshal(resp["UnprocessedItems"], &un) != nil {
		p.settle(touch) // read back: the emulator may have applied part of it
		return a
	}
	if len(un) == 0 {
		// All applied: each put left its item, each delete nothing.
		for i := range touch {
			touch[i].left = outcome(http.StatusOK, touch[i].put)
		}
	}
	p.settle(touch)
	logical := map[string][]json.RawMessage{}
	for table, reqs := range un {
		logical[renames[table]] = append(logical[renames[table]], reqs...)
	}
	return ok(with(resp, map[string]any{"UnprocessedItems": logical}))
}

func refAt(refs []*writeRef, i int) *writeRef {
	if i < len(refs) {
		return refs[i]
	}
	return nil
}

// maxBatchGetKeys is DynamoDB's limit on the keys of one BatchGetItem.
const maxBatchGetKeys = 100

// batchGet serves BatchGetItem: each key is read from its partition's
// table (a key whose partition holds nothing has no item); Responses and
// UnprocessedKeys come back under the logical table names.
func (p *partitioned) batchGet(req map[string]json.RawMessage, body []byte) answer {
	var in struct {
		RequestItems map[string]map[string]json.RawMessage
	}
	if json.Unmarshal(body, &in) != nil {
		return p.send("BatchGetItem", body, nil)
	}
	out := map[string]map[string]json.RawMessage{}
	renames := map[string]string{}
	total := 0
	for name, ka := range in.RequestItems {
		t := p.tables[name]
		var keys []map[string]json.RawMessage
		json.Unmarshal(ka["Keys"], &keys)
		total += len(keys)
		if t == nil || !t.sharded() {
			out[name], renames[name] = ka, name
			continue
		}
		byTable := map[string][]map[string]json.RawMessage{}
		for _, key := range keys {
			k, err := t.keyOf(key)
			if err != nil {
				return validation(err.Error())
			}
			if part := t.parts[k.pk]; part != nil {
				byTable[part.table] = append(byTable[part.table], key)
			}
		}
		for table, ks := range byTable {
			out[table], renames[table] = with(ka, map[string]any{"Keys": ks}), name
		}
	}
	if total > maxBatchGetKeys {
		return validation("Too many items requested for the BatchGetItem call")
	}
	responses := map[string][]json.RawMessage{}
	for name := range in.RequestItems {
		responses[name] = []json.RawMessage{}
	}
	if len(out) == 0 {
		return ok(map[string]any{"Responses": responses, "UnprocessedKeys": map[string]any{}})
	}
	a := p.sendJSON("BatchGetItem", with(req, map[string]any{"RequestItems": out}), renames)
	if a.status != http.StatusOK {
		return a
	}
	var resp struct {
		Responses       map[string][]json.RawMessage
		UnprocessedKeys map[string]map[string]json.RawMessage
	}
	if json.Unmarshal(a.body, &resp) != nil {
		return a
	}
	for table, items := range resp.Responses {
		responses[renames[table]] = append(responses[renames[table]], items...)
	}
	unprocessed := map[string]map[string]json.RawMessage{}
	pending := map[string][]json.RawMessage{}
	for table, ka := range resp.UnprocessedKeys {
		var keys []json.RawMessage
		json.Unmarshal(ka["Keys"], &keys)
		name := renames[table]
		pending[name] = append(pending[name], keys...)
	}
	for name, keys := range pending {
		unprocessed[name] = with(in.RequestItems[name], map[string]any{"Keys": keys})
	}
	return ok(map[string]any{"Responses": responses, "UnprocessedKeys": unprocessed})
}

// transactOps are the members of a TransactWriteItems or TransactGetItems
// item, each naming one item: the field that holds its key, and whether
// it writes (and so may create) the item.
var transactOps = map[string]struct {
	field  string
	create bool
	writes bool
}{
	"Put":            {"Item", true, true},
	"Update":         {"Key", true, true},
	"Delete":         {"Key", false, true},
	"ConditionCheck": {"Key", false, false},
	"Get":            {"Key", false, false},
}

// transact serves TransactWriteItems and TransactGetItems: each item names
// its partition's table, and the emulator runs them as one transaction
// across those tables, all or nothing. CancellationReasons keep their
// order.
func (p *partitioned) transact(op string, req map[string]json.RawMessage, body []byte) answer {
	var in struct {
		TransactItems []map[string]map[string]json.RawMessage
	}
	if json.Unmarshal(body, &in) != nil {
		return p.send(op, body, nil)
	}
	type ref struct {
		i      int
		member string
		writeRef
	}
	var refs []ref
	for i, item := range in.TransactItems {
		for member, sub := range item {
			spec, known := transactOps[member]
			var name string
			json.Unmarshal(sub["TableName"], &name)
			t := p.tables[name]
			if !known || t == nil {
				continue
			}
			var key map[string]json.RawMessage
			json.Unmarshal(sub[spec.field], &key)
			k, err := t.keyOf(key)
			if err != nil {
				return validation(err.Error())
			}
			refs = append(refs, ref{i: i, member: member, writeRef: writeRef{t: t, k: k, create: spec.create && op == "TransactWriteItems"}})
		}
	}
	renames := map[string]string{}
	var touch []touched
	for _, r := range refs {
		table, err := p.route(r.t, r.k, r.create)
		if err != nil {
			p.settle(touch)
			return failure(http.StatusInternalServerError, "InternalServerError", err.Error())
		}
		in.TransactItems[r.i][r.member] = with(in.TransactItems[r.i][r.member], map[string]any{"TableName": table})
		renames[table] = r.t.name
		if transactOps[r.member].writes && op == "TransactWriteItems" {
			touch = append(touch, touched{r.t, r.k, r.create, leftUnknown})
		}
	}
	a := p.sendJSON(op, with(req, map[string]any{"TransactItems": in.TransactItems}), renames)
	if a.status == http.StatusOK {
		// All or nothing, and it was all.
		for i := range touch {
			touch[i].left = outcome(http.StatusOK, touch[i].put)
		}
	}
	p.settle(touch)
	return a
}
