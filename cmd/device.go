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
// probe finds a GPU, else the CPU. Data-parallel ranks stay on the CPU: their gradients are
// all-reduced through host memory by MPI, and the NCCL/RCCL communicator is not wired in.
func openDevice(o Options, dev config.Device) (config.Device, error) {
	if dev.Kind == "cpu" {
		return dev, nil
	}
	ranks := o.World != nil && o.World.Distributed()
	if dev.Kind == "auto" {
		if ranks {
			return config.Device{Kind: "cpu"}, nil
		}
		for _, v := range []gpu.Vendor{gpu.VendorCUDA, gpu.VendorROCm} {
			if rep := gpu.ProbeIsolated(v); rep.Usable() {
				if !o.Quiet {
					fmt.Fprintf(os.Stderr, "gorstar: --device auto: %s\n", describeGPU(rep, 0))
				}
				return config.Device{Kind: string(v)}, install(o, v, 0)
			}
		}
		return config.Device{Kind: "cpu"}, nil
	}
	if ranks {
		return dev, usererr.New("--device %s: data-parallel ranks run on the CPU only (the GPU collectives are not wired in); use --device cpu", o.Device)
	}
	rep := gpu.ProbeIsolated(gpu.Vendor(dev.Kind))
	if !rep.Usable() {
		return dev, usererr.New("--device %s: %s (see `gorstar doctor`)", o.Device, strings.TrimPrefix(rep.Error, "gpu: "))
	}
	if n := len(rep.Runtime.Devices); dev.Index >= n {
		return dev, usererr.New("--device %s: %s:%d not found, %d visible (see `gorstar doctor`)", o.Device, dev.Kind, dev.Index, n)
	}
	return dev, install(o, gpu.Vendor(dev.Kind), dev.Index)
}

// install opens GPU index of vendor v and makes it the kernels' device; its notes (vendor GEMM
// unusable, kernel cache not writable) go to stderr.
func install(o Options, v gpu.Vendor, index int) error {
	if kernels.OnDevice() {
		return nil // opened by an earlier command of this process
	}
	d, err := gpu.Open(v, index)
	if err != nil {
		return usererr.New("--device %s: %s", o.Device, strings.TrimPrefix(err.Error(), "gpu: "))
	}
	if !o.Quiet {
		for _, n := range d.Notes {
			fmt.Fprintf(os.Stderr, "gorstar: note: %s\n", n)
		}
	}
	kernels.UseDevice(d.Kernels())
	return nil
}

func describeGPU(rep gpu.VendorReport, i int) string {
	d := rep.Runtime.Devices[i]
	return fmt.Sprintf("found %s:%d %s (%s)", rep.Vendor, i, d.Name, d.Arch)
}
