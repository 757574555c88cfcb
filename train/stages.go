package train

import (
	"context"
	"os"
	"path/filepath"
	"strconv"

	"gorstar/internal/usererr"
	"gorstar/model"
)

// stage is one step of the pipeline: what it reads, what it writes, how it runs, and the single
// command that does the same by hand.
type stage struct {
	name     string
	inputs   []input  // checked before any stage runs
	outputs  []string // removed when --from/--only redoes the stage
	run      func(ctx context.Context) error
	commands func() []StageCommand
}

// input is a file a stage reads: made by an earlier stage (by), or given in the configuration.
type input struct {
	path string
	by   string // the stage that writes it; "" = the user's file (named by key)
	key  string
}

// Stage names, in order: data, init (without model.path), sft, eval-sft, rl, eval-<stage> for each
// RL stage, summary.
const (
	stageData    = "data"
	stageInit    = "init"
	stageSFT     = "sft"
	stageRL      = "rl"
	stageSummary = "summary"
)

// evalStage names the evaluation after a training stage ("sft" or an RL stage's name).
func evalStage(after string) string { return "eval-" + after }

// plan lists the pipeline's stages for the configuration.
func (p *pipeline) plan() []*stage {
	l := p.lay
	ss := []*stage{p.dataStage()}
	base := p.cfg.Model.Path
	if base == "" {
		base = l.Init()
		ss = append(ss, &stage{name: stageInit, outputs: []string{l.Init()},
			run: p.runInit, commands: p.initCommands})
	}
	ss = append(ss,
		&stage{name: stageSFT, outputs: []string{l.SFT()},
			inputs:   []input{p.modelInput(base), {path: l.SFTData(), by: stageData}},
			run:      func(ctx context.Context) error { return p.runSFT(ctx, base) },
			commands: func() []StageCommand { return p.sftCommands(base) }},
		p.evalStageOf("sft", l.SFT(), stageSFT),
		&stage{name: stageRL, outputs: []string{l.RL()},
			inputs: append([]input{{path: filepath.Join(l.SFT(), "config.json"), by: stageSFT},
				{path: l.TrainData(), by: stageData}}, p.stageDataInputs()...),
			run: p.runRL, commands: p.rlCommands},
	)
	for i, s := range p.cfg.RL.Stages {
		ss = append(ss, p.evalStageOf(s.Name, p.stageCheckpoint(i), stageRL))
	}
	ss = append(ss, &stage{name: stageSummary, outputs: []string{l.Summary(), l.Report()},
		run: func(context.Context) error { _, err := p.writeSummary(); return err },
		commands: func() []StageCommand {
			return []StageCommand{{Stage: stageSummary, Args: []string{"gorstar", "report", l.Dir}}}
		}})
	return ss
}

// modelInput is the model SFT starts from: the init stage's, or model.path.
func (p *pipeline) modelInput(dir string) input {
	if p.cfg.Model.Path != "" {
		return input{path: filepath.Join(dir, "config.json"), key: "model.path"}
	}
	return input{path: filepath.Join(dir, "config.json"), by: stageInit}
}

// stageDataInputs are the RL stages' own problem files.
func (p *pipeline) stageDataInputs() []input {
	var in []input
	for i, s := range p.cfg.RL.Stages {
		if s.Data != "" {
			in = append(in, input{path: s.Data, key: "rl.stages." + strconv.Itoa(i) + ".data"})
		}
	}
	return in
}

// stageCheckpoint is the checkpoint written at the end of RL stage i: a loadable model directory.
func (p *pipeline) stageCheckpoint(i int) string {
	step := 0
	for _, s := range p.cfg.RL.Stages[:i+1] {
		step += s.Steps
	}
	return model.CheckpointPath(filepath.Join(p.lay.RL(), "checkpoints"), step)
}

// checkInputs names the first missing input of the selected stages before any of them runs: a
// configured file that does not exist, or an earlier stage's output when that stage is neither
// selected nor finished.
func (p *pipeline) checkInputs(selected []*stage) error {
	will := map[string]bool{}
	for _, s := range selected {
		will[s.name] = true
	}
	for _, s := range selected {
		for _, in := range s.inputs {
			if in.by != "" && (will[in.by] || p.done(in.by)) && in.by != s.name {
				continue
			}
			if _, err := os.Stat(in.path); err == nil {
				continue
			}
			if in.by == "" {
				return usererr.New("%s: %s does not exist (stage %s needs it)", in.key, in.path, s.name)
			}
			return usererr.New("stage %s needs %s, which stage %s writes: run `gorstar train --from %s` (or without --only)",
				s.name, in.path, in.by, in.by)
		}
	}
	return nil
}
