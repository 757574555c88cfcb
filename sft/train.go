package sft

import (
	"context"
	"fmt"
	"math"
	"runtime"

	"gorstar/chat"
	"gorstar/internal/metricslog"
	"gorstar/internal/schedule"
	"gorstar/internal/usererr"
	"gorstar/model"
	"gorstar/tokenizer"
)

// trainer is one run in progress.
type trainer struct {
	o         Options
	ex, held  []Example
	plan      []planStep // the planned epochs, then the passes until_eval_loss may add
	base      int        // steps of the planned epochs
	end       int        // the run's steps: len(plan) until the held-out loss ends it earlier
	until     float64    // sft.until_eval_loss where there is a held-out set, else 0
	warmup    int
	kind      schedule.Kind
	m         *model.Model
	opt       *model.Optimizer
	start     int // first step this process runs
	st        runState
	metrics   *metricslog.Log
	ds        Dataset
	fingerprt string
	prof      *profiler
}

// stepStats is what one optimizer step reports.
type stepStats struct {
	loss, lr, gradNorm float64
	tokens             int
	seconds            float64
	skipped            bool
}

// Run trains o.Model on o.Data and writes the final model to o.Out. Every input is checked before
// anything is written; a cancelled context stops between steps with the newest checkpoint intact.
// Kernels must be initialized (kernels.Init) first.
func Run(ctx context.Context, o Options) (Result, error) {
	runtime.LockOSThread() // one OpenMP team serves this goroutine (libgomp keeps one per OS thread)
	defer runtime.UnlockOSThread()
	if !o.World.Root() { // rank 0 reports and writes for the job
		o.Progress, o.Logf = nil, nil
	}
	t, err := prepare(o)
	if err != nil {
		return Result{}, err
	}
	defer t.close()
	if err := checkSameWeights(t.m, o.World, t.start); err != nil {
		return Result{}, err
	}
	for s := t.start; s < t.end; s++ {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		if err := t.runStep(s); err != nil {
			return Result{}, err
		}
		if (s+1)%weightCheckEvery == 0 || s+1 == t.end {
			if err := checkSameWeights(t.m, o.World, s+1); err != nil {
				return Result{}, err
			}
		}
	}
	return t.finish()
}

// prepare checks the options, renders the data and loads or resumes the model.
func prepare(o Options) (*trainer, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, usererr.Wrap(err)
	}
	if err := checkOut(o.Out, o.Resume); err != nil {
		return nil, err
	}
	kind, err := schedule.ParseKind(o.Config.Schedule)
	if err != nil {
		return nil, usererr.Wrap(err)
	}
	t := &trainer{o: o, kind: kind, prof: newProfiler(o.World.Ranks())}
	if err := t.loadData(); err != nil {
		return nil, err
	}
	c := o.Config
	extra := 0
	if t.until = c.UntilEvalLoss; t.until > 0 && len(t.held) == 0 {
		o.logf("sft: no held-out set (sft.eval_fraction 0, no --eval-data): sft.until_eval_loss %g does not apply", t.until)
		t.until = 0
	}
	if t.until > 0 {
		extra = c.ExtraEpochs
	}
	t.plan = makePlan(t.ex, c.Epochs+extra, c.BatchSize, c.BatchTokens, o.Seed) // an epoch's steps do not depend on later ones
	for t.base < len(t.plan) && t.plan[t.base].Epoch < c.Epochs {
		t.base++
	}
	t.end = len(t.plan)
	t.warmup = int(math.Round(c.WarmupRatio * float64(t.base)))
	t.fingerprt = fingerprint(t.ex, t.held, c, o.Seed)
	if err := t.checkMemory(); err != nil {
		return nil, err
	}
	if err := t.loadModel(); err != nil {
		return nil, err
	}
	t.m.Recompute, t.m.LossChunkTokens = o.Recompute, o.LossChunkTokens
	if err := t.m.SetPrecision(o.Precision); err != nil {
		t.close()
		return nil, err
	}
	if t.st.Steps > 0 { // resumed after the held-out loss ended the run
		t.end = t.st.Steps
	}
	keep := t.start // a run at step 0, fresh or resumed, keeps no earlier lines
	if keep == 0 {
		keep = -1
	}
	if !o.World.Root() {
		return t, nil
	}
	if t.metrics, err = metricslog.Open(o.Out, keep); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// checkMemory refuses a run whose forward/backward passes (sft.micro_batch_tokens, or one row of
