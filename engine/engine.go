package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"gorstar/model"
	"gorstar/tokenizer"
)

// Options size the engine. Zero values pick the defaults shown.
type Options struct {
	// KVTokens is the KV cache budget in tokens over all admitted sequences (default 65536, fewer
	// for models whose cache would pass 4 GiB). A
	// sequence is admitted only when its whole capacity fits beside the others'; nothing is evicted.
	KVTokens int
	// MaxSeqs bounds the sequences running at once (default 64), the largest decode batch. A paused
	// sequence (waiting on a tool call) keeps its cache and its KV reservation but not its slot:
	// others are admitted and decode while it waits, so admitted sequences may pass MaxSeqs (KVTokens
	// bounds them). When more are running than MaxSeqs (paused ones resumed), each step takes
	// MaxSeqs of them, in turn.
	MaxSeqs int
	// StepTokens bounds the tokens of one forward step (default 512): decodes first, then prefill
	// chunks in the remaining room, so a long prompt never stalls the running sequences for long.
	StepTokens int
	// MaxContext bounds a sequence's capacity (default the model's max_position_embeddings).
	MaxContext int
	// MaxWaiting bounds the sequences queued for admission; beyond it Submit fails with ErrBusy
	// (0: unbounded, everyone waits their turn).
	MaxWaiting int
	// Seed draws the seeds of requests that bring none.
	Seed uint64
	// Tokenizer decodes generated tokens for stop and pause strings (optional otherwise).
	Tokenizer *tokenizer.Tokenizer
	// SharedPrefixMin is the shortest prompt prefix a sequence copies from another admitted
	// sequence's cache instead of prefilling it (default 32 tokens; < 0: never). Shorter common
	// prefixes (a template's first few tokens) are not worth making a prompt wait a step for.
	SharedPrefixMin int
	// Precision is the arithmetic LoadPolicy loads the model for: "bf16" loads it for inference
	// only, its weights straight from the file into bfloat16 (model.LoadOptions.Inference). New
	// takes the model as it is.
	Precision model.Precision
}

func (o Options) withDefaults(c model.Config, p model.Precision) Options {
	if o.KVTokens <= 0 {
		o.KVTokens = DefaultKVTokens(c, p)
	}
	if o.MaxSeqs <= 0 {
		o.MaxSeqs = 64
	}
	if o.StepTokens <= 0 {
		o.StepTokens = 512
	}
	o.StepTokens = max(o.StepTokens, o.MaxSeqs)
	if o.SharedPrefixMin == 0 {
		o.SharedPrefixMin = 32
	}
	if o.MaxContext <= 0 {
		o.MaxContext = c.MaxPositionEmbeddings
		if o.MaxContext <= 0 {
			o.MaxContext = o.KVTokens
		}
	}
	return o
}

// Errors Submit returns for requests the engine cannot take. They wrap ErrRequest.
var (
	ErrRequest = errors.New("invalid request")
	ErrBusy    = errors.New("too many queued requests")
	ErrClosed  = errors.New("engine closed")
)

// Engine generates tokens for many sequences at once with continuous batching. One goroutine owns
// the model and runs the steps; Submit, Append, Resume and Cancel talk to it through a channel.
// The model must not be used by anyone else (training, another engine) while the engine is open,
// except through WithModel, which runs training or a weight update between steps.
type Engine struct {
	m    *model.Model
	opts Options
	dec  *model.Decoder

	cmds chan func()
	quit chan struct{}
	done chan struct{}
	once sync.Once

	// Loop-owned.
	waiting  []*Sequence
	active   []*Sequence // admitted: running or paused, in admission order
	reserved int         // KV tokens held by admitted sequences
	// Caches of finished sequences, by capacity, kept for the next ones: their memory is already
	// mapped and touched, so admitting a sequence costs no page faults (a fault inside a step's
	// kernels stalls every thread of the team). pooled + reserved stays within KVTokens.
	pool   map[int][]*model.KVCache
	pooled int
	turn   int // where the next capped step starts among the decoding sequences
	nextID uint64
	seeds  *rand.Rand
	samps  []sampler // one per sampling worker (sampleRows)
	// sampleWork is the logits per sampling goroutine (sampleRowsWork when the engine was made).
	sampleWork int
	logits     []float32 // where the decoder's logits are copied when they are not host memory (made then)
	stats      Stats
	statsMu    sync.Mutex
	shared     Stats // copy of stats readable outside the loop
	failErr    error // set when a step failed: the engine refuses new work
}

