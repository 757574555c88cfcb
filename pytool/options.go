package pytool

import (
	"fmt"
	"time"
)

// Options configure the tool: the warm pool, its sandbox and the per-call limits, or the exec serve
// nodes that run the calls instead. Each field is the `exec.*` key of the same name in gorstar's
// configuration (the command line and the stages convert it in internal/tooloptions); the zero
// value of a limit is not a default, so start from DefaultOptions.
type Options struct {
	Workers           int           // warm workers, one call each at a time (0 = 2 per core)
	Python            string        // interpreter, resolved to its real path
	Modules           []string      // imported by each worker before forking (missing ones are skipped)
	Sandbox           string        // auto, bwrap, namespaces, seatbelt or none
	Timeout           time.Duration // wall-clock limit per call
	MemoryMB          int           // address space a call may add above its worker's
	CPUSeconds        int           // CPU time per call (0 = only the wall clock)
	MaxProcesses      int           // processes and threads of a call at once
	MaxFileMB         int           // largest file a call may write
	TmpMB             int           // each worker's private /tmp
	OutputChars       int           // stdout and stderr are each cut to this (first half + last half)
	MaxOutputBytes    int           // a call printing more is killed (StatusOutputLimit)
	SessionIdle       time.Duration // a session's interpreter ends after this long without a call
	SessionsPerWorker int           // live sessions per worker (1..63)
	QueueSize         int           // calls waiting for a worker
	Endpoints         []string      // exec serve nodes (Open); empty = a Pool here
	Priority          string        // auto, normal or idle (BesideEngine)
}

// DefaultOptions follow rStar2's code environment (4 s, 384 MB, 1000 characters).
func DefaultOptions() Options {
	return Options{
		Python:            "python3",
		Modules:           []string{"math", "fractions", "itertools", "functools", "collections", "decimal", "random", "re", "statistics", "sympy", "numpy"},
		Sandbox:           "auto",
		Timeout:           4 * time.Second,
		MemoryMB:          384,
		CPUSeconds:        4,
		MaxProcesses:      16,
		MaxFileMB:         16,
		TmpMB:             256,
		OutputChars:       1000,
		MaxOutputBytes:    1 << 20,
		SessionIdle:       5 * time.Minute,
		SessionsPerWorker: 32,
		QueueSize:         4096,
		Priority:          "auto",
	}
}

// Validate checks what a pool needs to start: the error names the exec key of the bad field.
// The configuration checks the same keys, with its file and line, before they get here.
func (o Options) Validate() error {
	checks := []struct {
		ok   bool
		key  string
		want string
		got  any
	}{
		{o.Workers >= 0, "exec.workers", "≥ 0", o.Workers},
		{o.Python != "", "exec.python", "an interpreter", `""`},
		{o.Sandbox == "auto" || o.Sandbox == "bwrap" || o.Sandbox == "namespaces" || o.Sandbox == "seatbelt" || o.Sandbox == "none",
			"exec.sandbox", "auto, bwrap, namespaces, seatbelt or none", fmt.Sprintf("%q", o.Sandbox)},
		{o.Priority == "auto" || o.Priority == "normal" || o.Priority == "idle", "exec.priority", "auto, normal or idle", fmt.Sprintf("%q", o.Priority)},
		{o.Timeout > 0, "exec.timeout", "a positive duration", o.Timeout},
		{o.MemoryMB >= 16, "exec.memory_mb", "≥ 16", o.MemoryMB},
		{o.CPUSeconds >= 0, "exec.cpu_seconds", "≥ 0", o.CPUSeconds},
		{o.MaxProcesses >= 1, "exec.max_processes", "≥ 1", o.MaxProcesses},
		{o.MaxFileMB >= 1, "exec.max_file_mb", "≥ 1", o.MaxFileMB},
		{o.TmpMB >= 1, "exec.tmp_mb", "≥ 1", o.TmpMB},
		{o.OutputChars >= 1, "exec.output_chars", "≥ 1", o.OutputChars},
		{o.MaxOutputBytes >= 1024, "exec.max_output_bytes", "≥ 1024", o.MaxOutputBytes},
		{o.SessionIdle > 0, "exec.session_idle", "a positive duration", o.SessionIdle},
		{o.SessionsPerWorker >= 1 && o.SessionsPerWorker <= 63, "exec.sessions_per_worker", "in [1, 63]", o.SessionsPerWorker},
		{o.QueueSize >= 1, "exec.queue_size", "≥ 1", o.QueueSize},
	}
	for _, c := range checks {
		if !c.ok {
			return fmt.Errorf("%s: must be %s, got %v", c.key, c.want, c.got)
		}
	}
	return nil
}
