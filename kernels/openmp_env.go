package kernels

import (
	"os"
	"syscall"
)

// SpinCount is the GOMP_SPINCOUNT a gorstar process runs with unless the user set it (or
// OMP_WAIT_POLICY): how many times an idle OpenMP thread spins before it sleeps.
//
// libgomp spins 300,000 times by default when its threads do not outnumber the CPUs. On a busy
// machine — a laptop, a CI runner, two cores shared by several jobs — a spinning thread burns its
// time slice while its partner waits for a CPU, and every barrier of a kernel costs milliseconds:
// measured here, the engine ran 5–10× slower under a load average of 10 (eval/README.md). A short
// spin costs a few percent on an idle machine and saves that.
const SpinCount = "1000"

// WaitPolicy is the OMP_WAIT_POLICY that goes with SpinCount. With GOMP_SPINCOUNT set, its only
// effect in libgomp is the spin used when libgomp manages more threads than there are CPUs: 100
// without a policy, 1,000 (capped at GOMP_SPINCOUNT) with "active". A Go process is in that case
// as soon as two of its OS threads have started parallel regions (each keeps a pool of workers),
// which any goroutine not locked to the engine's thread does (loading, packing, a trainer); then
// 100 spins, a few microseconds, put a thread to sleep at nearly every barrier of a decode step,
// and each wake-up costs tens of microseconds on a VM. Measured on the 2-core VM (kernels/README.md,
// "Kernels inside a Go process"): a 16 × 512 → 1,536 product 98 against 188 GFLOP/s in a C program
// with a second pool, and `small` decoding 16 sequences ~27,000 against 5,000–7,000 context switches.
const WaitPolicy = "active"

// ExecWithOpenMPEnv re-executes the running program with GOMP_SPINCOUNT=SpinCount and
// OMP_WAIT_POLICY=WaitPolicy when neither variable is set. libgomp reads them once, when the
// process starts, so setting them from Go would come too late. It returns only when it did not
// re-execute (a variable was set, or exec failed: the program then runs with libgomp's defaults).
func ExecWithOpenMPEnv(args []string) {
	if _, set := os.LookupEnv("GOMP_SPINCOUNT"); set {
		return
	}
	if _, set := os.LookupEnv("OMP_WAIT_POLICY"); set {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	_ = syscall.Exec(exe, args, append(os.Environ(), "GOMP_SPINCOUNT="+SpinCount, "OMP_WAIT_POLICY="+WaitPolicy))
}
