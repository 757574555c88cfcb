package engine

import (
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"gorstar/internal/testmodel"
	"gorstar/model"
)

func TestMain(m *testing.M) { testmodel.Main(m) }

func newEngine(t testing.TB, m *model.Model, opts Options) *Engine {
	t.Helper()
	e, err := New(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func seed(v uint64) *uint64 { return &v }

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func prompt(n int, salt int32) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = 32 + (int32(i)*7+salt*13)%90
	}
	return p
}

// run submits the requests at once and waits for every one to end.
func run(t *testing.T, e *Engine, reqs []Request) []Output {
	t.Helper()
	ctx := ctxT(t)
	seqs := make([]*Sequence, len(reqs))
	for i, r := range reqs {
		s, err := e.Submit(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		seqs[i] = s
	}
	outs := make([]Output, len(reqs))
	for i, s := range seqs {
		o, err := s.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if o.Paused {
			t.Fatalf("sequence %d paused unexpectedly", i)
		}
		outs[i] = o
	}
	return outs
}

// runAll submits reqs together with SubmitAll and waits for every output.
func runAll(t *testing.T, e *Engine, reqs []Request) []Output {
	t.Helper()
	ctx := ctxT(t)
	seqs, err := e.SubmitAll(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	outs := make([]Output, len(reqs))
	for i, s := range seqs {
		if outs[i], err = s.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return outs
}

// Generation-time log-probabilities of the sampled tokens equal the training forward's on the
// whole sequence (prompt + generated) — the gap RL importance ratios would see.
func TestLogProbsMatchTrainingForward(t *testing.T) {
	m, _ := testmodel.Model(t)
	e := newEngine(t, m, Options{MaxSeqs: 8, StepTokens: 64})
	var reqs []Request
	for i := range 6 {
		reqs = append(reqs, Request{Prompt: prompt(3+5*i, int32(i)), MaxTokens: 20,
			Sampling: Sampling{Temperature: 1, Seed: seed(uint64(i))}})
	}
	reqs[0].Sampling, reqs[0].TopLogProbs = Sampling{}, 3
	outs := run(t, e, reqs)
	var worst float64
	for i, o := range outs {
		if i == 0 { // greedy with alternatives: the best alternative is the chosen token
			for j, top := range o.Top {
				if len(top) != 3 || top[0].Token != o.Tokens[j] || math.Abs(float64(top[0].LogProb-o.LogProbs[j])) > 1e-5 {
					t.Fatalf("token %d (%d, %g): top %v", j, o.Tokens[j], o.LogProbs[j], top)
				}
			}
		}
		ids := slices.Concat(reqs[i].Prompt, o.Tokens)
		// The engine owns the model while open; a test may call Forward between steps only because
		// every sequence here has ended and the engine is idle.
		r, err := m.Forward(&model.Batch{B: 1, L: len(ids), IDs: ids})
		if err != nil {
			t.Fatal(err)
		}
		for j, lp := range o.LogProbs {
			worst = max(worst, math.Abs(float64(lp-r.LogProbs[len(reqs[i].Prompt)+j])))
		}
	}
	t.Logf("largest |generation − training| logprob gap over %d sequences: %.3g", len(outs), worst)
	if worst > 1e-4 {
		t.Errorf("generation and training logprobs differ by %g", worst)
	}
}

// The same seed gives the same tokens whether the sequence runs alone or among others.
func TestSeedReproducibleAcrossBatches(t *testing.T) {
	m, _ := testmodel.Model(t)
	e := newEngine(t, m, Options{MaxSeqs: 16, StepTokens: 64})
	target := Request{Prompt: prompt(9, 3), MaxTokens: 24, Sampling: Sampling{Temperature: 1.2, TopP: 0.95, TopK: 50, Seed: seed(42)}}
	alone := run(t, e, []Request{target})[0]
	var crowd []Request
	for i := range 10 {
		crowd = append(crowd, Request{Prompt: prompt(2+i*4, int32(i+7)), MaxTokens: 5 + i*3, Sampling: Sampling{Temperature: 1}})
	}
	crowd = slices.Insert(crowd, 4, target)
	together := run(t, e, crowd)[4]
	if !slices.Equal(alone.Tokens, together.Tokens) {
		t.Errorf("seed 42 alone %v, in a batch of %d %v", alone.Tokens, len(crowd), together.Tokens)
	}
	// The kernels take a different SGEMM path for a few rows than for many, so the logits of a
	// sequence alone and in a batch of 11 may differ in the last bits: equal tokens, logprobs ≈.
	var worst float64
	for i := range alone.LogProbs {
		worst = max(worst, math.Abs(float64(alone.LogProbs[i]-together.LogProbs[i])))
	}
	t.Logf("max |alone − in a batch| logprob: %.3g", worst)
	if worst > 1e-5 {
		t.Errorf("logprobs differ between the runs by %g", worst)
	}
	// The rows of a step are sampled by several goroutines when there are many: the same tokens
	// as one goroutine gives, for every sequence of the crowd.
	defer func(w int) { sampleRowsWork = w }(sampleRowsWork)
	var outs [2][]Output
	for i, work := range []int{1 << 30, 1} {
		sampleRowsWork = work
		outs[i] = run(t, newEngine(t, m, Options{MaxSeqs: 16, StepTokens: 64}), crowd)
	}
	for i := range crowd {
		if !slices.Equal(outs[0][i].Tokens, outs[1][i].Tokens) {
			t.Errorf("sequence %d: one sampling goroutine %v, %d of them %v", i, outs[0][i].Tokens, runtime.GOMAXPROCS(0), outs[1][i].Tokens)
		}
	}
	// Sampling from the decoder's logits in place (the CPU) and from a copy of them (a GPU) gives the
	// same tokens and log-probabilities: the sampler must not write to what LogProbs reads after it.
	defer func(v bool) { logitsInPlace = v }(logitsInPlace)
	for i, inPlace := range []bool{true, false} {
		logitsInPlace = inPlace
		outs[i] = run(t, newEngine(t, m, Options{MaxSeqs: 16, StepTokens: 64}), crowd)
	}
	for i := range crowd {
		if !slices.Equal(outs[0][i].Tokens, outs[1][i].Tokens) || !slices.Equal(outs[0][i].LogProbs, outs[1][i].LogProbs) {
			t.Errorf("sequence %d: logits in place %v %v, copied %v %v", i, outs[0][i].Tokens, outs[0][i].LogProbs,
				outs[1][i].Tokens, outs[1][i].LogProbs)
		}
	}
	other := target
	other.Sampling.Seed = seed(43)
	if slices.Equal(run(t, e, []Request{other})[0].Tokens, alone.Tokens) {
		t.Errorf("seeds 42 and 43 gave the same 24 tokens")
	}
}

// Pausing, appending tokens and resuming gives what one sequence with the appended tokens in its
// prompt gives: the prefix is not recomputed and nothing is lost.
func TestPauseAppendResumeEqualsOneShot(t *testing.T) {
	m, tok := testmodel.Model(t)
	e := newEngine(t, m, Options{MaxSeqs: 4, StepTokens: 32, Tokenizer: tok})
	ctx := ctxT(t)
	p := prompt(10, 1)
	pauseTok := int32(0)
	// Greedy: find what the model says first, then pause on its 3rd token.
	first := run(t, e, []Request{{Prompt: p, MaxTokens: 3}})[0]
	pauseTok = first.Tokens[2]
	s, err := e.Submit(ctx, Request{Prompt: p, MaxTokens: 12, Capacity: 64, PauseTokens: []int32{pauseTok}})
	if err != nil {
		t.Fatal(err)
	}
	turn1, err := s.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !turn1.Paused || turn1.Tokens[len(turn1.Tokens)-1] != pauseTok {
		t.Fatalf("turn 1 = %+v, want a pause after token %d", turn1, pauseTok)
	}
	tool := prompt(17, 9)
	if err := e.Append(s, tool); err != nil {
		t.Fatal(err)
	}
	if err := e.Resume(s); err != nil {
		t.Fatal(err)
	}

	var turn2 Output
	for ev := range s.Events(ctx) {
		switch ev.Kind {
		case EventToken:
			turn2.Tokens = append(turn2.Tokens, ev.Token)
			turn2.LogProbs = append(turn2.LogProbs, ev.LogProb)
		case EventDone:
			turn2.Finish = ev.Finish
		}
	}
	if s.Append([]int32{1}) == nil || s.Resume() == nil {
		t.Error("append or resume after the end: no error")
	}
	want := 12 - len(turn1.Tokens)
	if turn2.Finish != FinishLength || len(turn2.Tokens) != want {
		t.Fatalf("turn 2: %d tokens, finish %q; want %d, length", len(turn2.Tokens), turn2.Finish, want)
	}
	oneShot := run(t, e, []Request{{Prompt: slices.Concat(p, turn1.Tokens, tool), MaxTokens: want}})[0]
	if !slices.Equal(oneShot.Tokens, turn2.Tokens) {
		t.Errorf("resumed %v, one-shot %v", turn2.Tokens, oneShot.Tokens)
	}
	var worst float64
	for i := range oneShot.LogProbs {
		worst = max(worst, math.Abs(float64(oneShot.LogProbs[i]-turn2.LogProbs[i])))
	}
	t.Logf("max |resumed − one-shot| logprob: %.3g", worst)
	if worst > 1e-5 {
		t.Errorf("logprobs differ by %g", worst)
	}
	if st := e.Stats(); st.KVReserved != 0 {
		t.Errorf("%d KV tokens still reserved after every sequence ended", st.KVReserved)
	}
}

// Requests that can never fit are refused at once; those that fit later wait their turn.
func TestAdmission(t *testing.T) {
	m, _ := testmodel.Model(t)
	e := newEngine(t, m, Options{KVTokens: 100, MaxSeqs: 4, StepTokens: 32})
	ctx := ctxT(t)
	for _, r := range []Request{
		{Prompt: prompt(60, 0), MaxTokens: 50},                           // over the KV budget
		{Prompt: prompt(300, 0), MaxTokens: 1},                           // over the context
		{Prompt: nil, MaxTokens: 1},                                      // empty
		{Prompt: []int32{1, 99999}, MaxTokens: 1},                        // bad id
		{Prompt: prompt(3, 0), MaxTokens: -1},                            // bad max
		{Prompt: prompt(3, 0), Sampling: Sampling{TopP: 2}},              // bad top_p
		{Prompt: prompt(3, 0), MaxTokens: 2, StopStrings: []string{"x"}}, // stop strings without a tokenizer
	} {
		if _, err := e.Submit(ctx, r); !errors.Is(err, ErrRequest) {
			t.Errorf("prompt %d, max %d: err %v, want ErrRequest", len(r.Prompt), r.MaxTokens, err)
		}
	}
	// Three requests of 40 tokens: two fit, the third waits for one of them to end.
	var seqs []*Sequence
	for i := range 3 {
		s, err := e.Submit(ctx, Request{Prompt: prompt(10, int32(i)), MaxTokens: 30})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, s)
	}
	for _, s := range seqs {
		o, err := s.Wait(ctx)
		if err != nil || len(o.Tokens) != 30 || o.Finish != FinishLength {
			t.Fatalf("sequence %d: %d tokens, %q, %v", s.ID, len(o.Tokens), o.Finish, err)
		}
	}
	if st := e.Stats(); st.KVReserved != 0 || st.Waiting != 0 {
		t.Errorf("stats after the end: %+v", st)
	}
}

func TestStopsAndCancel(t *testing.T) {
	m, tok := testmodel.Model(t)
	e := newEngine(t, m, Options{MaxSeqs: 4, Tokenizer: tok})
	ctx := ctxT(t)
	p := prompt(5, 2)
	ref := run(t, e, []Request{{Prompt: p, MaxTokens: 12}})[0]
	// A stop token ends the sequence with the token included.
	o := run(t, e, []Request{{Prompt: p, MaxTokens: 12, StopTokens: []int32{ref.Tokens[4]}}})[0]
	if o.Finish != FinishStop || len(o.Tokens) > 5 {
		t.Errorf("stop token: %d tokens, %q", len(o.Tokens), o.Finish)
	}
	// A stop string made of the text of tokens 5 and 6.
	text := tok.Decode(ref.Tokens[5:7])
	o = run(t, e, []Request{{Prompt: p, MaxTokens: 12, StopStrings: []string{text}}})[0]
	if o.Finish != FinishStop || o.Stop != text || len(o.Tokens) > 7 {
		t.Errorf("stop string %q: %d tokens, %q, %q", text, len(o.Tokens), o.Finish, o.Stop)
	}
	// Cancelling through the context ends a long sequence and frees its cache. The sequence can
	// reach its length before the cancel reaches the engine (a loaded machine delays the context's
	// goroutine while the loop decodes); that try does not count, and one in 20 must be cancelled.
	cancelled := false
	for try := 0; try < 20 && !cancelled; try++ {
		cctx, cancel := context.WithCancel(ctx)
		s, err := e.Submit(cctx, Request{Prompt: p, MaxTokens: 200})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Next(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		for {
			ev, err := s.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind == EventDone {
				switch ev.Finish {
				case FinishCancelled:
					cancelled = true
				case FinishLength:
				default:
					t.Fatalf("finish %q after cancel", ev.Finish)
				}
				break
			}
		}
	}
	if !cancelled {
		t.Errorf("20 sequences cancelled after their first token all ran to their length")
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.Stats().KVReserved != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if st := e.Stats(); st.KVReserved != 0 {
		t.Errorf("cancelled sequence still holds %d KV tokens", st.KVReserved)
	}
}

func TestCloseEndsEverything(t *testing.T) {
	m, _ := testmodel.Model(t)
	e, err := New(m, Options{KVTokens: 64, MaxSeqs: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	var seqs []*Sequence
	for i := range 4 {
		s, err := e.Submit(ctx, Request{Prompt: prompt(4, int32(i)), MaxTokens: 28})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, s)
	}
	e.Close()
	for _, s := range seqs {
		for {
			ev, err := s.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind == EventDone {
				break
			}
		}
	}
	if _, err := e.Submit(ctx, Request{Prompt: prompt(4, 0), MaxTokens: 1}); !errors.Is(err, ErrClosed) {
		t.Errorf("submit after close: %v", err)
	}
}

// Samples of one prompt submitted together share its prefill (a device copy of the keys and
// values) and give exactly what each gives alone.
func TestSharedPromptMatchesSeparate(t *testing.T) {
	m, _ := testmodel.Model(t)
	e := newEngine(t, m, Options{MaxSeqs: 8, StepTokens: 16})
	p := prompt(40, 5) // longer than a step, so the first sample prefills over several steps
	req := func(s uint64) Request {
		return Request{Prompt: p, MaxTokens: 10, Sampling: Sampling{Temperature: 1, Seed: seed(s)}}
	}
	var alone []Output
	for s := range uint64(4) {
		alone = append(alone, run(t, e, []Request{req(s)})[0])
	}
	before := e.Stats().SharedPromptTokens
	// SubmitAll hands the four to the loop between the same two steps, so the three after the
	// first find its prompt in prefill whatever the scheduling: no timing decides the count.
	together := runAll(t, e, []Request{req(0), req(1), req(2), req(3)})
	if shared, whole := e.Stats().SharedPromptTokens-before, int64(len(p)-1); shared != 3*whole {
		t.Errorf("%d prompt tokens shared, want 3 times %d", shared, whole)
	}
	for i := range alone {
		if !slices.Equal(alone[i].Tokens, together[i].Tokens) || !slices.Equal(alone[i].LogProbs, together[i].LogProbs) {
			t.Errorf("sample %d: alone %v, sharing the prompt %v", i, alone[i].Tokens, together[i].Tokens)
		}
	}
}

// SubmitAll hands a batch to the loop between the same two steps: eight 10-token prompts are
// prefilled in one step, not one per step; a bad request in the batch admits none of them.
func TestSubmitAllPrefillsTogether(t *testing.T) {
	m, _ := testmodel.Model(t)
	e := newEngine(t, m, Options{StepTokens: 128, MaxSeqs: 8})
	ctx := ctxT(t)
	reqs := make([]Request, 8)
	for i := range reqs {
		reqs[i] = Request{Prompt: prompt(10, int32(i)), MaxTokens: 1}
	}
	seqs, err := e.SubmitAll(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range seqs {
		if _, err := s.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if st := e.Stats(); st.Steps != 1 || st.PromptTokens != 80 {
		t.Errorf("8 prompts of 10 tokens took %d steps (%d prompt tokens), want 1 step", st.Steps, st.PromptTokens)
	}
	bad := append(reqs[:2:2], Request{Prompt: []int32{-1}, MaxTokens: 1})
	if _, err := e.SubmitAll(ctx, bad); !errors.Is(err, ErrRequest) {
		t.Errorf("a batch with a bad id: %v, want ErrRequest", err)
	}
	if st := e.Stats(); st.Waiting != 0 || st.Running != 0 || st.Steps != 1 {
		t.Errorf("after a refused batch: %+v, want nothing admitted", st)
	}
}

// PauseAfter caps each turn: the sequence pauses after that many tokens, and again that many
// tokens after each resume, until MaxTokens ends it.
func TestPauseAfterCapsEachTurn(t *testing.T) {
	m, _ := testmodel.Model(t)
	e := newEngine(t, m, Options{MaxSeqs: 2, StepTokens: 32})
	ctx := ctxT(t)
	s, err := e.Submit(ctx, Request{Prompt: prompt(6, 2), MaxTokens: 10, Capacity: 32, PauseAfter: 4})
	if err != nil {
		t.Fatal(err)
	}
	var lens []int
	for {
		out, err := s.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lens = append(lens, len(out.Tokens))
		if !out.Paused {
			if out.Finish != FinishLength {
				t.Errorf("finish %q, want length", out.Finish)
			}
			break
		}
		if err := s.Append([]int32{1, 2}); err != nil {
			t.Fatal(err)
		}
		if err := s.Resume(); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(lens, []int{4, 4, 2}) {
		t.Errorf("turn lengths %v, want [4 4 2]", lens)
	}
}

// Prompts with a common prefix (a template's system turn), several samples each, submitted
// together: with sharing the prefix is computed once and copied, and every sample gets exactly
// the tokens and log-probabilities it gets with sharing off.
func TestSharedPrefixMatchesNoSharing(t *testing.T) {
	m, _ := testmodel.Model(t)
	system := prompt(70, 3)
	var reqs []Request
	for p := range 3 {
		full := append(slices.Clone(system), prompt(12+5*p, int32(20+p))...)
		for j := range 3 {
			reqs = append(reqs, Request{Prompt: full, MaxTokens: 8,
				Sampling: Sampling{Temperature: 1, Seed: seed(uint64(10*p + j))}})
		}
	}
	generate := func(min int) ([]Output, Stats) {
		e := newEngine(t, m, Options{MaxSeqs: 16, StepTokens: 64, SharedPrefixMin: min})
		ctx := ctxT(t)
		seqs, err := e.SubmitAll(ctx, reqs)
		if err != nil {
			t.Fatal(err)
		}
		outs := make([]Output, len(seqs))
		for i, s := range seqs {
			if outs[i], err = s.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return outs, e.Stats()
	}
	off, offStats := generate(-1)
	on, onStats := generate(0)
	if offStats.SharedPromptTokens != 0 {
		t.Errorf("sharing off: %d tokens shared", offStats.SharedPromptTokens)
	}
	// The first prompt is computed in full; the other two prompts take the system turn, and every
	// second and third sample takes its whole prompt but the last token.
	want := int64(2*len(system)) + int64(2*(len(reqs[0].Prompt)-1+len(reqs[3].Prompt)-1+len(reqs[6].Prompt)-1))
	if onStats.SharedPromptTokens != want {
		t.Errorf("%d prompt tokens shared, want %d", onStats.SharedPromptTokens, want)
	}
	if onStats.PromptTokens+onStats.SharedPromptTokens != offStats.PromptTokens {
		t.Errorf("prefilled %d + shared %d tokens with sharing, %d without",
			onStats.PromptTokens, onStats.SharedPromptTokens, offStats.PromptTokens)
	}
	// The two runs batch their steps differently (sharing starts samples earlier), and the SGEMM
	// sums a row in another order when a step has at most kernels.FewRows rows, so log-probabilities
	// may differ in the last bits (see README); the tokens may not.
	var worst float64
	for i := range reqs {
		if !slices.Equal(on[i].Tokens, off[i].Tokens) {
			t.Errorf("sample %d: sharing off %v, on %v", i, off[i].Tokens, on[i].Tokens)
			continue
		}
		for j := range on[i].LogProbs {
			worst = max(worst, math.Abs(float64(on[i].LogProbs[j]-off[i].LogProbs[j])))
		}
	}
	t.Logf("max |Δ logprob| sharing on vs off: %.3g", worst)
	if worst > 1e-5 {
		t.Errorf("log-probabilities differ by %g with sharing on and off", worst)
	}
}

// A paused sequence (waiting on a tool) leaves its slot: with MaxSeqs 1, a second sequence is
// admitted and runs to its end while the first waits; when both are paused and resumed, the
// steps take them in turn, one at a time, and each gets exactly the tokens it gets with a slot
// of its own.
func TestPausedSequenceLeavesItsSlot(t *testing.T) {
	m, _ := testmodel.Model(t)
	choreography := func(maxSeqs int) [2][]int32 {
		e := newEngine(t, m, Options{MaxSeqs: maxSeqs, StepTokens: 32})
		ctx := ctxT(t)
		wait := func(s *Sequence, paused bool) Output {
			t.Helper()
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			o, err := s.Wait(wctx)
			if err != nil {
				t.Fatalf("sequence %d: %v (with MaxSeqs %d)", s.ID, err, maxSeqs)
			}
			if o.Paused != paused {
				t.Fatalf("sequence %d: paused %v, want %v", s.ID, o.Paused, paused)
			}
			return o
		}
		a, err := e.Submit(ctx, Request{Prompt: prompt(6, 1), MaxTokens: 9, Capacity: 40, PauseAfter: 3, Sampling: Sampling{Seed: seed(1)}})
		if err != nil {
			t.Fatal(err)
		}
		wait(a, true)
		b, err := e.Submit(ctx, Request{Prompt: prompt(7, 2), MaxTokens: 6, Capacity: 40, PauseAfter: 3, Sampling: Sampling{Seed: seed(2)}})
		if err != nil {
			t.Fatal(err)
		}
		wait(b, true) // admitted and decoding while a is paused
		if st := e.Stats(); st.Paused != 2 || st.Running != 0 {
			t.Errorf("MaxSeqs %d: %d paused, %d running, want 2 and 0", maxSeqs, st.Paused, st.Running)
		}
		for _, s := range []*Sequence{a, b} {
			if err := s.Append([]int32{3, 4}); err != nil {
				t.Fatal(err)
			}
			if err := s.Resume(); err != nil {
				t.Fatal(err)
			}
		}
		ob := wait(b, false)
		wait(a, true)
		if err := a.Resume(); err != nil {
			t.Fatal(err)
		}
		return [2][]int32{wait(a, false).Tokens, ob.Tokens}
	}
	capped, roomy := choreography(1), choreography(4)
	for i := range capped {
		if !slices.Equal(capped[i], roomy[i]) {
			t.Errorf("sequence %d: with one slot %v, with four %v", i, capped[i], roomy[i])
		}
	}
}

// Finished sequences' caches are pooled and reused: a sequence on a reused cache (holding another
// sequence's rows past its own length) gives the tokens it gives on a new one, and a capacity the
// pool does not hold is admitted by freeing pooled caches when the budget needs it.
func TestCachePoolReuse(t *testing.T) {
	m, _ := testmodel.Model(t)
	seeded := func(p []int32, n, capacity int) Request {
		return Request{Prompt: p, MaxTokens: n, Capacity: capacity, Sampling: Sampling{Temperature: 1, Seed: seed(7)}}
	}
	short := seeded(prompt(3, 9), 6, 48)
	fresh := run(t, newEngine(t, m, Options{KVTokens: 96, MaxSeqs: 2}), []Request{short})[0]

	e := newEngine(t, m, Options{KVTokens: 96, MaxSeqs: 2})
	run(t, e, []Request{seeded(prompt(40, 1), 7, 48), seeded(prompt(30, 2), 10, 48)}) // fill two caches of 48
	reused := run(t, e, []Request{short})[0]
	if !slices.Equal(reused.Tokens, fresh.Tokens) {
		t.Errorf("on a reused cache %v, on a new one %v", reused.Tokens, fresh.Tokens)
	}
	// 96 tokens: the two pooled caches of 48 must go.
	big := run(t, e, []Request{seeded(prompt(5, 3), 20, 96)})[0]
	if big.Finish != FinishLength || len(big.Tokens) != 20 {
		t.Errorf("a 96-token request after pooled 48s: %d tokens, %q", len(big.Tokens), big.Finish)
	}
	if err := e.do(func() {
		if e.pooled+e.reserved > e.opts.KVTokens {
			t.Errorf("pooled %d + reserved %d tokens, budget %d", e.pooled, e.reserved, e.opts.KVTokens)
		}
		if len(e.pool[96]) != 1 || len(e.pool[48]) != 0 {
			t.Errorf("pool after the 96-token request: %d of 96, %d of 48", len(e.pool[96]), len(e.pool[48]))
		}
	}); err != nil {
		t.Fatal(err)
	}
}

// Capacities a few tokens apart share a cache size class, so a finished sequence's cache serves
// the next one instead of a fresh allocation; each sequence still stops at its own capacity.
func TestCachePoolSizeClasses(t *testing.T) {
	m, _ := testmodel.Model(t)
	e := newEngine(t, m, Options{KVTokens: 4096, MaxSeqs: 2})
	req := func(p []int32, capacity int) Request {
		return Request{Prompt: p, Capacity: capacity, Sampling: Sampling{Temperature: 1, Seed: seed(3)}}
	}
	for i, c := range []int{200, 197, 194} {
		p := prompt(10+i, int32(i+1))
		r := run(t, e, []Request{req(p, c)})[0]
		if r.Finish != FinishLength || len(p)+len(r.Tokens) != c {
			t.Errorf("capacity %d: prompt %d + %d tokens, finish %q; want the capacity filled", c, len(p), len(r.Tokens), r.Finish)
		}
	}
	if err := e.do(func() {
		if len(e.pool) != 1 || len(e.pool[200]) != 1 {
			t.Errorf("pool %v: want the one cache of 200 reused by all three", e.pool)
		}
	}); err != nil {
		t.Fatal(err)
	}
}

// TestReserve: Reserve pools caches within the KV budget, admission reuses them for requests of
// their size class and of one a little smaller, and allocates for a much smaller one.
func TestReserve(t *testing.T) {
	m, _ := testmodel.Model(t)
	e := newEngine(t, m, Options{KVTokens: 1000, MaxSeqs: 2, MaxContext: 512})
	if _, err := e.Reserve(1, 513); !errors.Is(err, ErrRequest) {
		t.Errorf("Reserve over MaxContext: %v, want ErrRequest", err)
	}
	n, err := e.Reserve(8, 200)
	if err != nil || n != 5 {
		t.Fatalf("Reserve(8, 200) = %d, %v; want the 5 caches of 200 the budget of 1000 holds", n, err)
	}
	pooled := func() map[*model.KVCache]bool {
		set := map[*model.KVCache]bool{}
		if err := e.do(func() {
			for _, list := range e.pool {
				for _, c := range list {
					set[c] = true
				}
			}
		}); err != nil {
			t.Fatal(err)
		}
		return set
	}
	before := pooled()
	req := func(p []int32, capacity int) Request {
		return Request{Prompt: p, Capacity: capacity, Sampling: Sampling{Temperature: 1, Seed: seed(3)}}
	}
	// 200 and 170 (size class 176, a cache of 200 is within a quarter more) take reserved caches.
	for i, c := range []int{200, 170, 200} {
		p := prompt(10+i, int32(i+1))
		if r := run(t, e, []Request{req(p, c), req(p, c)})[0]; len(p)+len(r.Tokens) != c {
			t.Errorf("capacity %d: prompt %d + %d tokens; want the capacity filled", c, len(p), len(r.Tokens))
		}
	}
	if c := firstNew(pooled(), before); c != nil {
		t.Errorf("a cache of %d tokens was allocated; want the reserved ones reused", c.Cap())
	}
	// 150 (class 152) is too small for a cache of 200: it gets its own.
	run(t, e, []Request{req(prompt(10, 1), 150)})
	if firstNew(pooled(), before) == nil {
		t.Error("a capacity of 150 reused a reserved cache of 200; want a cache of its own")
	}
}

// firstNew returns a cache of got that before lacks (nil when none).
func firstNew(got, before map[*model.KVCache]bool) *model.KVCache {
	for c := range got {
		if !before[c] {
			return c
		}
	}
	return nil
}
