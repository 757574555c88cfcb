package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/internal/mpitest"
)

// `mpirun -np 2 gorstar sft … --json` prints one line naming the world on stderr and one JSON
// object on stdout (rank 0's); a launcher variable that does not parse and a missing MPI library
// are one line each, naming the rank.
func TestWorldCommandLine(t *testing.T) {
	mpitest.Command(t, 2) // skips without mpirun
	bin := gorstarBinary(t)
	dir := t.TempDir()
	run := func(cmd *osexec.Cmd) (string, string, error) {
		var out, errb bytes.Buffer
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	for _, args := range [][]string{
		{"--seed", "1", "--threads", "1", "model", "init", "--preset", "tiny", "--out", "init"},
		{"--seed", "3", "data", "synth", "--n", "12", "--sft", "--out", "sft.parquet"},
	} {
		if _, stderr, err := run(osexec.Command(bin, args...)); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr)
		}
	}
	sft := []string{"--threads", "1", "sft", "--model", "init", "--data", "sft.parquet", "--out", "two",
		"--epochs", "1", "--until-eval-loss", "0", "--batch-size", "4", "--json"}
	stdout, stderr, err := run(mpitest.Command(t, 2, append([]string{bin}, sft...)...))
	if err != nil {
		t.Fatalf("mpirun -np 2 gorstar sft: %v\n%s", err, stderr)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || strings.Count(stdout, "\n") != 1 || res["steps"] != float64(3) {
		t.Errorf("stdout %q: want one JSON object of 3 steps (%v)", stdout, err)
	}
	if n := strings.Count(stderr, "gorstar: world: 2 ranks on 1 node(s), launched by Open MPI"); n != 1 && !strings.Contains(stderr, "launched by MPICH") {
		t.Errorf("stderr names the world %d times, want once:\n%s", n, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "two", "model.safetensors")); err != nil {
		t.Errorf("no final model: %v", err)
	}

	cmd := osexec.Command(bin, sft...)
	cmd.Env = append(os.Environ(), "RANK=0", "WORLD_SIZE=two")
	_, stderr, err = run(cmd)
	if want := `gorstar: launcher environment (torchrun): WORLD_SIZE="two": want an integer ≥ 1`; err == nil || strings.TrimSpace(stderr) != want {
		t.Errorf("WORLD_SIZE=two: %v, stderr %q; want %q", err, stderr, want)
	}

	cmd = mpitest.Command(t, 2, "-x", "GORSTAR_LIBMPI", bin)
	cmd.Args = append(cmd.Args, sft...)
	cmd.Env = append(os.Environ(), "GORSTAR_LIBMPI=/nonexistent/libmpi.so")
	_, stderr, err = run(cmd)
	if err == nil || !strings.Contains(stderr, "of 2 (Open MPI): no MPI library found (tried /nonexistent/libmpi.so)") {
		t.Errorf("no MPI library: %v, stderr:\n%s", err, stderr)
	}
}
