package dist

import (
	"strings"
	"testing"
)

func TestPlaceFromEnv(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want Place
		err  string
	}{
		{"alone", nil, Place{Size: 1, LocalSize: 1}, ""},
		{"open mpi", map[string]string{"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "8", "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"},
			Place{Launcher: "Open MPI", Rank: 3, Size: 8, LocalRank: 1, LocalSize: 2}, ""},
		{"mpich hydra", map[string]string{"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"},
			Place{Launcher: "MPICH/PMI", Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2}, ""},
		{"srun", map[string]string{"SLURM_PROCID": "5", "SLURM_STEP_NUM_TASKS": "7", "SLURM_LOCALID": "0", "SLURM_STEP_TASKS_PER_NODE": "2(x2),3", "SLURM_NODEID": "2"},
			Place{Launcher: "Slurm", Rank: 5, Size: 7, LocalRank: 0, LocalSize: 3}, ""},
		{"sbatch script is no world", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "4"}, Place{Size: 1, LocalSize: 1}, ""},
		{"torchrun", map[string]string{"RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"},
			Place{Launcher: "torchrun", Rank: 1, Size: 4, LocalRank: 1, LocalSize: 2, Master: "10.0.0.1:29500"}, ""},
		{"mpi before torchrun", map[string]string{"RANK": "0", "WORLD_SIZE": "1", "OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"},
			Place{Launcher: "Open MPI", Rank: 1, Size: 2}, ""},
		{"bad size", map[string]string{"WORLD_SIZE": "two", "RANK": "0"}, Place{}, `WORLD_SIZE="two": want an integer ≥ 1`},
		{"rank outside", map[string]string{"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "2"}, Place{}, "OMPI_COMM_WORLD_RANK=2 is not below OMPI_COMM_WORLD_SIZE=2"},
		{"local rank outside", map[string]string{"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "2"}, Place{}, "local rank 2 is not below the 2 processes"},
	}
	for _, c := range cases {
		got, err := PlaceFromEnv(func(k string) string { return c.env[k] })
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: got %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}

func TestSlurmTasksOnNode(t *testing.T) {
	for _, c := range []struct {
		list, node string
		want       int
	}{{"4", "0", 4}, {"2(x3),1", "2", 2}, {"2(x3),1", "3", 1}, {"2(x3),1", "4", 0}, {"2(x", "0", 0}, {"", "0", 0}, {"3", "", 0}} {
		if got := slurmTasksOnNode(c.list, c.node); got != c.want {
			t.Errorf("slurmTasksOnNode(%q, %q) = %d, want %d", c.list, c.node, got, c.want)
		}
	}
}

func TestShareOf(t *testing.T) {
	cores := []int{0, 1, 2, 3, 4, 5, 6}
	var all []int
	for lr := range 3 {
		all = append(all, shareOf(cores, lr, 3)...)
	}
	if cpuList(all) != "0-6" || cpuList(shareOf(cores, 0, 3)) != "0-2" || cpuList(shareOf(cores, 2, 3)) != "5-6" {
		t.Errorf("shares of 7 cores over 3: %v %v %v", shareOf(cores, 0, 3), shareOf(cores, 1, 3), shareOf(cores, 2, 3))
	}
	if got := shareOf([]int{0, 1}, 3, 4); len(got) != 1 || got[0] != 1 {
		t.Errorf("4 ranks on 2 cores: rank 3 got %v, want [1]", got)
	}
	if cpuList([]int{0, 1, 2, 5, 7, 8}) != "0-2,5,7-8" {
		t.Errorf("cpuList: %s", cpuList([]int{0, 1, 2, 5, 7, 8}))
	}
}
