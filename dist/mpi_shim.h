// mpi_shim.h: MPI loaded at run time. The library is found with dlopen and its functions are
// called through a table of pointers, so gorstar builds without an MPI header or library and runs
// where MPI is absent. Both handle ABIs are served: Open MPI's (handles are addresses of global
// objects such as ompi_mpi_comm_world) and MPICH's (handles are integer constants; Intel MPI,
// MVAPICH and Cray MPICH share it).
#ifndef GORSTAR_MPI_SHIM_H
#define GORSTAR_MPI_SHIM_H

#include <stddef.h>

enum { DM_ABI_NONE = 0, DM_ABI_OMPI = 1, DM_ABI_MPICH = 2 };

// dm_open loads the first library of names (a list of file names separated by ':') that dlopen
// finds, resolves every function and detects the ABI. 0 on success; otherwise err holds one line.
int dm_open(const char *names, char *err, size_t errlen);
// dm_init calls MPI_Init_thread (MPI_THREAD_FUNNELED: every later call comes from one thread) and
// makes errors on MPI_COMM_WORLD return instead of aborting. 0 on success.
int dm_init(int *rank, int *size, char *err, size_t errlen);
int dm_allreduce_f32(float *buf, int n);
int dm_allreduce_f64(double *buf, int n);
int dm_bcast(void *buf, int n, int root);
int dm_allgather(const void *send, void *recv, int n);
int dm_barrier(void);
int dm_finalize(void);
void dm_abort(int code);
// dm_error_string fills buf with MPI's text for an error code.
void dm_error_string(int code, char *buf, size_t len);
int dm_abi(void);
const char *dm_library(void); // the file that was loaded
const char *dm_version(void); // MPI_Get_library_version, first line

#endif
