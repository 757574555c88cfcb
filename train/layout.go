package train

import (
	"fmt"
	"path/filepath"
)

// Layout names every file of a run directory; stages and the report find each other's outputs
// through it and nowhere else.
//
//	RUN/
//	  .lock                     held (flock) by the process writing the run; holds its pid
//	  config.toml               the resolved configuration
//	  commands.sh               each stage's equivalent single command
//	  done/<stage>              a stage's marker: it finished (gorstar train skips it)
//	  data/{train,eval,sft}.parquet
//	  init/                     the random-init model (model init --preset) SFT starts from
//	  sft/                      the SFT model (Hugging Face directory), checkpoints/, metrics.jsonl
//	  rl/                       the RL model, checkpoints/, metrics.jsonl,
//	                            traces/<stage>/step-NNNNNNNN.jsonl
//	  eval/<stage>.parquet      per-sample results of the eval after a stage ("sft", then each RL stage)
//	  eval/<stage>.jsonl        its trajectories (rollout.WriteJSONL)
//	  eval/<stage>.md           its table for people
//	  eval/<stage>.json         its summary (EvalSummary)
//	  summary.json              the final summary (`gorstar train --json`)
//	  report.html               `gorstar report`
type Layout struct {
	Dir string
}

func (l Layout) path(elem ...string) string {
	return filepath.Join(append([]string{l.Dir}, elem...)...)
}

// Lock is the lock file (see AcquireLock).
func (l Layout) Lock() string { return l.path(".lock") }

// Config is the resolved configuration the run was started with.
func (l Layout) Config() string { return l.path("config.toml") }

// Commands is the shell script of each stage's equivalent command.
func (l Layout) Commands() string { return l.path("commands.sh") }

// Done is the marker a pipeline stage writes when it has finished; a rerun skips the stage.
func (l Layout) Done(stage string) string { return l.path("done", stage) }

// Init is the random-init model (model.preset) SFT starts from when no model.path is given.
func (l Layout) Init() string { return l.path("init") }

// DataDir holds the prepared data tables.
func (l Layout) DataDir() string { return l.path("data") }

// TrainData is the RL problem table.
func (l Layout) TrainData() string { return l.path("data", "train.parquet") }

// EvalData is the held-out problem table.
func (l Layout) EvalData() string { return l.path("data", "eval.parquet") }

// SFTData is the SFT conversations table.
func (l Layout) SFTData() string { return l.path("data", "sft.parquet") }

// SFT is the SFT stage's --out: the final model, checkpoints/ and metrics.jsonl.
func (l Layout) SFT() string { return l.path("sft") }

// SFTMetrics is the SFT stage's metrics, one JSON object per step.
func (l Layout) SFTMetrics() string { return l.path("sft", "metrics.jsonl") }

// RL is the RL stages' --out: the final model, checkpoints/, metrics.jsonl and traces/.
func (l Layout) RL() string { return l.path("rl") }

// RLMetrics is the RL stages' metrics, one JSON object per step with its "stage".
func (l Layout) RLMetrics() string { return l.path("rl", "metrics.jsonl") }

// RLTracesDir holds the RL rollouts, a directory per stage.
func (l Layout) RLTracesDir() string { return l.path("rl", "traces") }

// RLTraces is the trajectories of one RL step (rollout.WriteJSONL).
func (l Layout) RLTraces(stage string, step int) string {
	return l.path("rl", "traces", stage, fmt.Sprintf("step-%08d.jsonl", step))
}

// EvalDir holds the evaluations after each stage.
func (l Layout) EvalDir() string { return l.path("eval") }

// EvalResults is the per-sample results table of the eval after stage.
func (l Layout) EvalResults(stage string) string { return l.path("eval", stage+".parquet") }

// EvalTraces is the trajectories of the eval after stage (rollout.WriteJSONL).
func (l Layout) EvalTraces(stage string) string { return l.path("eval", stage+".jsonl") }

// EvalMarkdown is the eval after stage as a Markdown table (metrics.WriteMarkdown).
func (l Layout) EvalMarkdown(stage string) string { return l.path("eval", stage+".md") }

// EvalSummary is the summary of the eval after stage (an EvalSummary as JSON).
func (l Layout) EvalSummary(stage string) string { return l.path("eval", stage+".json") }

// Summary is the run's final summary.
func (l Layout) Summary() string { return l.path("summary.json") }

// Report is the run report.
func (l Layout) Report() string { return l.path("report.html") }
