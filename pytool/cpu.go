package pytool

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// CPU accounting for the bench: what a call costs in processor time, on the whole machine and in
// the processes that ran the call's code (the pool's forked children, or the baseline's fresh
// interpreters). Their ratio says where the time goes, and the second bounds the throughput any
// pool could reach on the machine: cores / (call CPU per call). Linux only; elsewhere the figures
// are absent.

// clockTick is the unit of /proc/stat and /proc/PID/stat times (USER_HZ, 100 on every Linux ABI).
const clockTick = 10 * time.Millisecond

// cpuSample is one reading of the two counters.
type cpuSample struct {
	machine time.Duration // time all CPUs spent outside idle and I/O wait
	waited  time.Duration // CPU of the processes this process's tree has waited for
	ok      bool
}

// CPUReading is what a benchmark brackets a run with: the machine's busy time, the CPU of the
// calls this process's sandboxes have run and reaped, and this process's own CPU (every thread:
// the engine's kernels too). OK is false where they cannot be read (not Linux).
type CPUReading struct {
	Machine, Calls, Self time.Duration
	OK                   bool
}

// ReadCPU takes a CPUReading.
func ReadCPU() CPUReading {
	s := sampleCPU()
	self, ok := rusageCPU(syscall.RUSAGE_SELF)
	return CPUReading{Machine: s.machine, Calls: s.waited, Self: self, OK: s.ok && ok}
}

// rusageCPU is the user and system time of who: RUSAGE_SELF (this process, all threads) or
// RUSAGE_THREAD (the calling OS thread).
func rusageCPU(who int) (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

func sampleCPU() cpuSample {
	m, ok1 := machineBusy()
	w, ok2 := waitedCPU(os.Getpid())
	return cpuSample{machine: m, waited: w, ok: ok1 && ok2}
}

// machineBusy reads the first line of /proc/stat: user nice system idle iowait irq softirq steal
// (guest time is already part of user).
func machineBusy() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 9 || string(f[0]) != "cpu" {
		return 0, false
	}
	var busy int64
	for i, v := range f[1:9] {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return 0, false
		}
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return time.Duration(busy) * clockTick, true
}

// waitedCPU sums the children's user and system time (cutime + cstime) over root and all its
// descendants: the CPU of every process in the tree that has ended and been waited for. The
// pool's templates wait for their calls' children, and Go waits for the baseline's interpreters,
// so the difference of two readings is the CPU of the calls that ended in between (plus any
// sandbox that ended, which a bench does not do).
func waitedCPU(root int) (time.Duration, bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	type proc struct {
		ppid   int
		waited int64
	}
	procs := map[int]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // ended meanwhile
		}
		// After the command name in parentheses: state ppid pgrp session tty tpgid flags minflt
		// cminflt majflt cmajflt utime stime cutime cstime ...
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 15 {
			continue
		}
		ppid, err1 := strconv.Atoi(string(f[1]))
		cu, err2 := strconv.ParseInt(string(f[13]), 10, 64)
		cs, err3 := strconv.ParseInt(string(f[14]), 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		procs[pid] = proc{ppid: ppid, waited: cu + cs}
	}
	if _, ok := procs[root]; !ok {
		return 0, false
	}
	children := map[int][]int{}
	for pid, p := range procs {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	var total int64
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		total += procs[pid].waited
		queue = append(queue, children[pid]...)
	}
	return time.Duration(total) * clockTick, true
}
