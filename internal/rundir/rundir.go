// Package rundir reads what a run directory's stages write: metrics.jsonl, one JSON object a line.
// The run directory itself (its layout and its lock) is train's (train.Layout, train.AcquireLock).
package rundir

import (
	"encoding/json"
	"errors"
	"os"
	"strings"

	"gorstar/internal/usererr"
)

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
