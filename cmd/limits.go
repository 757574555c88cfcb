package cmd

import (
	"fmt"
	"io"
	"runtime"

	"gorstar/internal/usererr"
	"gorstar/model"
)

// The sane ranges of size, count and thread flags live here, checked before any work starts, and
// the memory a command is about to allocate is estimated first and refused, with the number and
// the flag to change, when the machine does not have it: Go cannot recover from a failed
// allocation, so the check has to come first.

// workerMB is about what one warm Python worker holds (interpreter plus its pre-imported modules).
const workerMB = 48

// maxWorkersPerCore bounds exec workers: past it calls only wait on the CPU.
const maxWorkersPerCore = 16

// checkMemory refuses an allocation of about need bytes that would not fit in what is available.
func checkMemory(what string, need int64, change string) error {
	budget, ok := model.MemoryBudget(0) // nine tenths of what is available, as training's fit check
	if !ok || need <= budget {
		return nil
	}
	return usererr.New("%s needs about %s of memory, %s allowed: lower %s", what, model.GiB(need), model.GiB(budget), change)
}

// capThreads caps a thread count at the cores available, with a warning on w: more threads than
// cores only slow the kernels down (and libgomp fails outright on very large counts).
func capThreads(threads int, w io.Writer, quiet bool) int {
	cores := runtime.NumCPU()
	if threads <= cores {
		return threads
	}
	if !quiet {
		fmt.Fprintf(w, "gorstar: --threads %d is more than the %d cores available; using %d\n", threads, cores, cores)
	}
	return cores
}

// checkWorkers refuses more exec workers than the cores can keep busy or the memory can hold.
func checkWorkers(workers int) error {
	if workers == 0 {
		return nil
	}
	if most := maxWorkersPerCore * runtime.NumCPU(); workers > most {
		return usererr.New("--workers %d: at most %d (%d per core on %d cores); lower --workers (exec.workers)",
			workers, most, maxWorkersPerCore, runtime.NumCPU())
	}
	return checkMemory(fmt.Sprintf("--workers %d", workers), int64(workers)*workerMB<<20, "--workers (exec.workers)")
}

// inRange checks an integer flag against its documented range.
func inRange(flag string, v, lo, hi int) error {
	if v < lo || v > hi {
		return usererr.New("%s: must be in %d..%d, got %d", flag, lo, hi, v)
	}
	return nil
}

// firstErr is the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
