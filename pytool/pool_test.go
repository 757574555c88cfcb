package pytool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"gorstar/internal/testenv"
)

// testConfig is a small, fast pool: two workers, only cheap modules. Its limits are generous, so
// that no call fails because the machine is busy: a test of a timeout sets the call's own.
func testConfig() Options {
	cfg := DefaultOptions()
	cfg.Workers = 2
	cfg.Modules = []string{"math", "itertools", "fractions"}
	cfg.Timeout = 30 * time.Second
	cfg.CPUSeconds = 30
	cfg.QueueSize = 64
	cfg.TmpMB = 32 // above max_file_mb (16), so that "big file" still meets the file size limit first
	return cfg
}

// testSandboxEnv, when set (bwrap or namespaces), is the sandbox the tests that leave
// exec.sandbox at auto use instead: GORSTAR_TEST_SANDBOX=namespaces on a machine with bubblewrap
// runs them the way a machine without it does.
const testSandboxEnv = "GORSTAR_TEST_SANDBOX"

// newTestPool starts a pool through the real sandbox cfg.Sandbox names — for auto, whichever
// the machine has (bwrap, else gorstar's namespaces), as gorstar itself picks — or skips when
// python3 or that sandbox is absent.
func newTestPool(t testing.TB, cfg Options, opts ...PoolOption) *Pool {
	t.Helper()
	testenv.Short(t, "starts sandboxed Python")
	testenv.Python3(t)
	if forced := os.Getenv(testSandboxEnv); forced != "" && (cfg.Sandbox == SandboxAuto || cfg.Sandbox == "") {
		cfg.Sandbox = forced
	}
	switch cfg.Sandbox {
	case SandboxNamespaces:
		if _, _, err := chooseSandbox(SandboxNamespaces, cfg.Python); err != nil {
			testenv.Skip(t, "gorstar's namespace sandbox", err.Error(), "allow unprivileged user namespaces")
		}
	case SandboxBwrap:
		if !BwrapAvailable() {
			testenv.Skip(t, "bwrap", "not on PATH; the namespaces variant of this test runs without it", "apt-get install bubblewrap")
		}
	case SandboxAuto, "":
		if _, _, err := chooseSandbox(SandboxAuto, cfg.Python); err != nil {
			testenv.Sandbox(t, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := NewPool(ctx, cfg, opts...)
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// forEachSandbox runs test once per sandbox, bwrap and gorstar's own namespaces, as subtests
// named after them (each skips where its sandbox is not available).
func forEachSandbox(t *testing.T, test func(t *testing.T, kind string)) {
	testenv.Short(t, "starts sandboxed Python")
	for _, kind := range []string{SandboxBwrap, SandboxNamespaces} {
		t.Run(kind, func(t *testing.T) { test(t, kind) })
	}
}

// sandboxConfig is testConfig in the given sandbox.
func sandboxConfig(kind string) Options {
	cfg := testConfig()
	cfg.Sandbox = kind
	return cfg
}

func run(t testing.TB, p Runner, c Call) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return p.Run(ctx, c)
}

func TestHarnessSemantics(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	forEachSandbox(t, testHarnessSemantics)
}

func testHarnessSemantics(t *testing.T, kind string) {
	checkHarnessSemantics(t, newTestPool(t, sandboxConfig(kind)))
}

// TestFreshRunnerHarness runs the harness cases through the bench's baseline, which runs
// harness.py alone in a fresh interpreter per call: the bench compares designs, not harnesses.
func TestFreshRunnerHarness(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	f, err := NewFreshRunner(testConfig(), 2)
	if err != nil {
		t.Fatal(err)
	}
	checkHarnessSemantics(t, f)
}

// checkHarnessSemantics runs the harness cases on p.
func checkHarnessSemantics(t *testing.T, p Runner) {
	cases := []struct {
		name, code, stdin string
		status            Status
		stdout, stderr    string
	}{
		{"print", "print(1+1)", "", StatusOK, "2\n", ""},
		{"last expression repr", "x = 'a'\nx * 3", "", StatusOK, "'aaa'\n", ""},
		{"last expression None", "None", "", StatusOK, "", ""},
		{"print and expression", "print('hi')\n[1, 2]", "", StatusOK, "hi\n[1, 2]\n", ""},
		{"stdin", "import sys\nprint(sys.stdin.read().upper())", "abc", StatusOK, "ABC\n", ""},
		{"input", "a = int(input())\nb = int(input())\na + b", "3\n4\n", StatusOK, "7\n", ""},
		{"exception", "x = 1\ny = x / 0\n", "", StatusError, "", "ZeroDivisionError at line 2: division by zero\n    y = x / 0\n"},
		{"exception in function", "def f():\n    return [][1]\nf()", "", StatusError, "", "IndexError at line 2: list index out of range\n    return [][1]\n"},
		{"syntax error", "x = (1,\nprint(x)", "", StatusError, "", "SyntaxError at line 1"},
		{"exit code", "import sys\nsys.exit(3)", "", StatusError, "", ""},
		{"exit zero", "import sys\nprint('a')\nsys.exit(0)", "", StatusOK, "a\n", ""},
		{"preimported module", "import math\nmath.comb(10, 3)", "", StatusOK, "120\n", ""},
		{"empty code", "", "", StatusOK, "", ""},
		{"unicode", "print('π ≈', 3.14)", "", StatusOK, "π ≈ 3.14\n", ""},
		// A compile-time warning is output (the supervisor leaves such code to the child), and
		// warnings at run time are not errors.
		{"compile-time warning", "x = 1\nprint(x is 1)", "", StatusOK, "True\n", "<code>:2: SyntaxWarning: \"is\" with a literal"},
		{"run-time warning", "import warnings\nwarnings.warn('careful')\nprint('after')", "", StatusOK, "after\n",
			"<code>:2: UserWarning: careful"},
		// Past the size of one request to the template: the source goes in a memfd.
		{"large source", strings.Repeat("# padding\n", 20000) + "print('end')\n1/0", "", StatusError, "end\n",
			"ZeroDivisionError at line 20002: division by zero\n    1/0\n"},
		// Compiled by the supervisor into more than one request holds: compiled in the child.
		{"large compiled code", manyAssignments(4500) + "print(v4499)", "", StatusOK, "4499\n", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, p, Call{Code: tc.code, Stdin: tc.stdin})
			if r.Status != tc.status {
				t.Fatalf("status %q, want %q (stdout %q, stderr %q)", r.Status, tc.status, r.Stdout, r.Stderr)
			}
			if r.Stdout != tc.stdout {
				t.Errorf("stdout %q, want %q", r.Stdout, tc.stdout)
			}
			if !strings.HasPrefix(r.Stderr, tc.stderr) {
				t.Errorf("stderr %q, want prefix %q", r.Stderr, tc.stderr)
			}
		})
	}
}

// manyAssignments is n lines "v<i> = <i>" (~56 KB of source for 4500, whose code objects marshal
// to ~110 KB, more than a template request carries).
func manyAssignments(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "v%d = %d\n", i, i)
	}
	return b.String()
}

