package pytool

import (
	"fmt"
	"strings"
	"time"
)

// Call is one tool call: Python source, its standard input and optional per-call limits.
// Zero limits take the pool's defaults.
type Call struct {
	Code     string  `json:"code"`
	Stdin    string  `json:"stdin,omitempty"`
	TimeoutS float64 `json:"timeout_s,omitempty"`
	MemoryMB int     `json:"memory_mb,omitempty"`
	// Session names a live interpreter whose globals persist across calls (one per trajectory).
	// Empty means a stateless call in a fresh child.
	Session string `json:"session,omitempty"`
}

// Status is the kind of a result.
type Status string

const (
	StatusOK          Status = "ok"
	StatusError       Status = "error"        // an exception or a non-zero exit
	StatusTimeout     Status = "timeout"      // wall clock or CPU time ran out
	StatusMemory      Status = "memory"       // MemoryError under the address-space limit
	StatusOutputLimit Status = "output_limit" // output past the hard cap: the call was killed
	StatusInternal    Status = "internal"     // the sandbox failed, not the code
)

// Result is what a call produced. Stdout and Stderr are cut to the pool's output cap (first half +
// last half); StdoutChars and StderrChars are the lengths before the cut.
type Result struct {
	Status      Status  `json:"status"`
	Stdout      string  `json:"stdout"`
	Stderr      string  `json:"stderr"`
	ExitCode    int     `json:"exit_code"`
	DurationMS  float64 `json:"duration_ms"`
	StdoutChars int     `json:"stdout_chars"`
	StderrChars int     `json:"stderr_chars"`
	OutputCap   int     `json:"output_cap"`
	QueueMS     float64 `json:"queue_ms"`
}

// Failed reports whether the call counts as a failed tool call (GRPO-RoC's p_err): anything
// but ok.
func (r Result) Failed() bool { return r.Status != StatusOK }

func internalResult(format string, args ...any) Result {
	return Result{Status: StatusInternal, Stderr: fmt.Sprintf(format, args...), ExitCode: -1}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ToolText renders the result as the text the model sees inside <tool_response>, cut to max
// characters (first half + a marker + last half; max ≤ 0 keeps everything).
func (r Result) ToolText(max int) string {
	var b strings.Builder
	b.WriteString(withCut(r.Stdout, r.StdoutChars))
	switch r.Status {
	case StatusOK:
		if r.Stdout == "" && r.Stderr == "" {
			b.WriteString("(no output)")
		}
		b.WriteString(withCut(r.Stderr, r.StderrChars))
	case StatusTimeout:
		if r.Stderr == "" {
			b.WriteString("Timed out.")
		}
		b.WriteString(withCut(r.Stderr, r.StderrChars))
	case StatusOutputLimit:
		b.WriteString("Output limit: the code printed too much and was stopped.")
	default:
		b.WriteString(withCut(r.Stderr, r.StderrChars))
	}
	return Cut(strings.TrimRight(b.String(), "\n"), max)
}

// withCut notes inside a capped stream that characters were dropped.
func withCut(s string, total int) string {
	n := len([]rune(s))
	if total <= n {
		return s
	}
	r := []rune(s)
	head := n / 2
	return string(r[:head]) + fmt.Sprintf("…[%d chars cut]…", total-n) + string(r[head:])
}

// Cut shortens s to at most max characters plus a marker: the first max/2 and the last max/2
// characters around "…[N chars cut]…". max ≤ 0 returns s.
func Cut(s string, max int) string {
	if max <= 0 {
		return s
	}
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	head := max / 2
	tail := max - head
	return string(r[:head]) + fmt.Sprintf("\n…[%d chars cut]…\n", len(r)-max) + string(r[len(r)-tail:])
}
