package gpu

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// DeviceInfo describes one GPU as its runtime reports it.
type DeviceInfo struct {
	Index  int    `json:"index"`
	Name   string `json:"name"`
	Arch   string `json:"arch"` // "sm_90", "gfx90a", "gfx942"; "" when unknown
	Memory uint64 `json:"memory_bytes"`
}

// Runtime is what a vendor's runtime reports: its versions and devices.
type Runtime struct {
	Vendor  Vendor       `json:"vendor"`
	Library string       `json:"library"` // the file that was loaded
	Driver  string       `json:"driver_version"`
	Runtime string       `json:"runtime_version,omitempty"`
	Devices []DeviceInfo `json:"devices"`
}

// CUDA driver API attributes (CUdevice_attribute).
const (
	cuAttrCCMajor = 75
	cuAttrCCMinor = 76
)

// cuError is a CUDA driver error as "cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected".
func cuError(call string, r C.gcu_result) error {
	var name, text *C.char
	C.call_cuGetErrorName(r, &name)
	C.call_cuGetErrorString(r, &text)
	n, t := fmt.Sprintf("error %d", int(r)), ""
	if name != nil {
		n = C.GoString(name)
	}
	if text != nil {
		t = ": " + C.GoString(text)
	}
	return fmt.Errorf("gpu: %s: %s%s", call, n, t)
}

func hipError(call string, r C.gcu_result) error {
	n, t := C.call_hipGetErrorName(r), C.call_hipGetErrorString(r)
	name, text := fmt.Sprintf("error %d", int(r)), ""
	if n != nil {
		name = C.GoString(n)
	}
	if t != nil && C.GoString(t) != name {
		text = ": " + C.GoString(t)
	}
	return fmt.Errorf("gpu: %s: %s%s", call, name, text)
}

// Probe loads vendor v's runtime, initializes it and lists its devices. It runs the driver in this
// process: callers that must survive a broken driver use ProbeChild.
func Probe(v Vendor) (Runtime, error) {
	switch v {
	case VendorCUDA:
		return probeCUDA()
	case VendorROCm:
		return probeHIP()
	}
	return Runtime{}, fmt.Errorf("gpu: unknown vendor %q (cuda or rocm)", v)
}

func visible(env string) string {
	if s, ok := os.LookupEnv(env); ok {
		return env + "=" + strconv.Quote(s)
	}
	return env + " unset"
}

func probeCUDA() (Runtime, error) {
	lib, err := Load(CUDA)
	if err != nil {
		return Runtime{}, err
	}
	rt := Runtime{Vendor: VendorCUDA, Library: lib.Path}
	if r := C.call_cuInit(0); r != 0 {
		return rt, cuError("cuInit", r)
	}
	var ver, n C.int
	if r := C.call_cuDriverGetVersion(&ver); r == 0 {
		rt.Driver = fmt.Sprintf("CUDA %d.%d", ver/1000, ver%1000/10)
	}
	if r := C.call_cuDeviceGetCount(&n); r != 0 {
		return rt, cuError("cuDeviceGetCount", r)
	}
	if n == 0 {
		return rt, fmt.Errorf("gpu: no CUDA device (the driver sees none; %s)", visible("CUDA_VISIBLE_DEVICES"))
	}
	for i := 0; i < int(n); i++ {
		var d C.gcu_device
		if r := C.call_cuDeviceGet(&d, C.int(i)); r != 0 {
			return rt, cuError(fmt.Sprintf("cuDeviceGet(%d)", i), r)
		}
		info := DeviceInfo{Index: i}
		var name [256]C.char
		if C.call_cuDeviceGetName(&name[0], C.int(len(name)), d) == 0 {
			info.Name = C.GoString(&name[0])
		}
		var major, minor C.int
		if C.call_cuDeviceGetAttribute(&major, cuAttrCCMajor, d) == 0 && C.call_cuDeviceGetAttribute(&minor, cuAttrCCMinor, d) == 0 {
			info.Arch = fmt.Sprintf("sm_%d%d", major, minor)
		}
		var mem C.size_t
		if C.call_cuDeviceTotalMem_v2(&mem, d) == 0 {
			info.Memory = uint64(mem)
		}
		rt.Devices = append(rt.Devices, info)
	}
	return rt, nil
}

func probeHIP() (Runtime, error) {
	lib, err := Load(HIP)
	if err != nil {
		return Runtime{}, err
	}
	rt := Runtime{Vendor: VendorROCm, Library: lib.Path}
	var ver C.int
	if C.call_hipDriverGetVersion(&ver) == 0 && ver > 0 {
		rt.Driver = strconv.Itoa(int(ver))
	}
	if C.call_hipRuntimeGetVersion(&ver) == 0 && ver > 0 {
		// HIP_VERSION = major * 10,000,000 + minor * 100,000 + patch
		rt.Runtime = fmt.Sprintf("HIP %d.%d.%d", ver/10000000, ver/100000%100, ver%100000)
	}
	if r := C.call_hipInit(0); r != 0 {
		return rt, hipError("hipInit", r)
	}
	var n C.int
	if r := C.call_hipGetDeviceCount(&n); r != 0 {
		return rt, hipError("hipGetDeviceCount", r)
	}
	if n == 0 {
		return rt, fmt.Errorf("gpu: no ROCm device (HIP sees none; %s)", visible("HIP_VISIBLE_DEVICES"))
	}
	archs := kfdArchs()
	for i := 0; i < int(n); i++ {
		info := DeviceInfo{Index: i}
		var name [256]C.char
		if C.call_hipDeviceGetName(&name[0], C.int(len(name)), C.int(i)) == 0 {
			info.Name = C.GoString(&name[0])
		}
		var mem C.size_t
		if C.call_hipDeviceTotalMem(&mem, C.int(i)) == 0 {
			info.Memory = uint64(mem)
		}
		// Without HIP_VISIBLE_DEVICES, HIP numbers the GPUs in the kernel driver's node order.
		if i < len(archs) && os.Getenv("HIP_VISIBLE_DEVICES") == "" && os.Getenv("ROCR_VISIBLE_DEVICES") == "" {
			info.Arch = archs[i]
		} else if len(archs) > 0 && allSame(archs) {
			info.Arch = archs[0]
		}
		rt.Devices = append(rt.Devices, info)
	}
	return rt, nil
}

func allSame(s []string) bool {
	for _, x := range s {
		if x != s[0] {
			return false
		}
	}
	return true
}

// kfdArchs reads the AMD GPUs' architectures from the kernel driver's topology (gfx_target_version
// 90010 is gfx90a, 90402 gfx942, 110000 gfx1100), in node order, CPUs skipped. hipDeviceProp_t's
// layout changes between ROCm releases, so its gcnArchName is not read.
func kfdArchs() []string {
	nodes, _ := filepath.Glob("/sys/class/kfd/kfd/topology/nodes/*/properties")
	sort.Slice(nodes, func(i, j int) bool { return nodeNum(nodes[i]) < nodeNum(nodes[j]) })
	var out []string
	for _, p := range nodes {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) == 2 && f[0] == "gfx_target_version" {
				if v, err := strconv.Atoi(f[1]); err == nil && v > 0 {
					out = append(out, GfxName(v))
				}
			}
		}
	}
	return out
}

func nodeNum(p string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
	return n
}

// GfxName turns a KFD gfx_target_version (major*10000 + minor*100 + stepping) into the LLVM
// target name: 90010 -> gfx90a, 90402 -> gfx942, 110000 -> gfx1100.
func GfxName(v int) string {
	return fmt.Sprintf("gfx%d%x%x", v/10000, v/100%100, v%100)
}
