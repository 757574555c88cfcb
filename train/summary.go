package train

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"gorstar/internal/atomicfile"
	"gorstar/model"
)

// result is the run's summary as it stands: the evaluations that exist.
func (p *pipeline) result() (Result, error) {
	r := Result{RunDir: p.lay.Dir, Stages: []EvalSummary{}, Seconds: time.Since(p.began).Seconds()}
	hash, err := p.cfg.SHA256()
	if err != nil {
		return r, err
	}
	r.ConfigSHA256 = hash
	r.DType = string(model.PrecisionOf(p.cfg.Model.DType))
	sftEval, err := p.readEval("sft")
	if err != nil {
		return r, err
	}
	r.SFTEval = sftEval
	if sftEval != nil {
		r.EvalSummary = *sftEval
	}
	for _, s := range p.cfg.RL.Stages {
		e, err := p.readEval(s.Name)
		if err != nil {
			return r, err
		}
		if e != nil {
			r.Stages = append(r.Stages, *e)
			r.EvalSummary = *e
		}
	}
	if p.done(stageSummary) {
		r.Report = p.lay.Report()
	}
	return r, nil
}

// writeSummary writes summary.json and report.html.
func (p *pipeline) writeSummary() (Result, error) {
	r, err := p.result()
	if err != nil {
		return r, err
	}
	if r.Report, err = WriteReport(p.lay.Dir); err != nil {
		return r, err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return r, err
	}
	fmt.Fprintf(p.log, "summary: %s, %s\n", p.lay.Summary(), r.Report)
	return r, atomicfile.WriteBytes(p.lay.Summary(), append(js, '\n'))
}

// WriteTable prints the run's evaluations for people: per stage, held-out accuracy (average
// pass@1), the share of responses that called the tool, the share of tool calls that failed, the
// mean response length and the stage's wall time (training and evaluation).
func WriteTable(w io.Writer, r Result) error {
	rows := r.Stages
	if r.SFTEval != nil {
		rows = append([]EvalSummary{*r.SFTEval}, rows...)
	}
	if _, err := fmt.Fprintf(w, "%-10s %10s %9s %13s %16s %9s\n", "stage", "pass@1", "tool use", "failed calls",
		"response tokens", "wall"); err != nil {
		return err
	}
	for _, s := range rows {
		fmt.Fprintf(w, "%-10s %9.1f%% %9s %12.1f%% %16.0f %9s\n", s.Stage, 100*s.AvgPass1, percent(s.ToolUseRate),
			100*s.FailedToolCallRate, s.MeanResponseTokens, seconds(s.WallSeconds))
	}
	dtype := ""
	if r.DType != "" {
		dtype = " (" + r.DType + ")"
	}
	_, err := fmt.Fprintf(w, "run %s%s: %.0f s in this invocation\n", r.RunDir, dtype, r.Seconds)
	return err
}

func percent(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", 100**v)
}

func seconds(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.0f s", *v)
}
