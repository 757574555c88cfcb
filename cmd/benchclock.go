package cmd

import (
	"sync"
	"time"

	"gorstar/internal/progress"
)

// benchClock is the progress bar of a bench made of runs of a set duration each (exec bench over
// several workloads): it advances with the clock, in tenths of a second, while a run is going.
// It shows on a terminal only; the lines the bench prints say the rest.
type benchClock struct {
	bar   *progress.Bar
	each  time.Duration
	runs  int // runs finished
	begun time.Time
	done  chan struct{}
	wg    sync.WaitGroup
}

func newBenchClock(o Options, runs int, each time.Duration) *benchClock {
	total := int64(runs) * int64(each/(100*time.Millisecond))
	return &benchClock{each: each, bar: progress.New(total, "bench", progress.Options{Quiet: o.Quiet, TerminalOnly: true})}
}

// visible reports whether the bar shows (on a terminal, not quiet); it then says what runs, so
// the bench's plain lines are not needed.
func (b *benchClock) visible() bool { return b.bar != nil }

// start begins a run described by desc; the bar moves until stop.
func (b *benchClock) start(desc string) {
	if b.bar == nil {
		return
	}
	b.bar.Describe(desc)
	b.begun = time.Now()
	b.done = make(chan struct{})
	b.wg.Add(1)
	go b.tick(b.done, b.begun)
}

func (b *benchClock) tick(done chan struct{}, begun time.Time) {
	defer b.wg.Done()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			b.bar.Set(b.tenths(b.runs, min(now.Sub(begun), b.each)))
		}
	}
}

// stop ends the current run: the bar jumps to its end.
func (b *benchClock) stop() {
	if b.bar == nil || b.done == nil {
		return
	}
	close(b.done)
	b.wg.Wait()
	b.done = nil
	b.runs++
	b.bar.Set(b.tenths(b.runs, 0))
}

func (b *benchClock) tenths(runs int, extra time.Duration) int64 {
	return (int64(runs)*int64(b.each) + int64(extra)) / int64(100*time.Millisecond)
}

func (b *benchClock) finish() {
	b.stop()
	b.bar.Finish()
}
