package pytool

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gorstar/internal/testenv"
)

func TestSessionsKeepStateStatelessCallsDoNot(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	forEachSandbox(t, testSessionsKeepStateStatelessCallsDoNot)
}

func testSessionsKeepStateStatelessCallsDoNot(t *testing.T, kind string) {
	p := newTestPool(t, sandboxConfig(kind))
	steps := []struct{ session, code, want string }{
		{"a", "x = 40\n_ = open('note', 'w').write('kept')", ""},
		{"b", "x = 1", ""},
		{"a", "x += 2\nx", "42\n"},
		{"b", "x", "1\n"},
		{"", "print('x' in globals())", "False\n"},
		{"a", "print(open('note').read(), input())", "kept line\n"},
	}
	for i, s := range steps {
		c := Call{Session: s.session, Code: s.code}
		if i == 5 {
			c.Stdin = "line\n"
		}
		r := run(t, p, c)
		if r.Status != StatusOK || r.Stdout != s.want {
			t.Fatalf("step %d (%q): %+v, want stdout %q", i, s.session, r, s.want)
		}
	}
	// An exception keeps the session; a timeout ends it and the next call starts fresh.
	if r := run(t, p, Call{Session: "a", Code: "1/0"}); r.Status != StatusError || !strings.HasPrefix(r.Stderr, "ZeroDivisionError at line 1") {
		t.Fatalf("error in session: %+v", r)
	}
	if r := run(t, p, Call{Session: "a", Code: "x"}); r.Stdout != "42\n" {
		t.Fatalf("session lost its state after an exception: %+v", r)
	}
	if r := run(t, p, Call{Session: "a", Code: "while True: pass", TimeoutS: 0.5}); r.Status != StatusTimeout {
		t.Fatalf("timeout in session: %+v", r)
	}
	if r := run(t, p, Call{Session: "a", Code: "print('x' in globals())"}); r.Stdout != "False\n" {
		t.Fatalf("a timed-out session kept its state: %+v", r)
	}
	// A memory bomb in a session is contained too.
	if r := run(t, p, Call{Session: "b", Code: "y = bytearray(2 * 1024**3)"}); r.Status != StatusMemory {
		t.Fatalf("memory bomb in a session: %+v", r)
	}
	p.CloseSession("b")
	if r := run(t, p, Call{Session: "b", Code: "print('x' in globals())"}); r.Stdout != "False\n" {
		t.Fatalf("a closed session kept its state: %+v", r)
	}
}

func TestSessionIdleTimeout(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	cfg := testConfig()
	cfg.Workers = 1
	cfg.SessionIdle = 300 * time.Millisecond
	p := newTestPool(t, cfg)
	run(t, p, Call{Session: "s", Code: "x = 1"})
	// The worker ends idle sessions after each message it handles (and once a second): wait just
	// past the limit, then a stateless call makes it look, before it reads the next message.
	time.Sleep(cfg.SessionIdle + 100*time.Millisecond)
	run(t, p, Call{Code: "pass"})
	r := run(t, p, Call{Session: "s", Code: "print('x' in globals())"})
	if r.Stdout != "False\n" {
		t.Fatalf("an idle session outlived its timeout: %+v", r)
	}
	if !strings.Contains(r.Stderr, "interpreter had ended (idle for more than 0.3s") {
		t.Errorf("stderr %q; want the reason the state is gone", r.Stderr)
	}
	// A later call of the same session, and a new session, say nothing.
	for _, c := range []Call{{Session: "s", Code: "x = 2"}, {Session: "t", Code: "y = 1"}} {
		if r := run(t, p, c); r.Status != StatusOK || r.Stderr != "" {
			t.Errorf("%+v: %s %q; want ok and a quiet stderr", c, r.Status, r.Stderr)
		}
	}
}

// With more live sessions than exec.sessions_per_worker, the least recently used one ends; its next
// call runs in a fresh interpreter and says why.
func TestSessionEvictionIsReported(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	cfg := testConfig()
	cfg.Workers = 1
	cfg.SessionsPerWorker = 1
	p := newTestPool(t, cfg)
	run(t, p, Call{Session: "a", Code: "x = 1"})
	run(t, p, Call{Session: "b", Code: "x = 2"}) // ends a
	r := run(t, p, Call{Session: "a", Code: "x"})
	if r.Status != StatusError || !strings.Contains(r.Stderr, "NameError") ||
		!strings.Contains(r.Stderr, "interpreter had ended (the least recently used of 1 live sessions on its worker") {
		t.Errorf("%s %q; want a NameError and the reason", r.Status, r.Stderr)
	}
}

