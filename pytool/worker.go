package pytool

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// harnessSource runs a call's code (harness.py): on its own, the bench's baseline of one fresh
// interpreter per call; with zygote.py after it, the pool's zygote.
//
//go:embed harness.py
var harnessSource string

//go:embed zygote.py
var zygotePart string

var zygoteSource = harnessSource + "\n\n" + zygotePart

// zygoteEnv carries the zygote's source into the sandbox; zygoteBootstrap runs it.
const (
	zygoteEnv       = "GORSTAR_ZYGOTE"
	zygoteBootstrap = "import os; exec(compile(os.environ.pop('GORSTAR_ZYGOTE'), '<gorstar-zygote>', 'exec'))"
)

// zygoteMarker is the zygote's argv[0] tag, so tests and operators can count the processes.
const zygoteMarker = "gorstar-exec-zygote"

// limits are the per-call limits sent to the zygote.
type limits struct {
	timeout     time.Duration
	memoryMB    int
	cpuS        int
	maxProcs    int
	fileMB      int
	outputChars int
	outputBytes int
}

// zygoteConf is the zygote's start-up configuration (its argv[1]).
type zygoteConf struct {
	UIDBase         int      `json:"uid_base"`
	DropPrivileges  bool     `json:"drop_privileges"`
	OwnPIDNamespace bool     `json:"own_pid_namespace"`
	SessionSlots    int      `json:"session_slots"`
	SessionIdleS    float64  `json:"session_idle_s"`
	Modules         []string `json:"modules"`
	TmpDir          string   `json:"tmp_dir"`               // the calls' writable directory, wiped after each call
	PythonFork      bool     `json:"python_fork,omitempty"` // never use the native fork-and-wait (tests)
	IdlePriority    bool     `json:"idle_priority,omitempty"`
	Portable        bool     `json:"portable,omitempty"` // as outside Linux (tests)
}

// message is any frame the zygote sends.
type message struct {
	Op          string   `json:"op"`
	ID          uint64   `json:"id"`
	PID         int      `json:"pid"`
	Missing     []string `json:"missing"`
	Fork        string   `json:"fork"`
	Filter      bool     `json:"syscall_filter"`
	Status      Status   `json:"status"`
	Stdout      string   `json:"stdout"`
	Stderr      string   `json:"stderr"`
	ExitCode    int      `json:"exit_code"`
	StdoutChars int      `json:"stdout_chars"`
	StderrChars int      `json:"stderr_chars"`
	MS          float64  `json:"ms"` // extend: how long the call waited for a core
}

// worker is one zygote process and the pipes to it. Its methods are called by one goroutine.
type worker struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	msgs    chan message
	dead    chan struct{} // closed when the zygote's output ends
	stderr  *tailBuffer
	nextID  uint64
	missing []string
	fork    string // how the template forks a stateless call: "native" (one native fork-and-wait) or "python"
	filter  bool   // whether the template and its calls run under the syscall filter (seccomp)
	waitErr error
	private string // with --sandbox=none: this worker's own directory, removed when it ends
}