// Stats are running totals since New.
type Stats struct {
	Steps           int64 `json:"steps"`
	PromptTokens    int64 `json:"prompt_tokens"` // prefilled (prompts and appended tokens)
	GeneratedTokens int64 `json:"generated_tokens"`
	// SharedPromptTokens were copied from a sequence whose prompt shares them (the same prompt, or a
	// common prefix such as a template's system turn) instead of prefilled.
	SharedPromptTokens int64 `json:"shared_prompt_tokens"`
	Waiting            int   `json:"waiting"`
	Running            int   `json:"running"`
	Paused             int   `json:"paused"`
	KVReserved         int   `json:"kv_reserved"`
	KVTokens           int   `json:"kv_tokens"`
	// KVUsed is the tokens whose keys and values are in the caches now (at most KVReserved:
	// admission reserves a sequence's whole capacity up front).
	KVUsed int `json:"kv_used"`
}

// New starts an engine on m. Close stops it.
func New(m *model.Model, opts Options) (*Engine, error) {
	opts = opts.withDefaults(m.Config, m.Precision())
	dec, err := m.NewDecoder(opts.StepTokens, opts.MaxSeqs)
	if err != nil {
		return nil, fmt.Errorf("new engine: %w", err)
	}
	e := &Engine{
		m: m, opts: opts, dec: dec, pool: map[int][]*model.KVCache{},
		cmds: make(chan func(), 64), quit: make(chan struct{}), done: make(chan struct{}),
		seeds:      rand.New(rand.NewPCG(opts.Seed, 0x51ed)),
		sampleWork: sampleRowsWork,
	}
	go e.loop()
	return e, nil
}

// Options returns the engine's options with defaults filled in.
func (e *Engine) Options() Options { return e.opts }

// Stats returns the totals now (between two steps: it waits for a running step to end). After
// Close it returns the last totals.
func (e *Engine) Stats() Stats {
	var st Stats
	if e.do(func() { st = e.snapshot() }) != nil {
		e.statsMu.Lock()
		defer e.statsMu.Unlock()
		return e.shared
	}
	return st
}

// Close ends every sequence (FinishCancelled), stops the loop and frees the caches and the decoder.
// The model stays open.
func (e *Engine) Close() {
	e.once.Do(func() { close(e.quit) })
	<-e.done
}

// do runs f on the loop goroutine and waits for it.
func (e *Engine) do(f func()) error {
	ran := make(chan struct{})
	select {
	case e.cmds <- func() { f(); close(ran) }:
	case <-e.done:
		return ErrClosed
	}
	select {
	case <-ran:
		return nil
	case <-e.done:
		return ErrClosed
	}
}

// Reserve allocates, ahead of any request, n empty KV caches for requests of the given capacity
// (prompt plus response tokens) into the engine's pool of finished caches, as many of them as fit
// in KVTokens beside the caches sequences hold now, and returns how many it pooled. Admission takes
// a pooled cache of the request's size class instead of allocating one: a fresh cache's first
// touch (several MB for a long context) happens on the engine's thread, between steps, while
// the kernels' thread team waits, so a caller that knows its batch — a benchmark timing schedules
// against each other, a server before its first request — pays for it here instead.
func (e *Engine) Reserve(n, capacity int) (int, error) {
	if capacity < 1 || capacity > e.opts.MaxContext {
		return 0, fmt.Errorf("%w: reserve caches of capacity %d, want 1 to MaxContext %d", ErrRequest, capacity, e.opts.MaxContext)
	}
	pooled := 0
	var err error
	if derr := e.do(func() { pooled, err = e.reserve(n, e.cacheSize(capacity)) }); derr != nil {
		return 0, derr
	}
	return pooled, err
}

// Submit queues a request. It returns at once; the sequence is admitted when its capacity fits
// the KV budget. When ctx ends, the sequence is cancelled and its cache freed. Requests that can
// never run (empty prompt, capacity over the budget or the context, bad ids or sampling values)
// fail with an error wrapping ErrRequest.
func (e *Engine) Submit(ctx context.Context, req Request) (*Sequence, error) {
	seqs, err := e.SubmitAll(ctx, []Request{req})
	if err != nil {
		return nil, err
	}
	return seqs[0], nil
}

