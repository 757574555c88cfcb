package train

import (
	"strings"

	"gorstar/dist"
)

// Under a launcher (Options.World) every rank walks the same pipeline. Rank 0 alone holds the
// lock and writes the run directory: the configuration, commands.sh, the data, the initial model,
// the done markers, the evaluation summaries and the report. The training and evaluation stages
// (sft, rl, eval-*) run data-parallel on every rank; the others run on rank 0 while the rest wait.
// Whether a stage is done is rank 0's answer, broadcast, so no rank reads a marker being written.

// distributed reports whether the pipeline runs as one rank of several.
func (p *pipeline) distributed() bool { return p.o.World.Distributed() }

// root reports whether this rank writes the run directory.
func (p *pipeline) root() bool { return p.o.World.Root() }

// rootSays returns rank 0's v on every rank.
func (p *pipeline) rootSays(v bool) bool {
	if !p.distributed() {
		return v
	}
	b := []byte{0}
	if v {
		b[0] = 1
	}
	if err := p.o.World.Comm.Broadcast(b, 0); err != nil {
		// A broken transport fails the next collective of every rank with its own message.
		return v
	}
	return b[0] == 1
}

// barrier waits until every rank is here (a no-op alone).
func (p *pipeline) barrier() error { return p.o.World.Collectives().Barrier() }

// parallelStage reports whether every rank runs the stage (training and evaluation).
func parallelStage(name string) bool {
	return name == stageSFT || name == stageRL || strings.HasPrefix(name, "eval-")
}

// worldOf is the world a stage's package gets: nil alone, so a run without a launcher is unchanged.
func (p *pipeline) worldOf() *dist.World {
	if !p.distributed() {
		return nil
	}
	return p.o.World
}
