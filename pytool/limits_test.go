package pytool

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"gorstar/internal/testenv"
)

// Each hostile call must be contained with the right status and leave the pool serving.
func TestLimitsContainHostileCode(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	forEachSandbox(t, testLimitsContainHostileCode)
}

// hostBait leaves what a call must not reach on the host: a readable file in dir (its path) and a
// TCP server on 127.0.0.1 (its port; accepted receives when something connects), closed with t.
func hostBait(t *testing.T, dir string) (secret string, port int, accepted <-chan struct{}) {
	t.Helper()
	secret = filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(secret, []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			got <- struct{}{}
			c.Close()
		}
	}()
	return secret, ln.Addr().(*net.TCPAddr).Port, got
}

// libcCall is Python that calls libc through ctypes and raises OSError with errno when failed
// (a condition on the call's result) holds.
func libcCall(failed, name string) string {
	return fmt.Sprintf("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nif %s:\n    raise OSError(ctypes.get_errno(), %q)", failed, name)
}

// newUserNamespace is a call that makes a user namespace of its own (refused by the syscall filter).
var newUserNamespace = libcCall("libc.unshare(0x10000000) != 0", "unshare")

func testLimitsContainHostileCode(t *testing.T, kind string) {
	p := newTestPool(t, sandboxConfig(kind))
	if runtime.GOARCH == "amd64" && !p.slots[0].w.filter {
		t.Error("no syscall filter in the sandbox on amd64")
	}
	secret, port, accepted := hostBait(t, t.TempDir())
	wd, _ := os.Getwd()
	target := filepath.Join(wd, "sandbox-escape.txt")

	cases := []struct {
		name   string
		code   string
		status Status
		check  func(t *testing.T, r Result)
	}{
		{"infinite loop", "while True:\n    pass", StatusTimeout, nil},
		{"sleep past the timeout", "import time\ntime.sleep(60)", StatusTimeout, nil},
		{"signals ignored", "import signal, time\nfor s in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM):\n    signal.signal(s, signal.SIG_IGN)\nwhile True: pass", StatusTimeout, nil},
		{"memory bomb", "x = bytearray(2 * 1024**3)", StatusMemory, nil},
		{"memory bomb list", "x = []\nwhile True:\n    x.append('a' * 10**6)", StatusMemory, nil},
		{"fork bomb", "import os\nwhile True:\n    os.fork()", StatusError, nil},
		{"thread bomb", "import threading, time\nfor i in range(1000):\n    threading.Thread(target=time.sleep, args=(30,)).start()", StatusError, nil},
		{"output flood", "while True:\n    print('x' * 1000)", StatusOutputLimit, nil},
		{"big output under the cap", "print('y' * 5000)", StatusOK, func(t *testing.T, r Result) {
			if r.StdoutChars != 5001 || len(r.Stdout) != 1000 {
				t.Errorf("stdout chars %d (kept %d), want 5001 kept 1000", r.StdoutChars, len(r.Stdout))
			}
		}},
		{"kill the parent", "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)", StatusError, nil},
		// ESRCH where the call's own processes are all there is to signal (the namespace sandbox).
		{"kill everything it may", "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept ProcessLookupError:\n    pass\nprint('still here')", StatusOK, nil},
		{"kill init", "import os, signal\nos.kill(1, signal.SIGKILL)", StatusError, nil},
		{"read a host file", fmt.Sprintf("print(open(%q).read())", secret), StatusError, func(t *testing.T, r Result) {
			if strings.Contains(r.Stdout, "host secret") {
				t.Error("the host file was readable")
			}
		}},
		{"read host passwd", "print(open('/etc/passwd').read())", StatusError, nil},
		{"list home", "import os\nprint(os.listdir('/root'))\nprint(os.listdir('/home'))", StatusError, nil},
		{"write the working tree", fmt.Sprintf("open(%q, 'w').write('x')", target), StatusError, nil},
		{"write the system", "open('/usr/evil', 'w').write('x')", StatusError, nil},
		{"socket to the host", fmt.Sprintf("import socket\ns = socket.create_connection(('127.0.0.1', %d), timeout=1)", port), StatusError, nil},
		{"big file", "open('/tmp/big', 'wb').write(b'0' * (64 << 20))", StatusError, func(t *testing.T, r Result) {
			if !strings.Contains(r.Stderr, "File too large") {
				t.Errorf("not stopped by the file size limit: %q", r.Stderr)
			}
		}},
		// /tmp is memory: many files under the size limit fill it up to exec.tmp_mb (32 MB here),
		// and the next call has all of it again.
		{"fill /tmp", "for i in range(8):\n    open('/tmp/f%d' % i, 'wb').write(b'0' * (15 << 20))", StatusError, func(t *testing.T, r Result) {
			if !strings.Contains(r.Stderr, "No space left on device") {
				t.Errorf("stderr %q, want No space left on device", r.Stderr)
			}
			if r := run(t, p, Call{Code: "open('/tmp/g', 'wb').write(b'0' * (15 << 20))\nprint('room')"}); r.Status != StatusOK || r.Stdout != "room\n" {
				t.Errorf("the next call had no room in /tmp: %+v", r)
			}
		}},
		{"setuid back to root", "import os\nos.setuid(0)", StatusError, nil},
		{"write the root", "open('/evil', 'w').write('x')", StatusError, nil},
		{"write /proc/sys", "open('/proc/sys/kernel/hostname', 'w').write('host')", StatusError, nil},
		{"the host's root through pid 1", "import os\nprint(os.listdir('/proc/1/root/'))", StatusError, nil},
		// The syscall filter (x86-64): PTRACE_TRACEME, a new user namespace, clone into new
		// namespaces and io_uring are refused; threads and subprocesses (clone3 → clone) still work.
		{"ptrace", libcCall("libc.ptrace(0, 0, None, None) != 0", "ptrace"), StatusError, nil},
		{"new user namespace", newUserNamespace, StatusError, nil},
		{"clone into a new namespace", "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nr = libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)\nif r == 0:\n    os._exit(0)\nif r < 0:\n    raise OSError(ctypes.get_errno(), 'clone')\nos.waitpid(r, 0)", StatusError, nil},
		{"io_uring", libcCall("libc.syscall(425, 8, ctypes.create_string_buffer(120)) < 0", "io_uring_setup"), StatusError, nil},
		{"threads and subprocesses", "import threading, subprocess\nt = threading.Thread(target=print, args=('thread',))\nt.start()\nt.join()\nprint(subprocess.run(['true']).returncode)", StatusOK, func(t *testing.T, r Result) {
			if r.Stdout != "thread\n0\n" {
				t.Errorf("stdout %q", r.Stdout)
			}
		}},
		{"mount", libcCall("libc.mount(b'none', b'/usr', b'tmpfs', 0, None) != 0", "mount"), StatusError, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "fill /tmp" && p.sb.kind == SandboxBwrap && !p.sb.bwrapSize {
				t.Skip("this bwrap cannot bound /tmp (--size needs bubblewrap 0.7+)")
			}
			start := time.Now()
			timeout := 5.0 // generous: the machine may be busy
			if tc.status == StatusTimeout {
				timeout = 1
			}
			r := run(t, p, Call{Code: tc.code, TimeoutS: timeout})
			if r.Status != tc.status {
				t.Fatalf("status %q, want %q (exit %d, stdout %q, stderr %q)", r.Status, tc.status, r.ExitCode,
					Cut(r.Stdout, 200), Cut(r.Stderr, 400))
			}
			if tc.check != nil {
				tc.check(t, r)
			}
			t.Logf("%s in %s: %s", r.Status, time.Since(start).Round(time.Millisecond), Cut(r.ToolText(0), 120))
			// The pool still serves, on both workers.
			for i := 0; i < 2; i++ {
				if ok := run(t, p, Call{Code: "print('alive')"}); ok.Status != StatusOK || ok.Stdout != "alive\n" {
					t.Fatalf("pool broken after %s: %+v", tc.name, ok)
				}
			}
		})
	}
	if _, err := os.Stat(target); err == nil {
		os.Remove(target)
		t.Error("the sandbox wrote into the working tree")
	}
	select {
	case <-accepted:
		t.Error("the sandbox reached a server on the host's 127.0.0.1")
	default:
	}
}

// No file or variable left by one call is visible to the next.
func TestStatelessCallsShareNothing(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	forEachSandbox(t, testStatelessCallsShareNothing)
}

func testStatelessCallsShareNothing(t *testing.T, kind string) {
	cfg := sandboxConfig(kind)
	cfg.Workers = 1
	p := newTestPool(t, cfg)
	r := run(t, p, Call{Code: "import os\nsecret = 42\nopen('/tmp/left', 'w').write('x')\nos.makedirs('/tmp/d/e')\nopen('/tmp/d/e/f', 'w').write('y')\nos.chmod('/tmp/d', 0o500)\nimport math\nmath.pi = 3\ntry:\n    open('/dev/shm/left', 'w').write('x')\nexcept OSError:\n    pass"})
	if r.Status != StatusOK {
		t.Fatalf("first call: %+v", r)
	}
	r = run(t, p, Call{Code: "import os, math\nprint(os.listdir('/tmp'), 'secret' in globals(), math.pi, os.path.exists('/dev/shm/left'))"})
	if r.Status != StatusOK || r.Stdout != "[] False 3.141592653589793 False\n" {
		t.Fatalf("second call saw the first one's state: %+v", r)
	}
}
