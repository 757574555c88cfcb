package train

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gorstar/config"
	"gorstar/data"
)

// With [[eval.sets]] and no data.eval, the data stage imports the sets (as published, here the
// project's fixtures in the public layouts) as the held-out problems, and each stage's recorded
// eval command evaluates the sets from the config rather than the merged table.
func TestTrainEvalSets(t *testing.T) {
	cfg := shortConfig(t)
	gsm, err := filepath.Abs("../data/testdata/public/gsm8k/test.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	amc, _ := filepath.Abs("../data/testdata/public/amc23/test.jsonl")
	cfg.Eval.Sets = []config.EvalSet{{Data: gsm}, {Name: "amc", Data: amc}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	l := Layout{Dir: t.TempDir()}
	p := &pipeline{o: Options{Config: cfg}, cfg: cfg, lay: l}
	if err := p.runData(context.Background()); err != nil {
		t.Fatal(err)
	}
	held, err := data.ReadAllProblems(l.EvalData())
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, h := range held {
		if !slices.Contains(sources, h.Source) {
			sources = append(sources, h.Source)
		}
	}
	if len(held) != 5 || strings.Join(sources, " ") != "gsm8k amc23" {
		t.Errorf("held-out: %d problems from %v, want 5 from gsm8k and amc23", len(held), sources)
	}
	var inputs []string
	for _, in := range p.dataStage().inputs {
		inputs = append(inputs, in.key)
	}
	if !slices.Contains(inputs, "eval.sets.1.data") {
		t.Errorf("data stage inputs %v lack the sets", inputs)
	}
	var evalCmd, importCmd string
	for _, s := range p.plan() {
		if s.commands == nil {
			continue
		}
		for _, c := range s.commands() {
			switch c.Stage {
			case "eval-stage1":
				evalCmd = strings.Join(c.Args, " ")
			case "data-eval":
				importCmd = strings.Join(c.Args, " ")
			}
		}
	}
	if strings.Contains(evalCmd, "--data") || !strings.Contains(evalCmd, "--config") {
		t.Errorf("eval command %q: the sets come from the run's config", evalCmd)
	}
	if !strings.Contains(importCmd, "--in "+gsm+" --in "+amc) {
		t.Errorf("data-eval command %q", importCmd)
	}
	if _, err := os.Stat(l.TrainData()); err != nil {
		t.Error(err)
	}
}