// A zygote that dies is replaced; the stateless call it was serving is retried once.
func TestDeadZygoteIsRestarted(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	p := killMidCall(t, func(p *Pool) error { return p.slots[0].w.cmd.Process.Kill() })
	if r := run(t, p, Call{Code: "print(1)"}); r.Status != StatusOK {
		t.Fatalf("pool after a restart: %+v", r)
	}
}

// A template (the zygote process that forks the calls) that dies mid-call takes its worker down
// with it: the worker is restarted and the stateless call retried once, as for any dead zygote.
func TestDeadTemplateIsRestarted(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	killMidCall(t, func(p *Pool) error {
		return syscall.Kill(templatePID(t, p.slots[0].w.cmd.Process.Pid), syscall.SIGKILL)
	})
}

// killMidCall runs a 0.5 s call on a one-worker pool, kills part of the worker once the call runs, and
// checks that the call was retried to success after exactly one restart.
func killMidCall(t *testing.T, kill func(p *Pool) error) *Pool {
	t.Helper()
	cfg := testConfig()
	cfg.Workers = 1
	p := newTestPool(t, cfg)
	if r := run(t, p, Call{Code: "print(1)"}); r.Status != StatusOK {
		t.Fatalf("%+v", r)
	}
	done := make(chan Result, 1)
	go func() { done <- run(t, p, Call{Code: "import time\ntime.sleep(0.5)\nprint('done')"}) }()
	waitCalls(t, p, 1, 0)
	time.Sleep(100 * time.Millisecond) // into the call's sleep
	if err := kill(p); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.Status != StatusOK || r.Stdout != "done\n" {
		t.Fatalf("the retried call: %+v", r)
	}
	if n := p.Stats().Restarts(); n != 1 {
		t.Fatalf("restarts = %d, want 1", n)
	}
	return p
}

// templatePID finds, among the processes of a worker's process group, the Python process whose
// parent is Python too: the template, child of the supervisor.
func templatePID(t *testing.T, pgid int) int {
	t.Helper()
	type proc struct {
		ppid int
		comm string
	}
	procs := map[int]proc{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		f := strings.Fields(s[end+2:])
		ppid, _ := strconv.Atoi(f[1])
		if pg, _ := strconv.Atoi(f[2]); pg == pgid {
			procs[pid] = proc{ppid, s[open+1 : end]}
		}
	}
	for pid, pr := range procs {
		if parent, ok := procs[pr.ppid]; ok && strings.HasPrefix(pr.comm, "python") && strings.HasPrefix(parent.comm, "python") {
			return pid
		}
	}
	t.Fatalf("no template among the worker's processes %v", procs)
	return 0
}

// countSandboxProcesses counts the host processes that belong to pool p: those in its workers'
// process groups (bwrap and the zygotes) and those running as one of its uids (the calls), so
// that other pools on the machine do not disturb the count.
func countSandboxProcesses(t *testing.T, p *Pool, pgids map[int]bool) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if f[0] == "Z" {
			continue // exited, waiting for the sandbox's pid 1 to reap it (it does so on its own time)
		}
		if pg, _ := strconv.Atoi(f[2]); pgids[pg] {
			n++
			continue
		}
		status, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if fields := strings.Fields(line); len(fields) > 1 && fields[0] == "Uid:" {
				uid, _ := strconv.Atoi(fields[1])
				if uid >= p.uidBase && uid < p.uidBase+64*p.Workers() {
					n++
				}
			}
		}
	}
	return n
}

func TestNoProcessLeaks(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	forEachSandbox(t, testNoProcessLeaks)
}

