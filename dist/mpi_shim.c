// mpi_shim.c: see mpi_shim.h. Only the handful of MPI calls gorstar's collectives need.
#include "mpi_shim.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// MPI's thread levels and success code are the same integers in both ABIs.
#define DM_THREAD_FUNNELED 1
#define DM_SUCCESS 0
#define DM_MAX_VERSION 8192

// MPICH's handle constants (mpi.h of MPICH 3.x/4.x; unchanged since the ABI was fixed).
#define MPICH_COMM_WORLD 0x44000000
#define MPICH_BYTE 0x4c00010d
#define MPICH_FLOAT 0x4c00040a
#define MPICH_DOUBLE 0x4c00080b
#define MPICH_SUM 0x58000003
#define MPICH_ERRORS_RETURN 0x54000001

// A handle is a pointer (Open MPI) or an int (MPICH); the two sets of signatures below call each
// with its own type, so no int is passed where a pointer is read or the reverse.
typedef int (*init_thread_fn)(int *, char ***, int, int *);
typedef int (*finalize_fn)(void);
typedef int (*version_fn)(char *, int *);
typedef int (*error_string_fn)(int, char *, int *);

typedef int (*o_rank_fn)(void *, int *);
typedef int (*o_allreduce_fn)(const void *, void *, int, void *, void *, void *);
typedef int (*o_bcast_fn)(void *, int, void *, int, void *);
typedef int (*o_allgather_fn)(const void *, int, void *, void *, int, void *, void *);
typedef int (*o_barrier_fn)(void *);
typedef int (*o_abort_fn)(void *, int);
typedef int (*o_seterr_fn)(void *, void *);

typedef int (*m_rank_fn)(int, int *);
typedef int (*m_allreduce_fn)(const void *, void *, int, int, int, int);
typedef int (*m_bcast_fn)(void *, int, int, int, int);
typedef int (*m_allgather_fn)(const void *, int, int, void *, int, int, int);
typedef int (*m_barrier_fn)(int);
typedef int (*m_abort_fn)(int, int);
typedef int (*m_seterr_fn)(int, int);

static struct {
	void *lib;
	int abi;
	char path[512];
	char version[256];
	init_thread_fn init_thread;
	finalize_fn finalize;
	version_fn get_version;
	error_string_fn error_string;
	void *comm_rank, *comm_size, *allreduce, *bcast, *allgather, *barrier, *abort_, *seterr;
	// Open MPI's predefined objects; MPICH needs none.
	void *o_world, *o_byte, *o_float, *o_double, *o_sum, *o_errors_return;
} mpi;

static void *sym(const char *name, int *missing, char *err, size_t errlen) {
	void *p = dlsym(mpi.lib, name);
	if (p == NULL && *missing == 0) {
		*missing = 1;
		snprintf(err, errlen, "%s has no symbol %s: not a usable MPI library", mpi.path, name);
	}
	return p;
}

int dm_open(const char *names, char *err, size_t errlen) {
	char list[2048], tried[1024] = "";
	snprintf(list, sizeof list, "%s", names);
	for (char *save = NULL, *name = strtok_r(list, ":", &save); name != NULL; name = strtok_r(NULL, ":", &save)) {
		// RTLD_GLOBAL: Open MPI dlopens its own components, which resolve libmpi's symbols globally.
		mpi.lib = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
		if (mpi.lib != NULL) {
			snprintf(mpi.path, sizeof mpi.path, "%s", name);
			break;
		}
		size_t used = strlen(tried);
		snprintf(tried + used, sizeof tried - used, "%s%s", used ? ", " : "", name);
	}
	if (mpi.lib == NULL) {
		snprintf(err, errlen, "no MPI library found (tried %s): install Open MPI (Debian: openmpi-bin libopenmpi-dev) or MPICH, or set GORSTAR_LIBMPI to its libmpi.so", tried);
		return -1;
	}
	int missing = 0;
	mpi.init_thread = (init_thread_fn)sym("MPI_Init_thread", &missing, err, errlen);
	mpi.finalize = (finalize_fn)sym("MPI_Finalize", &missing, err, errlen);
	mpi.get_version = (version_fn)sym("MPI_Get_library_version", &missing, err, errlen);
	mpi.error_string = (error_string_fn)sym("MPI_Error_string", &missing, err, errlen);
	mpi.comm_rank = sym("MPI_Comm_rank", &missing, err, errlen);
	mpi.comm_size = sym("MPI_Comm_size", &missing, err, errlen);
	mpi.allreduce = sym("MPI_Allreduce", &missing, err, errlen);
	mpi.bcast = sym("MPI_Bcast", &missing, err, errlen);
	mpi.allgather = sym("MPI_Allgather", &missing, err, errlen);
	mpi.barrier = sym("MPI_Barrier", &missing, err, errlen);
	mpi.abort_ = sym("MPI_Abort", &missing, err, errlen);
	mpi.seterr = sym("MPI_Comm_set_errhandler", &missing, err, errlen);
	if (missing) {
		return -1;
	}
	char version[DM_MAX_VERSION] = "";
	int len = 0;
	mpi.get_version(version, &len); // allowed before MPI_Init
	version[DM_MAX_VERSION - 1] = 0;
	version[strcspn(version, "\r\n")] = 0;
	snprintf(mpi.version, sizeof mpi.version, "%s", version);
	if (dlsym(mpi.lib, "ompi_mpi_comm_world") != NULL) {
		mpi.abi = DM_ABI_OMPI;
		mpi.o_world = sym("ompi_mpi_comm_world", &missing, err, errlen);
		mpi.o_byte = sym("ompi_mpi_byte", &missing, err, errlen);
		mpi.o_float = sym("ompi_mpi_float", &missing, err, errlen);
		mpi.o_double = sym("ompi_mpi_double", &missing, err, errlen);
		mpi.o_sum = sym("ompi_mpi_op_sum", &missing, err, errlen);
		mpi.o_errors_return = sym("ompi_mpi_errors_return", &missing, err, errlen);
		return missing ? -1 : 0;
	}
	if (strstr(version, "MPICH") || strstr(version, "Intel(R) MPI") || strstr(version, "MVAPICH") || strstr(version, "CRAY MPICH")) {
		mpi.abi = DM_ABI_MPICH;
		return 0;
	}
	snprintf(err, errlen, "%s: unknown MPI ABI (library version \"%s\"): gorstar speaks Open MPI's and MPICH's", mpi.path, version);
	return -1;
}

