package cmd

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"gorstar/dist"
	"gorstar/internal/usererr"
	"gorstar/kernels"
)

// joinWorld makes this process a rank of the launcher's job (mpirun, srun, torchrun-style
// environment; package dist) before the kernels start their threads: it pins the process to its
// share of the node's cores, gives --threads 0 that share, and silences every rank but 0, which
// alone prints progress, notes and the summary. Without a launcher it returns a world of one and
// changes nothing. Call leaveWorld with the command's error when done.
func joinWorld(c *cli.Context, o *Options) (*dist.World, error) {
	w, err := dist.Join()
	if err != nil {
		return nil, usererr.New("%v", err)
	}
	o.World = w
	if !w.Distributed() {
		return w, nil
	}
	if o.Threads == 0 {
		o.Threads = len(w.Cores)
	}
	if !w.Root() {
		o.Quiet, o.JSON = true, false
		c.App.Writer = io.Discard
	}
	return w, nil
}

// announceWorld prints, from rank 0, the one line naming the world the job joined (after
// initKernels, so it shows the threads in use). It is a collective: every rank calls it.
func announceWorld(c *cli.Context, w *dist.World) error {
	line, err := w.Describe(kernels.Threads())
	if err != nil || line == "" {
		return err
	}
	if quiet := setIn(c, "quiet"); w.Root() && (quiet == nil || !quiet.Bool("quiet")) {
		fmt.Fprintf(c.App.ErrWriter, "gorstar: %s\n", line)
	}
	return nil
}

// leaveWorld ends the collectives after a command that succeeded, and names the rank in the
// error of one that failed. A failed rank does not finalize (the others may be waiting in a
// collective); its exit status makes the launcher end the job.
func leaveWorld(w *dist.World, err *error) {
	if !w.Distributed() {
		return
	}
	if *err != nil {
		*err = fmt.Errorf("rank %d of %d: %w", w.Rank, w.Size, *err)
		return
	}
	*err = w.Close()
}
