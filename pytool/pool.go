package pytool

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Runner runs tool calls: a local Pool or a Client of remote `gorstar exec serve` nodes.
type Runner interface {
	Run(ctx context.Context, c Call) Result
	// RunBatch runs calls concurrently and returns their results in the same order.
	RunBatch(ctx context.Context, calls []Call) []Result
}

// SessionCloser is a Runner whose sessions can be ended before their idle timeout (Pool and
// Client are): a caller done with a session frees its interpreter at once.
type SessionCloser interface {
	CloseSession(name string)
}

// Pool is a set of warm, sandboxed Python workers. Stateless calls go to any free worker;
// calls of one session always go to the worker that holds its interpreter.
type Pool struct {
	cfg      Options
	idle     bool // the workers run at idle priority (exec.priority)
	sb       *sandbox
	prefixes []string
	lim      limits
	uidBase  int

	jobs    chan *job
	slots   []*slot
	quit    chan struct{}
	wg      sync.WaitGroup
	closed  atomic.Bool
	missing []string

	mu        sync.Mutex
	sessions  map[string]*route
	lastSweep time.Time

	stats *Stats
}

type slot struct {
	idx      int
	private  chan *job
	w        *worker
	sessions int // routed sessions (under Pool.mu)
}

type route struct {
	slot int
	last time.Time
}

type job struct {
	ctx          context.Context
	call         Call
	enqueued     time.Time
	done         chan Result
	closeSession string // a control job: end this session's interpreter
}

// maxCallTimeout bounds a per-call timeout asked for by a caller.
const maxCallTimeout = 10 * time.Minute

// PoolOption adjusts how NewPool starts a pool.
type PoolOption func(*poolStart)

type poolStart struct {
	started      func(done, total int)
	besideEngine bool
}

// BesideEngine tells NewPool whether a model decodes on this machine's cores while the calls run
// (the native engine of `gorstar rollout`, `rl`, `eval`, `chat`; not a policy on endpoints):
// exec.priority = "auto" then runs the workers at idle priority (Options.Priority), and at
// normal priority otherwise.
func BesideEngine(native bool) PoolOption {
	return func(s *poolStart) { s.besideEngine = native }
}

// OnWorkerStarted has NewPool call f each time a worker is ready, with the count so far and the
// pool's size (from several goroutines, one call at a time): starting many workers, each importing
// its modules, takes a while (64 took 38 s on 2 cores here), and a command can show it.
func OnWorkerStarted(f func(done, total int)) PoolOption {
	return func(s *poolStart) { s.started = f }
}

// PoolSize is the number of workers NewPool starts for cfg: exec.workers, or 2 per core when 0.
func PoolSize(cfg Options) int {
	if cfg.Workers == 0 {
		return 2 * runtime.NumCPU()
	}
	return cfg.Workers
}

