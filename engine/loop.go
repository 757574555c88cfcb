package engine

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync"

	"gorstar/model"
)

// loop is the engine's goroutine: it runs commands between steps and steps while there is work.
func (e *Engine) loop() {
	// Every step's kernels run from this one OS thread, so one OpenMP thread team serves them
	// (libgomp keeps a team per calling thread: hopping threads would start more teams, whose idle
	// threads spin on the cores the working team needs).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(e.done)
	defer e.shutdown()
	for {
		// Block for a command only when nothing can run.
		if !e.runnable() {
			select {
			case f := <-e.cmds:
				f()
			case <-e.quit:
				return
			}
		}
		for drained := false; !drained; {
			select {
			case f := <-e.cmds:
				f()
			case <-e.quit:
				return
			default:
				drained = true
			}
		}
		e.admit()
		if e.runnable() {
			if err := e.safeStep(); err != nil {
				e.failAll(err)
			}
		}
	}
}

func (e *Engine) runnable() bool {
	for _, s := range e.active {
		if s.state == stateRunning {
			return true
		}
	}
	return len(e.waiting) > 0 && e.running() < e.opts.MaxSeqs && e.reserved+e.cacheSize(e.waiting[0].req.Capacity) <= e.opts.KVTokens
}

// running counts the admitted sequences that are not paused: those that hold a slot.
func (e *Engine) running() int {
	n := 0
	for _, s := range e.active {
		if s.state == stateRunning {
			n++
		}
	}
	return n
}

// admit moves waiting sequences in arrival order into the active set while their capacity fits;
// the first that does not fit blocks the ones behind it (first come, first served: a long request
// is not starved by short ones).
func (e *Engine) admit() {
	running := e.running()
	for len(e.waiting) > 0 && running < e.opts.MaxSeqs {
		s := e.waiting[0]
		size := e.cacheSize(s.req.Capacity)
		if e.reserved+size > e.opts.KVTokens {
			return
		}
		cache, err := e.takeCache(size)
		if err != nil {
			e.finish(s, Event{Kind: EventDone, Finish: FinishError, Err: err})
			continue
		}
		e.waiting = e.waiting[1:]
		s.cache = cache
		s.state = stateRunning
		e.active = append(e.active, s)
		e.reserved += cache.Cap()
		running++
	}
}

// safeStep runs a step and turns a panic in it (a kernel's size check: a bug) into an error, so a
// server reports it instead of dying.
func (e *Engine) safeStep() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("engine step failed: %v", p)
		}
	}()
	e.step()
	return nil
}

// failAll ends every sequence with err; later submissions fail with it too.
func (e *Engine) failAll(err error) {
	e.failErr = err
	for len(e.waiting) > 0 {
		e.finish(e.waiting[0], Event{Kind: EventDone, Finish: FinishError, Err: err})
	}
	for len(e.active) > 0 {
		e.finish(e.active[0], Event{Kind: EventDone, Finish: FinishError, Err: err})
	}
}

