package gpu

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"text/tabwriter"

	"gorstar/kernels"
)

// CPUInfo is the host's processor as the CPU backend sees it.
type CPUInfo struct {
	Model   string `json:"model"`
	Cores   int    `json:"cores"`
	Kernels string `json:"kernels"` // the CPU backend's kernel choice, e.g. "cpu-avx512"
	Arch    string `json:"arch"`
}

// Report is `gorstar doctor`'s answer: the CPU, and per vendor its libraries and devices.
type Report struct {
	CPU         CPUInfo        `json:"cpu"`
	Vendors     []VendorReport `json:"vendors"`
	KernelCache string         `json:"kernel_cache"`
	Auto        string         `json:"auto"` // what --device auto picks: "cuda:0", "rocm:0" or "cpu"
}

// Doctor probes both vendors, each in a child process (ProbeIsolated), at once.
func Doctor() Report {
	rep := Report{CPU: cpuInfo(), KernelCache: CacheDir()}
	vendors := []Vendor{VendorCUDA, VendorROCm}
	rep.Vendors = make([]VendorReport, len(vendors))
	var wg sync.WaitGroup
	for i, v := range vendors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep.Vendors[i] = ProbeIsolated(v)
		}()
	}
	wg.Wait()
	rep.Auto = "cpu"
	for _, v := range rep.Vendors {
		if v.Usable() {
			rep.Auto = string(v.Vendor) + ":0"
			break
		}
	}
	return rep
}

func cpuInfo() CPUInfo {
	info := CPUInfo{Cores: runtime.NumCPU(), Kernels: kernels.Backend(), Arch: runtime.GOARCH}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				info.Model = strings.TrimSpace(v)
				break
			}
		}
	}
	return info
}

// WriteText prints the report for a person: what was found where, and what is missing for what.
func (r Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "cpu\t%s, %d cores (%s), kernels %s\n", orUnknown(r.CPU.Model), r.CPU.Cores, r.CPU.Arch, r.CPU.Kernels)
	for _, v := range r.Vendors {
		if v.Usable() {
			fmt.Fprintf(tw, "%s\t%s, driver %s\n", v.Vendor, plural(len(v.Runtime.Devices), "device"), orUnknown(v.Runtime.Driver))
			for _, d := range v.Runtime.Devices {
				fmt.Fprintf(tw, "  %s:%d\t%s\t%s\t%.1f GiB\n", v.Vendor, d.Index, d.Name, orUnknown(d.Arch), float64(d.Memory)/(1<<30))
			}
		} else {
			fmt.Fprintf(tw, "%s\tnot usable: %s\n", v.Vendor, strings.TrimPrefix(v.Error, "gpu: "))
		}
		for _, l := range v.Libraries {
			if l.Found {
				fmt.Fprintf(tw, "  %s\t%s\t%s\n", l.Name, l.Path, orUnknown(l.Version))
			} else {
				fmt.Fprintf(tw, "  %s\tmissing\tneeded for %s\n", l.Name, l.NeededFor)
			}
		}
	}
	fmt.Fprintf(tw, "kernel cache\t%s\n", r.KernelCache)
	fmt.Fprintf(tw, "--device auto\t%s\n", r.Auto)
	return tw.Flush()
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
