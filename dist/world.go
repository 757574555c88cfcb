package dist

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// Comm is the collectives a data-parallel job needs. Every rank calls each one in the same order
// with buffers of the same length; a call returns when this rank's part is done. The sums are
// deterministic for a given world size and buffer (the same bits on every run and on every rank),
// not across world sizes: floating-point addition is not associative.
//
// Collectives take no context: MPI cannot abandon one half way, and a rank that stops calling
// them makes the launcher end the job (see World.Abort).
type Comm interface {
	// AllReduceF32 replaces buf on every rank with the element-wise sum over the ranks.
	AllReduceF32(buf []float32) error
	// AllReduceF64 is AllReduceF32 in float64 (metrics, losses, counts).
	AllReduceF64(buf []float64) error
	// Broadcast copies root's buf into every other rank's buf.
	Broadcast(buf []byte, root int) error
	// AllGather returns every rank's send concatenated in rank order.
	AllGather(send []byte) ([]byte, error)
	// Barrier returns once every rank has called it.
	Barrier() error
}

// World is this process's place in a job and the collectives over it.
type World struct {
	Place
	Comm  Comm
	Cores []int // the CPUs this rank runs on (after pinning), in order
	// Transport names the collectives' implementation, e.g. "Open MPI v4.1.4, libmpi.so.40".
	Transport string
	// Overlap asks the trainers to all-reduce the gradients in buckets while the backward pass
	// still runs (OverlapEnv=1 in the environment; off by default, see README "Cost of the
	// all-reduce"). The sums are the same bits either way.
	Overlap bool
	// Bootstrap is true while Comm carries control messages only: a torchrun-style launch, whose
	// collectives go through rank 0 over TCP (tcp.go). Training needs a device's collectives in
	// its place (package gpu's NCCL/RCCL), which set Bootstrap to false.
	Bootstrap bool
	mpi       *mpiComm
	tcp       *tcpComm
}

// NoPinEnv=1 in the environment leaves a rank's cores as the launcher left them (no pinning to
// the rank's share), e.g. to compare with `mpirun --bind-to none`.
const NoPinEnv = "GORSTAR_NO_PIN"

// OverlapEnv is the environment variable that turns World.Overlap on ("1").
const OverlapEnv = "GORSTAR_OVERLAP_ALLREDUCE"