// step runs one forward pass over every running sequence: one token for those decoding, then
// prefill chunks (prompts, appended tokens) in the room left, and samples the sequences whose
// pending tokens are all fed.
func (e *Engine) step() {
	var in []model.DecodeInput
	var seqs []*Sequence
	budget := e.opts.StepTokens
	var decoding []*Sequence
	for _, s := range e.active {
		s.inStep = false
		if s.state == stateRunning && len(s.pending) == 1 {
			decoding = append(decoding, s)
		}
	}
	if len(decoding) > e.opts.MaxSeqs { // resumed sequences passed the cap: MaxSeqs of them, in turn
		e.turn %= len(decoding)
		decoding = append(decoding[e.turn:], decoding[:e.turn]...)[:e.opts.MaxSeqs]
		e.turn += e.opts.MaxSeqs
	}
	for _, s := range decoding {
		in = append(in, model.DecodeInput{Cache: s.cache, Tokens: s.pending})
		seqs = append(seqs, s)
		s.inStep = true
		budget--
	}
	for _, s := range e.active {
		if budget <= 0 || len(in) == e.opts.MaxSeqs {
			break
		}
		if s.state != stateRunning || len(s.pending) <= 1 || !e.sharePrefix(s) {
			continue // nothing to prefill, or another sequence is computing this prompt's prefix now
		}
		n := min(len(s.pending), budget)
		in = append(in, model.DecodeInput{Cache: s.cache, Tokens: s.pending[:n]})
		seqs = append(seqs, s)
		s.inStep = true
		budget -= n
	}
	if len(in) == 0 {
		return
	}
	if err := e.dec.Step(in); err != nil {
		// A step fails only on a bookkeeping bug; fail its sequences rather than the process.
		for _, s := range seqs {
			e.finish(s, Event{Kind: EventDone, Finish: FinishError, Err: fmt.Errorf("decode step: %w", err)})
		}
		return
	}
	e.stats.Steps++
	V := e.m.Config.VocabSize
	var logits []float32
	if logitsInPlace {
		logits = e.dec.LogitsView() // on the CPU: 8 MB a step not copied at 64 × 32,000
	}
	if logits == nil {
		n := len(in) * V
		if cap(e.logits) < n {
			e.logits = make([]float32, n)
		}
		logits = e.logits[:n]
		e.dec.Logits(logits)
	}
	targets := make([]int32, len(in))
	tops := make([][]TokenLogProb, len(in))
	for i, s := range seqs {
		n := len(in[i].Tokens)
		s.pending = s.pending[n:]
		if n > 1 || s.generated == 0 {
			e.stats.PromptTokens += int64(n)
		}
		targets[i] = -1
	}
	e.sampleRows(seqs, logits, V, targets, tops)
	logprobs := make([]float32, len(in))
	e.dec.LogProbs(targets, logprobs)
	for i, s := range seqs {
		if targets[i] >= 0 {
			e.accept(s, targets[i], logprobs[i], tops[i])
		}
	}
}

// sampleRows draws the next token of every sequence of the step that has fed all its pending
// tokens, from its row of logits (read only), into targets (and its top log-probabilities into tops). Each
// row depends only on its logits, its sampling and its own random stream, so the rows are split
// among a few goroutines when there are many: the kernels' threads are idle meanwhile, and at a
// large vocabulary one thread's exponentials were several percent of a decode step.
func (e *Engine) sampleRows(seqs []*Sequence, logits []float32, V int, targets []int32, tops [][]TokenLogProb) {
	rows := func(w *sampler, lo, hi int) {
		for i := lo; i < hi; i++ {
			s := seqs[i]
			if len(s.pending) != 0 {
				continue
			}
			row := logits[i*V : (i+1)*V]
			if s.req.TopLogProbs > 0 {
				tops[i] = topLogProbs(row, s.req.TopLogProbs)
			}
			targets[i] = w.sample(row, s.req.Sampling, s.rng)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), max(1, len(seqs)*V/max(e.sampleWork, 1)))
	for len(e.samps) < workers {
		e.samps = append(e.samps, sampler{})
	}
	if workers == 1 {
		rows(&e.samps[0], 0, len(seqs))
		return
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := len(seqs)*w/workers, len(seqs)*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			rows(&e.samps[w], lo, hi)
		}()
	}
	wg.Wait()
}

// logitsInPlace lets the engine sample from the decoder's own logits where they are host memory (a
// variable: a test takes the copying path the ROCm backend takes and compares).
var logitsInPlace = true

// sampleRowsWork is the logits per sampling goroutine, about 80 µs of exponentials (a variable:
// tests lower it to sample every step in parallel).
var sampleRowsWork = 1 << 13

