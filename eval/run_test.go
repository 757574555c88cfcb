package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gorstar/config"
	"gorstar/internal/checkpoint"
	"gorstar/internal/progress"
	"gorstar/internal/testmodel"
	"gorstar/pytool"
	"gorstar/rollout"
)

func TestMain(m *testing.M) { testmodel.Main(m) }

// writeProblems writes n arithmetic problems as JSONL (the importer's input as a user has it).
func writeProblems(t testing.TB, dir string, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		src := "a"
		if i%2 == 1 {
			src = "b"
		}
		fmt.Fprintf(&b, `{"id": "p%d", "question": "What is %d + %d?", "answer": "%d", "data_source": %q}`+"\n", i, i, i+1, 2*i+1, src)
	}
	path := filepath.Join(dir, "problems.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func testOptions(t *testing.T, model, data, out string) Options {
	return Options{Eval: config.Eval{Samples: 3, Temperature: 1, MaxTurns: 4, MaxResponseTokens: 24}, TopP: 1, Seed: 7,
		Data: data, Out: out, Model: model, Concurrency: 8, Version: "test", Progress: progress.Options{Quiet: true}}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// An evaluation killed midway (its checkpoint holds some finished samples and a torn last line)
// and run again with the same --out redoes only the rest and ends with the same results and
// summary as an uninterrupted run.
func TestEvalResumeSameSummary(t *testing.T) {
	dir := t.TempDir()
	model := testmodel.TinyDir(t)
	data := writeProblems(t, dir, 4)
	full, err := Run(ctxT(t), testOptions(t, model, data, filepath.Join(dir, "full.parquet")))
	if err != nil {
		t.Fatal(err)
	}
	if full.NSamples != 12 || full.Generated != 12 || full.Resumed != 0 {
		t.Fatalf("full run: %+v", full)
	}
	want, err := ReadResults(full.Out)
	if err != nil {
		t.Fatal(err)
	}

	// The interrupted run: its manifest, 5 finished samples out of order, half a sixth line.
	out := filepath.Join(dir, "resumed.parquet")
	_, _, partial := Paths(out)
	man, err := readManifest(full.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeManifest(checkpoint.PartialManifest(partial), man); err != nil {
		t.Fatal(err)
	}
	var lines strings.Builder
	for _, i := range []int{7, 0, 4, 1, 10} {
		b, _ := json.Marshal(want[i])
		lines.Write(append(b, '\n'))
	}
	torn, _ := json.Marshal(want[2])
	lines.Write(torn[:len(torn)/2])
	if err := os.WriteFile(partial, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	res, err := Run(ctxT(t), testOptions(t, model, data, out))
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed != 5 || res.Generated != 7 {
		t.Errorf("resumed %d, generated %d; want 5 and 7", res.Resumed, res.Generated)
	}
	got, err := ReadResults(out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("resumed results differ from the uninterrupted run's")
	}
	if !reflect.DeepEqual(res.Summary, full.Summary) || !reflect.DeepEqual(res.RStar2, full.RStar2) {
		t.Errorf("summary after resume %+v, want %+v", res.Summary, full.Summary)
	}
	if _, err := os.Stat(partial); !os.IsNotExist(err) {
		t.Errorf("the checkpoint is still there after the run finished: %v", err)
	}
}

// A checkpoint made under other settings is not resumed: the error names the field.
func TestEvalResumeRefusesOtherManifest(t *testing.T) {
	dir := t.TempDir()
	model := testmodel.TinyDir(t)
	data := writeProblems(t, dir, 2)
	out := filepath.Join(dir, "r.parquet")
	o := testOptions(t, model, data, out)
	_, _, partial := Paths(out)
	res, err := Run(ctxT(t), o)
	if err != nil {
		t.Fatal(err)
	}
	man, _ := readManifest(res.Manifest)
	man.Temperature = 0.6
	if err := writeManifest(checkpoint.PartialManifest(partial), man); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(partial, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Run(ctxT(t), o)
	if err == nil || !strings.Contains(err.Error(), "temperature (was 0.6, now 1)") {
		t.Fatalf("err = %v, want a refusal naming the temperature", err)
	}
}

// Greedy sampling with k > 1 is flagged twice: by its settings and by its identical samples.
func TestEvalWarnsGreedy(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(t, testmodel.TinyDir(t), writeProblems(t, dir, 2), filepath.Join(dir, "g.parquet"))
	o.Eval.Temperature = 0
	res, err := Run(ctxT(t), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 2 || !strings.Contains(res.Warnings[0], "temperature 0") ||
		!strings.Contains(res.Warnings[1], "all 2 problems have all 3 samples identical") {
		t.Errorf("warnings %q", res.Warnings)
	}
}

// A trajectory whose tool call the sandbox itself could not run (a pool that did not start under
// load, a lost worker) is not scored: it would count as the model's wrong answer. The run ends
// with the samples it kept and a line saying why the rest failed; running it again redoes them.
func TestEvalDropsSandboxFailures(t *testing.T) {
	spoiled := rollout.Trajectory{ProblemID: "p0", ToolCalls: 1, InternalToolErrors: 1,
		Turns: []rollout.TurnRecord{{Status: string(pytool.StatusInternal), ToolText: "start zygote: not ready after 2 minutes\nmore"}}}
	modelsFault := rollout.Trajectory{ProblemID: "p0", ToolCalls: 1, FailedToolCalls: 1,
		Turns: []rollout.TurnRecord{{Status: string(pytool.StatusError), ToolText: "NameError"}}}
	if why := infraFailure(spoiled); why != "the sandbox could not run a tool call: start zygote: not ready after 2 minutes" {
		t.Errorf("infraFailure(spoiled) = %q", why)
	}
	if why := infraFailure(modelsFault); why != "" {
		t.Errorf("a call that failed by the model's code is the model's result, got %q", why)
	}
	s := &runState{bar: progress.New(1, "eval", progress.Options{Quiet: true})}
	s.finish(spoiled)
	if len(s.records) != 0 || s.failed != 1 {
		t.Fatalf("kept %d records, %d failed; want 0 and 1", len(s.records), s.failed)
	}
	err := s.failure(nil, "r.partial.jsonl")
	if err == nil || !strings.Contains(err.Error(), "1 samples failed, e.g. the sandbox could not run a tool call") {
		t.Errorf("failure = %v", err)
	}
}
