// Package atomicfile writes files so that readers see either the old content or the whole new
// content, never a half-written file: the data goes to a temporary file in the same directory,
// is synced, and is renamed over the target only when the writer succeeded.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// File is a pending atomic write. Write to it, then call Commit to publish it or Abort to drop it.
// Abort after Commit is a no-op, so `defer f.Abort()` is the usual pattern.
type File struct {
	*os.File
	target string
	done   bool
}

// Create starts an atomic write of path. The parent directory is created if needed.
func Create(path string) (*File, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return &File{File: tmp, target: path}, nil
}

// Commit syncs the temporary file and renames it over the target.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("commit %s: already finished", f.target)
	}
	f.done = true
	tmp := f.File.Name()
	if err := f.File.Sync(); err != nil {
		f.File.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", f.target, err)
	}
	if err := f.File.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", f.target, err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", f.target, err)
	}
	if err := os.Rename(tmp, f.target); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", f.target, err)
	}
	return nil
}

// Abort removes the temporary file unless the write was committed.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	os.Remove(f.File.Name())
}

// Write atomically writes path with the content that fill produces. If fill fails, nothing is
// left behind and the previous content of path, if any, is untouched.
func Write(path string, fill func(w io.Writer) error) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := fill(f); err != nil {
		return err
	}
	return f.Commit()
}

// WriteBytes atomically writes data to path.
func WriteBytes(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteDir atomically publishes a directory: fill populates a fresh temporary directory next to
// path, which then replaces path (an existing path is moved aside and removed only after the
// rename succeeded).
func WriteDir(path string, fill func(dir string) error) error {
	parent := filepath.Dir(path)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := fill(tmp); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("create %s: %w", path, err)
	}
	var old string
	if _, err := os.Stat(path); err == nil {
		old = tmp + ".old"
		if err := os.Rename(path, old); err != nil {
			os.RemoveAll(tmp)
			return fmt.Errorf("replace %s: %w", path, err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		if old != "" {
			os.Rename(old, path)
		}
		os.RemoveAll(tmp)
		return fmt.Errorf("replace %s: %w", path, err)
	}
	if old != "" {
		os.RemoveAll(old)
	}
	return nil
}
