// Package dist lets gorstar run as one rank of a data-parallel job started by the launchers
// clusters already have: `mpirun` (Open MPI, MPICH), `srun` (Slurm) and torchrun-style
// environments. Join reads the rank, world size and local rank from the launcher's environment,
// pins the process to its share of the node's cores and connects the collectives; without a
// launcher it returns a world of one in which every collective is a no-op, so single-process
// behaviour does not change.
//
// The collectives are one small interface (Comm: all-reduce, broadcast, all-gather, barrier).
// On CPUs MPI implements it, loaded at run time with dlopen by a small C shim (mpi_shim.c), so the
// binary builds without an MPI header or library and runs where MPI is absent; GPU backends
// implement the same interface with NCCL/RCCL. A torchrun-style launch, which has no MPI world,
// meets over TCP at rank 0's address (tcp.go) for control messages only: NCCL/RCCL between the
// ranks' GPUs carries its bulk.
//
// A nil *World is a world of one: Rank 0, Size 1, Root true.
package dist
