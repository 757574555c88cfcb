package train

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"gorstar/config"
	"gorstar/data"
	"gorstar/internal/usererr"
)

// The data stage writes data/train.parquet (RL problems), data/eval.parquet (held-out problems)
// and data/sft.parquet (SFT conversations). Configured files (data.train, data.eval) are imported
// and the training problems filtered (duplicates, overlap with the held-out set); what is not
// configured is synthesized with [data.synth], each table from its own seed (run.seed, +1, +2),
// and the held-out problems are checked to be disjoint from the others.

// synthSeeds are the seeds of the train, eval and SFT tables.
func (p *pipeline) synthSeeds() (train, eval, sft int64) {
	s := p.cfg.Run.Seed
	return s, s + 1, s + 2
}

func (p *pipeline) dataStage() *stage {
	l := p.lay
	s := &stage{name: stageData, outputs: []string{l.DataDir()}, run: p.runData, commands: p.dataCommands}
	for _, f := range []struct{ path, key string }{{p.cfg.Data.Train, "data.train"}, {p.cfg.Data.Eval, "data.eval"}} {
		if f.path != "" {
			s.inputs = append(s.inputs, input{path: f.path, key: f.key})
		}
	}
	for i, set := range p.evalSets() {
		s.inputs = append(s.inputs, input{path: set.Data, key: fmt.Sprintf("eval.sets.%d.data", i)})
	}
	return s
}

// evalSets are the benchmarks each stage is evaluated on when data.eval is empty and the config
// lists [[eval.sets]]: their problems, together, are the held-out set.
func (p *pipeline) evalSets() []config.EvalSet {
	if p.cfg.Data.Eval != "" {
		return nil
	}
	return p.cfg.Eval.Sets
}

// evalSetFiles lists the sets' files.
func (p *pipeline) evalSetFiles() []string {
	var files []string
	for _, s := range p.evalSets() {
		files = append(files, s.Data)
	}
	return files
}

func (p *pipeline) runData(ctx context.Context) error {
	l, d := p.lay, p.cfg.Data
	if err := os.MkdirAll(l.DataDir(), 0o755); err != nil {
		return err
	}
	trainSeed, evalSeed, sftSeed := p.synthSeeds()
	if d.Eval != "" {
		if err := p.importProblems(ctx, l.EvalData(), d.Eval); err != nil {
			return err
		}
	} else if sets := p.evalSetFiles(); len(sets) > 0 {
		if err := p.importProblems(ctx, l.EvalData(), sets...); err != nil {
			return err
		}
	} else if err := p.synth(ctx, l.EvalData(), d.Synth.Eval, evalSeed, false, ""); err != nil {
		return err
	}
	if d.Train != "" {
		tmp := l.TrainData() + ".import.parquet"
		defer os.Remove(tmp)
		if err := p.importProblems(ctx, tmp, d.Train); err != nil {
			return err
		}
		res, err := data.Filter(ctx, data.FilterOptions{In: tmp, Out: l.TrainData(), Dedup: true,
			Decontaminate: []string{l.EvalData()}, NGram: 8})
		if err != nil {
			return err
		}
		if res.Rows == 0 {
			return usererr.New("data.train %s: no problem left after the filter (%v)", d.Train, res.Dropped)
		}
	} else if err := p.synth(ctx, l.TrainData(), d.Synth.Train, trainSeed, false, l.EvalData()); err != nil {
		return err
	}
	if err := p.synth(ctx, l.SFTData(), d.Synth.SFT, sftSeed, true, l.EvalData()); err != nil {
		return err
	}
	return checkDisjoint(l)
}

func (p *pipeline) importProblems(ctx context.Context, out string, in ...string) error {
	res, err := data.Import(ctx, data.ImportOptions{Inputs: in, Out: out})
	if err != nil {
		return err
	}
	if res.Rows == 0 {
		return usererr.New("%s: no problems (%d rows skipped)", strings.Join(in, ", "), res.Skipped)
	}
	return nil
}