// startWorker starts a zygote in the sandbox and waits until it has imported its modules.
func startWorker(ctx context.Context, sb *sandbox, prefixes []string, conf zygoteConf) (*worker, error) {
	var private string
	if sb.kind == SandboxNone || sb.kind == SandboxSeatbelt {
		dir, err := os.MkdirTemp("", "gorstar-exec-worker-")
		if err != nil {
			return nil, fmt.Errorf("start zygote: %w", err)
		}
		private, conf.TmpDir = dir, dir
	} else {
		conf.TmpDir = "/tmp"
	}
	confJSON, err := json.Marshal(conf)
	if err != nil {
		return nil, err
	}
	// -s, not -I: the environment is ours (bwrap --clearenv, or set below), and PYTHONMALLOC must
	// be read. The zygote drops the current directory from sys.path itself.
	// The source travels in the environment, not argv, so that ps stays readable.
	argv := []string{sb.python, "-s", "-c", zygoteBootstrap, string(confJSON)}
	if sb.kind == SandboxBwrap {
		args := sb.bwrapArgs(prefixes)
		args = append(args[:len(args)-1], "--setenv", zygoteEnv, zygoteSource, "--")
		argv = append(args, argv...)
	}
	if sb.kind == SandboxSeatbelt {
		// macOS: Seatbelt's profile confines the zygote and every call it forks (seatbelt.go).
		if argv, err = seatbeltArgv(private, prefixes, argv); err != nil {
			os.RemoveAll(private)
			return nil, fmt.Errorf("start zygote: %w", err)
		}
	}
	var cmd *exec.Cmd
	if sb.kind == SandboxNamespaces {
		// This binary sets up the namespaces (nsinit.go), then becomes the interpreter.
		argv[0] = zygoteMarker
		if cmd, err = sb.nsCommand(prefixes, sb.python, argv, []string{zygoteEnv + "=" + zygoteSource}); err != nil {
			return nil, fmt.Errorf("start zygote: %w", err)
		}
	} else {
		cmd = exec.Command(argv[0], argv[1:]...)
		cmd.Args[0] = zygoteMarker
		cmd.Path = argv[0]
		cmd.SysProcAttr = zygoteProcAttr()
	}
	if sb.kind == SandboxNone || sb.kind == SandboxSeatbelt {
		cmd.Dir = private
		cmd.Env = []string{zygoteEnv + "=" + zygoteSource, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "OPENBLAS_NUM_THREADS=1",
			"OMP_NUM_THREADS=1", "HOME=" + private, "TMPDIR=" + private}
		cmd.Env = append(cmd.Env, forkFriendlyEnv...)
	}
	cmd.WaitDelay = 2 * time.Second
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w := &worker{cmd: cmd, in: in, msgs: make(chan message, 1), dead: make(chan struct{}), stderr: &tailBuffer{max: 4096},
		private: private}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		if private != "" {
			_ = os.RemoveAll(private)
		}
		return nil, fmt.Errorf("start zygote %s: %w", sb.python, err)
	}
	go w.readLoop(bufio.NewReaderSize(out, 1<<16))
	timer := time.NewTimer(2 * time.Minute)
	defer timer.Stop()
	select {
	case m := <-w.msgs:
		if m.Op != "ready" {
			w.kill()
			return nil, fmt.Errorf("start zygote: expected ready, got %q", m.Op)
		}
		w.missing, w.fork, w.filter = m.Missing, m.Fork, m.Filter
		return w, nil
	case <-w.dead:
		w.kill()
		return nil, fmt.Errorf("start zygote: exited before it was ready: %s", w.stderr.String())
	case <-timer.C:
		w.kill()
		return nil, errors.New("start zygote: not ready after 2 minutes")
	case <-ctx.Done():
		w.kill()
		return nil, ctx.Err()
	}
}

func (w *worker) readLoop(r *bufio.Reader) {
	defer close(w.dead)
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		buf := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(r, buf); err != nil {
			return
		}
		var m message
		if err := json.Unmarshal(buf, &m); err != nil {
			return
		}
		select {
		case w.msgs <- m:
		case <-time.After(time.Minute): // nobody is listening: the worker is being torn down
			return
		}
	}
}

func (w *worker) send(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	frame := make([]byte, 4+len(data))
	binary.BigEndian.PutUint32(frame, uint32(len(data)))
	copy(frame[4:], data)
	_, err = w.in.Write(frame)
	return err
}

// killGrace is how long the zygote has to answer after a kill before the whole sandbox goes.
const killGrace = 3 * time.Second

