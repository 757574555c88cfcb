package pytool

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// FreshRunner is the baseline design of rStar2's public code environment (code-judge): one fresh
// interpreter per call, rlimits only, no sandbox, at most Workers calls at once. It runs the same
// interpreter and the same harness as the Pool, so `gorstar exec bench` compares designs, not
// Pythons. Never use it for untrusted code.
type FreshRunner struct {
	python string
	lim    limits
	sem    chan struct{}
}

// NewFreshRunner returns the baseline runner with cfg's interpreter and limits.
func NewFreshRunner(cfg Options, workers int) (*FreshRunner, error) {
	exe, _, err := ResolvePython(cfg.Python)
	if err != nil {
		return nil, err
	}
	return &FreshRunner{python: exe, sem: make(chan struct{}, max(workers, 1)),
		lim: limits{timeout: cfg.Timeout, memoryMB: cfg.MemoryMB, cpuS: cfg.CPUSeconds,
			fileMB: cfg.MaxFileMB, outputChars: cfg.OutputChars, outputBytes: cfg.MaxOutputBytes}}, nil
}

// Run starts one interpreter for c and waits for it.
func (f *FreshRunner) Run(ctx context.Context, c Call) Result {
	enq := time.Now()
	select {
	case f.sem <- struct{}{}:
	case <-ctx.Done():
		return internalResult("call cancelled while queued: %v", ctx.Err())
	}
	defer func() { <-f.sem }()
	queued := time.Since(enq)
	lim := f.lim
	if c.TimeoutS > 0 {
		lim.timeout = time.Duration(c.TimeoutS * float64(time.Second))
	}
	if c.MemoryMB > 0 {
		lim.memoryMB = c.MemoryMB
	}
	runCtx, cancel := context.WithTimeout(ctx, lim.timeout)
	defer cancel()
	// The harness alone, not the zygote: a fresh interpreter per call pays for every line it
	// compiles and every module it imports, and the baseline should pay what code-judge's does.
	args := []string{"-I", "-c", harnessSource + freshMain, strconv.Itoa(lim.memoryMB), strconv.Itoa(lim.cpuS), strconv.Itoa(lim.fileMB)}
	if len(c.Code) <= maxArgCode {
		args = append(args, "code", c.Code)
	} else {
		path, err := writeTemp(c.Code)
		if err != nil {
			return internalResult("baseline: %v", err)
		}
		defer os.Remove(path)
		args = append(args, "file", path)
	}
	cmd := exec.CommandContext(runCtx, f.python, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	cmd.Stdin = strings.NewReader(c.Stdin)
	var stdout, stderr cappedBuffer
	stdout.max, stderr.max = lim.outputBytes, lim.outputBytes
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	res := Result{DurationMS: ms(time.Since(start)), QueueMS: ms(queued), OutputCap: lim.outputChars}
	res.Stdout, res.StdoutChars = capChars(stdout.String(), lim.outputChars)
	res.Stderr, res.StderrChars = capChars(stderr.String(), lim.outputChars)
	var exitErr *exec.ExitError
	switch {
	case runCtx.Err() != nil:
		res.Status, res.ExitCode = StatusTimeout, -9
	case err == nil:
		res.Status = StatusOK
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
		res.Status = StatusError
		if strings.Contains(stderr.String(), "MemoryError at line ") {
			res.Status = StatusMemory
		} else if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGXCPU {
			res.Status = StatusTimeout
		}
	default:
		return internalResult("run %s: %v", f.python, err)
	}
	return res
}

// freshMain follows the harness in a baseline interpreter: argv is memory MB, CPU s, file MB,
// then "code" and the code, or "file" and a file holding it.
const freshMain = `
_lim = [int(v) for v in sys.argv[1:4]]
run_once(*_lim, **{"code" if sys.argv[4] == "code" else "path": sys.argv[5]})
`

// maxArgCode is the longest code passed as an argument: Linux refuses one over 128 KiB.
const maxArgCode = 64 << 10

// writeTemp writes code to a new temporary file, for code too long to be an argument.
func writeTemp(code string) (string, error) {
	f, err := os.CreateTemp("", "gorstar-fresh-*.py")
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(code); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), f.Close()
}

// RunBatch runs calls concurrently (at most Workers at once) and returns results in order.
func (f *FreshRunner) RunBatch(ctx context.Context, calls []Call) []Result {
	return runConcurrently(ctx, f, calls)
}

// capChars keeps the first and last max/2 characters of s, and reports its full length.
func capChars(s string, max int) (string, int) {
	r := []rune(s)
	if max <= 0 || len(r) <= max {
		return s, len(r)
	}
	head := max / 2
	return string(r[:head]) + string(r[len(r)-(max-head):]), len(r)
}

// cappedBuffer keeps the first max bytes written and drops the rest.
type cappedBuffer struct {
	bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
