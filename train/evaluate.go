package train

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"gorstar/engine"
	"gorstar/eval"
	"gorstar/internal/atomicfile"
	"gorstar/internal/checkpoint"
	"gorstar/internal/progress"
	"gorstar/internal/rundir"
)

// The evaluation stages: eval-sft after SFT and eval-<stage> after each RL stage, each writing
// eval/<stage>.{parquet,md,manifest.json} (eval.Run, resumable with the same output: its
// checkpoint is eval/<stage>.partial.{jsonl,manifest.json} meanwhile) and
// eval/<stage>.json (EvalSummary).

// evalStageOf is the evaluation of the model in modelDir, written by stage `by`, as eval/<after>.
func (p *pipeline) evalStageOf(after, modelDir, by string) *stage {
	l := p.lay
	md, manifest, partial := eval.Paths(l.EvalResults(after))
	return &stage{name: evalStage(after),
		inputs:  []input{{path: filepath.Join(modelDir, "config.json"), by: by}, {path: l.EvalData(), by: stageData}},
		outputs: []string{l.EvalResults(after), md, manifest, partial, checkpoint.PartialManifest(partial), l.EvalSummary(after), l.EvalTraces(after)},
		run:     func(ctx context.Context) error { return p.runEval(ctx, after, modelDir) },
		commands: func() []StageCommand {
			args := append(p.gorstar(), "eval", "--model", modelDir)
			if len(p.evalSets()) == 0 { // else the config's [[eval.sets]]
				args = append(args, "--data", l.EvalData())
			}
			return []StageCommand{{Stage: evalStage(after), Args: append(args, "--out", l.EvalResults(after))}}
		}}
}

func (p *pipeline) runEval(ctx context.Context, after, modelDir string) error {
	c := p.cfg
	// With [[eval.sets]], each set is evaluated as itself, one row each; else the held-out table.
	evalData := p.lay.EvalData()
	if len(p.evalSets()) > 0 {
		evalData = ""
	}
	res, err := eval.Run(ctx, eval.Options{Eval: c.Eval, TopP: c.Rollout.TopP, Seed: uint64(c.Run.Seed),
		Data: evalData, Out: p.lay.EvalResults(after), Model: modelDir,
		Template: c.Rollout.Template, ToolTextChars: c.Rollout.ToolTextChars,
		ToolSessions: c.Rollout.ToolSessions, Exec: c.Exec,
		Engine: engine.Options{Seed: uint64(c.Run.Seed)}, Version: p.o.Version,
		Progress: progress.Options{Out: p.log, Quiet: p.o.Quiet},
		Warn:     func(s string) { p.logf("eval %s: warning: %s", after, s) }, World: p.worldOf()})
	if err != nil || !p.root() { // rank 0 writes the results and the summary
		return err
	}
	records, err := eval.ReadResults(res.Out)
	if err != nil {
		return err
	}
	if err := writeEvalSamples(p.lay.EvalTraces(after), records); err != nil {
		return err
	}
	used := 0
	for _, r := range records {
		if r.Calls > 0 {
			used++
		}
	}
	rate := 0.0
	if len(records) > 0 {
		rate = float64(used) / float64(len(records))
	}
	wall := p.trainingSeconds(after) + res.Seconds
	s := EvalSummary{Stage: after, Summary: res.Summary, ToolUseRate: &rate, WallSeconds: &wall, Sets: res.Sets}
	js, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(p.log, "eval %s: avg pass@1 %.1f%%, tool use %.1f%%, failed calls %.1f%%, %.0f response tokens\n",
		after, 100*res.AvgPass1, 100*rate, 100*res.FailedToolCallRate, res.MeanResponseTokens)
	return atomicfile.WriteBytes(p.lay.EvalSummary(after), append(js, '\n'))
}

// trainingSeconds is the time spent training the model evaluated after `after`: the SFT stage's
// wall time (its marker), or an RL stage's rollout and update seconds from rl/metrics.jsonl.
func (p *pipeline) trainingSeconds(after string) float64 {
	if after == "sft" {
		return p.doneSeconds(stageSFT)
	}
	rows, err := rundir.ReadMetrics(p.lay.RLMetrics())
	if err != nil {
		return 0
	}
	total := 0.0
	for _, r := range rows {
		if r["stage"] != after {
			continue
		}
		for _, k := range []string{"rollout_s", "update_s"} {
			if v, ok := r[k].(float64); ok {
				total += v
			}
		}
	}
	return total
}

// readEval reads eval/<after>.json, or nil when that evaluation has not run.
func (p *pipeline) readEval(after string) (*EvalSummary, error) {
	all, err := readEvalSummaries(p.lay.EvalDir(), nil)
	if err != nil {
		return nil, err
	}
	for i := range all {
		if strings.EqualFold(all[i].Stage, after) {
			return &all[i], nil
		}
	}
	return nil, nil
}