func testNoProcessLeaks(t *testing.T, kind string) {
	if os.Geteuid() != 0 {
		t.Skip("process accounting by uid needs the root sandbox mode")
	}
	cfg := sandboxConfig(kind)
	p := newTestPool(t, cfg)
	pgids := map[int]bool{}
	for _, s := range p.slots {
		pgids[s.w.cmd.Process.Pid] = true
	}
	idle := countSandboxProcesses(t, p, pgids)
	if idle < p.Workers() {
		t.Fatalf("counted %d processes for %d workers", idle, p.Workers())
	}
	hostile := []string{
		// Leaves a daemon that holds no pipe: only the sweep after the call's exit can catch it.
		"import subprocess\nsubprocess.Popen(['sleep', '100'], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)",
		"import subprocess\nsubprocess.Popen(['sleep', '100'], start_new_session=True)",
		"import os\nif os.fork() == 0:\n    os.setsid()\n    import time\n    time.sleep(100)",
		"import os\nwhile True:\n    os.fork()",
		"import threading, time\nthreading.Thread(target=time.sleep, args=(100,), daemon=True).start()\nwhile True: pass",
	}
	for _, code := range hostile {
		r := run(t, p, Call{Code: code, TimeoutS: 0.5})
		if r.Status == StatusInternal {
			t.Fatalf("%q: %+v", code, r)
		}
		if n := countSandboxProcesses(t, p, pgids); n != idle {
			t.Errorf("%d sandbox processes after %q, %d when idle", n, code, idle)
		}
	}
	run(t, p, Call{Session: "s", Code: "import subprocess\nsubprocess.Popen(['sleep', '100'], start_new_session=True)"})
	p.CloseSession("s")
	run(t, p, Call{Code: "print(1)"})
	run(t, p, Call{Code: "print(1)"})
	if n := countSandboxProcesses(t, p, pgids); n != idle {
		t.Errorf("%d sandbox processes after a session ended, %d when idle", n, idle)
	}
	p.Close()
	deadline := time.Now().Add(5 * time.Second)
	for countSandboxProcesses(t, p, pgids) != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := countSandboxProcesses(t, p, pgids); n != 0 {
		t.Errorf("%d sandbox processes after Close", n)
	}
}

// With --sandbox=none a worker writes and wipes only its own private directory.
func TestSandboxNoneWipesOnlyItsOwnDirectory(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	testenv.Python3(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	sentinel := tmp + "/keep-me"
	if err := os.WriteFile(sentinel, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Sandbox = SandboxNone
	cfg.Workers = 1
	p, err := NewPool(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, p, Call{Code: "import os\nopen('left', 'w').write('x')\nprint(os.getcwd())"})
	if r.Status != StatusOK || !strings.HasPrefix(r.Stdout, tmp+"/gorstar-exec-worker-") {
		t.Fatalf("first call: %+v", r)
	}
	if r := run(t, p, Call{Code: "import os\nprint(os.listdir('.'))"}); r.Stdout != "[]\n" {
		t.Fatalf("second call saw the first one's file: %+v", r)
	}
	p.Close()
	if _, err := os.Stat(sentinel); err != nil {
		t.Fatalf("a file outside the worker's directory was removed: %v", err)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 1 {
		t.Fatalf("the worker's directory was left behind: %v", entries)
	}
}

// Forked calls must not share random streams.
func TestCallsDrawDifferentRandomNumbers(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	cfg := testConfig()
	cfg.Workers = 1
	cfg.Modules = append(cfg.Modules, "random", "numpy", "sympy")
	p := newTestPool(t, cfg)
	// Python's random, numpy's global generator and sympy's own (randprime), where installed.
	code := "import random\nr = [random.random()]\n" +
		"try:\n    import numpy\n    r.append(float(numpy.random.rand()))\nexcept ImportError:\n    pass\n" +
		"try:\n    import sympy\n    r.append(int(sympy.randprime(1, 10**15)))\nexcept ImportError:\n    pass\nprint(r)"
	a, b := run(t, p, Call{Code: code}), run(t, p, Call{Code: code})
	if a.Status != StatusOK || b.Status != StatusOK {
		t.Fatalf("%+v %+v", a, b)
	}
	as, bs := strings.Split(strings.Trim(a.Stdout, "[]\n"), ", "), strings.Split(strings.Trim(b.Stdout, "[]\n"), ", ")
	for i := range as {
		if i < len(bs) && as[i] == bs[i] {
			t.Errorf("stream %d: both calls drew %s", i, as[i])
		}
	}
}