// sharePrefix runs before s's prompt gets a prefill chunk. When another admitted sequence shares
// a longer prefix of the prompt than s has computed (the n samples of one prompt, GRPO's group,
// share all of it; the problems of one template share its system turn), s takes that prefix's
// keys and values by a device copy (KVCache.CopyPrefix) instead of computing them, and reports
// true: s goes on with the rest of its prompt. When the sharer is itself computing the prefix in
// this step, s waits for it (false). The last prompt token is always fed, for the logits of the
// first sample. Keys and values of a position depend only on the tokens up to it, so the copy is
// what s would compute.
func (e *Engine) sharePrefix(s *Sequence) bool {
	prompt := s.req.Prompt
	done := s.cache.Len()
	if e.opts.SharedPrefixMin < 0 || s.generated > 0 || done >= len(prompt)-1 {
		return true // not in its prompt, or no prompt left to share
	}
	d, n := e.prefixDonor(s)
	switch {
	case d == nil || n <= done || n-done < e.opts.SharedPrefixMin:
		return true
	case d.cache.Len() >= n:
		s.cache.CopyPrefix(d.cache, n)
		s.pending = s.pending[n-done:]
		e.stats.SharedPromptTokens += int64(n - done)
		return true
	default:
		return !d.inStep // wait only for a sequence that is computing the prefix now
	}
}

