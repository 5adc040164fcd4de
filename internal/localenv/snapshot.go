package localenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"ndiro/internal/dynamo"
)

// A snapshot is every item of every table in one JSON file, written whole
// (temp file, fsync, rename, fsync of the directory, so a crash leaves the
// old snapshot or the new one, never half of one) and restored with PutItem
// at start. Items are kept in DynamoDB's own JSON wire format, so nothing
// is lost in conversion. The journal (persist.go) holds the writes made
// since the snapshot.

// snapshotFile is the on-disk shape: table base name → items. Version 1
// is the only version; the journal did not change it.
type snapshotFile struct {
	Version int                          `json:"version"`
	Tables  map[string][]json.RawMessage `json:"tables"`
}

// saveSnapshot scans every table of tables through the emulator h and
// replaces the snapshot file at path, writing it with write.
func saveSnapshot(h http.Handler, path string, tables dynamo.Tables, write func(*os.File, []byte) (int, error)) error {
	snap := snapshotFile{Version: 1, Tables: map[string][]json.RawMessage{}}
	for _, t := range tables.All() {
		var start json.RawMessage
		items := []json.RawMessage{}
		for {
			in := map[string]any{"TableName": t.Name}
			if start != nil {
				in["ExclusiveStartKey"] = start
			}
			var out struct {
				Items            []json.RawMessage
				LastEvaluatedKey json.RawMessage
			}
			if err := call(h, "Scan", in, &out); err != nil {
				return fmt.Errorf("localenv: snapshot scan %s: %w", t.Name, err)
			}
			items = append(items, out.Items...)
			if len(out.LastEvaluatedKey) == 0 || string(out.LastEvaluatedKey) == "null" || string(out.LastEvaluatedKey) == "{}" {
				break
			}
			start = out.LastEvaluatedKey
		}
		snap.Tables[t.Base] = items
	}
	data, err := json.Marshal(snap)
	if err != nil {
		return fmt.Errorf("localenv: snapshot encode: %w", err)
	}
	return writeFileAtomic(path, data, write)
}

// loadSnapshot restores the snapshot file at path, if there is one, into
// the (empty) tables through the emulator h. A file that does not parse
// stops start-up with a message naming it.
func loadSnapshot(h http.Handler, path string, tables dynamo.Tables) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("localenv: read snapshot: %w", err)
	}
	var snap snapshotFile
	if err := json.Unmarshal(data, &snap); err != nil {
		return fmt.Errorf("localenv: snapshot %s is damaged (move it away to start empty): %w", path, err)
	}
	for _, t := range tables.All() {
		for _, item := range snap.Tables[t.Base] {
			in := map[string]any{"TableName": t.Name, "Item": item}
			if err := call(h, "PutItem", in, nil); err != nil {
				return fmt.Errorf("localenv: restore %s: %w", t.Name, err)
			}
		}
	}
	return nil
}

// call sends one DynamoDB JSON API request straight to the emulator h.
func call(h http.Handler, op string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return fmt.Errorf("%s: status %d: %s", op, rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(rec.Body.Bytes(), out)
}

// writeFileAtomic replaces path with data so that a crash at any point
// leaves either the old file or the new one: the rename is made durable by
// fsyncing the directory, before the journal it replaces is truncated.
// The bytes go through write ((*os.File).Write outside tests).
func writeFileAtomic(path string, data []byte, write func(*os.File, []byte) (int, error)) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("localenv: snapshot: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if _, err := write(tmp, data); err != nil {
		tmp.Close()
		return fmt.Errorf("localenv: snapshot write: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("localenv: snapshot sync: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("localenv: snapshot close: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("localenv: snapshot rename: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

// syncDir fsyncs the directory dir, making renames and new files in it
// durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("localenv: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("localenv: sync %s: %w", dir, err)
	}
	return nil
}