// NewPool starts cfg.Workers sandboxed zygotes (2 per core when 0). It fails with ErrNoSandbox
// when no sandbox is available and cfg.Sandbox is not "none".
func NewPool(ctx context.Context, cfg Options, opts ...PoolOption) (*Pool, error) {
	var start poolStart
	for _, o := range opts {
		o(&start)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sb, prefixes, err := chooseSandbox(cfg.Sandbox, cfg.Python)
	if err != nil {
		return nil, err
	}
	sb.tmpMB = cfg.TmpMB
	n := PoolSize(cfg)
	cpu := cfg.CPUSeconds
	p := &Pool{
		cfg: cfg, sb: sb, prefixes: prefixes, idle: cfg.Priority == "idle" || (cfg.Priority == "auto" && start.besideEngine),
		lim: limits{timeout: cfg.Timeout, memoryMB: cfg.MemoryMB, cpuS: cpu, maxProcs: cfg.MaxProcesses,
			fileMB: cfg.MaxFileMB, outputChars: cfg.OutputChars, outputBytes: cfg.MaxOutputBytes},
		// Each pool has its own uid range so that process limits and sweeps never mix two pools.
		uidBase:  (16 + rand.IntN(32000)) * 65536, // below 2^31: some tools mishandle larger uids
		jobs:     make(chan *job, cfg.QueueSize),
		quit:     make(chan struct{}),
		sessions: map[string]*route{},
		stats:    newStats(),
	}
	p.slots = make([]*slot, n)
	errs := make([]error, n)
	// At most one zygote per core starts at a time: each imports and warms its modules (sympy,
	// numpy: seconds of CPU), and 64 started at once on 2 busy cores all ran past the readiness
	// limit, which is meant for one start, not for a queue of them.
	starting := make(chan struct{}, max(1, runtime.NumCPU()))
	var wg sync.WaitGroup
	var startedMu sync.Mutex
	started := 0
	for i := range p.slots {
		p.slots[i] = &slot{idx: i, private: make(chan *job, 64)}
		wg.Add(1)
		go func(s *slot) {
			defer wg.Done()
			select {
			case starting <- struct{}{}:
			case <-ctx.Done():
				errs[s.idx] = ctx.Err()
				return
			}
			defer func() { <-starting }()
			s.w, errs[s.idx] = startWorker(ctx, p.sb, p.prefixes, p.zygoteConf(s.idx))
			if errs[s.idx] == nil && start.started != nil {
				startedMu.Lock()
				started++
				start.started(started, n)
				startedMu.Unlock()
			}
		}(p.slots[i])
	}
	wg.Wait()
	if err := startFailures(errs); err != nil {
		for _, s := range p.slots {
			if s.w != nil {
				s.w.kill()
			}
		}
		return nil, fmt.Errorf("start exec pool (%s): %w", sb.python, err)
	}
	p.missing = p.slots[0].w.missing
	for _, s := range p.slots {
		p.wg.Add(1)
		go p.serve(s)
	}
	return p, nil
}

// startFailures is nil when every worker started, else one line: the first failure and how many
// of the workers failed (64 copies of the same reason helped nobody).
func startFailures(errs []error) error {
	var first error
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	switch failed {
	case 0:
		return nil
	case 1:
		return first
	}
	return fmt.Errorf("%d of %d workers failed to start, the first: %w", failed, len(errs), first)
}

func (p *Pool) zygoteConf(idx int) zygoteConf {
	return zygoteConf{
		UIDBase:         p.uidBase + idx*64,
		DropPrivileges:  p.sb.asRoot && p.sb.kind != SandboxNone,
		OwnPIDNamespace: p.sb.kind != SandboxNone && p.sb.kind != SandboxSeatbelt,
		SessionSlots:    p.cfg.SessionsPerWorker,
		SessionIdleS:    p.cfg.SessionIdle.Seconds(),
		Modules:         p.cfg.Modules,
		PythonFork:      pythonForkForTests,
		IdlePriority:    p.idle,
		Portable:        portableForTests,
	}
}

// portableForTests makes new zygotes take the ways they take outside Linux (macOS): datagram
// sockets, children found by polling instead of pidfds, the wall clock alone for time limits, so
// that tests on Linux cover those paths with --sandbox=none.
var portableForTests bool

// pythonForkForTests makes new zygotes fork and wait for stateless calls in Python, as they do
// where the native fork-and-wait is not available (not x86-64), so that tests cover that path.
var pythonForkForTests bool

// Workers is the number of warm workers.
func (p *Pool) Workers() int { return len(p.slots) }

// Sandbox names the isolation in use: "bwrap", "namespaces", "seatbelt" (macOS) or "none".
func (p *Pool) Sandbox() string { return p.sb.kind }

// Priority is the CPU priority the workers run at: "idle" or "normal" (exec.priority, with "auto"
// resolved by BesideEngine).
func (p *Pool) Priority() string {
	if p.idle {
		return "idle"
	}
	return "normal"
}

// Python is the interpreter's real path.
func (p *Pool) Python() string { return p.sb.python }

// MissingModules lists configured modules the interpreter could not import.
func (p *Pool) MissingModules() []string { return p.missing }

// Stats returns the pool's counters (shared with the HTTP server's /metrics).
func (p *Pool) Stats() *Stats { return p.stats }

// QueueLen is the number of stateless calls waiting for a worker.
func (p *Pool) QueueLen() int { return len(p.jobs) }

// Run executes one call and returns its result; it blocks while the queue is full. Failures of
// the sandbox come back as StatusInternal, never as a hang.
func (p *Pool) Run(ctx context.Context, c Call) Result {
	if p.closed.Load() {
		return internalResult("exec pool is closed")
	}
	j := &job{ctx: ctx, call: c, enqueued: time.Now(), done: make(chan Result, 1)}
	queue := p.jobs
	if c.Session != "" {
		queue = p.slots[p.routeSession(c.Session)].private
	}
	select {
	case queue <- j:
	case <-ctx.Done():
		return internalResult("call cancelled while queued: %v", ctx.Err())
	case <-p.quit:
		return internalResult("exec pool is closed")
	}
	p.stats.queued.Add(1)
	select {
	case r := <-j.done:
		return r
	case <-ctx.Done():
		// The worker sees the cancelled context and kills the call; don't wait for it.
		return internalResult("call cancelled: %v", ctx.Err())
	}
}

// RunBatch runs calls concurrently and returns their results in order.
func (p *Pool) RunBatch(ctx context.Context, calls []Call) []Result {
	return runConcurrently(ctx, p, calls)
}

func runConcurrently(ctx context.Context, r Runner, calls []Call) []Result {
	out := make([]Result, len(calls))
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out[i] = r.Run(ctx, calls[i])
		}(i)
	}
	wg.Wait()
	return out
}

