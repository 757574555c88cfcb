package eval

import (
	"context"

	"gorstar/config"
	"gorstar/data"
	"gorstar/eval/metrics"
	"gorstar/internal/usererr"
)

// evalSets are the sets Run evaluates: Data alone (one set, as it is), else Eval.Sets.
func (o Options) evalSets() []config.EvalSet {
	if o.Data != "" || len(o.Eval.Sets) == 0 {
		return []config.EvalSet{{Data: o.Data}}
	}
	return o.Eval.Sets
}

// dataPaths lists the sets' files, for the manifest and its hash.
func dataPaths(sets []config.EvalSet) []string {
	paths := make([]string, len(sets))
	for i, s := range sets {
		paths[i] = s.Data
	}
	return paths
}

// loadSets reads every set's problems (limit applies to each). A single unnamed set is read as it
// is; otherwise each problem's source becomes its set's name and, with several sets, its id is
// prefixed with it ("aime24/60"), so that ids stay unique across sets. It returns the sets' names.
func loadSets(ctx context.Context, sets []config.EvalSet, limit int) ([]data.Problem, []string, error) {
	if len(sets) == 1 && sets[0].Name == "" {
		ps, err := loadProblems(ctx, sets[0].Data, limit)
		if err != nil {
			return nil, nil, err
		}
		return ps, []string{setName(sets[0].Data, ps)}, nil
	}
	var all []data.Problem
	names := make([]string, len(sets))
	at := map[string]int{}
	for i, s := range sets {
		ps, err := loadProblems(ctx, s.Data, limit)
		if err != nil {
			return nil, nil, err
		}
		name := s.Name
		if name == "" {
			name = setName(s.Data, ps)
		}
		if j, dup := at[name]; dup {
			return nil, nil, usererr.New("eval: sets %d (%s) and %d (%s) are both named %q; name them ([[eval.sets]] name) or import them with --source",
				j+1, sets[j].Data, i+1, s.Data, name)
		}
		at[name], names[i] = i, name
		for _, p := range ps {
			p.Source = name
			if len(sets) > 1 {
				p.ID = name + "/" + p.ID
			}
			all = append(all, p)
		}
	}
	return all, names, nil
}

// setName names a set: the one source all its problems share, else its file's name.
func setName(path string, ps []data.Problem) string {
	if len(ps) > 0 {
		src := ps[0].Source
		same := src != ""
		for _, p := range ps[1:] {
			same = same && p.Source == src
		}
		if same {
			return src
		}
	}
	return data.SourceName(path)
}

// setRows are the per-set rows of a result: with one set, its metrics over all problems; with
// several, each set's own.
func setRows(sets []config.EvalSet, names []string, strict metrics.Summary, lenient metrics.Summary) []metrics.SetMetrics {
	rows := make([]metrics.SetMetrics, len(sets))
	for i, s := range sets {
		rows[i] = metrics.SetMetrics{Name: names[i], Data: s.Data, Metrics: strict.Metrics, RStar2AvgPass1: lenient.AvgPass1}
		if len(sets) > 1 {
			rows[i].Metrics = strict.PerSource[names[i]]
			rows[i].RStar2AvgPass1 = lenient.PerSource[names[i]].AvgPass1
		}
	}
	return rows
}
