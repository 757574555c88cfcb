package gpu

/*
#include "shim.h"
*/
import "C"

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// LibStatus is one library as a vendor's probe found it.
type LibStatus struct {
	Name      string `json:"name"`
	Found     bool   `json:"found"`
	Path      string `json:"path,omitempty"` // what dlopen opened (a file name found by the system, or a path)
	Version   string `json:"version,omitempty"`
	Error     string `json:"error,omitempty"`
	NeededFor string `json:"needed_for"`
}

// VendorReport is what one vendor's probe found: its libraries, and its runtime's devices or
// why there are none.
type VendorReport struct {
	Vendor    Vendor      `json:"vendor"`
	Libraries []LibStatus `json:"libraries"`
	Runtime   *Runtime    `json:"runtime,omitempty"`
	Error     string      `json:"error,omitempty"` // one line: why this vendor's GPUs cannot be used
}

// Usable reports whether the vendor's runtime found at least one device.
func (r VendorReport) Usable() bool {
	return r.Error == "" && r.Runtime != nil && len(r.Runtime.Devices) > 0
}

// vendorLibs are a vendor's libraries, runtime first.
func vendorLibs(v Vendor) []Lib {
	if v == VendorCUDA {
		return []Lib{CUDA, NVRTC, CUBLAS, CUBLASLt, NCCL}
	}
	return []Lib{HIP, HIPRTC, ROCBLAS, HIPBLASLt, RCCL}
}

// ProbeVendor loads every library of v (in this process), reads their versions and probes the
// runtime. ProbeChild runs it in a child process.
func ProbeVendor(v Vendor) VendorReport {
	rep := VendorReport{Vendor: v}
	for _, l := range vendorLibs(v) {
		st := LibStatus{Name: l.String(), NeededFor: libs[l].purpose}
		// The runtime library is loaded by the runtime probe below; the others here.
		loaded, err := Load(l)
		if err != nil {
			st.Error = err.Error()
		} else {
			st.Found, st.Path, st.Version = true, loaded.Path, libVersion(l)
		}
		rep.Libraries = append(rep.Libraries, st)
	}
	rt, err := Probe(v)
	if rt.Library != "" || err == nil {
		rep.Runtime = &rt
		rep.Libraries[0].Version = firstNonEmpty(rt.Runtime, rt.Driver)
	}
	if err != nil {
		rep.Error = err.Error()
	}
	return rep
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// libVersion asks a loaded library for its version where it can answer without a device.
func libVersion(l Lib) string {
	var major, minor C.int
	switch l {
	case NVRTC:
		if C.call_nvrtcVersion(&major, &minor) == 0 {
			return fmt.Sprintf("%d.%d", major, minor)
		}
	case HIPRTC:
		if C.call_hiprtcVersion(&major, &minor) == 0 {
			return fmt.Sprintf("%d.%d", major, minor)
		}
	case CUBLASLt:
		v := int(C.call_cublasLtGetVersion())
		return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
	case ROCBLAS:
		var buf [128]C.char
		if C.call_rocblas_get_version_string(&buf[0], C.size_t(len(buf))) == 0 {
			return C.GoString(&buf[0])
		}
	case NCCL, RCCL:
		var v C.int
		if C.call_ncclGetVersion(&v) == 0 {
			if v >= 10000 { // NCCL_VERSION_CODE since 2.9: major*10000 + minor*100 + patch
				return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
			}
			return fmt.Sprintf("%d.%d.%d", v/1000, v/100%10, v%100)
		}
	}
	return ""
}

// ProbeTimeout bounds a child probe: a driver that hangs is reported, not waited on.
var ProbeTimeout = 60 * time.Second

// ProbeChild runs ProbeVendor(v) in a child process, exe with args (gorstar's hidden `gpu-probe`
// command, which calls ServeProbe), so that a driver that crashes or hangs ends the child, not
// this process: the result is then a report whose Error says so in one line.
func ProbeChild(v Vendor, exe string, args ...string) VendorReport {
	ctx, cancel := context.WithTimeout(context.Background(), ProbeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var rep VendorReport
	if jerr := json.Unmarshal(lastLine(stdout.Bytes()), &rep); jerr == nil && err == nil {
		return rep
	}
	rep = VendorReport{Vendor: v}
	detail := oneLine(lastLineString(stderr.Bytes()))
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		rep.Error = fmt.Sprintf("gpu: probing %s: no answer in %s (a hung driver?)", v, ProbeTimeout)
	case errors.As(err, &exit):
		// A signal in C code reaches Go's handler, which prints "SIGABRT: abort" or
		// "[signal SIGSEGV: segmentation violation ...]" and exits with status 2.
		what := exit.ProcessState.String()
		if sig := crashLine(stderr.String()); sig != "" {
			what, detail = sig, ""
		}
		rep.Error = fmt.Sprintf("gpu: probing %s crashed the probe process (%s)", v, what)
	case err != nil:
		rep.Error = fmt.Sprintf("gpu: probing %s: %v", v, err)
	default:
		rep.Error = fmt.Sprintf("gpu: probing %s: the probe printed no report", v)
	}
	if detail != "" {
		rep.Error += ": " + detail
	}
	return rep
}

var crashRE = regexp.MustCompile(`(?m)^(SIG[A-Z]+: .*|\[signal [^\]]*\])`)

func crashLine(stderr string) string {
	if m := crashRE.FindString(stderr); m != "" {
		return strings.Trim(m, "[]")
	}
	return ""
}

func lastLine(b []byte) []byte {
	b = bytes.TrimRight(b, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

func lastLineString(b []byte) string { return strings.TrimSpace(string(lastLine(b))) }

// ServeProbe is the child's side of ProbeChild: it probes vendor v and writes the report as one
// JSON line.
func ServeProbe(v string, w io.Writer) error {
	switch Vendor(v) {
	case VendorCUDA, VendorROCm:
	default:
		return fmt.Errorf("gpu: unknown vendor %q (cuda or rocm)", v)
	}
	rep := ProbeVendor(Vendor(v))
	return json.NewEncoder(w).Encode(rep)
}

// probeArgs is set by the command line (cmd): how this binary re-executes itself as a probe.
var probeArgs func(v Vendor) (exe string, args []string)

// SetProbeCommand tells the package how to run its child probe: the executable and the
// arguments that make it call ServeProbe for a vendor.
func SetProbeCommand(f func(v Vendor) (exe string, args []string)) { probeArgs = f }

// ProbeIsolated is ProbeChild with the command SetProbeCommand gave, or ProbeVendor in this
// process when none was given.
func ProbeIsolated(v Vendor) VendorReport {
	if probeArgs == nil {
		return ProbeVendor(v)
	}
	exe, args := probeArgs(v)
	return ProbeChild(v, exe, args...)
}
