package dist

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "mpi_shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"unsafe"
)

// mpiLibraries are the file names tried in turn when GORSTAR_LIBMPI is unset: Open MPI's soname
// (3.x to 5.x), the development link, MPICH's sonames (upstream's and Debian's).
var mpiLibraries = []string{"libmpi.so.40", "libmpi.so", "libmpi.so.12", "libmpich.so.12"}

// mpichLibraries are tried first under an MPICH (Hydra/PMI) launcher, so that a node with both
// MPIs installed loads the library of the launcher that started the job.
var mpichLibraries = []string{"libmpi.so.12", "libmpich.so.12", "libmpi.so.40", "libmpi.so"}

// maxCount is the most elements one MPI call takes (its count is a C int); longer buffers go in
// several calls.
const maxCount = 1 << 30

// mpiComm is Comm on MPI. Every MPI call runs on one OS thread (MPI_THREAD_FUNNELED), the one
// that initialized MPI, so any goroutine may use the Comm; calls are serialized.
type mpiComm struct {
	calls   chan func()
	size    int
	library string // file and version, for the world's line
}

// openMPI loads the library, initializes MPI and checks that MPI's rank and size are the
// launcher's.
func openMPI(p Place) (*mpiComm, error) {
	libs := mpiLibraries
	if p.Launcher == "MPICH/PMI" {
		libs = mpichLibraries
	}
	names := strings.Join(libs, ":")
	if env := os.Getenv("GORSTAR_LIBMPI"); env != "" {
		names = env
	}
	c := &mpiComm{calls: make(chan func()), size: p.Size}
	ready := make(chan error)
	go c.serve(names, p, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return c, nil
}

// serve initializes MPI on a locked OS thread and runs every later call there until Close.
func (c *mpiComm) serve(names string, p Place, ready chan<- error) {
	runtime.LockOSThread() // never unlocked: MPI stays bound to this thread until the process ends
	cnames := C.CString(names)
	defer C.free(unsafe.Pointer(cnames))
	var errbuf [1024]C.char
	if C.dm_open(cnames, &errbuf[0], C.size_t(len(errbuf))) != 0 {
		ready <- fmt.Errorf("%s", C.GoString(&errbuf[0]))
		return
	}
	var rank, size C.int
	if C.dm_init(&rank, &size, &errbuf[0], C.size_t(len(errbuf))) != 0 {
		ready <- fmt.Errorf("%s", C.GoString(&errbuf[0]))
		return
	}
	version, _, _ := strings.Cut(C.GoString(C.dm_version()), ",") // "Open MPI v4.1.4, package: …"
	version = strings.Join(strings.Fields(version), " ")          // MPICH's "MPICH Version:\t4.0.2"
	c.library = fmt.Sprintf("%s (%s)", version, C.GoString(C.dm_library()))
	if int(rank) != p.Rank || int(size) != p.Size {
		ready <- fmt.Errorf("MPI (%s) says rank %d of %d, the %s environment rank %d of %d: the launcher and the library do not match (an mpirun of another MPI?)",
			c.library, rank, size, p.Launcher, p.Rank, p.Size)
		return
	}
	ready <- nil
	for f := range c.calls {
		f()
	}
}

// call runs f on the MPI thread and turns its return code into an error naming op.
func (c *mpiComm) call(op string, f func() C.int) error {
	done := make(chan C.int)
	c.calls <- func() { done <- f() }
	if rc := <-done; rc != 0 {
		var buf [1024]C.char
		C.dm_error_string(rc, &buf[0], C.size_t(len(buf)))
		return fmt.Errorf("%s: %s", op, C.GoString(&buf[0]))
	}
	return nil
}

func (c *mpiComm) AllReduceF32(buf []float32) error {
	for off := 0; off < len(buf); off += maxCount {
		part := buf[off:min(len(buf), off+maxCount)]
		if err := c.call("MPI_Allreduce (float32 sum)", func() C.int {
			return C.dm_allreduce_f32((*C.float)(unsafe.Pointer(&part[0])), C.int(len(part)))
		}); err != nil {
			return err
		}
	}
	return nil
}

func (c *mpiComm) AllReduceF64(buf []float64) error {
	for off := 0; off < len(buf); off += maxCount {
		part := buf[off:min(len(buf), off+maxCount)]
		if err := c.call("MPI_Allreduce (float64 sum)", func() C.int {
			return C.dm_allreduce_f64((*C.double)(unsafe.Pointer(&part[0])), C.int(len(part)))
		}); err != nil {
			return err
		}
	}
	return nil
}

func (c *mpiComm) Broadcast(buf []byte, root int) error {
	for off := 0; off < len(buf); off += maxCount {
		part := buf[off:min(len(buf), off+maxCount)]
		if err := c.call("MPI_Bcast", func() C.int {
			return C.dm_bcast(unsafe.Pointer(&part[0]), C.int(len(part)), C.int(root))
		}); err != nil {
			return err
		}
	}
	return nil
}

func (c *mpiComm) AllGather(send []byte) ([]byte, error) {
	if len(send) > maxCount {
		return nil, fmt.Errorf("MPI_Allgather: %d bytes is more than one call takes (%d)", len(send), maxCount)
	}
	out := make([]byte, len(send)*c.size)
	if len(send) == 0 {
		return out, nil
	}
	err := c.call("MPI_Allgather", func() C.int {
		return C.dm_allgather(unsafe.Pointer(&send[0]), unsafe.Pointer(&out[0]), C.int(len(send)))
	})
	return out, err
}

func (c *mpiComm) Barrier() error {
	return c.call("MPI_Barrier", func() C.int { return C.dm_barrier() })
}

// finalize ends MPI; the Comm may not be used after it.
func (c *mpiComm) finalize() error {
	err := c.call("MPI_Finalize", func() C.int { return C.dm_finalize() })
	close(c.calls)
	return err
}

// abort asks the launcher to end every rank of the job with status code.
func (c *mpiComm) abort(code int) {
	done := make(chan struct{})
	c.calls <- func() { C.dm_abort(C.int(code)); close(done) }
	<-done
}
