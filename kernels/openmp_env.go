package kernels

import (
	"os"
	"syscall"
)

// SpinCount is the GOMP_SPINCOUNT a gorstar process runs with unless the user set it (or
// OMP_WAIT_POLICY): how many times an idle OpenMP thread spins before it sleeps.
//
// libgomp spins 300,000 times by default when its threads do not outnumber the CPUs, which is the
// case of the one thread team a gorstar process has. On a busy machine — a laptop, a CI runner, two
// cores shared by several jobs — a spinning thread burns its time slice while its partner waits
// for a CPU, and every barrier of a kernel costs milliseconds: measured here, the engine ran 5–10×
// slower under a load average of 10 (eval/README.md). A short spin costs a few percent on an idle
// machine and saves that.
const SpinCount = "1000"

// ExecWithOpenMPEnv re-executes the running program with GOMP_SPINCOUNT=SpinCount when neither
// GOMP_SPINCOUNT nor OMP_WAIT_POLICY is set. libgomp reads them once, when the process starts, so
// setting them from Go would come too late. It returns only when it did not re-execute (the
// variables were set, or exec failed: the program then runs with libgomp's defaults).
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
	_ = syscall.Exec(exe, args, append(os.Environ(), "GOMP_SPINCOUNT="+SpinCount))
}
