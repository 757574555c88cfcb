package train

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gorstar/eval/metrics"
	"gorstar/internal/usererr"
)

// EvalSummary is the file eval/<stage>.json: the evaluation after one stage, as the pipeline
// writes it and the report reads it. It is `gorstar eval --json`'s object (metrics.Summary: avg_pass@1,
// failed_tool_call_rate, mean_response_tokens, …) with the stage, the share of responses that
// called the tool, and the stage's wall time added. Fields a file lacks show as "—".
type EvalSummary struct {
	// Stage names the model evaluated: "sft", then each RL stage's name. Empty: the file's name.
	Stage string `json:"stage"`
	metrics.Summary
	// ToolUseRate is the share of responses with at least one tool call.
	ToolUseRate *float64 `json:"tool_use_rate,omitempty"`
	// WallSeconds is the stage's wall time: its training and this evaluation.
	WallSeconds *float64 `json:"wall_s,omitempty"`
	// Sets has one row per benchmark ([[eval.sets]]), the paper's table for this stage.
	Sets []metrics.SetMetrics `json:"sets,omitempty"`
}

// readEvalSummaries reads every eval/*.json of a run, ordered "sft" first, then the stages in the
// order given (the RL metrics' order), then any other by name.
func readEvalSummaries(dir string, stageOrder []string) ([]EvalSummary, error) {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var out []EvalSummary
	for _, p := range paths {
		if strings.HasSuffix(p, ".manifest.json") { // eval.Run's manifest beside the results
			continue
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, usererr.New("%s: %v", p, pathErr(err))
		}
		var s EvalSummary
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, usererr.New("%s: not an eval summary: %v", p, err)
		}
		if s.Stage == "" {
			s.Stage = strings.TrimSuffix(filepath.Base(p), ".json")
		}
		out = append(out, s)
	}
	rank := func(stage string) int {
		if stage == "sft" {
			return -1
		}
		if i := slices.Index(stageOrder, stage); i >= 0 {
			return i
		}
		return len(stageOrder)
	}
	slices.SortStableFunc(out, func(a, b EvalSummary) int {
		if ra, rb := rank(a.Stage), rank(b.Stage); ra != rb {
			return ra - rb
		}
		return strings.Compare(a.Stage, b.Stage)
	})
	return out, nil
}
