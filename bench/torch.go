package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"

	"gorstar/model"
)

// DefaultTorchScript is the PyTorch reference, relative to the repository root.
var DefaultTorchScript = filepath.Join("bench", "qwen3_torch.py")

// Torch runs the PyTorch reference's benchmark modes (train-bench, generate-bench).
type Torch struct {
	Python string    // an interpreter that imports torch, e.g. /usr/bin/python3
	Script string    // the reference, e.g. DefaultTorchScript
	Stderr io.Writer // the script's standard error; nil discards it
}

// Missing says why the PyTorch side is skipped, or "" when the interpreter imports torch.
func (t *Torch) Missing(ctx context.Context) string {
	if err := osexec.CommandContext(ctx, t.Python, "-c", "import torch").Run(); err != nil {
		return fmt.Sprintf("%s cannot import torch (install python3-torch): PyTorch side skipped", t.Python)
	}
	return ""
}

// run runs one benchmark mode on the model directory dir with its BLAS and OpenMP on threads
// threads and returns the tokens_per_s of the last line it prints. OMP_WAIT_POLICY=PASSIVE keeps
// idle OpenMP threads from starving OpenBLAS. With bf16, PyTorch's CPU mixed precision stands
// against gorstar's bf16.
func (t *Torch) run(ctx context.Context, mode, dir string, threads int, prec model.Precision, args ...string) (float64, error) {
	args = append([]string{t.Script, mode, "--model", dir, "--threads", strconv.Itoa(threads)}, args...)
	if prec == model.BF16 {
		args = append(args, "--autocast-bf16")
	}
	cmd := osexec.CommandContext(ctx, t.Python, args...)
	n := strconv.Itoa(threads)
	cmd.Env = append(os.Environ(), "OMP_WAIT_POLICY=PASSIVE", "OMP_NUM_THREADS="+n, "OPENBLAS_NUM_THREADS="+n, "MKL_NUM_THREADS="+n)
	cmd.Stderr = t.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("run %s %s: %w", t.Script, mode, err)
	}
	return tokensPerS(out, t.Script+" "+mode)
}

// tokensPerS reads {"tokens_per_s": X} from the last line of a reference's output.
func tokensPerS(out []byte, what string) (float64, error) {
	var res struct {
		TokensPerS float64 `json:"tokens_per_s"`
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if err := json.Unmarshal(lines[len(lines)-1], &res); err != nil || res.TokensPerS <= 0 {
		return 0, fmt.Errorf("%s: no tokens_per_s in its output %q", what, out)
	}
	return res.TokensPerS, nil
}

// savedModel is the directory of a model for the PyTorch side: dir where the model came from one,
// else a temporary copy that cleanup removes.
func savedModel(m *model.Model, name, dir string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "gorstar-bench-")
	if err != nil {
		return "", nil, err
	}
	dir = filepath.Join(tmp, name)
	if err := m.Save(dir); err != nil {
		os.RemoveAll(tmp)
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(tmp) }, nil
}