// CloseSession ends a session's interpreter now instead of at its idle timeout.
func (p *Pool) CloseSession(name string) {
	p.mu.Lock()
	r, ok := p.sessions[name]
	if ok {
		delete(p.sessions, name)
		p.slots[r.slot].sessions--
	}
	p.mu.Unlock()
	if ok && !p.closed.Load() {
		select {
		case p.slots[r.slot].private <- &job{closeSession: name, done: make(chan Result, 1)}:
		default: // the worker is swamped; the zygote's idle timeout ends the session instead
		}
	}
}

// routeSession returns the worker that holds (or will hold) session name.
func (p *Pool) routeSession(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	idle := p.cfg.SessionIdle
	if now.Sub(p.lastSweep) > idle/4 {
		p.lastSweep = now
		for n, r := range p.sessions {
			if now.Sub(r.last) > idle {
				delete(p.sessions, n)
				p.slots[r.slot].sessions--
			}
		}
	}
	if r, ok := p.sessions[name]; ok {
		r.last = now
		return r.slot
	}
	best := 0
	for i, s := range p.slots {
		if s.sessions < p.slots[best].sessions {
			best = i
		}
	}
	p.slots[best].sessions++
	p.sessions[name] = &route{slot: best, last: now}
	return best
}

func (p *Pool) limitsFor(c Call) limits {
	lim := p.lim
	if c.TimeoutS > 0 {
		lim.timeout = min(time.Duration(c.TimeoutS*float64(time.Second)), maxCallTimeout)
		if lim.cpuS > 0 {
			lim.cpuS = max(lim.cpuS, int(c.TimeoutS+0.999))
		}
	}
	if c.MemoryMB > 0 {
		lim.memoryMB = c.MemoryMB
	}
	return lim
}

// serve is one worker's loop: its own session calls first, then the shared queue.
func (p *Pool) serve(s *slot) {
	defer p.wg.Done()
	for {
		var j *job
		select {
		case j = <-s.private:
		default:
			select {
			case j = <-s.private:
			case j = <-p.jobs:
			case <-p.quit:
				return
			}
		}
		p.handle(s, j)
	}
}

func (p *Pool) handle(s *slot, j *job) {
	if j.closeSession != "" {
		if s.w != nil {
			s.w.closeSession(j.closeSession)
		}
		return
	}
	p.stats.queued.Add(-1)
	if err := j.ctx.Err(); err != nil {
		j.done <- internalResult("call cancelled while queued: %v", err)
		return
	}
	p.stats.busy.Add(1)
	defer p.stats.busy.Add(-1)
	queued := time.Since(j.enqueued)
	lim := p.limitsFor(j.call)
	var res Result
	for attempt := 0; attempt < 2; attempt++ {
		if s.w == nil {
			w, err := startWorker(j.ctx, p.sb, p.prefixes, p.zygoteConf(s.idx))
			if err != nil {
				res = internalResult("restart sandbox worker: %v", err)
				time.Sleep(100 * time.Millisecond) // don't spin on a broken interpreter
				continue
			}
			s.w = w
		}
		var broken bool
		res, broken = s.w.run(j.ctx, j.call, lim)
		if !broken {
			break
		}
		// A dead zygote is replaced; a stateless call it was serving is run once more.
		s.w = nil
		p.stats.restarts.Add(1)
		if res.Status != StatusInternal || j.call.Session != "" {
			break
		}
	}
	res.QueueMS = ms(queued)
	p.stats.observe(res)
	j.done <- res
}

// Close stops the workers after their current calls and ends every sandbox. Calls still queued
// return StatusInternal.
func (p *Pool) Close() {
	if p.closed.Swap(true) {
		return
	}
	close(p.quit)
	p.wg.Wait()
	for _, s := range p.slots {
		if s.w != nil {
			s.w.close()
		}
	drain:
		for {
			select {
			case j := <-s.private:
				if j.done != nil && j.closeSession == "" {
					j.done <- internalResult("exec pool is closed")
				}
			default:
				break drain
			}
		}
	}
	for {
		select {
		case j := <-p.jobs:
			j.done <- internalResult("exec pool is closed")
		default:
			return
		}
	}
}
