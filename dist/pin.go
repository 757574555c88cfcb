package dist

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// shareOf is local rank lr's contiguous share of cores when n processes split them: as equal as
// the count allows, the first ones one core longer. With more processes than cores each gets one,
// shared round-robin.
func shareOf(cores []int, lr, n int) []int {
	if n <= 1 || len(cores) == 0 {
		return cores
	}
	if n >= len(cores) {
		return []int{cores[lr%len(cores)]}
	}
	base, extra := len(cores)/n, len(cores)%n
	start := lr*base + min(lr, extra)
	size := base
	if lr < extra {
		size++
	}
	return cores[start : start+size]
}

// pinShare pins every thread of the process (and so every thread created later, which inherits
// its creator's mask) to local rank lr's share of the cores the process may use. A launcher that
// already bound the process to fewer cores than the node has (Open MPI binds to a core or socket
// by default) is taken at its word: the mask is kept whole. localSize 0 (the launcher did not
// say) pins nothing.
func pinShare(lr, localSize int) ([]int, error) {
	cores, err := allowedCores()
	if err != nil || localSize <= 1 {
		return cores, err
	}
	if online, err := onlineCPUs(); err == nil && len(cores) < online {
		return cores, nil // bound by the launcher
	}
	share := shareOf(cores, lr, localSize)
	if err := setAffinity(share); err != nil {
		return nil, err
	}
	return share, nil
}

// onlineCPUs counts the node's online CPUs (/sys/devices/system/cpu/online, e.g. "0-15").
func onlineCPUs() (int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, ok := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, err
		}
		b := a
		if ok {
			if b, err = strconv.Atoi(hi); err != nil {
				return 0, err
			}
		}
		n += b - a + 1
	}
	return n, nil
}

// cpuList writes cores as ranges: "0-3,8".
func cpuList(cores []int) string {
	var parts []string
	for i := 0; i < len(cores); {
		j := i
		for j+1 < len(cores) && cores[j+1] == cores[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(cores[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", cores[i], cores[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