// SubmitAll queues several requests at once, all or none: they reach the loop between the same two
// steps, so their prompts are prefilled together (a loop of Submit would hand the loop one request
// per step, and a batch's prefill would trickle in one prompt per step). The error is that of the
// first request that cannot run.
func (e *Engine) SubmitAll(ctx context.Context, reqs []Request) ([]*Sequence, error) {
	reqs = slices.Clone(reqs) // check fills in defaults
	seqs := make([]*Sequence, len(reqs))
	for i := range reqs {
		if err := e.check(&reqs[i]); err != nil {
			return nil, err
		}
		seqs[i] = &Sequence{eng: e, req: reqs[i], signal: make(chan struct{}, 1)}
	}
	var err error
	if cerr := e.do(func() {
		if e.failErr != nil {
			err = e.failErr
			return
		}
		if e.opts.MaxWaiting > 0 && len(e.waiting)+len(seqs) > e.opts.MaxWaiting {
			err = fmt.Errorf("%w: %d waiting", ErrBusy, len(e.waiting))
			return
		}
		for _, s := range seqs {
			e.enqueue(ctx, s)
		}
	}); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	return seqs, nil
}

// enqueue gives s its id and random stream and puts it in the waiting line (on the loop).
func (e *Engine) enqueue(ctx context.Context, s *Sequence) {
	req := s.req
	e.nextID++
	s.ID = e.nextID
	seed := e.seeds.Uint64()
	if req.Sampling.Seed != nil {
		seed = *req.Sampling.Seed
	}
	s.rng = newStream(seed)
	for range req.Sampling.SkipDraws {
		s.rng.Float64() // what sample draws per token
	}
	if len(req.StopStrings)+len(req.PauseStrings) > 0 {
		s.text = newTextMatcher(e.opts.Tokenizer, req.StopStrings, req.PauseStrings)
	}
	s.pending = append([]int32(nil), req.Prompt...)
	s.state = stateWaiting
	e.waiting = append(e.waiting, s)
	s.stopCtx = context.AfterFunc(ctx, s.Cancel) // runs s.Cancel later, never inline
}

func (e *Engine) appendTokens(s *Sequence, tokens []int32) error {
	for i, id := range tokens {
		if id < 0 || int(id) >= e.m.Config.VocabSize {
			return fmt.Errorf("%w: appended token %d is id %d, outside the vocabulary", ErrRequest, i, id)
		}
	}
	var err error
	if cerr := e.do(func() {
		switch {
		case s.state != statePaused:
			err = fmt.Errorf("append to sequence %d: it is not paused", s.ID)
		case s.cache.Len()+len(s.pending)+len(tokens) >= s.req.Capacity:
			err = fmt.Errorf("%w: append %d tokens to sequence %d: %d of its %d tokens of capacity are used, "+
				"and one must stay free to generate", ErrRequest, len(tokens), s.ID, s.cache.Len()+len(s.pending), s.req.Capacity)
		default:
			s.pending = append(s.pending, tokens...)
		}
	}); cerr != nil {
		return cerr
	}
	return err
}

func (e *Engine) resume(s *Sequence) error {
	var err error
	if cerr := e.do(func() {
		if s.state != statePaused {
			err = fmt.Errorf("resume sequence %d: it is not paused", s.ID)
			return
		}
		if s.text != nil {
			s.text.resetWindow()
		}
		s.turnTokens = 0
		s.state = stateRunning
	}); cerr != nil {
		return cerr
	}
	return err
}

func (e *Engine) cancel(s *Sequence) {
	_ = e.do(func() { e.finish(s, Event{Kind: EventDone, Finish: FinishCancelled}) })
}

// finish ends a sequence: frees its cache, drops it from the queues and emits ev.
func (e *Engine) finish(s *Sequence, ev Event) {
	if s.state == stateDone {
		return
	}
	if s.state == stateWaiting {
		e.waiting = removeSeq(e.waiting, s)
	} else {
		e.active = removeSeq(e.active, s)
		e.reserved -= s.cache.Cap()
		e.releaseCache(s.cache)
		s.cache = nil
	}
	s.state = stateDone
	s.pending = nil
	if s.stopCtx != nil {
		s.stopCtx()
	}
	s.emit(ev)
}

func removeSeq(list []*Sequence, s *Sequence) []*Sequence {
	for i, x := range list {
		if x == s {
			return append(list[:i], list[i+1:]...)
		}
	}
	return list
}

// Append is s.Append: it queues tokens after the paused sequence's last one.
func (e *Engine) Append(s *Sequence, tokens []int32) error { return e.appendTokens(s, tokens) }

// Resume is s.Resume: the paused sequence is scheduled again.
func (e *Engine) Resume(s *Sequence) error { return e.resume(s) }