// Workers that fail to start are reported in one line: how many, and the first reason.
// TestOnWorkerStarted: the callback hears of every worker once, counting up to the pool's size
// (2 per core when exec.workers is 0), before NewPool returns.
func TestOnWorkerStarted(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	cfg := testConfig()
	cfg.Workers = 0
	var got []int
	total := -1
	p := newTestPool(t, cfg, OnWorkerStarted(func(done, n int) {
		got = append(got, done)
		total = n
	}))
	want := p.Workers()
	if want != 2*runtime.NumCPU() || total != want || len(got) != want {
		t.Fatalf("pool of %d workers (want %d): callback %d times, total %d", want, 2*runtime.NumCPU(), len(got), total)
	}
	for i, d := range got {
		if d != i+1 {
			t.Fatalf("callback counts %v, want 1..%d", got, want)
		}
	}
}

func TestStartFailuresOneLine(t *testing.T) {
	bad := errors.New("start zygote: not ready after 2 minutes")
	for _, c := range []struct {
		errs []error
		want string
	}{
		{[]error{nil, nil}, ""},
		{[]error{nil, bad}, bad.Error()},
		{[]error{bad, nil, bad}, "2 of 3 workers failed to start, the first: " + bad.Error()},
	} {
		err := startFailures(c.errs)
		if got := fmt.Sprint(err); (err == nil) != (c.want == "") || (err != nil && got != c.want) {
			t.Errorf("startFailures(%v) = %v, want %q", c.errs, err, c.want)
		}
	}
}

