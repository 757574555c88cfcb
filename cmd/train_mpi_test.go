package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/internal/mpitest"
	"gorstar/internal/testenv"
	"gorstar/train"
)

// `mpirun -np 2 gorstar train` runs the whole shortened quickstart as a data-parallel job: one
// JSON object on stdout (rank 0's) naming the last stage, one world line on stderr, and the run
// directory rank 0 writes holds every stage's outputs. The tool workers run at normal priority:
// each rank's are pinned to its one core, and at idle priority (SCHED_IDLE, exec.priority auto
// beside an engine) they get no time at all while other jobs keep that core busy.
func TestTrainUnderMPI(t *testing.T) {
	testenv.Short(t, "the whole pipeline in 2 ranks")
	mpitest.Command(t, 2) // skips without mpirun
	bin := gorstarBinary(t)
	dir := t.TempDir()
	args := shortTrainArgs("train", "--run-dir", "run", "--json", "--set", "exec.priority=normal")
	args[len(args)-1] = "1" // --threads 1: one core per rank
	cmd := mpitest.Command(t, 2, append([]string{bin}, args...)...)
	var out, errb bytes.Buffer
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("mpirun -np 2 gorstar train: %v\n%s", err, errb.String())
	}
	stdout := out.String()
	var res map[string]any
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || strings.Count(stdout, "\n") != 1 {
		t.Fatalf("stdout %q: want one JSON object (%v)", stdout, err)
	}
	if stages, _ := res["stages"].([]any); res["stage"] != "stage3" || len(stages) != 3 || res["avg_pass@1"] == nil {
		t.Errorf("train --json under 2 ranks: %v", res)
	}
	if n := strings.Count(errb.String(), "gorstar: world: 2 ranks on 1 node(s)"); n < 1 {
		t.Errorf("stderr does not name the world:\n%s", errb.String())
	}
	lay := train.Layout{Dir: filepath.Join(dir, "run")}
	for _, f := range []string{lay.EvalSummary("stage3"), filepath.Join(lay.SFT(), "config.json"), lay.SFTMetrics(), lay.Summary()} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("run directory: %v", err)
		}
	}
}
