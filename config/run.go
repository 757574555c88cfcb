package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Run says where a run's files go and what it runs on.
type Run struct {
	Name    string `toml:"name" comment:"Run name: files go to <dir>/<name>/ unless --run-dir says otherwise."`
	Dir     string `toml:"dir" comment:"Parent directory of run directories."`
	Seed    int64  `toml:"seed" comment:"Seed of every random choice (data order, init, sampling)."`
	Threads int    `toml:"threads" comment:"CPU threads for kernels (0 = all cores)."`
	Device  string `toml:"device" comment:"cpu, cuda[:N], rocm[:N] or auto (GPU libraries load at run time; see gorstar doctor)."`
}

func DefaultRun() Run {
	return Run{Name: "quickstart", Dir: "runs", Seed: 1, Threads: 0, Device: "cpu"}
}

func (r Run) Validate() error {
	if r.Name == "" || strings.ContainsAny(r.Name, `/\`) {
		return keyErrorf("run.name", "must be a non-empty name without slashes, got %q", r.Name)
	}
	if _, err := ParseDevice(r.Device); err != nil {
		return keyErrorf("run.device", "%v", err)
	}
	return atLeast("run.threads", r.Threads, 0)
}

// Device is a parsed device string: Kind "cpu", "rocm", "cuda" or "auto", Index the GPU ordinal.
type Device struct {
	Kind  string
	Index int
}

// ParseDevice reads "cpu", "auto", "rocm", "rocm:N", "cuda" or "cuda:N".
func ParseDevice(s string) (Device, error) {
	kind, idx, hasIdx := strings.Cut(s, ":")
	switch kind {
	case "cpu", "auto":
		if hasIdx {
			return Device{}, fmt.Errorf("must be cpu, rocm[:N], cuda[:N] or auto, got %q", s)
		}
		return Device{Kind: kind}, nil
	case "rocm", "cuda":
		if !hasIdx {
			return Device{Kind: kind}, nil
		}
		n, err := strconv.Atoi(idx)
		if err != nil || n < 0 {
			return Device{}, fmt.Errorf("must be cpu, rocm[:N], cuda[:N] or auto, got %q", s)
		}
		return Device{Kind: kind, Index: n}, nil
	}
	return Device{}, fmt.Errorf("must be cpu, rocm[:N], cuda[:N] or auto, got %q", s)
}
