package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// checkpoint keeps finished samples in OUT.partial.jsonl, one JSON line each, synced to disk as
// each sample finishes: a run killed at any point loses at most the samples still generating.
type checkpoint struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

// openCheckpoint reads the samples an earlier run finished (a torn last line, from a kill during
// a write, is cut off) and opens the file for appending.
func openCheckpoint(path string) (*checkpoint, []Record, error) {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	var recs []Record
	good := 0
	for good < len(b) {
		end := bytes.IndexByte(b[good:], '\n')
		if end < 0 {
			break // torn: no newline yet
		}
		var r Record
		if err := json.Unmarshal(b[good:good+end], &r); err != nil {
			break
		}
		recs = append(recs, r)
		good += end + 1
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, nil, err
	}
	if err := f.Truncate(int64(good)); err != nil {
		f.Close()
		return nil, nil, err
	}
	if _, err := f.Seek(int64(good), 0); err != nil {
		f.Close()
		return nil, nil, err
	}
	return &checkpoint{path: path, f: f}, recs, nil
}

// add appends one finished sample and syncs it.
func (c *checkpoint) add(r Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w := bufio.NewWriter(c.f)
	w.Write(line)
	w.WriteByte('\n')
	if err := w.Flush(); err != nil {
		return fmt.Errorf("checkpoint %s: %w", c.path, err)
	}
	if err := c.f.Sync(); err != nil {
		return fmt.Errorf("checkpoint %s: %w", c.path, err)
	}
	return nil
}

func (c *checkpoint) close() error { return c.f.Close() }
