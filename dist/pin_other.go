//go:build !linux

package dist

import "runtime"

// allowedCores is every CPU: outside Linux a process has no affinity mask to read.
func allowedCores() ([]int, error) {
	cores := make([]int, runtime.NumCPU())
	for i := range cores {
		cores[i] = i
	}
	return cores, nil
}

// setAffinity does nothing outside Linux (macOS has no API that binds a thread to a core); a
// rank's share still sizes its thread count.
func setAffinity([]int) error { return nil }
