package config

import (
	"net/url"
	"strings"
	"time"
)

// Exec configures the sandboxed Python tool (package pytool, whose Options internal/tooloptions
// makes of it): the warm pool, the sandbox and the per-call limits. Defaults follow rStar2's code environment (4 s, 384 MB, 1000 characters).
type Exec struct {
	Workers           int      `toml:"workers" comment:"Warm Python workers, one call each at a time (0 = 2 per core)."`
	Python            string   `toml:"python" comment:"Interpreter; resolved to its real path (shims are followed)."`
	Modules           []string `toml:"modules" comment:"Modules each worker imports before forking (missing ones are skipped)."`
	Sandbox           string   `toml:"sandbox" comment:"auto | bwrap | namespaces | seatbelt | none. auto: bwrap when installed (0.7+, to bound /tmp), else namespaces gorstar sets up itself, else an older bwrap; on macOS seatbelt (sandbox-exec). none runs untrusted code WITHOUT isolation."`
	Timeout           Duration `toml:"timeout" comment:"Wall-clock limit per call, enforced by killing the call's processes; time the call's process spent waiting for a CPU is not counted (up to 10 times the limit in all), so a busy machine does not time out a call an idle one would finish."`
	MemoryMB          int      `toml:"memory_mb" comment:"Address space a call may add above the warm worker's own."`
	CPUSeconds        int      `toml:"cpu_seconds" comment:"CPU time per call (0 = only the wall clock)."`
	MaxProcesses      int      `toml:"max_processes" comment:"Processes and threads a call may have at once, itself included."`
	MaxFileMB         int      `toml:"max_file_mb" comment:"Largest file a call may write."`
	TmpMB             int      `toml:"tmp_mb" comment:"Size of each worker's private /tmp (memory); a call that fills it gets 'No space left on device'."`
	OutputChars       int      `toml:"output_chars" comment:"stdout and stderr are each cut to this many characters (first half + last half)."`
	MaxOutputBytes    int      `toml:"max_output_bytes" comment:"A call printing more than this is killed (status output_limit)."`
	SessionIdle       Duration `toml:"session_idle" comment:"A session's interpreter ends after this long without a call."`
	SessionsPerWorker int      `toml:"sessions_per_worker" comment:"Live sessions per worker; the least recently used one ends past this."`
	QueueSize         int      `toml:"queue_size" comment:"Calls waiting for a worker; past this, exec serve answers 429."`
	Endpoints         []string `toml:"endpoints" comment:"gorstar exec serve nodes (http://HOST:PORT) that run the tool calls of rollout, rl, eval, train and chat, each call to the node with the fewest calls outstanding; empty = workers on this machine. With endpoints, each node applies its own limits and sandbox (the keys above, as that node was started with); exec serve, run and bench always use their own workers."`
	Priority          string   `toml:"priority" comment:"CPU priority of the workers and their calls: auto, normal or idle. idle: Linux SCHED_IDLE in an autogroup of nice 19, so the calls run on cores a model decoding on the same machine leaves free instead of stalling its steps; the time a call waits for a core does not count toward exec.timeout (up to 10 times the limit). auto: idle where gorstar decodes on this machine beside the calls (rollout, rl, eval, train, chat on a local model), normal elsewhere (exec serve, exec run, remote endpoints)."`

	// Deprecated: the cut of the tool response the model sees is rollout.tool_text_chars.
	ToolTextChars *int `toml:"tool_text_chars,omitempty" renamed:"rollout.tool_text_chars"`
}

// DefaultModules are imported by every worker when installed.
var DefaultModules = []string{"math", "fractions", "itertools", "functools", "collections", "decimal",
	"random", "re", "statistics", "sympy", "numpy"}

func DefaultExec() Exec {
	return Exec{
		Python:            "python3",
		Modules:           append([]string(nil), DefaultModules...),
		Sandbox:           "auto",
		Timeout:           D(4 * time.Second),
		MemoryMB:          384,
		CPUSeconds:        4,
		MaxProcesses:      16,
		MaxFileMB:         16,
		TmpMB:             256,
		OutputChars:       1000,
		MaxOutputBytes:    1 << 20,
		SessionIdle:       D(5 * time.Minute),
		SessionsPerWorker: 32,
		QueueSize:         4096,
		Priority:          "auto",
	}
}

func (e Exec) Validate() error {
	return firstError(
		atLeast("exec.workers", e.Workers, 0),
		oneOf("exec.sandbox", e.Sandbox, "auto", "bwrap", "namespaces", "seatbelt", "none"),
		oneOf("exec.priority", e.Priority, "auto", "normal", "idle"),
		execPositiveDuration("exec.timeout", e.Timeout),
		atLeast("exec.memory_mb", e.MemoryMB, 16),
		atLeast("exec.cpu_seconds", e.CPUSeconds, 0),
		atLeast("exec.max_processes", e.MaxProcesses, 1),
		atLeast("exec.max_file_mb", e.MaxFileMB, 1),
		atLeast("exec.tmp_mb", e.TmpMB, 1),
		atLeast("exec.output_chars", e.OutputChars, 1),
		atLeast("exec.max_output_bytes", e.MaxOutputBytes, 1024),
		execPositiveDuration("exec.session_idle", e.SessionIdle),
		between("exec.sessions_per_worker", e.SessionsPerWorker, 1, 63),
		atLeast("exec.queue_size", e.QueueSize, 1),
		execNonEmpty("exec.python", e.Python),
		httpURLs("exec.endpoints", e.Endpoints),
	)
}

func execPositiveDuration(key string, d Duration) error {
	if d.Duration <= 0 {
		return keyErrorf(key, "must be a positive duration, got %q", d.Duration)
	}
	return nil
}

func execNonEmpty(key, v string) error {
	if v == "" {
		return keyErrorf(key, "must not be empty")
	}
	return nil
}

// httpURLs checks that every entry of a list of servers is http(s)://HOST[:PORT].
func httpURLs(key string, urls []string) error {
	for i, u := range urls {
		p, err := url.Parse(strings.TrimSpace(u))
		if err != nil || p.Host == "" || (p.Scheme != "http" && p.Scheme != "https") {
			return keyErrorf(key, "entry %d, %q: want http://HOST:PORT", i+1, u)
		}
	}
	return nil
}