int dm_init(int *rank, int *size, char *err, size_t errlen) {
	// Open MPI would install handlers for SIGSEGV, SIGBUS, SIGFPE and SIGABRT to print a stack;
	// the Go runtime owns those signals (nil dereferences become panics), so keep them Go's.
	setenv("OMPI_MCA_opal_signal", "", 0);
	int provided = 0;
	int rc = mpi.init_thread(NULL, NULL, DM_THREAD_FUNNELED, &provided);
	if (rc != DM_SUCCESS) {
		snprintf(err, errlen, "MPI_Init_thread (%s): error %d", mpi.path, rc);
		return rc;
	}
	// SINGLE (0) would forbid the other threads of the process even to exist while MPI runs; the
	// levels are 0..3 in both ABIs.
	if (provided < DM_THREAD_FUNNELED) {
		snprintf(err, errlen, "MPI_Init_thread (%s): thread level %d provided, gorstar needs MPI_THREAD_FUNNELED (1)", mpi.path, provided);
		return -1;
	}
	if (mpi.abi == DM_ABI_OMPI) {
		((o_seterr_fn)mpi.seterr)(mpi.o_world, mpi.o_errors_return);
		((o_rank_fn)mpi.comm_rank)(mpi.o_world, rank);
		return ((o_rank_fn)mpi.comm_size)(mpi.o_world, size);
	}
	((m_seterr_fn)mpi.seterr)(MPICH_COMM_WORLD, MPICH_ERRORS_RETURN);
	((m_rank_fn)mpi.comm_rank)(MPICH_COMM_WORLD, rank);
	return ((m_rank_fn)mpi.comm_size)(MPICH_COMM_WORLD, size);
}

static void *in_place(void) { return mpi.abi == DM_ABI_OMPI ? (void *)1 : (void *)-1; }

int dm_allreduce_f32(float *buf, int n) {
	if (mpi.abi == DM_ABI_OMPI) {
		return ((o_allreduce_fn)mpi.allreduce)(in_place(), buf, n, mpi.o_float, mpi.o_sum, mpi.o_world);
	}
	return ((m_allreduce_fn)mpi.allreduce)(in_place(), buf, n, MPICH_FLOAT, MPICH_SUM, MPICH_COMM_WORLD);
}

int dm_allreduce_f64(double *buf, int n) {
	if (mpi.abi == DM_ABI_OMPI) {
		return ((o_allreduce_fn)mpi.allreduce)(in_place(), buf, n, mpi.o_double, mpi.o_sum, mpi.o_world);
	}
	return ((m_allreduce_fn)mpi.allreduce)(in_place(), buf, n, MPICH_DOUBLE, MPICH_SUM, MPICH_COMM_WORLD);
}

int dm_bcast(void *buf, int n, int root) {
	if (mpi.abi == DM_ABI_OMPI) {
		return ((o_bcast_fn)mpi.bcast)(buf, n, mpi.o_byte, root, mpi.o_world);
	}
	return ((m_bcast_fn)mpi.bcast)(buf, n, MPICH_BYTE, root, MPICH_COMM_WORLD);
}

int dm_allgather(const void *send, void *recv, int n) {
	if (mpi.abi == DM_ABI_OMPI) {
		return ((o_allgather_fn)mpi.allgather)(send, n, mpi.o_byte, recv, n, mpi.o_byte, mpi.o_world);
	}
	return ((m_allgather_fn)mpi.allgather)(send, n, MPICH_BYTE, recv, n, MPICH_BYTE, MPICH_COMM_WORLD);
}

int dm_barrier(void) {
	if (mpi.abi == DM_ABI_OMPI) {
		return ((o_barrier_fn)mpi.barrier)(mpi.o_world);
	}
	return ((m_barrier_fn)mpi.barrier)(MPICH_COMM_WORLD);
}

int dm_finalize(void) { return mpi.finalize(); }

void dm_abort(int code) {
	if (mpi.abi == DM_ABI_OMPI) {
		((o_abort_fn)mpi.abort_)(mpi.o_world, code);
	} else {
		((m_abort_fn)mpi.abort_)(MPICH_COMM_WORLD, code);
	}
}

void dm_error_string(int code, char *buf, size_t len) {
	char text[1024] = "";
	int n = 0;
	if (mpi.error_string == NULL || mpi.error_string(code, text, &n) != DM_SUCCESS) {
		snprintf(buf, len, "MPI error %d", code);
		return;
	}
	text[sizeof text - 1] = 0;
	snprintf(buf, len, "%s (MPI error %d)", text, code);
}

int dm_abi(void) { return mpi.abi; }
const char *dm_library(void) { return mpi.path; }
const char *dm_version(void) { return mpi.version; }
