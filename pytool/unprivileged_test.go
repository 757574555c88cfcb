package pytool

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gorstar/internal/testenv"
)

// unprivilegedEnv names the sandbox TestUnprivilegedChild runs in; TestUnprivilegedSandbox sets it.
const unprivilegedEnv = "GORSTAR_TEST_UNPRIVILEGED"

// The sandboxes as an ordinary user (a laptop, not a container's root): no uid per call and no
// RLIMIT_NPROC, the rest must hold. Run as root, this test starts a copy of the test binary as
// nobody (uid 65534), which runs TestUnprivilegedChild with Debian's python3 in each sandbox.
func TestUnprivilegedSandbox(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	if os.Geteuid() != 0 {
		testenv.Skip(t, "root", "to start the check as another user", "")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testenv.Skip(t, testenv.SystemPython, "an interpreter outside root's home", "apt-get install python3")
	}
	dir, err := os.MkdirTemp("", "gorstar-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "exec.test")
	if err := copyExecutable(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{SandboxBwrap, SandboxNamespaces} {
		t.Run(kind, func(t *testing.T) {
			if kind == SandboxBwrap && !BwrapAvailable() {
				testenv.Skip(t, "bwrap", "not on PATH", "apt-get install bubblewrap")
			}
			cmd := exec.Command(bin, "-test.run", "^TestUnprivilegedChild$", "-test.v", "-test.count=1")
			cmd.Dir = dir
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + dir, "LANG=C.UTF-8", unprivilegedEnv + "=" + kind}
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			out, err := cmd.CombinedOutput()
			switch {
			case strings.Contains(string(out), "--- SKIP"):
				t.Skipf("as nobody: %s", lastLines(string(out), 3))
			case err != nil:
				t.Fatalf("as nobody, %s sandbox: %v\n%s", kind, err, lastLines(string(out), 40))
			}
			t.Log(lastLines(string(out), 2))
		})
	}
}

// TestUnprivilegedChild is the check itself; it runs only when TestUnprivilegedSandbox starts it.
func TestUnprivilegedChild(t *testing.T) {
	kind := os.Getenv(unprivilegedEnv)
	if kind == "" {
		t.Skip("started by TestUnprivilegedSandbox")
	}
	if os.Geteuid() == 0 {
		t.Fatal("running as root")
	}
	if kind == SandboxBwrap {
		if out, err := exec.Command("bwrap", "--unshare-user", "--ro-bind", "/", "/", "true").CombinedOutput(); err != nil {
			t.Skipf("this kernel or container gives ordinary users no user namespaces: bwrap: %v %s", err, out)
		}
	}
	cfg := sandboxConfig(kind)
	cfg.Python = "/usr/bin/python3"
	cfg.Workers = 1
	p := newTestPool(t, cfg)

	dir, _ := os.Getwd()
	secret, port, accepted := hostBait(t, dir)
	cases := []struct {
		name, code string
		status     Status
		stdout     string
	}{
		{"harness", "import os\nprint(os.getuid() != 0)\n6 * 7", StatusOK, "True\n42\n"},
		{"no capabilities", "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])", StatusOK, "0000000000000000\n"},
		{"infinite loop", "while True: pass", StatusTimeout, ""},
		{"memory bomb", "x = bytearray(2 * 1024**3)", StatusMemory, ""},
		{"output flood", "while True: print('x' * 1000)", StatusOutputLimit, ""},
		// RLIMIT_NPROC counts per user namespace (Linux 5.14+): the call's allowance on top of
		// the sandbox's own processes, though all share one uid.
		{"fork bomb", "import os\nwhile True:\n    os.fork()", StatusError, ""},
		{"thread bomb", "import threading, time\nfor i in range(1000):\n    threading.Thread(target=time.sleep, args=(30,)).start()", StatusError, ""},
		{"new user namespace", newUserNamespace, StatusError, ""},
		{"processes within the allowance", "import subprocess\nprint(subprocess.run(['true']).returncode)", StatusOK, "0\n"},
		{"read a host file", fmt.Sprintf("print(open(%q).read())", secret), StatusError, ""},
		{"write the host directory", fmt.Sprintf("open(%q, 'w').write('x')", filepath.Join(dir, "escape.txt")), StatusError, ""},
		{"socket to the host's loopback", fmt.Sprintf("import socket\nsocket.create_connection(('127.0.0.1', %d), timeout=1)", port), StatusError, ""},
		{"leave a file", "open('/tmp/left', 'w').write('x')", StatusOK, ""},
		{"find no file", "import os\nprint(os.path.exists('/tmp/left'))", StatusOK, "False\n"},
	}
	for _, c := range cases {
		r := run(t, p, Call{Code: c.code, TimeoutS: 1})
		if r.Status != c.status || (c.stdout != "" && r.Stdout != c.stdout) {
			t.Errorf("%s: %+v, want status %s, stdout %q", c.name, r, c.status, c.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "escape.txt")); err == nil {
		t.Error("a call wrote into the host directory")
	}
	select {
	case <-accepted:
		t.Error("a call reached a server on the host's 127.0.0.1")
	case <-time.After(100 * time.Millisecond):
	}
	// Here a call may end its own zygote (same uid): the worker is restarted, the pool serves on.
	run(t, p, Call{Code: "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)", TimeoutS: 1})
	if r := run(t, p, Call{Code: "print('after')"}); r.Status != StatusOK || r.Stdout != "after\n" {
		t.Errorf("after a call killed its parent: %+v", r)
	}
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