// run executes one call. A zygote that dies or stops answering is killed and reported as broken
// (the caller restarts it).
func (w *worker) run(ctx context.Context, c Call, lim limits) (res Result, broken bool) {
	w.nextID++
	id := w.nextID
	req := map[string]any{
		"op": "run", "id": id, "code": c.Code, "stdin": c.Stdin, "session": c.Session,
		"memory_mb": lim.memoryMB, "cpu_s": lim.cpuS, "max_procs": lim.maxProcs, "file_mb": lim.fileMB,
		"output_chars": lim.outputChars, "output_bytes": lim.outputBytes,
	}
	start := time.Now()
	if err := w.send(req); err != nil {
		return internalResult("sandbox worker is gone: %v", err), true
	}
	timer := time.NewTimer(lim.timeout)
	defer timer.Stop()
	// killed: a kill was sent; asked: the deadline passed and the zygote was asked whether the call
	// waited for a core meanwhile (it answers with an extension, or kills the call); waited: the
	// extensions granted, at most maxWaitGrant times the limit.
	killed, asked := false, false
	var waited time.Duration
	var cancelled error
	for {
		select {
		case m := <-w.msgs:
			if m.Op == "extend" && m.ID == id && asked && !killed {
				asked = false
				d := time.Duration(m.MS * float64(time.Millisecond))
				waited += d
				timer.Reset(d)
				continue
			}
			if m.Op != "result" || m.ID != id {
				continue
			}
			res = Result{Status: m.Status, Stdout: m.Stdout, Stderr: m.Stderr, ExitCode: m.ExitCode,
				StdoutChars: m.StdoutChars, StderrChars: m.StderrChars, OutputCap: lim.outputChars,
				DurationMS: ms(time.Since(start))}
			switch {
			case killed && cancelled == nil:
				res.Status = StatusTimeout
				res.Stderr += timeoutNote(lim.timeout, waited)
			case asked && res.Status == StatusTimeout: // the zygote ended it: nothing more waited
				res.Stderr += timeoutNote(lim.timeout, waited)
			}
			if cancelled != nil {
				res = internalResult("call cancelled: %v", cancelled)
				res.DurationMS = ms(time.Since(start))
			}
			return res, false
		case <-w.dead:
			w.kill()
			res = internalResult("sandbox worker died during the call: %s", w.stderr.String())
			res.DurationMS = ms(time.Since(start))
			return res, true
		case <-timer.C:
			if killed || asked { // the zygote did not answer: take the whole sandbox down
				w.kill()
				res = Result{Status: StatusTimeout, ExitCode: -9, DurationMS: ms(time.Since(start)),
					Stderr: timeoutNote(lim.timeout, waited), OutputCap: lim.outputChars}
				if cancelled != nil {
					res = internalResult("call cancelled: %v", cancelled)
				}
				return res, true
			}
			if waited < maxWaitGrant*lim.timeout {
				asked = true
				_ = w.send(map[string]any{"op": "deadline", "id": id})
			} else {
				killed = true
				_ = w.send(map[string]any{"op": "kill", "id": id})
			}
			timer.Reset(killGrace)
		case <-ctx.Done():
			if !killed {
				killed, cancelled = true, ctx.Err()
				_ = w.send(map[string]any{"op": "kill", "id": id})
				timer.Stop()
				timer = time.NewTimer(killGrace)
			}
			ctx = context.Background()
		}
	}
}

// maxWaitGrant bounds the time a call's deadline moves on for its waits for a core, as a multiple
// of its limit: on a machine kept busy for good, a call still ends.
const maxWaitGrant = 10

// timeoutNote is the line a timed-out call's stderr ends with.
func timeoutNote(limit, waited time.Duration) string {
	if waited > 0 {
		return fmt.Sprintf("Timed out after %s (wall clock, not counting %s waiting for a CPU).\n", limit, waited.Round(time.Millisecond))
	}
	return fmt.Sprintf("Timed out after %s (wall clock).\n", limit)
}

func (w *worker) closeSession(name string) {
	_ = w.send(map[string]any{"op": "close_session", "session": name})
}

// close asks the zygote to exit (it ends its sessions), then kills the sandbox if it lingers.
func (w *worker) close() {
	_ = w.in.Close()
	select {
	case <-w.dead:
	case <-time.After(2 * time.Second):
	}
	w.kill()
}

// kill ends the sandbox: the zygote's process group, and with it (bwrap --die-with-parent and
// the pid namespace) every process inside.
func (w *worker) kill() {
	if w.cmd.Process != nil {
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		_ = w.cmd.Process.Kill()
	}
	_ = w.in.Close()
	if w.waitErr == nil {
		w.waitErr = w.cmd.Wait()
		if w.waitErr == nil {
			w.waitErr = errors.New("exited")
		}
	}
	if w.private != "" {
		_ = os.RemoveAll(w.private)
	}
}

// tailBuffer keeps the last max bytes written (the zygote's stderr, for diagnostics).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
