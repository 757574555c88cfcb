package reward

import "fmt"

// Mode selects how strict grading is.
type Mode int

const (
	// Strict is the default: the answer must be exactly equivalent to the reference.
	Strict Mode = iota
	// RStar2 reproduces the rStar2-Agent release's grading, false positives included.
	RStar2
)

// String returns the mode's configuration name.
func (m Mode) String() string {
	switch m {
	case Strict:
		return "strict"
	case RStar2:
		return "rstar2"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode reads a mode name as used in configuration and on the command line.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "strict":
		return Strict, nil
	case "rstar2":
		return RStar2, nil
	}
	return Strict, fmt.Errorf("unknown reward mode %q (want strict or rstar2)", s)
}

// Options configures one grade. The zero value grades strictly.
type Options struct {
	Mode Mode
	// Truncated marks a response that ran out of its token budget. It scores 0 in Strict mode;
	// RStar2 mode ignores it, as the release did.
	Truncated bool
}

// Result is a verdict with the evidence for it.
type Result struct {
	Correct   bool
	Extracted string // the final answer found in the response ("" when none)
	Reason    string // why, in a few words: "equal as rationals", "no answer found", ...
}

// Grade extracts the final answer from response and compares it with reference.
func Grade(response, reference string, opts Options) Result {
	if opts.Truncated && opts.Mode != RStar2 {
		return Result{Reason: "truncated response"}
	}
	var extracted string
	var found bool
	if opts.Mode == RStar2 {
		extracted, found = extractAnywhere(response)
	} else {
		extracted, found = ExtractAnswer(response)
	}
	if !found {
		return Result{Reason: "no answer found"}
	}
	ok, why := equivalent(extracted, reference, opts)
	return Result{Correct: ok, Extracted: extracted, Reason: why}
}

// Equivalent reports whether answer a is equivalent to the reference b. The comparison is not
// quite symmetric: a bare list "3, 5" is compared as a set, and a reference set accepts a bare list.
func Equivalent(a, b string, opts Options) bool {
	ok, _ := equivalent(a, b, opts)
	return ok
}
