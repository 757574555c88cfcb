//go:build linux

package pytool

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"gorstar/internal/testenv"
)

// auto is bwrap when it is on PATH (and bounds /tmp with --size), gorstar's own namespaces when it is not.
func TestAutoPicksBwrapThenNamespaces(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	exe, _, err := ResolvePython("python3")
	if err != nil {
		testenv.Skip(t, "python3", err.Error(), "apt-get install python3")
	}
	if BwrapAvailable() {
		sb, _, err := chooseSandbox(SandboxAuto, exe)
		if err != nil || sb.kind != SandboxBwrap || !sb.bwrapSize || !strings.Contains(strings.Join(sb.bwrapArgs(nil), " "), "--size") {
			t.Fatalf("auto with bwrap on PATH: %+v, %v", sb, err)
		}
	}
	t.Setenv("PATH", t.TempDir()) // no bwrap; the interpreter is resolved already
	if _, _, err := chooseSandbox(SandboxBwrap, exe); err == nil || !strings.Contains(err.Error(), "bwrap not found") {
		t.Fatalf("bwrap asked for and absent: %v", err)
	}
	sb, _, err := chooseSandbox(SandboxAuto, exe)
	if err != nil {
		if !errors.Is(err, ErrNoSandbox) {
			t.Fatalf("auto without bwrap nor namespaces: want ErrNoSandbox, got %v", err)
		}
		testenv.Sandbox(t, err)
	}
	if sb.kind != SandboxNamespaces {
		t.Fatalf("auto without bwrap picked %q", sb.kind)
	}
	cfg := testConfig()
	cfg.Python, cfg.Workers = exe, 1
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := NewPool(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Sandbox() != SandboxNamespaces {
		t.Fatalf("pool sandbox %q", p.Sandbox())
	}
	r := run(t, p, Call{Code: "import socket\nprint(socket.gethostname())"})
	if r.Status != StatusOK || r.Stdout != "sandbox\n" {
		t.Fatalf("%+v", r)
	}
}

// auto takes a bwrap that can bound /tmp (--size, bubblewrap 0.7+: TestAutoPicksBwrapThenNamespaces);
// an older one only when gorstar's own namespaces are not available, and then without the bound.
func TestAutoPassesOverBwrapWithoutSize(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	exe, _, err := ResolvePython("python3")
	if err != nil {
		testenv.Skip(t, "python3", err.Error(), "apt-get install python3")
	}
	dir := t.TempDir()
	old := "#!/bin/sh\necho 'usage: bwrap [OPTIONS...] [--] COMMAND [ARGS...]'\necho '    --tmpfs DEST   Mount new tmpfs on DEST'\n"
	if err := os.WriteFile(dir+"/bwrap", []byte(old), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if bwrapHasSize(dir + "/bwrap") {
		t.Fatal("an old bwrap's help has no --size")
	}
	sb, _, err := chooseSandbox(SandboxBwrap, exe)
	if err != nil || sb.bwrapSize || strings.Contains(strings.Join(sb.bwrapArgs(nil), " "), "--size") {
		t.Fatalf("an old bwrap asked for: %+v, %v", sb, err)
	}
	sb, _, err = chooseSandbox(SandboxAuto, exe)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, nsErr := chooseSandbox(SandboxNamespaces, exe); nsErr == nil && sb.kind != SandboxNamespaces {
		t.Fatalf("auto with an old bwrap and namespaces available picked %q", sb.kind)
	} else if nsErr != nil && sb.kind != SandboxBwrap {
		t.Fatalf("auto with an old bwrap and no namespaces picked %q", sb.kind)
	}
}

// A failing step of the init says which one, on one line, and exits 127.
func TestNamespaceInitNamesTheFailedStep(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	exe, prefixes, err := ResolvePython("python3")
	if err != nil {
		testenv.Skip(t, "python3", err.Error(), "apt-get install python3")
	}
	sb := &sandbox{kind: SandboxNamespaces, python: exe, asRoot: os.Geteuid() == 0}
	if err := sb.probeNamespaces(prefixes); err != nil {
		testenv.Sandbox(t, err)
	}
	// The host's /etc/passwd is not in the sandbox.
	cmd, err := sb.nsCommand(prefixes, "/etc/passwd", []string{"x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 127 {
		t.Fatalf("want exit 127, got %v (stderr %q)", err, stderr.String())
	}
	if got := stderr.String(); !strings.HasPrefix(got, "gorstar namespace sandbox: exec /etc/passwd: ") ||
		strings.Count(got, "\n") != 1 {
		t.Fatalf("stderr %q", got)
	}
}

// Set by hand outside a new pid namespace, the variable changes nothing on the host.
func TestNamespaceInitRefusesOutsideItsNamespace(t *testing.T) {
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = []string{nsInitEnv + `={"path": "/bin/true", "argv": ["true"]}`}
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 127 || !strings.Contains(string(out), "not a new pid namespace") {
		t.Fatalf("want exit 127 and a refusal, got %v: %q", err, out)
	}
}
