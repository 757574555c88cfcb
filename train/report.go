package train

import (
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"

	"gorstar/internal/atomicfile"
	"gorstar/internal/usererr"
)

// Report is everything report.html shows, gathered from a run directory.
type Report struct {
	Run       string // the run directory's name
	SFTCharts []reportChart
	RLCharts  []reportChart
	Absent    []string // charts with no data in this run
	Evals     []EvalSummary
	SetStages []EvalSummary // the evaluations over several benchmarks: a row per stage, a column per set
	SetNames  []string      // the columns: the sets of the first such evaluation
	Samples   []sampleGroup
	Config    string // the resolved config.toml, when the run has one
}

// reportChart is one rendered chart and the metric keys it plotted.
type reportChart struct {
	ID, Title string
	Keys      []string
	SVG       string
}

// BuildReport reads a run directory (see Layout): the SFT and RL metrics, the eval summaries and
// sample trajectories. Whatever a run has not produced yet is left out, so a report of a run in
// progress works; a file that is there but malformed is a user error naming it and its line.
func BuildReport(dir string) (*Report, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, usererr.New("run directory %s: not a directory", dir)
	}
	l := Layout{Dir: dir}
	r := &Report{Run: filepath.Base(filepath.Clean(dir))}
	sftRows, err := readMetricRows(l.SFTMetrics(), "sft")
	if err != nil {
		return nil, err
	}
	rlRows, err := readMetricRows(l.RLMetrics(), "rl")
	if err != nil {
		return nil, err
	}
	var absent []string
	r.SFTCharts, absent = buildCharts(sftCharts, sftRows, "SFT step")
	r.Absent = append(r.Absent, absent...)
	r.RLCharts, absent = buildCharts(rlCharts, rlRows, "RL step")
	r.Absent = append(r.Absent, absent...)
	order := stagesInOrder(rlRows)
	if r.Evals, err = readEvalSummaries(l.EvalDir(), order); err != nil {
		return nil, err
	}
	for _, e := range r.Evals {
		if len(e.Sets) > 1 {
			if r.SetStages == nil {
				for _, s := range e.Sets {
					r.SetNames = append(r.SetNames, s.Name)
				}
			}
			r.SetStages = append(r.SetStages, e)
		}
	}
	if err := r.addSamples(l, order); err != nil {
		return nil, err
	}
	if raw, err := os.ReadFile(l.Config()); err == nil {
		r.Config = string(raw)
	}
	return r, nil
}

// addSamples takes a few trajectories from each stage's eval and from each RL stage's last step.
func (r *Report) addSamples(l Layout, order []string) error {
	for _, e := range r.Evals {
		s, err := readSamples(l.EvalTraces(e.Stage))
		if err != nil {
			return err
		}
		if len(s) > 0 {
			r.Samples = append(r.Samples, sampleGroup{Title: "Held-out eval after " + e.Stage, Samples: s})
		}
	}
	for _, f := range rlSampleFiles(l.RLTracesDir(), order) {
		s, err := readSamples(f.Path)
		if err != nil {
			return err
		}
		if len(s) > 0 {
			title := fmt.Sprintf("RL rollouts, %s (%s)", f.Stage, filepath.Base(f.Path))
			r.Samples = append(r.Samples, sampleGroup{Title: title, Samples: s})
		}
	}
	return nil
}

// stagesInOrder lists the stages of metrics rows in the order they first appear.
func stagesInOrder(rows []metricRow) []string {
	var out []string
	for _, r := range rows {
		if len(out) == 0 || out[len(out)-1] != r.Stage {
			out = append(out, r.Stage)
		}
	}
	return out
}

// WriteHTML renders the report as one self-contained HTML page: inline CSS and SVG, no script,
// nothing fetched. Every text from the run is escaped.
func (r *Report) WriteHTML(w io.Writer) error {
	return reportTemplate.Execute(w, r)
}

// WriteReport builds the report of run directory dir and writes it to its report.html
// atomically, returning the path.
func WriteReport(dir string) (string, error) {
	r, err := BuildReport(dir)
	if err != nil {
		return "", err
	}
	path := Layout{Dir: dir}.Report()
	return path, atomicfile.Write(path, r.WriteHTML)
}

// svgHTML marks a chart as safe: chart.go built it and escaped every text in it.
func svgHTML(s string) template.HTML { return template.HTML(s) }
