package pytool

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorstar/internal/testenv"
)

// TestTemplateKeepsHugePages checks what fork_wait is for: a template that writes nothing while
// its call's child lives keeps its heap in 2 MiB pages, call after call (a write then would split
// the page the child still shares, and every later fork would copy 512 entries for it). It reads
// the template's AnonHugePages from the host's /proc around 40 stateless calls.
func TestTemplateKeepsHugePages(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	forEachSandbox(t, testTemplateKeepsHugePages)
}

func testTemplateKeepsHugePages(t *testing.T, kind string) {
	cfg := sandboxConfig(kind)
	cfg.Workers = 1
	cfg.Modules = DefaultOptions().Modules // a heap of some size: sympy and numpy where installed
	p := newTestPool(t, cfg)
	w := p.slots[0].w
	if runtime.GOARCH == "amd64" && w.fork != "native" {
		t.Errorf("the template forks stateless calls with %q, want native on amd64", w.fork)
	}
	tpl := templatePID(t, w.cmd.Process.Pid)
	before := anonHugeKB(t, tpl)
	if before == 0 {
		t.Skip("the template has no transparent huge pages here (THP off, or a small heap)")
	}
	for i := 0; i < 40; i++ {
		if r := run(t, p, Call{Code: "x = [str(i) for i in range(100)]\nprint(len(x))"}); r.Status != StatusOK {
			t.Fatalf("call %d: %+v", i, r)
		}
	}
	if after := anonHugeKB(t, tpl); after < before {
		t.Errorf("the template's huge pages went from %d KiB to %d KiB over 40 calls: it wrote while a child lived",
			before, after)
	}
}

func anonHugeKB(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"))
	if err != nil {
		t.Skipf("smaps_rollup: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "AnonHugePages:" {
			kb, _ := strconv.Atoi(f[1])
			return kb
		}
	}
	return 0
}

// TestPythonForkFallback runs the harness cases through the template's Python fork-and-wait, the
// path taken where the native one is not available: results must not depend on which is used.
func TestPythonForkFallback(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	pythonForkForTests = true
	t.Cleanup(func() { pythonForkForTests = false })
	forEachSandbox(t, func(t *testing.T, kind string) {
		p := newTestPool(t, sandboxConfig(kind))
		if w := p.slots[0].w; w.fork != "python" {
			t.Fatalf("the template forks with %q, want python", w.fork)
		}
		checkHarnessSemantics(t, p)
	})
}

// TestPortableZygote runs the harness cases, sessions and a timeout through the zygote as it runs
// outside Linux (macOS's Seatbelt sandbox starts it the way --sandbox=none does): datagram
// sockets to the template, children found by polling, no /proc. Results must be the same.
func TestPortableZygote(t *testing.T) {
	portableForTests = true
	t.Cleanup(func() { portableForTests = false })
	p := newTestPool(t, sandboxConfig(SandboxNone))
	checkHarnessSemantics(t, p)
	ctx := context.Background()
	if r := p.Run(ctx, Call{Code: "x = 41", Session: "s"}); r.Status != StatusOK {
		t.Fatalf("session call: %+v", r)
	}
	if r := p.Run(ctx, Call{Code: "print(x + 1)", Session: "s"}); r.Status != StatusOK || r.Stdout != "42\n" {
		t.Fatalf("session's second call: %+v", r)
	}
	start := time.Now()
	if r := p.Run(ctx, Call{Code: "while True: pass", TimeoutS: 0.3}); r.Status != StatusTimeout {
		t.Fatalf("a busy loop with a 0.3 s limit: %+v", r)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the 0.3 s limit took %v to end the call", d)
	}
}
