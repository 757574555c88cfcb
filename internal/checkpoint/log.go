// Package checkpoint keeps the finished work of a long run so that the run, killed or failed
// midway and started again, redoes only the rest: a JSON-lines log of finished items (Log), each
// line synced to disk as it is added, and a manifest of what the items depend on, which a resumed
// run must match (Resume).
package checkpoint

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

// Log appends values of type T to a file; Add is safe from several goroutines.
type Log[T any] struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

// Open reads the values an earlier run added to path (none when it does not exist; reading stops
// at the first line that is not a whole value, and the file is cut there) and opens it for
// appending.
func Open[T any](path string) (*Log[T], []T, error) {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	var vals []T
	good := 0
	for good < len(b) {
		end := bytes.IndexByte(b[good:], '\n')
		if end < 0 {
			break // torn: no newline yet
		}
		var v T
		if err := json.Unmarshal(b[good:good+end], &v); err != nil {
			break
		}
		vals = append(vals, v)
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
	return &Log[T]{path: path, f: f}, vals, nil
}

// Path is the file's path.
func (l *Log[T]) Path() string { return l.path }

// Add appends one value as a line and syncs it.
func (l *Log[T]) Add(v T) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	w := bufio.NewWriter(l.f)
	w.Write(line)
	w.WriteByte('\n')
	if err := w.Flush(); err != nil {
		return fmt.Errorf("checkpoint %s: %w", l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("checkpoint %s: %w", l.path, err)
	}
	return nil
}

// Close closes the file (a second Close does nothing).
func (l *Log[T]) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// Remove deletes the log at path and its unfinished run's manifest (PartialManifest), once the
// run's results are written; either may be missing already.
func Remove(path string) error {
	for _, p := range []string{path, PartialManifest(path)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}
