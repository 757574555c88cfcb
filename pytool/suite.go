package pytool

import (
	"context"
	"fmt"
	"time"

	"gorstar/internal/progress"
)

// SuiteOptions says what BenchSuite runs.
type SuiteOptions struct {
	Runner      Runner
	Name        string   // what the reports call Runner ("pool", "client")
	Workloads   []string // keys of Workloads
	Concurrency int      // calls kept in flight
	Duration    time.Duration
	// Baseline, when set, runs each workload again on one fresh interpreter per call with this
	// configuration, BaselineWorkers at once (code-judge's design), right after the runner's.
	Baseline        *Options
	BaselineWorkers int
	// Progress is the bar's: it moves with the clock on a terminal and shows nothing elsewhere.
	Progress progress.Options
	// Log, when set, is told what runs next when no bar shows.
	Log func(string)
}

// SuiteReport is one workload's line: the runner's figures and, side by side, the baseline's.
type SuiteReport struct {
	BenchResult
	Runner        string       `json:"runner"`
	Baseline      *BenchResult `json:"baseline,omitempty"`
	SpeedUp       float64      `json:"speedup,omitempty"` // calls/s over the baseline's
	BaselineNotes string       `json:"baseline_runner,omitempty"`
}

// BenchSuite runs Bench on each workload in turn, each beside the baseline when one is set: the
// `gorstar exec bench` table.
func BenchSuite(ctx context.Context, o SuiteOptions) ([]SuiteReport, error) {
	runs := len(o.Workloads)
	if o.Baseline != nil {
		runs *= 2
	}
	o.Progress.TerminalOnly = true
	clock := progress.NewClock(runs, o.Duration, "bench", o.Progress)
	defer clock.Finish()
	log := func(format string, args ...any) {
		if o.Log != nil && !clock.Visible() {
			o.Log(fmt.Sprintf(format, args...))
		}
	}
	var reports []SuiteReport
	for _, wl := range o.Workloads {
		log("bench %s: %s, %d in flight, %s", wl, o.Name, o.Concurrency, o.Duration)
		clock.Start(fmt.Sprintf("bench %s: %s, %d in flight", wl, o.Name, o.Concurrency))
		r, err := Bench(ctx, o.Runner, wl, o.Concurrency, o.Duration)
		clock.Stop()
		if err != nil {
			return reports, err
		}
		rep := SuiteReport{BenchResult: r, Runner: o.Name}
		if o.Baseline != nil {
			fresh, err := NewFreshRunner(*o.Baseline, o.BaselineWorkers)
			if err != nil {
				return reports, err
			}
			log("bench %s: fresh interpreter per call, rlimits only and no sandbox, as code-judge (%d at once), %d in flight, %s",
				wl, o.BaselineWorkers, o.Concurrency, o.Duration)
			clock.Start(fmt.Sprintf("bench %s: fresh python, no sandbox, %d in flight", wl, o.Concurrency))
			b, err := Bench(ctx, fresh, wl, o.Concurrency, o.Duration)
			clock.Stop()
			if err != nil {
				return reports, err
			}
			rep.Baseline, rep.BaselineNotes = &b, "fresh interpreter per call, no sandbox"
			if b.CallsPerS > 0 {
				rep.SpeedUp = r.CallsPerS / b.CallsPerS
			}
		}
		reports = append(reports, rep)
	}
	return reports, nil
}
