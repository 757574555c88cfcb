package cmd

import (
	"os"
	"testing"

	"github.com/urfave/cli/v2"

	"gorstar/gpu"
	"gorstar/internal/usererr"
)

// gpuProbeCommandName is the hidden command a child process runs to probe a GPU vendor's driver,
// so a driver that crashes or hangs ends the child, not gorstar (gpu.ProbeChild).
const gpuProbeCommandName = "gpu-probe"

func init() {
	if testing.Testing() {
		return // a test binary has no gpu-probe command: its probes run in-process
	}
	gpu.SetProbeCommand(func(v gpu.Vendor) (string, []string) {
		exe, err := os.Executable()
		if err != nil {
			exe = os.Args[0]
		}
		return exe, []string{gpuProbeCommandName, string(v)}
	})
}

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "list the CPU, the GPUs and the GPU libraries found, and what is missing for what",
		Description: "Each GPU vendor (cuda: NVIDIA, rocm: AMD) is probed in a child process, so a broken driver is one\n" +
			"line here. Libraries are searched in $GORSTAR_CUDA_LIBS / $GORSTAR_ROCM_LIBS, the system's library path,\n" +
			"python3's site-packages/nvidia/*/lib (pip's CUDA wheels), /usr/local/cuda/lib64 and /opt/rocm/lib.",
		Action: func(c *cli.Context) error {
			o, err := globalOptions(c)
			if err != nil {
				return err
			}
			rep := gpu.Doctor()
			if o.JSON {
				return printJSON(c, rep)
			}
			return rep.WriteText(c.App.Writer)
		},
	}
}

func gpuProbeCommand() *cli.Command {
	return &cli.Command{
		Name:      gpuProbeCommandName,
		Hidden:    true,
		Usage:     "probe a GPU vendor's libraries and devices in this process (run by doctor and --device)",
		ArgsUsage: "cuda|rocm",
		Action: func(c *cli.Context) error {
			v, err := oneArg(c, "vendor")
			if err != nil {
				return err
			}
			if err := gpu.ServeProbe(v, c.App.Writer); err != nil {
				return usererr.New("%v", err)
			}
			return nil
		},
	}
}
