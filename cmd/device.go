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

// runtimeDevice resolves the devices of the run-time GPU backend (package gpu) before the kernels
// are set up: auto becomes a GPU that works, else the CPU; cuda[:N], and rocm[:N] in a build
// without -tags rocm, are probed in a child process, so a missing library or a broken driver is one
// line. The model's layers run on the kernels package, which has no run-time GPU backend yet: a
// GPU that was found is named in the error (or, for auto, in a note before the CPU is used).
func runtimeDevice(o Options, dev config.Device) (config.Device, error) {
	rocmBuild := strings.HasPrefix(kernels.Backend(), "rocm")
	switch {
	case dev.Kind == "cpu", dev.Kind == "rocm" && rocmBuild:
		return dev, nil
	case dev.Kind == "auto" && rocmBuild:
		return config.Device{Kind: "rocm"}, nil
	case dev.Kind == "auto":
		for _, v := range []gpu.Vendor{gpu.VendorCUDA, gpu.VendorROCm} {
			if rep := gpu.ProbeIsolated(v); rep.Usable() {
				if !o.Quiet {
					fmt.Fprintf(os.Stderr, "gorstar: --device auto: %s, but the model does not run on the run-time GPU backend yet: using the CPU\n",
						describeGPU(rep, 0))
				}
				break
			}
		}
		return config.Device{Kind: "cpu"}, nil
	}
	rep := gpu.ProbeIsolated(gpu.Vendor(dev.Kind))
	if !rep.Usable() {
		return dev, usererr.New("--device %s: %s (see `gorstar doctor`)", o.Device, strings.TrimPrefix(rep.Error, "gpu: "))
	}
	if n := len(rep.Runtime.Devices); dev.Index >= n {
		return dev, usererr.New("--device %s: %s:%d not found, %d visible (see `gorstar doctor`)", o.Device, dev.Kind, dev.Index, n)
	}
	hint := "its ops do: bench/gpu-check.sh"
	if dev.Kind == "rocm" {
		hint += "; or build with -tags rocm, kernels/README.md"
	}
	return dev, usererr.New("--device %s: %s, but the model does not run on the run-time GPU backend yet (%s)",
		o.Device, describeGPU(rep, dev.Index), hint)
}

func describeGPU(rep gpu.VendorReport, i int) string {
	d := rep.Runtime.Devices[i]
	return fmt.Sprintf("found %s:%d %s (%s)", rep.Vendor, i, d.Name, d.Arch)
}
