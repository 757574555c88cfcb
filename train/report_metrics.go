package train

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"

	"gorstar/internal/usererr"
)

// chartSpec is one chart of the report: each series plots the first of its candidate keys that
// the metrics rows have. The RL keys are candidates because the names are not all settled; a key
// no row has is skipped, and a chart with no series is listed as absent.
type chartSpec struct {
	ID, Title, YLabel string
	Series            []seriesSpec
}

type seriesSpec struct {
	Name string
	Keys []string
}

// sftCharts are drawn from sft/metrics.jsonl (sft.Run's rows).
var sftCharts = []chartSpec{
	{ID: "sft-loss", Title: "SFT loss (assistant tokens)", YLabel: "loss", Series: []seriesSpec{
		{Name: "train", Keys: []string{"loss"}}, {Name: "held-out", Keys: []string{"eval_loss"}}}},
	{ID: "sft-throughput", Title: "SFT throughput", YLabel: "tokens/s", Series: []seriesSpec{
		{Name: "tokens/s", Keys: []string{"tokens_per_s"}}}},
}

// rlCharts are drawn from rl/metrics.jsonl, one row per RL step with its stage.
var rlCharts = []chartSpec{
	{ID: "rl-reward", Title: "Reward", YLabel: "mean reward", Series: []seriesSpec{
		{Name: "reward", Keys: []string{"reward_mean", "reward"}}}},
	{ID: "rl-accuracy", Title: "Accuracy before / after RoC", YLabel: "share correct", Series: []seriesSpec{
		{Name: "before RoC", Keys: []string{"accuracy_before_roc"}},
		{Name: "after RoC", Keys: []string{"accuracy_after_roc"}},
		{Name: "accuracy", Keys: []string{"accuracy"}}}},
	{ID: "rl-length", Title: "Response length", YLabel: "tokens", Series: []seriesSpec{
		{Name: "positives", Keys: []string{"mean_response_tokens_positive", "response_tokens_positive"}},
		{Name: "negatives", Keys: []string{"mean_response_tokens_negative", "response_tokens_negative"}},
		{Name: "all", Keys: []string{"mean_response_tokens", "response_tokens"}}}},
	{ID: "rl-failed-tools", Title: "Failed tool calls in positives and negatives", YLabel: "share of calls", Series: []seriesSpec{
		{Name: "positives", Keys: []string{"failed_tool_share_positive", "failed_tool_call_rate_positive"}},
		{Name: "negatives", Keys: []string{"failed_tool_share_negative"}}}},
	{ID: "rl-clip", Title: "Clip fraction", YLabel: "share of tokens", Series: []seriesSpec{
		{Name: "clipped", Keys: []string{"clip_fraction"}}}},
	// Entropy (≈1 nat) and KL (≈0.01) apart: on one axis the KL would be a flat line at zero.
	{ID: "rl-entropy", Title: "Policy entropy", YLabel: "nats per token", Series: []seriesSpec{
		{Name: "entropy", Keys: []string{"entropy"}}}},
	{ID: "rl-kl", Title: "Approximate KL to the rollout policy", YLabel: "nats per token", Series: []seriesSpec{
		{Name: "approx KL", Keys: []string{"approx_kl", "kl"}}}},
	// Wall-clock phases apart from the tools' time: calls run side by side and overlap generation,
	// so their seconds summed over calls can exceed the step's wall time and share no axis with it.
	{ID: "rl-time", Title: "Time per step (wall clock)", YLabel: "seconds", Series: []seriesSpec{
		{Name: "rollout", Keys: []string{"rollout_s"}},
		{Name: "update", Keys: []string{"update_s"}}, {Name: "total", Keys: []string{"step_s"}}}},
	{ID: "rl-tool-time", Title: "Tool time per step (summed over calls, overlapping generation)", YLabel: "call-seconds", Series: []seriesSpec{
		{Name: "tools", Keys: []string{"tools_s", "tool_s"}}}},
}

// metricRow is one metrics.jsonl line: its stage, its position on the chart's x axis, and every
// numeric field.
type metricRow struct {
	Stage  string
	X      float64
	Values map[string]float64
}

// readMetricRows reads a metrics.jsonl file; rows without a "stage" belong to defaultStage. A
// missing file is no rows. Steps may restart at each stage: x then continues from the stage
// before, so stages follow each other on one axis.
func readMetricRows(path, defaultStage string) ([]metricRow, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, usererr.New("%s: %v", path, pathErr(err))
	}
	defer f.Close()
	var rows []metricRow
	offset, lastX := 0.0, math.Inf(-1)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		row, step, err := parseMetricRow(sc.Bytes(), defaultStage)
		if err != nil {
			return nil, usererr.New("%s:%d: %v", path, line, err)
		}
		if len(rows) > 0 && row.Stage != rows[len(rows)-1].Stage && step+offset <= lastX {
			offset = lastX
		}
		row.X = step + offset
		lastX = row.X
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, usererr.New("%s: %v", path, err)
	}
	return rows, nil
}

func parseMetricRow(line []byte, defaultStage string) (metricRow, float64, error) {
	var raw map[string]any
	if err := json.Unmarshal(line, &raw); err != nil {
		return metricRow{}, 0, fmt.Errorf("not a JSON object: %v", err)
	}
	step, ok := raw["step"].(float64)
	if !ok {
		return metricRow{}, 0, fmt.Errorf("field step: want a number, got %v", raw["step"])
	}
	row := metricRow{Stage: defaultStage, Values: map[string]float64{}}
	if s, ok := raw["stage"].(string); ok && s != "" {
		row.Stage = s
	}
	for k, v := range raw {
		if f, ok := v.(float64); ok {
			row.Values[k] = f
		}
	}
	return row, step, nil
}

// stageMarkers marks where each stage after the first begins.
func stageMarkers(rows []metricRow) []Marker {
	var ms []Marker
	for i := 1; i < len(rows); i++ {
		if rows[i].Stage != rows[i-1].Stage {
			// Halfway between the two stages' steps, so the line sits on the boundary.
			ms = append(ms, Marker{X: (rows[i-1].X + rows[i].X) / 2, Label: rows[i].Stage})
		}
	}
	if len(rows) > 0 && len(ms) > 0 {
		ms = append([]Marker{{X: rows[0].X, Label: rows[0].Stage}}, ms...)
	}
	return ms
}

// buildCharts draws every spec that has data; absent lists the titles of those that have none.
func buildCharts(specs []chartSpec, rows []metricRow, xLabel string) (charts []reportChart, absent []string) {
	markers := stageMarkers(rows)
	for _, spec := range specs {
		c := LineChart{Title: spec.Title, XLabel: xLabel, YLabel: spec.YLabel, Markers: markers}
		var keys []string
		for _, ss := range spec.Series {
			if s, key, ok := seriesOf(ss, rows); ok {
				c.Series = append(c.Series, s)
				keys = append(keys, key)
			}
		}
		if len(c.Series) == 0 {
			absent = append(absent, spec.Title)
			continue
		}
		charts = append(charts, reportChart{ID: spec.ID, Title: spec.Title, Keys: keys, SVG: c.SVG()})
	}
	return charts, absent
}

// seriesOf collects the first candidate key that any row has.
func seriesOf(ss seriesSpec, rows []metricRow) (Series, string, bool) {
	for _, key := range ss.Keys {
		s := Series{Name: ss.Name}
		for _, r := range rows {
			if v, ok := r.Values[key]; ok {
				s.X, s.Y = append(s.X, r.X), append(s.Y, v)
			}
		}
		if len(s.X) > 0 {
			return s, key, true
		}
	}
	return Series{}, "", false
}