// sft.max_seq_len when longer) would not fit the memory budget, before anything large is allocated.
func (t *trainer) checkMemory() error {
	sc := t.o.Config
	return model.CheckDirFit(t.o.Model, t.o.MemoryGiB, model.FitOptions{Precision: t.o.Precision,
		Tokens: max(sc.MicroBatchTokens, sc.MaxSeqLen), MinTokens: sc.MaxSeqLen, Recompute: t.o.Recompute,
		LossChunk: t.o.LossChunkTokens, What: "sft", TokensKey: "sft.micro_batch_tokens"})
}

func (t *trainer) loadData() error {
	o, c := t.o, t.o.Config
	tok, err := tokenizer.Load(o.Model)
	if err != nil {
		return err
	}
	tmpl, err := chat.LoadTemplate(o.Template)
	if err != nil {
		return usererr.Wrap(err)
	}
	opts := chat.DefaultOptions()
	opts.Template = tmpl
	r, err := chat.NewRenderer(tok, opts)
	if err != nil {
		return err
	}
	if t.ds, err = LoadExamples(o.Data, r, c.MaxSeqLen, c.Overlong); err != nil {
		return err
	}
	if t.ds.Dropped+t.ds.Truncated > 0 {
		o.logf("sft: %s: %d conversations over max_seq_len %d tokens: %d truncated, %d dropped",
			o.Data, t.ds.Dropped+t.ds.Truncated, c.MaxSeqLen, t.ds.Truncated, t.ds.Dropped)
	}
	if o.EvalData == "" {
		t.ex, t.held = splitHeldOut(t.ds.Examples, c.EvalFraction, o.Seed)
		return nil
	}
	t.ex = t.ds.Examples
	held, err := LoadExamples(o.EvalData, r, c.MaxSeqLen, c.Overlong)
	t.held = held.Examples
	return err
}

func (t *trainer) close() {
	if t.metrics != nil {
		t.metrics.Close()
	}
	if t.opt != nil {
		t.opt.Close()
	}
	if t.m != nil {
		t.m.Close()
	}
}

// runStep trains step s, then logs it, evaluates and checkpoints when due.
func (t *trainer) runStep(s int) error {
	ss, err := t.trainStep(s)
	if err != nil {
		return err
	}
	if ss.skipped {
		t.o.logf("sft: step %d skipped: gradient norm %g", s+1, ss.gradNorm)
	}
	t.st.add(ss)
	c := t.o.Config
	rec := map[string]any{"step": s + 1, "epoch": t.plan[s].Epoch, "loss": ss.loss, "lr": ss.lr,
		"tokens": ss.tokens, "tokens_per_s": float64(ss.tokens) / ss.seconds}
	if !math.IsNaN(ss.gradNorm) && !math.IsInf(ss.gradNorm, 0) {
		rec["grad_norm"] = ss.gradNorm
	}
	last := s+1 == t.end
	// Past the planned epochs the held-out loss decides the end, checked every tenth of the
	// planned steps (a function of the plan only, so a resumed run stops where it would have).
	deciding := t.until > 0 && s+1 >= t.base && (s+1-t.base)%max(1, t.base/10) == 0
	if c.EvalEvery > 0 && (s+1)%c.EvalEvery == 0 || last || deciding {
		if err := t.evaluate(); err != nil {
			return err
		}
		if len(t.held) > 0 {
			rec["eval_loss"] = t.st.EvalLoss
		}
		if deciding && t.st.EvalLoss <= t.until {
			t.end, last = s+1, true
		}
	}
	if last {
		t.st.Steps = t.end // in the checkpoint: a resume from it does not train on
		if t.end > t.base {
			t.o.logf("sft: held-out loss %.4f after %d steps (%d planned; sft.until_eval_loss %g)", t.st.EvalLoss, t.end, t.base, t.until)
		}
		if t.until > 0 && t.st.EvalLoss > t.until {
			t.o.logf("sft: held-out loss %.4f still above sft.until_eval_loss %g after %d extra epochs", t.st.EvalLoss, t.until, c.ExtraEpochs)
		}
	}
	if !t.o.World.Root() {
		return nil
	}
	if err := t.metrics.Write(rec); err != nil {
		return err
	}
	if c.SaveEvery > 0 && (s+1)%c.SaveEvery == 0 || last {
		if err := t.checkpoint(s + 1); err != nil {
			return err
		}
	}
	if t.o.Progress != nil {
		steps := t.base // the planned steps, then the most the run may take
		if s+1 > t.base || last {
			steps = t.end
		}
		t.o.Progress(Progress{Step: s + 1, Steps: steps, Epoch: t.plan[s].Epoch, Loss: ss.loss,
			EvalLoss: t.st.EvalLoss, LR: ss.lr, GradNorm: ss.gradNorm, TokensPerS: t.st.tokensPerS(), Tokens: t.st.Tokens})
	}
	return nil
}