// Join reads the launcher's environment, pins the process to its share of the node's cores and
// connects the collectives. Without a launcher, or with a world of one, it returns a World of
// size 1 whose collectives do nothing and pins nothing. Under mpirun or srun the collectives are
// MPI's: a missing or mismatched library is an error of one line. A torchrun-style launch has no
// MPI world: its ranks meet at rank 0's address (MASTER_ADDR) and get a Bootstrap world (see
// tcp.go).
func Join() (*World, error) {
	p, err := PlaceFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	w := &World{Place: p, Comm: single{}}
	if p.Size == 1 {
		w.Cores, _ = allowedCores()
		return w, nil
	}
	if os.Getenv(NoPinEnv) == "1" {
		w.Cores, _ = allowedCores()
	} else if w.Cores, err = pinShare(p.LocalRank, p.LocalSize); err != nil {
		return nil, fmt.Errorf("rank %d: pin to the node's cores: %w", p.Rank, err)
	}
	// The Go runtime sized GOMAXPROCS from the whole node before the pinning: its scheduler and
	// collector would run as many threads as that on the rank's share and take turns with the
	// kernels' threads. A GOMAXPROCS the user set is kept.
	if _, set := os.LookupEnv("GOMAXPROCS"); !set && len(w.Cores) > 0 {
		runtime.GOMAXPROCS(len(w.Cores))
	}
	w.Overlap = os.Getenv(OverlapEnv) == "1"
	if p.Launcher == "torchrun" {
		addr, err := rendezvousAddr(p, os.Getenv)
		if err == nil {
			var timeout time.Duration
			if timeout, err = rendezvousTimeout(os.Getenv); err == nil {
				w.tcp, err = rendezvous(p, addr, timeout)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("rank %d of %d (%s): %w", p.Rank, p.Size, p.Launcher, err)
		}
		w.Comm, w.Bootstrap = w.tcp, true
		w.Transport = "TCP through rank 0 at " + addr + " (control messages)"
		return w, nil
	}
	m, err := openMPI(p)
	if err != nil {
		return nil, fmt.Errorf("rank %d of %d (%s): %w", p.Rank, p.Size, p.Launcher, err)
	}
	w.Comm, w.mpi, w.Transport = m, m, m.library
	return w, nil
}

// Root reports whether this rank writes the job's outputs (rank 0; true for a nil World).
func (w *World) Root() bool { return w == nil || w.Rank == 0 }

// Distributed reports whether the world has more than one rank.
func (w *World) Distributed() bool { return w != nil && w.Size > 1 }

// Ranks is the world size, 1 for a nil World.
func (w *World) Ranks() int {
	if w == nil {
		return 1
	}
	return w.Size
}

// MyRank is the rank, 0 for a nil World.
func (w *World) MyRank() int {
	if w == nil {
		return 0
	}
	return w.Rank
}

// Collectives returns the Comm, a no-op one for a nil World.
func (w *World) Collectives() Comm {
	if w == nil || w.Comm == nil {
		return single{}
	}
	return w.Comm
}

// Describe is the one line a job prints when it starts, gathered from every rank (a collective:
// every rank calls it): the launcher, the world, the transport, and each rank's cores and threads.
func (w *World) Describe(threads int) (string, error) {
	if !w.Distributed() {
		return "", nil
	}
	host, _ := os.Hostname()
	mine := fmt.Sprintf("%s:%s×%d", host, cpuList(w.Cores), threads)
	const width = 128
	buf := make([]byte, width)
	copy(buf, mine)
	all, err := w.Comm.AllGather(buf)
	if err != nil {
		return "", fmt.Errorf("describe the world: %w", err)
	}
	hosts := map[string]bool{}
	var ranks []string
	for r := range w.Size {
		s := strings.TrimRight(string(all[r*width:(r+1)*width]), "\x00")
		h, rest, _ := strings.Cut(s, ":")
		hosts[h] = true
		ranks = append(ranks, fmt.Sprintf("%d@%s", r, rest))
	}
	return fmt.Sprintf("world: %d ranks on %d node(s), launched by %s, collectives on %s; rank@cpus×threads: %s",
		w.Size, len(hosts), w.Launcher, w.Transport, strings.Join(ranks, " ")), nil
}

// Close ends the collectives (MPI_Finalize). Every rank calls it once, after its last collective.
func (w *World) Close() error {
	if w == nil {
		return nil
	}
	if w.tcp != nil {
		// A barrier first: rank 0 must not close the connections while a rank still waits for
		// the result of the last collective.
		err := w.tcp.Barrier()
		w.tcp.close()
		w.tcp, w.Comm = nil, single{}
		return err
	}
	if w.mpi == nil {
		return nil
	}
	err := w.mpi.finalize()
	w.mpi, w.Comm = nil, single{}
	return err
}

// Abort ends every rank of the job with status code (MPI_Abort): a rank that fails while the
// others wait in a collective would otherwise leave them waiting. On the TCP rendezvous it closes
// this rank's connections, which fails the others' next collective, and returns, as it does in a
// world of one or when the collectives are closed.
func (w *World) Abort(code int) {
	if w == nil {
		return
	}
	if w.tcp != nil {
		w.tcp.close()
		return
	}
	if w.mpi != nil {
		w.mpi.abort(code)
	}
}

// single is the Comm of a world of one: every collective leaves its buffers as they are.
type single struct{}

func (single) AllReduceF32([]float32) error { return nil }
func (single) AllReduceF64([]float64) error { return nil }
func (single) Broadcast([]byte, int) error  { return nil }
func (single) AllGather(send []byte) ([]byte, error) {
	return append([]byte(nil), send...), nil
}
func (single) Barrier() error { return nil }
