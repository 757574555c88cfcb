// Package progress reports the progress of long work on stderr: a live bar when stderr is a
// terminal, and a plain line every so often otherwise (CI logs), nothing when quiet. A Bar is safe
// for concurrent use; its zero value and a nil *Bar are silent.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Options says where and how progress goes.
type Options struct {
	Out      io.Writer     // default os.Stderr
	Quiet    bool          // print nothing
	Interval time.Duration // plain mode: at most one line per interval (default 10s)
	// TerminalOnly shows the bar on a terminal and nothing elsewhere: for work whose length the
	// command has already said (a bench of a set duration), where log lines would add nothing.
	TerminalOnly bool
}

// Bar tracks one piece of work of a known (or, with total < 0, unknown) size.
type Bar struct {
	mu       sync.Mutex
	bar      *progressbar.ProgressBar
	out      io.Writer
	desc     string
	total    int64
	done     int64
	start    time.Time
	last     time.Time
	interval time.Duration
	finished bool
}

// New starts a bar for total units of work described by desc.
func New(total int64, desc string, opts Options) *Bar {
	if opts.Quiet {
		return nil
	}
	out := opts.Out
	if out == nil {
		out = os.Stderr
	}
	b := &Bar{out: out, desc: desc, total: total, start: time.Now(), interval: opts.Interval}
	if b.interval <= 0 {
		b.interval = 10 * time.Second
	}
	b.last = b.start
	f, ok := out.(*os.File)
	isTerminal := ok && term.IsTerminal(int(f.Fd()))
	if opts.TerminalOnly && !isTerminal {
		return nil
	}
	if isTerminal {
		b.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(out),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("it"),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetPredictTime(true),
		)
	}
	return b
}

// Add records n more units done.
func (b *Bar) Add(n int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done += int64(n)
	b.update()
}

// Set records the absolute amount done.
func (b *Bar) Set(done int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done = done
	b.update()
}

// SetTotal changes the size of the work (a run that decides to go on).
func (b *Bar) SetTotal(total int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.total == total {
		return
	}
	b.total = total
	if b.bar != nil {
		b.bar.ChangeMax64(total)
	}
}

// Describe changes the description (e.g. to show a running loss).
func (b *Bar) Describe(desc string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.desc = desc
	if b.bar != nil {
		b.bar.Describe(desc)
	}
}

// Finish ends the bar; in plain mode it prints a last line with the totals.
func (b *Bar) Finish() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	b.finished = true
	if b.bar != nil {
		b.bar.Finish()
		return
	}
	b.printLine(time.Now())
}

func (b *Bar) update() {
	if b.finished {
		return
	}
	if b.bar != nil {
		b.bar.Set64(b.done)
		return
	}
	if now := time.Now(); now.Sub(b.last) >= b.interval {
		b.last = now
		b.printLine(now)
	}
}

func (b *Bar) printLine(now time.Time) {
	elapsed := now.Sub(b.start).Seconds()
	rate := 0.0
	if elapsed > 0 {
		rate = float64(b.done) / elapsed
	}
	if b.total > 0 {
		fmt.Fprintf(b.out, "%s: %d/%d (%.0f%%) %.1f/s %s\n", b.desc, b.done, b.total,
			100*float64(b.done)/float64(b.total), rate, now.Sub(b.start).Round(time.Second))
	} else {
		fmt.Fprintf(b.out, "%s: %d %.1f/s %s\n", b.desc, b.done, rate, now.Sub(b.start).Round(time.Second))
	}
}
