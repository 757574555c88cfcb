package gpu

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"gorstar/dist"
	"gorstar/kernels"
)

// NCCL data types and reduction (nccl.h; RCCL's are the same).
const (
	ncclUint8   = 1
	ncclFloat32 = 7
	ncclFloat64 = 8
	ncclSum     = 0
)

// CollectiveComm is dist.Comm with the bulk data (all-reduces, broadcasts) through NCCL on NVIDIA
// or RCCL on AMD, between the devices of the ranks; the host buffers dist.Comm takes are staged
// through device memory. AllGather and Barrier (small control messages) stay on the boot
// communicator. NCCL's ring all-reduce leaves the same bits on every rank; its algorithm, and so
// the bits, depend on the world size and NCCL's choices (NCCL_ALGO), not on the run.
type CollectiveComm struct {
	d     *Device
	boot  dist.Comm
	comm  C.gccl_comm
	stage Buf // float32 elements; grown on demand
	lib   Lib
}

var _ dist.Comm = (*CollectiveComm)(nil)

// NewCollectiveComm joins rank of size ranks, each on its own device d: rank 0's NCCL unique id
// reaches the others through boot (MPI, via dist.World.Collectives).
func NewCollectiveComm(d *Device, boot dist.Comm, rank, size int) (*CollectiveComm, error) {
	lib := NCCL
	if d.Vendor == VendorROCm {
		lib = RCCL
	}
	if _, err := Load(lib); err != nil {
		return nil, err
	}
	c := &CollectiveComm{d: d, boot: boot, lib: lib}
	var id C.gccl_id
	if rank == 0 {
		if r := C.call_ncclGetUniqueId(&id); r != 0 {
			return nil, c.error("ncclGetUniqueId", r)
		}
	}
	idBytes := unsafe.Slice((*byte)(unsafe.Pointer(&id.internal[0])), len(id.internal))
	buf := make([]byte, len(idBytes))
	copy(buf, idBytes)
	if err := boot.Broadcast(buf, 0); err != nil {
		return nil, fmt.Errorf("gpu: %s: broadcasting the unique id: %v", lib, err)
	}
	copy(idBytes, buf)
	if err := d.bind(); err != nil {
		return nil, err
	}
	if r := C.call_ncclCommInitRank(&c.comm, C.int(size), id, C.int(rank)); r != 0 {
		return nil, c.error("ncclCommInitRank", r)
	}
	return c, nil
}

func (c *CollectiveComm) error(call string, r C.gcu_result) error {
	text := ""
	if s := C.call_ncclGetErrorString(r); s != nil {
		text = ": " + C.GoString(s)
	}
	return fmt.Errorf("gpu: %s: %s: error %d%s", c.lib, call, int(r), text)
}

// staging returns a device buffer of at least bytes bytes.
func (c *CollectiveComm) staging(bytes int) Buf {
	n := (bytes + 3) / 4
	if c.stage.n < n {
		c.d.Free(c.stage)
		c.stage = c.d.Alloc(max(n, 1<<20), kernels.F32)
	}
	return c.stage
}

// run stages n elements of host memory at p through the device around one NCCL call.
func (c *CollectiveComm) run(what string, p unsafe.Pointer, bytes int, call func(dev Buf) C.gcu_result) error {
	if bytes == 0 {
		return nil
	}
	dev := c.staging(bytes)
	if err := c.d.Err(); err != nil {
		return err
	}
	c.d.uploadBytes(dev, p, bytes)
	if err := c.d.bind(); err != nil {
		return err
	}
	if r := call(dev); r != 0 {
		return c.error(what, r)
	}
	if err := c.d.Synchronize(); err != nil {
		return err
	}
	c.d.downloadBytes(p, dev, bytes)
	return c.d.Err()
}

func (c *CollectiveComm) AllReduceF32(buf []float32) error {
	if len(buf) == 0 {
		return nil
	}
	return c.run("ncclAllReduce", unsafe.Pointer(&buf[0]), 4*len(buf), func(dev Buf) C.gcu_result {
		return C.call_ncclAllReduce(dev.ptr(), dev.ptr(), C.size_t(len(buf)), ncclFloat32, ncclSum, c.comm, nil)
	})
}

func (c *CollectiveComm) AllReduceF64(buf []float64) error {
	if len(buf) == 0 {
		return nil
	}
	return c.run("ncclAllReduce", unsafe.Pointer(&buf[0]), 8*len(buf), func(dev Buf) C.gcu_result {
		return C.call_ncclAllReduce(dev.ptr(), dev.ptr(), C.size_t(len(buf)), ncclFloat64, ncclSum, c.comm, nil)
	})
}

func (c *CollectiveComm) Broadcast(buf []byte, root int) error {
	if len(buf) == 0 {
		return nil
	}
	return c.run("ncclBroadcast", unsafe.Pointer(&buf[0]), len(buf), func(dev Buf) C.gcu_result {
		return C.call_ncclBroadcast(dev.ptr(), dev.ptr(), C.size_t(len(buf)), ncclUint8, C.int(root), c.comm, nil)
	})
}

// AllReduceDeviceF32 replaces b, float32 in this device's memory, with its element-wise sum over
// the ranks, in place and without staging through the host: the trainers' gradients on a GPU
// (model.DeviceComm). The device's queued work is finished first and NCCL's before it returns,
// since NCCL runs on its own stream.
func (c *CollectiveComm) AllReduceDeviceF32(b kernels.Buf) error {
	if b.Len() == 0 {
		return nil
	}
	if b.DType() != kernels.F32 {
		return fmt.Errorf("gpu: %s: all-reduce of a %v device buffer, want float32", c.lib, b.DType())
	}
	if err := c.d.Synchronize(); err != nil {
		return err
	}
	if err := c.d.bind(); err != nil {
		return err
	}
	p := toDev(b).ptr()
	if r := C.call_ncclAllReduce(p, p, C.size_t(b.Len()), ncclFloat32, ncclSum, c.comm, nil); r != 0 {
		return c.error("ncclAllReduce", r)
	}
	return c.d.Synchronize()
}

// Library names the collectives' library: "NCCL" or "RCCL".
func (c *CollectiveComm) Library() string { return c.lib.String() }

func (c *CollectiveComm) AllGather(send []byte) ([]byte, error) { return c.boot.AllGather(send) }

func (c *CollectiveComm) Barrier() error { return c.boot.Barrier() }

// Close ends the NCCL communicator and frees the staging buffer.
func (c *CollectiveComm) Close() error {
	c.d.Free(c.stage)
	c.stage = Buf{}
	if c.comm != nil {
		if r := C.call_ncclCommDestroy(c.comm); r != 0 {
			return c.error("ncclCommDestroy", r)
		}
		c.comm = nil
	}
	return nil
}