// TestIdlePriority: with exec.priority = "idle", or "auto" beside an engine (BesideEngine), a call
// runs under SCHED_IDLE (5) in an autogroup of nice 19 (where the kernel has autogroups), in every
// sandbox and for sessions too; with "normal", or "auto" alone, under the normal policy (0) at
// nice 0.
func TestIdlePriority(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	const code = "import os\nprint(os.sched_getscheduler(0))\ntry:\n    print(open('/proc/self/autogroup').read().split()[-1])\nexcept OSError:\n    print('-')"
	_, err := os.Stat("/proc/self/autogroup")
	autogroups := err == nil
	forEachSandbox(t, func(t *testing.T, kind string) {
		for _, c := range []struct {
			prio   string
			beside bool
			idle   bool
		}{{"normal", true, false}, {"idle", false, true}, {"auto", false, false}, {"auto", true, true}} {
			cfg := sandboxConfig(kind)
			cfg.Workers = 1
			cfg.Priority = c.prio
			p := newTestPool(t, cfg, BesideEngine(c.beside))
			want := map[bool]string{false: "0\n0", true: "5\n19"}[c.idle]
			if !autogroups {
				want = want[:1] + "\n-"
			}
			for _, session := range []string{"", "s1"} {
				r := run(t, p, Call{Code: code, Session: session})
				if r.Status != StatusOK || strings.TrimSpace(r.Stdout) != want {
					t.Errorf("priority %s (beside an engine: %v), session %q: %s %q %q; want policy and nice %q",
						c.prio, c.beside, session, r.Status, r.Stdout, r.Stderr, want)
				}
			}
			p.Close()
		}
	})
}

// TestTimeoutExcludesWaitForCPU: a call's time limit does not count the time it waited for a
// core. Under exec.priority = "idle", with every core kept busy by this process for 1.5 s, a call
// of ~25 ms of CPU and a limit of 0.5 s runs to its end (its deadline moved on by its waits), for
// a stateless call and a session call alike — or, where other work keeps the machine busy past the
// grant of 10 limits (a CI runner's other test packages), times out saying how much wait was not
// counted; a call sleeping past the limit still times out, since sleeping is not waiting for a core.
// The work is a twentieth of the limit because a VM's stolen time counts as run time.
func TestTimeoutExcludesWaitForCPU(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	if _, err := os.Stat("/proc/self/schedstat"); err != nil {
		t.Skip("no /proc/PID/schedstat on this kernel: the limit is plain wall clock")
	}
	forEachSandbox(t, func(t *testing.T, kind string) {
		cfg := sandboxConfig(kind)
		cfg.Workers = 1
		cfg.Priority = "idle"
		p := newTestPool(t, cfg)
		const work = "n = 0\nfor i in range(500_000):\n    n += i\nprint(n)"
		for _, session := range []string{"", "s1"} {
			if session != "" {
				run(t, p, Call{Code: "x = 1", Session: session}) // the session's interpreter is up
			}
			stop := hogCores(1500 * time.Millisecond)
			r := run(t, p, Call{Code: work, Session: session, TimeoutS: 0.5})
			stop()
			finished := r.Status == StatusOK && strings.TrimSpace(r.Stdout) == "124999750000"
			granted := r.Status == StatusTimeout && strings.Contains(r.Stderr, "not counting")
			if !finished && !granted {
				t.Errorf("session %q, busy machine: %s %q %q (%.0f ms); want the sum, the waits not counted",
					session, r.Status, r.Stdout, r.Stderr, r.DurationMS)
			}
			stop = hogCores(1500 * time.Millisecond)
			r = run(t, p, Call{Code: "import time\ntime.sleep(30)", Session: session, TimeoutS: 0.5})
			stop()
			if r.Status != StatusTimeout || !strings.Contains(r.Stderr, "Timed out after 500ms") {
				t.Errorf("session %q, sleeping past the limit: %s %q (%.0f ms); want a timeout", session, r.Status, r.Stderr, r.DurationMS)
			}
		}
	})
}

// hogCores keeps one thread more than there are cores spinning for d (or until the returned stop).
func hogCores(d time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range runtime.NumCPU() + 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			end := time.Now().Add(d)
			for time.Now().Before(end) {
				select {
				case <-done:
					return
				default:
				}
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}
