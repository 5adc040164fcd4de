package localenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"ndiro/internal/dynamo"
)

// snapshotter persists the in-memory DynamoDB emulator: after a write it
// waits delay, then scans every table and writes all items to one JSON file
// (temp file, fsync, rename, so a crash leaves the old or the new snapshot,
// never half of one). At start the file is replayed with PutItem. Items are
// kept in DynamoDB's own JSON wire format, so nothing is lost in conversion.
type snapshotter struct {
	h      http.Handler
	path   string
	tables dynamo.Tables
	delay  time.Duration
	log    *slog.Logger

	mu      sync.Mutex // guards timer, stopped
	timer   *time.Timer
	stopped bool
	saveMu  sync.Mutex // one save at a time
}

// snapshotFile is the on-disk shape: table base name → items.
type snapshotFile struct {
	Version int                          `json:"version"`
	Tables  map[string][]json.RawMessage `json:"tables"`
}

// writeOps are the DynamoDB operations that change data.
var writeOps = map[string]bool{
	"PutItem": true, "UpdateItem": true, "DeleteItem": true,
	"BatchWriteItem": true, "TransactWriteItems": true,
}

func newSnapshotter(h http.Handler, path string, tables dynamo.Tables, delay time.Duration, log *slog.Logger) *snapshotter {
	return &snapshotter{h: h, path: path, tables: tables, delay: delay, log: log}
}

// track wraps the emulator so that every write schedules a snapshot.
func (s *snapshotter) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		target := r.Header.Get("X-Amz-Target")
		if writeOps[target[strings.LastIndexByte(target, '.')+1:]] {
			s.schedule()
		}
	})
}

func (s *snapshotter) schedule() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.timer != nil {
		return
	}
	s.timer = time.AfterFunc(s.delay, func() {
		s.mu.Lock()
		s.timer = nil
		s.mu.Unlock()
		if err := s.save(); err != nil {
			s.log.Error("local dynamodb snapshot failed", "err", err)
		}
	})
}

// stop cancels a pending snapshot and writes a final one.
func (s *snapshotter) stop() error {
	s.mu.Lock()
	s.stopped = true
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.mu.Unlock()
	return s.save()
}

// save scans every table through the emulator and replaces the snapshot file.
func (s *snapshotter) save() error {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	snap := snapshotFile{Version: 1, Tables: map[string][]json.RawMessage{}}
	for _, t := range s.tables.All() {
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
			if err := s.call("Scan", in, &out); err != nil {
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
	return writeFileAtomic(s.path, data)
}

// load replays the snapshot file, if any, into the (empty) tables.
func (s *snapshotter) load() error {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("localenv: read snapshot: %w", err)
	}
	var snap snapshotFile
	if err := json.Unmarshal(data, &snap); err != nil {
		return fmt.Errorf("localenv: snapshot %s is damaged (move it away to start empty): %w", s.path, err)
	}
	for _, t := range s.tables.All() {
		for _, item := range snap.Tables[t.Base] {
			in := map[string]any{"TableName": t.Name, "Item": item}
			if err := s.call("PutItem", in, nil); err != nil {
				return fmt.Errorf("localenv: restore %s: %w", t.Name, err)
			}
		}
	}
	return nil
}

// call sends one DynamoDB JSON API request straight to the emulator.
func (s *snapshotter) call(op string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return fmt.Errorf("%s: status %d: %s", op, rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(rec.Body.Bytes(), out)
}

// writeFileAtomic replaces path with data so that a crash at any point
// leaves either the old file or the new one.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("localenv: snapshot: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if _, err := tmp.Write(data); err != nil {
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
	return nil
}
