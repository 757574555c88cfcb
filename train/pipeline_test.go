package train

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"gorstar/config"
	"gorstar/eval/metrics"
	"gorstar/internal/testenv"
	"gorstar/kernels"
)

// shortPipeline is the quickstart cut to the smallest sizes that still go through every stage for
// real: a few synthetic problems, a few SFT steps, RL stages of 1–2 steps on small groups (the
// last hard-only), an eval with one sample per problem.
var shortPipeline = []string{
	"data.synth.train=16", "data.synth.eval=4", "data.synth.sft=16",
	"model.copy_steps=10", "sft.epochs=1", "sft.batch_size=8",
	"rl.prompts_per_step=2", "rl.group_size=2", "rl.oversample=1", "rl.save_every=1",
	"rl.hard_only_samples=2", "rl.hard_only_pool=4",
	"rl.stages.0.steps=2", "rl.stages.1.steps=1", "rl.stages.2.steps=1",
	"rl.stages.0.max_response_tokens=64", "rl.stages.1.max_response_tokens=64", "rl.stages.2.max_response_tokens=64",
	"eval.samples=1", "eval.max_tokens=64", "exec.workers=2",
}

func shortConfig(t testing.TB) config.Config {
	cfg := config.Default()
	for _, kv := range shortPipeline {
		if err := cfg.Set(kv); err != nil {
			t.Fatal(err)
		}
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

const childEnv = "GORSTAR_TRAIN_CHILD" // a run directory: the child runs the short pipeline there

func TestMain(m *testing.M) {
	if err := kernels.Setup("cpu", 0, 2); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if dir := os.Getenv(childEnv); dir != "" {
		os.Exit(runChild(dir))
	}
	os.Exit(m.Run())
}

// runChild runs the short pipeline in dir and SIGKILLs itself after the first RL step (its
// checkpoint written, the stage half done).
func runChild(dir string) int {
	o := Options{Config: shortConfig(nil), Dir: dir, afterRLStep: func(step int) {
		if step == 1 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}}
	if _, err := Run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 3 // finished: it should have been killed
}

func runShort(t *testing.T, dir string) Result {
	t.Helper()
	var log bytes.Buffer
	res, err := Run(context.Background(), Options{Config: shortConfig(t), Dir: dir, Log: &log, Quiet: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	return res
}

// TestTrainEveryStage runs the short pipeline through every stage, then again: the second run
// finds every stage done and changes nothing.
func TestTrainEveryStage(t *testing.T) {
	testenv.Short(t, "the whole pipeline")
	dir := t.TempDir()
	res := runShort(t, dir)
	l := Layout{Dir: dir}
	p := &pipeline{o: Options{Config: shortConfig(t)}, cfg: shortConfig(t), lay: l}
	names := []string{}
	for _, s := range p.plan() {
		names = append(names, s.name)
		if _, err := os.Stat(l.Done(s.name)); err != nil {
			t.Errorf("stage %s has no marker: %v", s.name, err)
		}
	}
	want := "data init sft eval-sft rl eval-stage1 eval-stage2 eval-stage3 summary"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("stages %s, want %s", got, want)
	}
	for _, f := range []string{l.Config(), l.TrainData(), l.EvalData(), l.SFTData(), filepath.Join(l.SFT(), "model.safetensors"),
		filepath.Join(l.RL(), "model.safetensors"), l.Summary(), l.Report(), l.EvalMarkdown("stage3")} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
	if res.SFTEval == nil || len(res.Stages) != 3 || res.Stage != "stage3" || res.ToolUseRate == nil || res.WallSeconds == nil {
		t.Fatalf("result %+v", res)
	}
	cmds, err := ReadCommands(l.Commands())
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	for _, c := range cmds {
		recorded[c.Stage] = true
	}
	for _, s := range append([]string{"data-train", "data-eval", "data-sft"}, names[1:]...) {
		if !recorded[s] {
			t.Errorf("commands.sh has no line for %s", s)
		}
	}
	// The report shows trajectories of every evaluation and RL stage, and one RL step file per stage.
	page := string(mustRead(t, l.Report()))
	if strings.Contains(page, "No trajectories yet") {
		t.Error("report.html has no trajectories after a full run")
	}
	for _, want := range []string{"Held-out eval after sft", "Held-out eval after stage3", "RL rollouts, stage1", "RL rollouts, stage3"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	for _, st := range []string{"stage1", "stage2", "stage3"} {
		if files, _ := filepath.Glob(filepath.Join(l.RLTracesDir(), st, "step-*.jsonl")); len(files) != 1 {
			t.Errorf("rl/traces/%s holds %v, want the newest step's file", st, files)
		}
	}
	var table bytes.Buffer
	if err := WriteTable(&table, res); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(table.String(), "\n"); lines != 6 { // header, sft, 3 stages, total
		t.Errorf("table has %d lines:\n%s", lines, table.String())
	}

	weights := mustRead(t, filepath.Join(l.RL(), "model.safetensors"))
	again := runShort(t, dir)
	if !bytes.Equal(weights, mustRead(t, filepath.Join(l.RL(), "model.safetensors"))) {
		t.Error("a rerun of a finished run changed the RL weights")
	}
	if a, b := evalNumbers(t, res), evalNumbers(t, again); a != b {
		t.Errorf("rerun summary differs:\n%s\n%s", a, b)
	}
}

// TestTrainKillAndRerun SIGKILLs the short pipeline in the middle of its first RL stage (after the
// first step's checkpoint), runs it again, and compares the final weights and every evaluation
// with an uninterrupted run's.
func TestTrainKillAndRerun(t *testing.T) {
	testenv.Short(t, "the whole pipeline")
	killed, whole := t.TempDir(), t.TempDir()
	cmd := osexec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+killed)
	out, err := cmd.CombinedOutput()
	var exit *osexec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want SIGKILL\n%s", err, out)
	}
	l := Layout{Dir: killed}
	if _, err := os.Stat(l.Done(stageRL)); err == nil {
		t.Fatal("the child finished RL before it was killed")
	}
	resumed := runShort(t, killed)
	full := runShort(t, whole)
	a := mustRead(t, filepath.Join(l.RL(), "model.safetensors"))
	b := mustRead(t, filepath.Join(Layout{Dir: whole}.RL(), "model.safetensors"))
	if !bytes.Equal(a, b) {
		t.Error("final RL weights differ between the killed-and-rerun run and an uninterrupted one")
	}
	if x, y := evalNumbers(t, resumed), evalNumbers(t, full); x != y {
		t.Errorf("evaluations differ:\nresumed %s\nwhole   %s", x, y)
	}
}

// evalNumbers is every evaluation of a result as JSON, without wall times and paths.
func evalNumbers(t *testing.T, r Result) string {
	r.RunDir, r.Report, r.Seconds = "", "", 0
	strip := func(s *EvalSummary) {
		s.WallSeconds = nil
		sets := make([]metrics.SetMetrics, len(s.Sets))
		for i, set := range s.Sets {
			set.Data = "" // a path inside the run directory
			sets[i] = set
		}
		s.Sets = sets
	}
	strip(&r.EvalSummary)
	if r.SFTEval != nil {
		s := *r.SFTEval
		strip(&s)
		r.SFTEval = &s
	}
	stages := make([]EvalSummary, len(r.Stages))
	for i, s := range r.Stages {
		strip(&s)
		stages[i] = s
	}
	r.Stages = stages
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
