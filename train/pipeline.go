package train

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"gorstar/config"
	"gorstar/dist"
	"gorstar/internal/atomicfile"
	"gorstar/internal/usererr"
)

// Options are one `gorstar train` invocation.
type Options struct {
	// Config is the resolved configuration (Default ← file ← --set), validated by the caller.
	Config config.Config
	// Dir is the run directory.
	Dir string
	// From runs the named stage and every later one; Only runs the named stage alone. Either redoes
	// the stages it selects from scratch (their outputs are removed first). With neither, finished
	// stages are skipped and an interrupted one resumes.
	From, Only string
	// Version is gorstar's version, recorded in eval manifests.
	Version string
	// Log receives the stage headers, notes and progress bars; nil discards them.
	Log io.Writer
	// Quiet silences progress bars (notes and headers still go to Log when it is set).
	Quiet bool

	// World is the data-parallel job this process is a rank of (package dist; world.go); nil:
	// alone.
	World *dist.World

	// afterRLStep, set by tests, runs after each RL step's metrics and checkpoint are written.
	afterRLStep func(step int)
}

// Result is the run's summary (summary.json, `gorstar train --json`): the final model's evaluation,
// the SFT model's, and one per RL stage.
type Result struct {
	EvalSummary
	SFTEval *EvalSummary  `json:"sft_eval,omitempty"`
	Stages  []EvalSummary `json:"stages"`
	RunDir  string        `json:"run_dir"`
	Report  string        `json:"report"`
	// ConfigSHA256 is the run's settings' fingerprint (config.Config.SHA256): the README's
	// quickstart table is checked against a summary whose settings are the shipped defaults.
	ConfigSHA256 string `json:"config_sha256"`
	// DType is the arithmetic the invocation's models ran in: model.dtype, "auto" resolved.
	DType string `json:"dtype,omitempty"`
	// Seconds is this invocation's wall time.
	Seconds float64 `json:"seconds"`
}

// pipeline is one invocation in progress.
type pipeline struct {
	o      Options
	cfg    config.Config
	lay    Layout
	log    io.Writer
	stages []*stage
	// selected are the stages this invocation runs (the RL hook evaluates a stage's end only then).
	selected map[string]bool
	began    time.Time
}

// Run executes the pipeline's stages in order in o.Dir, holding its lock throughout. Every
// input is checked before any stage runs. Kernels must be set up first (kernels.Setup).
func Run(ctx context.Context, o Options) (Result, error) {
	p := &pipeline{o: o, cfg: o.Config, lay: Layout{Dir: o.Dir}, log: o.Log, began: time.Now(),
		selected: map[string]bool{}}
	if p.log == nil || !p.root() {
		p.log = io.Discard
	}
	p.stages = p.plan()
	selected, err := p.selectStages()
	if err != nil {
		return Result{}, err
	}
	if err := p.checkInputs(selected); err != nil {
		return Result{}, err
	}
	notes, err := checkPrerequisites(ctx, p.cfg)
	if err != nil {
		return Result{}, err
	}
	if p.root() {
		lock, err := AcquireLock(o.Dir)
		if err != nil {
			return Result{}, err
		}
		defer lock.Release()
		for _, n := range notes {
			fmt.Fprintln(p.log, n)
		}
		if err := p.writeConfig(); err != nil {
			return Result{}, err
		}
	}
	for _, s := range selected {
		p.selected[s.name] = true
		if p.root() && (o.From != "" || o.Only != "") { // redo: all selected outputs go before any stage runs
			if err := p.clear(s); err != nil {
				return Result{}, err
			}
		}
	}
	if err := p.barrier(); err != nil { // the other ranks start once the directory is ready
		return Result{}, err
	}
	for _, s := range selected {
		if err := p.runStage(ctx, s); err != nil {
			return Result{}, diskFull(err)
		}
	}
	if !p.root() {
		return Result{RunDir: p.lay.Dir}, nil
	}
	return p.result()
}

// runStage records the stage's command and runs it unless its marker says it is done.
func (p *pipeline) runStage(ctx context.Context, s *stage) error {
	for _, c := range s.commands() {
		if !p.root() {
			break
		}
		if err := RecordCommand(p.lay.Commands(), c); err != nil {
			return err
		}
	}
	if p.done(s.name) {
		fmt.Fprintf(p.log, "== %s: done already (%s)\n", s.name, p.lay.Done(s.name))
		return nil
	}
	fmt.Fprintf(p.log, "== %s\n", s.name)
	began := time.Now()
	if p.root() || parallelStage(s.name) {
		if err := s.run(ctx); err != nil {
			return err
		}
	}
	if !p.root() {
		return p.barrier()
	}
	if err := p.markDone(s.name, time.Since(began).Seconds()); err != nil {
		return err
	}
	return p.barrier()
}

// selectStages applies --from and --only to the plan.
func (p *pipeline) selectStages() ([]*stage, error) {
	o := p.o
	if o.From != "" && o.Only != "" {
		return nil, usererr.New("train: give --from or --only, not both")
	}
	name := o.From + o.Only
	if name == "" {
		return p.stages, nil
	}
	i := slices.IndexFunc(p.stages, func(s *stage) bool { return s.name == name })
	if i < 0 {
		return nil, usererr.New("train: no stage %q; the stages are %s", name, strings.Join(p.stageNames(), ", "))
	}
	if o.Only != "" {
		return p.stages[i : i+1], nil
	}
	return p.stages[i:], nil
}

func (p *pipeline) stageNames() []string {
	names := make([]string, len(p.stages))
	for i, s := range p.stages {
		names[i] = s.name
	}
	return names
}

// stageByName returns the planned stage of that name, or nil.
func (p *pipeline) stageByName(name string) *stage {
	for _, s := range p.stages {
		if s.name == name {
			return s
		}
	}
	return nil
}

// writeConfig writes the resolved configuration into the run directory, the one the recorded
// commands read.
func (p *pipeline) writeConfig() error {
	toml, err := p.cfg.TOML()
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(p.lay.Config(), toml)
}

// clear removes a stage's outputs and marker, so it runs again from scratch.
func (p *pipeline) clear(s *stage) error {
	for _, path := range append(s.outputs, p.lay.Done(s.name)) {
		if err := os.RemoveAll(path); err != nil {
			return err
		}
	}
	return nil
}
