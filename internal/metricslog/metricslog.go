// Package metricslog writes a training run's OUT/metrics.jsonl: one JSON object a line, one line
// a step, each written through so a killed run keeps every step it finished. Both training
// stages (sft and rl) use it, so their logs resume the same way.
package metricslog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"gorstar/internal/atomicfile"
)

// FileName is the log's name inside the run's output directory.
const FileName = "metrics.jsonl"

// Log appends records to OUT/metrics.jsonl.
type Log struct{ f *os.File }

// Open starts dir/metrics.jsonl, keeping only the lines whose "step" is at most upTo: lines of
// later steps (written after the checkpoint a resume starts from) are dropped, so every step
// appears once. A fresh run passes upTo < 0 and keeps none.
func Open(dir string, upTo int) (*Log, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	kept, err := linesUpTo(path, upTo)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteBytes(path, kept); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &Log{f}, nil
}

// linesUpTo returns the lines of path whose step is at most step; none when the file is missing
// or step < 0.
func linesUpTo(path string, step int) ([]byte, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) || step < 0 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var kept bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct{ Step int }
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Step > step {
			continue // a line cut by a kill, or a step redone after the resume
		}
		kept.Write(sc.Bytes())
		kept.WriteByte('\n')
	}
	return kept.Bytes(), nil
}

// Write appends rec, marshalled as JSON, as one line.
func (l *Log) Write(rec any) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", l.f.Name(), err)
	}
	return nil
}

// Close closes the file.
func (l *Log) Close() error { return l.f.Close() }
