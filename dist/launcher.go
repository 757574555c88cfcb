package dist

import (
	"fmt"
	"strconv"
	"strings"
)

// Place is where one process stands in a job, as its launcher's environment says.
type Place struct {
	Launcher  string // "Open MPI", "MPICH/PMI", "Slurm", "torchrun"; "" without a launcher
	Rank      int
	Size      int
	LocalRank int // rank among the processes on this node
	LocalSize int // processes on this node; 0 when the launcher does not say
	// Master is torchrun's MASTER_ADDR:MASTER_PORT (rendezvous of a TCP bootstrap).
	Master string
}

// launcher is one launcher's names for the same facts.
type launcher struct {
	name                         string
	rank, size, local, localSize string
}

// launchers in the order they are tried: an MPI launcher's own variables first, since srun and
// mpirun may also export a torchrun-style RANK for the user's convenience.
var launchers = []launcher{
	{"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
	{"MPICH/PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
	// SLURM_STEP_NUM_TASKS is set by srun only: a batch script (whose SLURM_PROCID is 0 and
	// SLURM_NTASKS the allocation's) is not a world.
	{"Slurm", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", ""},
	{"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
}

// PlaceFromEnv reads the launcher's environment through getenv (os.Getenv in a real process).
// Without a launcher it returns a world of one with Launcher "". A launcher's variables that do
// not parse, or a rank outside the world, are an error naming the variable.
func PlaceFromEnv(getenv func(string) string) (Place, error) {
	for _, l := range launchers {
		if getenv(l.rank) == "" || getenv(l.size) == "" {
			continue
		}
		p := Place{Launcher: l.name}
		var err error
		num := func(name string, dst *int, min int) {
			if err != nil || name == "" || getenv(name) == "" {
				return
			}
			v, e := strconv.Atoi(strings.TrimSpace(getenv(name)))
			if e != nil || v < min {
				err = fmt.Errorf("launcher environment (%s): %s=%q: want an integer ≥ %d", l.name, name, getenv(name), min)
			}
			*dst = v
		}
		num(l.rank, &p.Rank, 0)
		num(l.size, &p.Size, 1)
		num(l.local, &p.LocalRank, 0)
		num(l.localSize, &p.LocalSize, 1)
		if err != nil {
			return Place{}, err
		}
		if p.Rank >= p.Size {
			return Place{}, fmt.Errorf("launcher environment (%s): %s=%d is not below %s=%d", l.name, l.rank, p.Rank, l.size, p.Size)
		}
		if l.name == "Slurm" {
			p.LocalSize = slurmTasksOnNode(getenv("SLURM_STEP_TASKS_PER_NODE"), getenv("SLURM_NODEID"))
		}
		if l.name == "torchrun" && getenv("MASTER_ADDR") != "" {
			p.Master = getenv("MASTER_ADDR") + ":" + getenv("MASTER_PORT")
		}
		if p.LocalSize > 0 && p.LocalRank >= p.LocalSize {
			return Place{}, fmt.Errorf("launcher environment (%s): local rank %d is not below the %d processes of the node", l.name, p.LocalRank, p.LocalSize)
		}
		return p, nil
	}
	return Place{Size: 1, LocalSize: 1}, nil
}

// slurmTasksOnNode reads Slurm's compressed tasks-per-node list ("2(x3),1": three nodes of 2,
// then one of 1) at node index node; 0 when either does not parse.
func slurmTasksOnNode(list, node string) int {
	n, err := strconv.Atoi(node)
	if err != nil || list == "" {
		return 0
	}
	for _, part := range strings.Split(list, ",") {
		tasks, reps := part, 1
		if i := strings.Index(part, "(x"); i >= 0 && strings.HasSuffix(part, ")") {
			tasks = part[:i]
			if reps, err = strconv.Atoi(part[i+2 : len(part)-1]); err != nil {
				return 0
			}
		}
		t, err := strconv.Atoi(tasks)
		if err != nil {
			return 0
		}
		if n < reps {
			return t
		}
		n -= reps
	}
	return 0
}