// synth writes n synthesized problems (or SFT conversations) to out, none of them asking a problem
// of exclude.
func (p *pipeline) synth(ctx context.Context, out string, n int, seed int64, sft bool, exclude string) error {
	s := p.cfg.Data.Synth
	_, err := data.Synth(ctx, data.SynthOptions{Task: s.Task, N: n, Out: out, SFT: sft, RecoveryShare: s.SFTRecovery,
		RecoveryMasked: s.SFTRecoveryMasked, Seed: seed, Exclude: exclude, Arith: data.ArithOptions{MinDigits: s.MinDigits, MaxDigits: s.MaxDigits, Operands: s.Operands, Ops: s.Ops}})
	return err
}

// checkDisjoint fails when a held-out problem is also a training problem (same id or same text up
// to case and spacing) or is asked by an SFT conversation: its accuracy would measure memory.
func checkDisjoint(l Layout) error {
	held, err := data.ReadAllProblems(l.EvalData())
	if err != nil {
		return err
	}
	if len(held) == 0 {
		return usererr.New("%s: no held-out problems (data.synth.eval or data.eval)", l.EvalData())
	}
	ids, texts := map[string]bool{}, map[string]bool{}
	for _, h := range held {
		ids[h.ID], texts[data.SameText(h.Problem)] = true, true
	}
	train, err := data.ReadAllProblems(l.TrainData())
	if err != nil {
		return err
	}
	for i, t := range train {
		if texts[data.SameText(t.Problem)] || ids[t.ID] && strings.HasPrefix(t.ID, "arith-") {
			return usererr.New("%s row %d (id %s) is also a held-out problem in %s: the train and eval sets must be disjoint",
				l.TrainData(), i+1, t.ID, l.EvalData())
		}
	}
	convs, err := data.ReadAllConversations(l.SFTData())
	if err != nil {
		return err
	}
	for i, c := range convs {
		if len(c.Messages) > 0 && texts[data.SameText(c.Messages[0].Content)] {
			return usererr.New("%s row %d (id %s) asks a held-out problem of %s: SFT and eval must be disjoint",
				l.SFTData(), i+1, c.ID, l.EvalData())
		}
	}
	return nil
}

// dataCommands are the data stage's equivalent commands, one per table.
func (p *pipeline) dataCommands() []StageCommand {
	l, d := p.lay, p.cfg.Data
	trainSeed, evalSeed, sftSeed := p.synthSeeds()
	g := p.gorstar()
	synth := func(stage, out string, n int, seed int64, extra ...string) StageCommand {
		args := append(g, "--seed", strconv.FormatInt(seed, 10), "data", "synth", "--n", strconv.Itoa(n), "--out", out)
		return StageCommand{Stage: stage, Args: append(args, extra...)}
	}
	var cmds []StageCommand
	if d.Eval != "" {
		cmds = append(cmds, StageCommand{Stage: "data-eval", Args: append(g, "data", "import", "--in", d.Eval, "--out", l.EvalData())})
	} else if sets := p.evalSetFiles(); len(sets) > 0 {
		args := append(g, "data", "import")
		for _, f := range sets {
			args = append(args, "--in", f)
		}
		cmds = append(cmds, StageCommand{Stage: "data-eval", Args: append(args, "--out", l.EvalData())})
	} else {
		cmds = append(cmds, synth("data-eval", l.EvalData(), d.Synth.Eval, evalSeed))
	}
	if d.Train != "" {
		tmp := l.TrainData() + ".import.parquet"
		cmds = append(cmds,
			StageCommand{Stage: "data-train-import", Args: append(g, "data", "import", "--in", d.Train, "--out", tmp)},
			StageCommand{Stage: "data-train", Args: append(g, "data", "filter", "--in", tmp, "--out", l.TrainData(),
				"--dedup", "--decontaminate", l.EvalData())})
	} else {
		cmds = append(cmds, synth("data-train", l.TrainData(), d.Synth.Train, trainSeed, "--exclude", l.EvalData()))
	}
	return append(cmds, synth("data-sft", l.SFTData(), d.Synth.SFT, sftSeed, "--sft", "--exclude", l.EvalData()))
}

// gorstar is the start of every recorded command: the program with the run's resolved config.
func (p *pipeline) gorstar() []string {
	return []string{"gorstar", "--config", p.lay.Config()}
}