// prefixDonor returns the admitted sequence whose prompt shares the longest prefix with s's (the
// one furthest along among equals) and that prefix's length, at most all of s's prompt but its
// last token. Only sequences that have computed something or are fed in this step count: one
// waiting for a donor itself is no donor, so no two sequences wait on each other.
func (e *Engine) prefixDonor(s *Sequence) (*Sequence, int) {
	var best *Sequence
	bestN := 0
	limit := len(s.req.Prompt) - 1
	for _, d := range e.active {
		if d == s || (d.cache.Len() == 0 && !d.inStep) {
			continue
		}
		n := commonPrefix(d.req.Prompt[:min(len(d.req.Prompt), limit)], s.req.Prompt)
		if n > bestN || (n == bestN && best != nil && d.cache.Len() > best.cache.Len()) {
			best, bestN = d, n
		}
	}
	return best, bestN
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// accept records a sampled token and decides whether the sequence goes on, pauses or ends.
func (e *Engine) accept(s *Sequence, tok int32, logprob float32, top []TokenLogProb) {
	e.stats.GeneratedTokens++
	s.generated++
	s.turnTokens++
	s.emit(Event{Kind: EventToken, Token: tok, LogProb: logprob, Top: top})
	s.pending = append(s.pending[:0], tok)
	var match string
	var pause bool
	if s.text != nil {
		match, pause = s.text.add(tok)
	}
	switch {
	case containsToken(s.req.StopTokens, tok):
		e.finish(s, Event{Kind: EventDone, Finish: FinishStop})
	case match != "" && !pause:
		e.finish(s, Event{Kind: EventDone, Finish: FinishStop, Stop: match})
	case s.req.MaxTokens > 0 && s.generated >= s.req.MaxTokens,
		s.cache.Len()+len(s.pending) >= s.req.Capacity:
		e.finish(s, Event{Kind: EventDone, Finish: FinishLength})
	case containsToken(s.req.PauseTokens, tok) || match != "",
		s.req.PauseAfter > 0 && s.turnTokens >= s.req.PauseAfter:
		s.state = statePaused
		s.emit(Event{Kind: EventPaused, Stop: match})
	}
}

func (e *Engine) snapshot() Stats {
	st := e.stats
	st.Waiting = len(e.waiting)
	for _, s := range e.active {
		if s.state == statePaused {
			st.Paused++
		} else {
			st.Running++
		}
		st.KVUsed += s.cache.Len()
	}
	st.KVReserved, st.KVTokens = e.reserved, e.opts.KVTokens
	return st
}

// publishStats keeps a copy of the totals for Stats after Close.
func (e *Engine) publishStats() {
	st := e.snapshot()
	e.statsMu.Lock()
	e.shared = st
	e.statsMu.Unlock()
}

// shutdown ends every sequence and frees the engine's buffers.
func (e *Engine) shutdown() {
	for len(e.waiting) > 0 {
		e.finish(e.waiting[0], Event{Kind: EventDone, Finish: FinishCancelled, Err: ErrClosed})
	}
	for len(e.active) > 0 {
		e.finish(e.active[0], Event{Kind: EventDone, Finish: FinishCancelled, Err: ErrClosed})
	}
	e.freePool()
	e.dec.Close()
	e.publishStats()
}

// cacheSize is the size of the cache a sequence of capacity tokens gets: capacity rounded up to a
// size class (steps of 1/32 of the next power of two, so at most ~3% more), never past the budget.
// Requests whose prompts differ by a few tokens — a group's samples, a dataset's problems — then
// take each other's pooled caches instead of each allocating a fresh one and faulting in and
// clearing its pages while the step's threads wait (~6% of a rollout's CPU before). The
// sequence's own limit stays its capacity (Request.Capacity); the rest of the cache is unused.
func (e *Engine) cacheSize(capacity int) int {
	step := max(1, 1<<bits.Len(uint(max(capacity-1, 1)))/32)
	return min(e.opts.KVTokens, (capacity+step-1)/step*step)
}

// takeCache returns an empty cache of the given capacity: a pooled one, or a new one after
// freeing pooled caches of other sizes while the pool and the admitted sequences would pass the
// engine's KV budget.
func (e *Engine) takeCache(capacity int) (*model.KVCache, error) {
	if size := e.pooledSize(capacity); size > 0 {
		list := e.pool[size]
		c := list[len(list)-1]
		e.pool[size] = list[:len(list)-1]
		e.pooled -= size
		c.Truncate(0)
		return c, nil
	}
	for size, list := range e.pool {
		for len(list) > 0 && e.reserved+e.pooled+capacity > e.opts.KVTokens {
			list[len(list)-1].Free()
			list = list[:len(list)-1]
			e.pooled -= size
		}
		e.pool[size] = list
	}
	return e.m.NewKVCache(capacity)
}

// reserve pools up to n new caches of size tokens while the held and pooled caches stay within
// the KV budget (Reserve).
func (e *Engine) reserve(n, size int) (int, error) {
	pooled := 0
	for ; pooled < n && e.reserved+e.pooled+size <= e.opts.KVTokens; pooled++ {
		c, err := e.m.NewKVCache(size)
		if err != nil {
			return pooled, err
		}
		e.releaseCache(c)
	}
	return pooled, nil
}

// pooledSize is the size of the pooled cache takeCache reuses for capacity tokens (0: none): one of
// exactly that size, else the smallest up to a quarter larger that the KV budget still holds beside
// the admitted sequences' caches. Prompts of one batch differ by a few tokens, so their sizes may
// fall on both sides of a size class's edge; without the slack, every one on the far side would
// allocate (and first touch) a cache while the pool holds unused ones a class above.
func (e *Engine) pooledSize(capacity int) int {
	if len(e.pool[capacity]) > 0 {
		return capacity
	}
	best := 0
	for size, list := range e.pool {
		if len(list) > 0 && size > capacity && size <= capacity+capacity/4 && (best == 0 || size < best) &&
			e.reserved+size <= e.opts.KVTokens {
			best = size
		}
	}
	return best
}

// releaseCache pools a finished sequence's cache for takeCache.
func (e *Engine) releaseCache(c *model.KVCache) {
	e.pool[c.Cap()] = append(e.pool[c.Cap()], c)
	e.pooled += c.Cap()
}

func (e *Engine) freePool() {
	for size, list := range e.pool {
		for _, c := range list {
			c.Free()
		}
		delete(e.pool, size)
	}
	e.pooled = 0
}
