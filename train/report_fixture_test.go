package train

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"gorstar/eval/metrics"
	"gorstar/rollout"
)

// hostile is text a model or a data set could produce that must show as text, never as markup.
const hostile = `<script>alert("x")</script><img src=x onerror=alert(1)>&amp;`

// rlFixtureStages are the fixture run's RL stages and their steps.
var rlFixtureStages = []struct {
	Name  string
	Steps int
}{{"stage1", 12}, {"stage2", 6}, {"stage3", 6}}

// writeFixtureRun fills dir with what a finished quickstart run leaves behind: SFT and RL metrics
// (RL steps restart at each stage), eval summaries and traces after each stage, RL traces, and
// the resolved config. The numbers follow the curves a real run draws.
func writeFixtureRun(t testing.TB, dir string) Layout {
	t.Helper()
	l := Layout{Dir: dir}
	for _, d := range []string{l.SFT(), l.RL(), l.EvalDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var sft []map[string]any
	for step := 1; step <= 60; step++ {
		row := map[string]any{"step": step, "epoch": (step - 1) / 20, "loss": 0.35 + 2.4*math.Exp(-float64(step)/9),
			"lr": 1e-3, "grad_norm": 1.5 * math.Exp(-float64(step)/30), "tokens": step * 3100, "tokens_per_s": 2900 + 80*math.Sin(float64(step))}
		if step%10 == 0 {
			row["eval_loss"] = 0.42 + 2.2*math.Exp(-float64(step)/10)
		}
		sft = append(sft, row)
	}
	writeJSONLines(t, l.SFTMetrics(), sft)

	var rl []map[string]any
	global := 0
	for si, st := range rlFixtureStages {
		for step := 1; step <= st.Steps; step++ {
			global++
			g := float64(global)
			acc := 0.18 + 0.5*(1-math.Exp(-g/8)) + 0.03*math.Sin(g*1.7)
			rl = append(rl, map[string]any{"stage": st.Name, "step": step,
				"reward_mean": acc, "accuracy_before_roc": acc, "accuracy_after_roc": math.Min(1, acc+0.04),
				"response_tokens_positive": 150 - 2*g + 30*float64(si), "mean_response_tokens": 170 - g + 30*float64(si),
				"failed_tool_share_positive": 0.22 * math.Exp(-g/10), "clip_fraction": 0.01 + 0.004*math.Cos(g),
				"entropy": 1.1 - 0.02*g, "approx_kl": 0.002 + 0.0004*g,
				"rollout_s": 9 + 0.2*g, "tools_s": 2.5 + 0.1*math.Sin(g), "update_s": 6.1})
		}
	}
	writeJSONLines(t, l.RLMetrics(), rl)

	stages := []string{"sft"}
	for _, st := range rlFixtureStages {
		stages = append(stages, st.Name)
	}
	for i, st := range stages {
		writeFixtureEval(t, l, st, i)
	}
	for _, st := range rlFixtureStages {
		path := l.RLTraces(st.Name, st.Steps)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := rollout.WriteJSONL(path, fixtureTrajectories(st.Name, 4)); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(l.Config(), []byte("[run]\nname = 'quickstart'\n# "+hostile+"\n"), 0o644)
	return l
}

func writeFixtureEval(t testing.TB, l Layout, stage string, i int) {
	t.Helper()
	toolUse, wall := 0.55+0.12*float64(i), 40.0+70*float64(i)
	s := EvalSummary{Stage: stage, ToolUseRate: &toolUse, WallSeconds: &wall}
	s.Metrics = metrics.Metrics{NProblems: 100, NSamples: 400, K: 4, AvgPass1: 0.21 + 0.17*float64(i),
		MeanResponseTokens: 160 - 9*float64(i), ToolCallsPerResponse: 0.7 + 0.2*float64(i),
		FailedToolCallRate: 0.2 / float64(i+1)}
	for j, set := range []struct {
		name string
		n    int
	}{{"aime24", 40}, {"math500", 60}} {
		m := s.Metrics
		m.NProblems, m.NSamples, m.AvgPass1 = set.n, 4*set.n, s.AvgPass1+0.1*float64(j)
		m.AvgPass1CI = [2]float64{m.AvgPass1 - 0.05, m.AvgPass1 + 0.05}
		s.Sets = append(s.Sets, metrics.SetMetrics{Name: set.name, Data: set.name + "/test.jsonl", Metrics: m})
	}
	raw, _ := json.Marshal(s)
	if err := os.WriteFile(l.EvalSummary(stage), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rollout.WriteJSONL(l.EvalTraces(stage), fixtureTrajectories(stage, 5)); err != nil {
		t.Fatal(err)
	}
}

// fixtureTrajectories are n rollouts in the rstar2 layout: a tool call and its result, an answer;
// one wrong, one with a failed call, one with hostile text everywhere it can appear.
func fixtureTrajectories(stage string, n int) []rollout.Trajectory {
	var ts []rollout.Trajectory
	for i := range n {
		a, b := 317+i, 48+i
		ok := fmt.Sprint(a * b)
		call := fmt.Sprintf("<tool_call>\n{\"name\": \"python\", \"arguments\": {\"code\": \"print(%d*%d)\", \"input\": \"\"}}\n</tool_call>", a, b)
		text := fmt.Sprintf("I compute the product with the tool.</reason>\n%s<|im_end|>\n<|im_start|>user\n<tool_response>\n%s\n</tool_response><|im_end|>\n<|im_start|>assistant\n<reason>The tool printed %s.</reason>\n<answer>\\boxed{%s}</answer><|im_end|>",
			call, ok, ok, ok)
		t := rollout.Trajectory{ProblemID: fmt.Sprintf("arith-%s-%d", stage, i), Sample: i, NumTurns: 2, ToolCalls: 1,
			AnswerTags: 1, GeneratedTokens: 90 + 7*i, Reward: 1, Correct: true, Extracted: ok, Finish: rollout.FinishAnswer,
			Turns: []rollout.TurnRecord{{Tokens: 60, Code: fmt.Sprintf("print(%d*%d)", a, b), Status: "ok", ToolText: ok}, {Tokens: 30}}}
		switch i {
		case 1: // a wrong answer after a failed call
			t.Text = "Let me try.</reason>\n<tool_call>\n{\"name\": \"python\", \"arguments\": {\"code\": \"print(1/0)\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\nZeroDivisionError at line 1: division by zero\n</tool_response><|im_end|>\n<|im_start|>assistant\n<reason>I guess.</reason>\n<answer>\\boxed{42}</answer>"
			t.Correct, t.Reward, t.Extracted, t.FailedToolCalls = false, 0, "42", 1
			t.Turns[0].Status = "error"
		case 2: // hostile text in every field the report shows
			t.ProblemID, t.Extracted = hostile, hostile
			t.Text = "</pre></div>" + hostile + "\n" + call + "\n<answer>" + hostile + "</answer>"
		default:
			t.Text = text
		}
		ts = append(ts, t)
	}
	return ts
}

func writeJSONLines(t testing.TB, path string, rows []map[string]any) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
}
