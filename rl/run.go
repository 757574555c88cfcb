package rl

import (
	"context"
	"math/rand/v2"
	"runtime"
	"strings"
	"time"

	"gorstar/config"
	"gorstar/data"
	"gorstar/engine"
	"gorstar/internal/metricslog"
	"gorstar/internal/tooloptions"
	"gorstar/internal/usererr"
	"gorstar/model"
	"gorstar/pytool"
	"gorstar/tokenizer"
)

// trainer is one RL run in progress. Natively the model belongs to the engine: training runs on
// the engine's goroutine through Engine.WithModel, between rollout batches. With remote rollouts
// there is no engine; the trainer holds the model and pushes its weights to the servers.
type trainer struct {
	o           Options
	mode        Mode
	loss        LossConfig
	tok         *tokenizer.Tokenizer
	m           *model.Model
	opt         *model.Optimizer
	eng         *engine.Engine // nil with remote rollouts
	remote      *remote        // nil on the native engine
	tools       pytool.Runner
	closer      []func()
	train       []data.Problem // Options.Data (stages without their own data)
	held        []data.Problem
	st          runState
	rng         *rand.Rand // RoC's draws and the mini-batch split; its state travels in checkpoints
	pcg         *rand.PCG
	stage       *stageData // the problems of the current stage, in their order
	met         *metricslog.Log
	began       time.Time
	stepRerolls int // infra re-rolls in the current step
}

// Run trains the policy in o.Model with GRPO-RoC through the stages of o.RL and writes the final
// model to o.Out. Every input is checked before anything is written; a cancelled context stops
// between steps with the newest checkpoint intact. Kernels must be set up first (kernels.Setup).
func Run(ctx context.Context, o Options) (Result, error) {
	runtime.LockOSThread() // one OpenMP team serves this goroutine (libgomp keeps one per OS thread)
	defer runtime.UnlockOSThread()
	if !o.World.Root() { // rank 0 reports and writes for the job
		o.Progress, o.Logf = nil, nil
	}
	t, err := prepare(ctx, o)
	if err != nil {
		return Result{}, err
	}
	defer t.close()
	if err := t.checkSameWeights(t.st.Step); err != nil {
		return Result{}, err
	}
	if t.st.Step == 0 {
		if err := t.logEvalBeforeTraining(ctx); err != nil {
			return Result{}, err
		}
	}
	total := t.totalSteps()
	for t.st.Step < total {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		if err := t.enterStage(ctx); err != nil {
			return Result{}, err
		}
		if err := t.runStep(ctx); err != nil {
			return Result{}, err
		}
	}
	return t.finish()
}

// prepare checks the options, reads the data and loads (or resumes) the policy and the tools.
func prepare(ctx context.Context, o Options) (*trainer, error) {
	if err := validate(o); err != nil {
		return nil, err
	}
	if err := checkWorld(o); err != nil {
		return nil, err
	}
	if err := checkOut(o.Out, o.Resume); err != nil {
		return nil, err
	}
	mode, _ := ParseMode(o.RL.RoC)
	t := &trainer{o: o, mode: mode, began: time.Now(),
		loss: LossConfig{ClipLow: o.RL.ClipLow, ClipHigh: o.RL.ClipHigh}}
	var err error
	if o.Data != "" {
		if t.train, err = readProblems(o.Data); err != nil {
			return nil, err
		}
	}
	if o.EvalData != "" {
		if t.held, err = readProblems(o.EvalData); err != nil {
			return nil, err
		}
		if n := o.Eval.Limit; n > 0 && n < len(t.held) {
			t.held = t.held[:n]
		}
	}
	if err := t.checkStageData(); err != nil {
		return nil, err
	}
	if err := t.connectRemote(ctx); err != nil {
		t.close()
		return nil, err
	}
	if err := t.loadPolicy(); err != nil {
		t.close()
		return nil, err
	}
	if err := t.startTools(ctx); err != nil {
		t.close()
		return nil, err
	}
	// The servers start from the trainer's weights (the SFT model, or the resumed checkpoint's).
	if err := t.pushWeights(ctx); err != nil {
		t.close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, usererr.Wrap(err) // servers that cannot read Out, or serve another architecture
	}
	from := -1
	if o.Resume {
		from = t.st.Step
	}
	if !o.World.Root() {
		return t, nil
	}
	if t.met, err = metricslog.Open(o.Out, from); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

func validate(o Options) error {
	for _, c := range []interface{ Validate() error }{o.RL, o.Rollout, o.Reward, o.Exec, o.Eval} {
		if err := c.Validate(); err != nil {
			return usererr.Wrap(err)
		}
	}
	if o.Model == "" {
		return usererr.New("rl: no model (--model): the SFT checkpoint to start from")
	}
	return nil
}

func readProblems(path string) ([]data.Problem, error) {
	ps, err := data.ReadAllProblems(path)
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, usererr.New("%s: no problems", path)
	}
	return ps, nil
}

// checkStageData makes sure every stage has problems to draw from before anything runs.
func (t *trainer) checkStageData() error {
	for i, s := range t.o.RL.Stages {
		if s.Data == "" && t.train == nil {
			return usererr.New("rl.stages.%d (%s): no data: give --data or the stage's data", i, s.Name)
		}
		if s.Data != "" {
			if _, err := readProblems(s.Data); err != nil {
				return err
			}
		}
	}
	return nil
}

// startTools starts the sandboxed Python pool the rollouts call, or connects to exec.endpoints.
func (t *trainer) startTools(ctx context.Context) error {
	// Natively, the rollouts decode on this machine's cores.
	tools, err := pytool.Open(ctx, tooloptions.From(t.o.Exec), func(s string) { t.o.logf("rl: %s", s) }, pytool.BesideEngine(t.remote == nil))
	if err != nil {
		return err
	}
	if n := len(t.o.Exec.Endpoints); n > 0 {
		t.o.logf("rl: tool calls go to %d exec serve node(s): %s", n, strings.Join(t.o.Exec.Endpoints, ", "))
	}
	t.tools = tools
	t.closer = append(t.closer, tools.Close)
	return nil
}

// withModel runs fn on the policy's model: on the engine's goroutine natively (so its decoders
// repack what fn changed), directly with remote rollouts.
func (t *trainer) withModel(ctx context.Context, fn func(*model.Model) error) error {
	if t.eng == nil {
		return fn(t.m)
	}
	return t.eng.WithModel(ctx, fn)
}

func (t *trainer) close() {
	if t.met != nil {
		t.met.Close()
	}
	for i := len(t.closer) - 1; i >= 0; i-- {
		t.closer[i]()
	}
	t.closer = nil
}

func (t *trainer) totalSteps() int {
	n := 0
	for _, s := range t.o.RL.Stages {
		n += s.Steps
	}
	return n
}

// stageAt returns the index of the stage that global step `step` (0-based) belongs to and the
// step's index within it.
func stageAt(stages []config.Stage, step int) (int, int) {
	for i, s := range stages {
		if step < s.Steps {
			return i, step
		}
		step -= s.Steps
	}
	return len(stages) - 1, stages[len(stages)-1].Steps
}
