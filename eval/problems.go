package eval

import (
	"context"
	"os"
	"path/filepath"

	"gorstar/data"
	"gorstar/internal/usererr"
)

// loadProblems reads the problems to evaluate through the data layer's importer, so a problems
// table, a verl/rStar2 Parquet and a JSONL file all work as they are. A row without an answer,
// or two problems with one id, is a user error naming them; limit > 0 keeps the first limit.
func loadProblems(ctx context.Context, path string, limit int) ([]data.Problem, error) {
	dir, err := os.MkdirTemp("", "gorstar-eval-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	res, err := data.Import(ctx, data.ImportOptions{Inputs: []string{path}, Out: filepath.Join(dir, "problems.jsonl")})
	if err != nil {
		return nil, err
	}
	if res.Skipped > 0 {
		return nil, usererr.New("eval: %s: %d problems lack a problem or an answer, e.g. %s; every problem needs both",
			path, res.Skipped, res.Examples[0])
	}
	ps, err := data.ReadAllProblems(res.Out)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]int, len(ps))
	for i, p := range ps {
		if j, dup := seen[p.ID]; dup {
			return nil, usererr.New("eval: %s: problems %d and %d have the same id %q; ids must be unique", path, j+1, i+1, p.ID)
		}
		seen[p.ID] = i
	}
	if limit > 0 && limit < len(ps) {
		ps = ps[:limit]
	}
	return ps, nil
}
