package eval

import (
	"context"
	"fmt"
	"io"
	"strings"

	"gorstar/config"
	"gorstar/data"
	"gorstar/internal/usererr"
)

// SetMetrics is one benchmark's row of the results: its name, its file and its metrics (strict
// grading), with avg@k under rStar2's grading beside them.
type SetMetrics struct {
	Name string `json:"name"`
	Data string `json:"data"`
	Metrics
	RStar2AvgPass1 float64 `json:"rstar2_avg_pass@1"`
}

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
func setRows(sets []config.EvalSet, names []string, strict Summary, lenient Summary) []SetMetrics {
	rows := make([]SetMetrics, len(sets))
	for i, s := range sets {
		rows[i] = SetMetrics{Name: names[i], Data: s.Data, Metrics: strict.Metrics, RStar2AvgPass1: lenient.AvgPass1}
		if len(sets) > 1 {
			rows[i].Metrics = strict.PerSource[names[i]]
			rows[i].RStar2AvgPass1 = lenient.PerSource[names[i]].AvgPass1
		}
	}
	return rows
}

// WriteSetTable writes the paper's table: one row per set with avg@k and its 95% CI, pass@k,
// maj@k, the mean response tokens and tool calls per response, then avg@k of every set on one
// line, as papers lay a model's results out across benchmarks.
func WriteSetTable(w io.Writer, rows []SetMetrics) {
	fmt.Fprintln(w, "| set | problems | k | avg@k (%) | 95% CI | pass@k (%) | maj@k (%) | mean response tokens | tool calls / response | avg@k, rstar2 grading (%) |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %d | %d | %.1f | [%.1f, %.1f] | %.1f | %.1f | %.0f | %.2f | %.1f |\n",
			escapeCell(r.Name), r.NProblems, r.K, 100*r.AvgPass1, 100*r.AvgPass1CI[0], 100*r.AvgPass1CI[1],
			100*r.PassAtK, 100*r.MajAtK, r.MeanResponseTokens, r.ToolCallsPerResponse, 100*r.RStar2AvgPass1)
	}
	if len(rows) < 2 {
		return
	}
	var head, rule, row strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&head, " %s |", escapeCell(r.Name))
		rule.WriteString(" ---: |")
		fmt.Fprintf(&row, " %.1f |", 100*r.AvgPass1)
	}
	fmt.Fprintf(w, "\n| avg@%d (%%) |%s\n| --- |%s\n| this model |%s\n", rows[0].K, head.String(), rule.String(), row.String())
}