// trainStep accumulates the gradient of step s's mean assistant-token loss over its micro-batches
// and applies one AdamW update.
func (t *trainer) trainStep(s int) (stepStats, error) {
	f := t.prof
	f.begin()
	step := t.plan[s].Examples
	scale := float32(1 / float64(stepTargets(t.ex, step)))
	t.m.ZeroGrads()
	var ss stepStats
	passes := t.orderPasses(passesOf(t.ex, t.shard(t.ex, step), t.o.Config.MicroBatchTokens))
	t.offsetPhase()
	for j, p := range passes {
		b, real := buildBatch(t.ex, []row{p}, scale)
		f.paddedNow += b.B * b.L
		f.compute()
		t.armOverlap(j == len(passes)-1)
		res, err := t.m.ForwardBackward(b)
		if err != nil {
			return ss, err
		}
		f.to(&f.p.OtherS)
		ss.loss += res.Loss
		ss.tokens += real
	}
	compute, tokens, padded, err := t.reduceStep(&ss)
	if err != nil {
		return ss, err
	}
	ss.lr = schedule.LR(min(s, t.base-1), t.base, t.warmup, t.o.Config.LR, t.kind) // added steps: the last rate
	f.to(&f.p.OptimizerS)
	up, err := t.opt.Update(ss.lr)
	ss.gradNorm, ss.skipped = up.GradNorm, err != nil // only a non-finite norm fails; the step is skipped
	ss.seconds = f.end(compute, tokens, padded)
	return ss, nil
}

// evaluate computes the mean assistant-token loss on the held-out set.
func (t *trainer) evaluate() error {
	if len(t.held) == 0 {
		return nil
	}
	all := make([]int, len(t.held))
	for i := range all {
		all[i] = i
	}
	scale := float32(1 / float64(stepTargets(t.held, all)))
	loss := 0.0
	for _, p := range passesOf(t.held, t.shard(t.held, all), t.o.Config.MicroBatchTokens) {
		b, _ := buildBatch(t.held, []row{p}, scale)
		res, err := t.m.Forward(b)
		if err != nil {
			return err
		}
		loss += res.Loss
	}
	t.st.EvalLoss = loss
	if err := t.o.World.SumF64(&t.st.EvalLoss); err != nil {
		return fmt.Errorf("sft: all-reduce held-out loss: %w", err)
	}
	return nil
}

// finish publishes the final model and sums the run up.
func (t *trainer) finish() (Result, error) {
	if t.start == t.end && len(t.held) > 0 && t.st.EvalLoss == 0 {
		if err := t.evaluate(); err != nil {
			return Result{}, err
		}
	}
	if t.o.World.Root() {
		if err := t.m.SaveInto(t.o.Out); err != nil {
			return Result{}, err
		}
	}
	if err := t.o.World.Collectives().Barrier(); err != nil { // the model is written before any rank reads it
		return Result{}, err
	}
	return Result{Steps: t.end, TrainLoss: t.st.trainLoss(), EvalLoss: t.st.EvalLoss, Tokens: t.st.Tokens,
		TokensPerS: t.st.tokensPerS(), Dropped: t.ds.Dropped, Truncated: t.ds.Truncated, Profile: &t.prof.p}, nil
}

// runState is what the summary needs across a resume; it travels in the checkpoint's Extra.
type runState struct {
	Fingerprint string    `json:"fingerprint"`
	Tokens      int64     `json:"tokens"`
	Seconds     float64   `json:"seconds"`
	Recent      []float64 `json:"recent_losses"`
	EvalLoss    float64   `json:"eval_loss"`
	Steps       int       `json:"steps,omitempty"` // the run's length, once its last step has run
}

const recentSteps = 10

func (r *runState) add(ss stepStats) {
	r.Tokens += int64(ss.tokens)
	r.Seconds += ss.seconds
	r.Recent = append(r.Recent, ss.loss)
	if len(r.Recent) > recentSteps {
		r.Recent = r.Recent[len(r.Recent)-recentSteps:]
	}
}

func (r *runState) trainLoss() float64 {
	if len(r.Recent) == 0 {
		return 0
	}
	sum := 0.0
	for _, l := range r.Recent {
		sum += l
	}
	return sum / float64(len(r.Recent))
}

func (r *runState) tokensPerS() float64 {
	if r.Seconds == 0 {
		return 0
	}
	return float64(r.Tokens) / r.Seconds
}
