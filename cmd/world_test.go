package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
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

// Two ranks launched torchrun's way (no MPI) on the CPU meet at MASTER_ADDR and are refused with
// one line each, status 1 (with --device auto too, finding no GPU): their rendezvous carries control messages, not gradients. A rank
// whose peer never comes gives up after GORSTAR_RENDEZVOUS_TIMEOUT naming it.
func TestTorchrunOnCPU(t *testing.T) {
	bin := gorstarBinary(t)
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	start := func(rank int, timeout string, args ...string) (*osexec.Cmd, *bytes.Buffer) {
		cmd := osexec.Command(bin, args...)
		var errb bytes.Buffer
		cmd.Dir, cmd.Stderr = dir, &errb
		cmd.Env = append(os.Environ(), fmt.Sprintf("RANK=%d", rank), "WORLD_SIZE=2",
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+port, "GORSTAR_RENDEZVOUS_TIMEOUT="+timeout)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &errb
	}
	sft := []string{"--threads", "1", "sft", "--model", "init", "--data", "sft.parquet", "--out", "out"}
	var cmds [2]*osexec.Cmd
	var errs [2]*bytes.Buffer
	// Rank 0 asks for --device auto (which looks for GPUs under torchrun), rank 1 takes the
	// default, the CPU.
	devices := []string{"auto", "cpu"}
	for r := range 2 {
		args := sft
		if r == 0 {
			args = append([]string{"--device", "auto"}, sft...)
		}
		cmds[r], errs[r] = start(r, "30", args...)
	}
	want := "gorstar: rank %d of 2: --device %s: a torchrun-style launch (RANK, WORLD_SIZE, MASTER_ADDR; no MPI) runs one GPU per rank"
	for r, cmd := range cmds {
		err := cmd.Wait()
		line := strings.TrimSpace(errs[r].String())
		if w := fmt.Sprintf(want, r, devices[r]); cmd.ProcessState.ExitCode() != 1 || !strings.HasPrefix(line, w) || strings.Contains(line, "\n") {
			t.Errorf("rank %d: %v, stderr %q; want one line %q…", r, err, line, w)
		}
	}

	cmd, errb := start(1, "0.5", sft...)
	cmd.Wait()
	want = "gorstar: rank 1 of 2 (torchrun): rendezvous: rank 0 at 127.0.0.1:" + port + " not reached within 500ms"
	if line := strings.TrimSpace(errb.String()); cmd.ProcessState.ExitCode() != 1 || !strings.HasPrefix(line, want) || strings.Contains(line, "\n") {
		t.Errorf("rank 1 alone: status %d, stderr %q, want one line %q…", cmd.ProcessState.ExitCode(), line, want)
	}
}
