// Package rundir manages a run directory, runs/NAME/: the resolved config.toml, metrics.jsonl (one
// JSON object a line, written through on every record so a crash loses nothing), log.txt, and a
// lock that stops two processes from writing one run. Stages put their checkpoints and outputs
// in subdirectories of it.
package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"gorstar/internal/atomicfile"
	"gorstar/internal/usererr"
)

// Run is an open, locked run directory.
type Run struct {
	Dir string

	mu      sync.Mutex
	lock    *os.File
	metrics *os.File
	log     *os.File
}

// Open creates (or reopens, to resume) the run directory dir, takes its lock, and writes the
// resolved configuration to config.toml.
func Open(dir string, configTOML []byte) (*Run, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, usererr.New("run directory %s: %v", dir, unwrap(err))
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, usererr.New("run directory %s: %v", dir, unwrap(err))
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(lock.Name())
		lock.Close()
		pid := strings.TrimSpace(string(holder))
		if pid == "" {
			pid = "another process"
		} else {
			pid = "process " + pid
		}
		return nil, usererr.New("run directory %s is in use by %s (its .lock is held); use another --run-dir or wait", dir, pid)
	}
	lock.Truncate(0)
	lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	r := &Run{Dir: dir, lock: lock}
	if configTOML != nil {
		if err := atomicfile.WriteBytes(filepath.Join(dir, "config.toml"), configTOML); err != nil {
			r.Close()
			return nil, err
		}
	}
	if r.metrics, err = os.OpenFile(filepath.Join(dir, "metrics.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
		r.Close()
		return nil, fmt.Errorf("open %s: %w", filepath.Join(dir, "metrics.jsonl"), err)
	}
	if r.log, err = os.OpenFile(filepath.Join(dir, "log.txt"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
		r.Close()
		return nil, fmt.Errorf("open %s: %w", filepath.Join(dir, "log.txt"), err)
	}
	return r, nil
}

// Path joins elem onto the run directory.
func (r *Run) Path(elem ...string) string {
	return filepath.Join(append([]string{r.Dir}, elem...)...)
}

// Metric appends one record to metrics.jsonl as a single line. A record is usually a map or a
// struct with a "stage" and "step"; Metric adds nothing of its own.
func (r *Run) Metric(record any) error {
	line, err := json.Marshal(record)
	if err != nil {
		return fmt.Errorf("encode metric: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.metrics.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", r.metrics.Name(), err)
	}
	return nil
}

// Logf appends a timestamped line to log.txt.
func (r *Run) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.log, "%s %s\n", time.Now().UTC().Format(time.RFC3339), strings.TrimRight(fmt.Sprintf(format, args...), "\n"))
}

// Close releases the lock and closes the files.
func (r *Run) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, f := range []*os.File{r.metrics, r.log} {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	if r.lock != nil {
		syscall.Flock(int(r.lock.Fd()), syscall.LOCK_UN)
		errs = append(errs, r.lock.Close())
		r.lock = nil
	}
	return errors.Join(errs...)
}

// ReadMetrics returns the records of a metrics.jsonl file.
func ReadMetrics(path string) ([]map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, usererr.New("%s: %v", path, unwrap(err))
	}
	var out []map[string]any
	for i, line := range strings.Split(string(raw), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			return nil, usererr.New("%s:%d: invalid JSON: %v", path, i+1, err)
		}
		out = append(out, m)
	}
	return out, nil
}

func unwrap(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
