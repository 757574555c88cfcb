package cmd

import (
	"fmt"
	"os"
	"strings"

	"gorstar/config"
	"gorstar/gpu"
	"gorstar/internal/usererr"
	"gorstar/kernels"
)

// openDevice resolves and opens the device before the kernels are set up: cuda[:N] and rocm[:N]
// are probed in a child process first (a missing library or a broken driver is one line), then
// opened in this one (package gpu: the kernels compiled at run time or read from the cache) and
// installed as the kernels' device, so the model's ops run there; auto is the first vendor whose
// probe finds a GPU, else the CPU. Data-parallel ranks take one GPU each, N + their local rank,
// and all-reduce their gradients between the GPUs with NCCL or RCCL (joinGPUs); with auto, ranks
// under mpirun or srun stay on the CPU, all-reducing through host memory by MPI. A torchrun-style
// launch (a Bootstrap world: no MPI) needs the GPUs' collectives, so its auto looks for GPUs and
// its CPU is refused.
func openDevice(o Options, dev config.Device) (config.Device, error) {
	ranks := o.World != nil && o.World.Distributed()
	boot := ranks && o.World.Bootstrap
	if dev.Kind == "cpu" {
		if boot {
			return dev, bootstrapNeedsGPU(o)
		}
		return dev, nil
	}
	var rep gpu.VendorReport // the probe of dev's vendor
	if dev.Kind == "auto" {
		if ranks && !boot {
			return config.Device{Kind: "cpu"}, nil
		}
		var ok bool
		rep, ok = firstGPU()
		switch {
		case !ok && boot:
			return config.Device{Kind: "cpu"}, bootstrapNeedsGPU(o)
		case !ok:
			return config.Device{Kind: "cpu"}, nil
		case !ranks:
			if !o.Quiet {
				fmt.Fprintf(os.Stderr, "gorstar: --device auto: %s\n", describeGPU(rep, 0))
			}
			_, err := install(o, rep.Vendor, 0)
			return config.Device{Kind: string(rep.Vendor)}, err
		}
		dev = config.Device{Kind: string(rep.Vendor)} // ranks: one GPU each, below
	}
	if ranks {
		dev.Index += o.World.LocalRank
	}
	if rep.Vendor == "" { // not probed by auto above
		rep = gpu.ProbeIsolated(gpu.Vendor(dev.Kind))
	}
	if !rep.Usable() {
		return dev, usererr.New("--device %s: %s (see `gorstar doctor`)", o.Device, strings.TrimPrefix(rep.Error, "gpu: "))
	}
	if n := len(rep.Runtime.Devices); dev.Index >= n {
		if ranks {
			return dev, usererr.New("--device %s: rank %d (local rank %d) takes %s:%d, %d visible on its node: one GPU per rank (see `gorstar doctor`)",
				o.Device, o.World.Rank, o.World.LocalRank, dev.Kind, dev.Index, n)
		}
		return dev, usererr.New("--device %s: %s:%d not found, %d visible (see `gorstar doctor`)", o.Device, dev.Kind, dev.Index, n)
	}
	d, err := install(o, gpu.Vendor(dev.Kind), dev.Index)
	if err != nil || d == nil || !ranks {
		return dev, err
	}
	return dev, joinGPUs(o, d)
}

// firstGPU probes CUDA, then ROCm, and returns the first vendor's report that finds a GPU.
func firstGPU() (gpu.VendorReport, bool) {
	for _, v := range []gpu.Vendor{gpu.VendorCUDA, gpu.VendorROCm} {
		if rep := gpu.ProbeIsolated(v); rep.Usable() {
			return rep, true
		}
	}
	return gpu.VendorReport{}, false
}

// install opens GPU index of vendor v and makes it the kernels' device; its notes (vendor GEMM
// unusable, kernel cache not writable) go to stderr. It returns nil when an earlier command of
// this process opened the device already.
func install(o Options, v gpu.Vendor, index int) (*gpu.Device, error) {
	if kernels.OnDevice() {
		return nil, nil
	}
	d, err := gpu.Open(v, index)
	if err != nil {
		return nil, usererr.New("--device %s: %s", o.Device, strings.TrimPrefix(err.Error(), "gpu: "))
	}
	if !o.Quiet {
		for _, n := range d.Notes {
			fmt.Fprintf(os.Stderr, "gorstar: note: %s\n", n)
		}
	}
	kernels.UseDevice(d.Kernels())
	return d, nil
}

// joinGPUs moves the ranks' bulk collectives (the gradient all-reduce, in place on the GPUs, and
// broadcasts) onto NCCL or RCCL between the ranks' GPUs; the launcher's MPI, or the TCP rendezvous
// of a torchrun-style launch, carries rank 0's unique id and stays for the small messages.
func joinGPUs(o Options, d *gpu.Device) error {
	w := o.World
	cc, err := gpu.NewCollectiveComm(d, w.Comm, w.Rank, w.Size)
	if err != nil {
		return usererr.New("--device %s: rank %d: the collectives between the GPUs: %s", o.Device, w.Rank,
			strings.TrimPrefix(err.Error(), "gpu: "))
	}
	w.Comm, w.Bootstrap = cc, false
	w.Transport += "; " + cc.Library() + " between the GPUs"
	return nil
}

// bootstrapNeedsGPU is the error of a torchrun-style launch on the CPU: its TCP rendezvous through
// rank 0 carries control messages, not gradients.
func bootstrapNeedsGPU(o Options) error {
	return usererr.New("--device %s: a torchrun-style launch (RANK, WORLD_SIZE, MASTER_ADDR; no MPI) runs one GPU per rank (--device cuda or rocm) and all-reduces with NCCL/RCCL; on CPUs launch the ranks with mpirun or srun",
		o.Device)
}

func describeGPU(rep gpu.VendorReport, i int) string {
	d := rep.Runtime.Devices[i]
	return fmt.Sprintf("found %s:%d %s (%s)", rep.Vendor, i, d.Name, d.Arch)
}
