package dist

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// allowedCores lists the CPUs this process may run on, in order.
func allowedCores() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	var cores []int
	for c := range 8 * 1024 {
		if set.IsSet(c) {
			cores = append(cores, c)
		}
	}
	return cores, nil
}

// setAffinity pins every thread of the process to share; threads created later inherit their
// creator's mask.
func setAffinity(share []int) error {
	var set unix.CPUSet
	for _, c := range share {
		set.Set(c)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("sched_setaffinity thread %d to cpus %s: %w", tid, cpuList(share), err)
		}
	}
	return nil
}
