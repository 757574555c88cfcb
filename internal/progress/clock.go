package progress

import (
	"sync"
	"time"
)

// Clock is the bar of work made of runs of a set duration each (a bench over several workloads):
// it advances with the clock, in tenths of a second, while a run is going. A nil *Clock, and a
// Clock whose bar does not show, do nothing.
type Clock struct {
	bar   *Bar
	each  time.Duration
	runs  int // runs finished
	begun time.Time
	done  chan struct{}
	wg    sync.WaitGroup
}

// NewClock starts a Clock over runs runs of each.
func NewClock(runs int, each time.Duration, desc string, opts Options) *Clock {
	total := int64(runs) * int64(each/(100*time.Millisecond))
	return &Clock{each: each, bar: New(total, desc, opts)}
}

// Visible reports whether the bar shows; it then says what runs, so plain lines are not needed.
func (b *Clock) Visible() bool { return b != nil && b.bar != nil }

// Start begins a run described by desc; the bar moves until Stop.
func (b *Clock) Start(desc string) {
	if !b.Visible() {
		return
	}
	b.bar.Describe(desc)
	b.begun = time.Now()
	b.done = make(chan struct{})
	b.wg.Add(1)
	go b.tick(b.done, b.begun)
}

func (b *Clock) tick(done chan struct{}, begun time.Time) {
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

// Stop ends the current run: the bar jumps to its end.
func (b *Clock) Stop() {
	if !b.Visible() || b.done == nil {
		return
	}
	close(b.done)
	b.wg.Wait()
	b.done = nil
	b.runs++
	b.bar.Set(b.tenths(b.runs, 0))
}

func (b *Clock) tenths(runs int, extra time.Duration) int64 {
	return (int64(runs)*int64(b.each) + int64(extra)) / int64(100*time.Millisecond)
}

// Finish stops the current run and the bar.
func (b *Clock) Finish() {
	if b == nil {
		return
	}
	b.Stop()
	b.bar.Finish()
}
