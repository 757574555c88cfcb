package train

import (
	"os"
	"path/filepath"

	"gorstar/eval"
	"gorstar/rollout"
)

// The report shows a few trajectories per stage (a correct one, an incorrect one, one with a
// failed tool call): the pipeline keeps them as it goes, in eval/<stage>.jsonl for each
// evaluation and rl/traces/<stage>/step-NNNNNNNN.jsonl for the newest RL step of each stage.

// writeEvalSamples keeps a varied few of an evaluation's samples, per set, for the report.
func writeEvalSamples(path string, records []eval.Record) error {
	bySource := map[string][]rollout.Trajectory{}
	var order []string
	for _, r := range records {
		if _, ok := bySource[r.Source]; !ok {
			order = append(order, r.Source)
		}
		bySource[r.Source] = append(bySource[r.Source], trajectoryOf(r))
	}
	var keep []rollout.Trajectory
	for _, src := range order {
		ts := bySource[src]
		for _, i := range pickVaried(ts) {
			keep = append(keep, ts[i])
		}
	}
	return rollout.WriteJSONL(path, keep)
}

// trajectoryOf is an evaluated sample as the report reads trajectories.
func trajectoryOf(r eval.Record) rollout.Trajectory {
	return rollout.Trajectory{ProblemID: r.ProblemID, ProblemIndex: r.ProblemIndex, Sample: r.Sample, Seed: r.Seed,
		Text: r.Response, Finish: rollout.FinishReason(r.Finish), NumTurns: r.Turns, ToolCalls: r.Calls,
		FailedToolCalls: r.FailedCalls, GeneratedTokens: r.Generated, Correct: r.CorrectStrict, Extracted: r.Extracted}
}

// writeRLSamples keeps a varied few of one RL step's rollouts as the stage's newest step file,
// removing the stage's older ones (a run keeps the latest only; the report shows no more).
func writeRLSamples(l Layout, stage string, step int, trajs []rollout.Trajectory) error {
	path := l.RLTraces(stage, step)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var keep []rollout.Trajectory
	for _, i := range pickVaried(trajs) {
		t := trajs[i]
		t.PromptIDs, t.ResponseIDs, t.LossMask, t.LogProbs = nil, nil, nil, nil // the text is what the report shows
		keep = append(keep, t)
	}
	if err := rollout.WriteJSONL(path, keep); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "step-*.jsonl"))
	for _, f := range old {
		if f != path {
			os.Remove(f)
		}
	}
	return nil
}
