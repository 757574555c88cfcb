package pytool

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"gorstar/internal/usererr"
)

// Sandbox kinds.
const (
	SandboxAuto       = "auto"
	SandboxBwrap      = "bwrap"
	SandboxNamespaces = "namespaces" // gorstar's own namespaces, when bwrap is not installed
	SandboxNone       = "none"
)

// ErrNoSandbox is returned when no sandbox is available and the user did not opt out.
var ErrNoSandbox = errors.New("no sandbox available: install bubblewrap (apt-get install bubblewrap) " +
	"or allow namespaces, or pass --sandbox=none to run untrusted code WITHOUT isolation")

// sandbox is how a zygote is started: the argv prefix that wraps the interpreter.
type sandbox struct {
	kind   string // bwrap, namespaces or none
	bwrap  string // path of bwrap
	python string // real path of the interpreter
	asRoot bool   // children can drop to their own uids (we are root)
	tmpMB  int    // size of each worker's /tmp, a tmpfs (memory): exec.tmp_mb
	// bwrapSize: bwrap can bound /tmp (--size: bubblewrap 0.7+, and not a setuid bwrap, which
	// refuses it). Without it bwrap's /tmp is bounded only by the file size limit per file.
	bwrapSize bool
}

// ResolvePython returns the real path of an interpreter and its installation prefixes, following
// shims (pyenv's are shell scripts) by asking the interpreter itself.
func ResolvePython(python string) (exe string, prefixes []string, err error) {
	if python == "" {
		python = "python3"
	}
	path, err := exec.LookPath(python)
	if err != nil {
		return "", nil, usererr.New("exec.python: interpreter %q not found: %v", python, err)
	}
	out, err := exec.Command(path, "-I", "-c",
		"import sys; print(sys.executable); print(sys.base_prefix); print(sys.prefix)").Output()
	if err != nil {
		return "", nil, usererr.New("exec.python: %s does not run: %v", path, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 || lines[0] == "" {
		return "", nil, fmt.Errorf("resolve python %s: unexpected answer %q", path, out)
	}
	exe, err = filepath.EvalSymlinks(lines[0])
	if err != nil {
		return "", nil, fmt.Errorf("resolve python %s: %w", lines[0], err)
	}
	for _, p := range lines[1:] {
		if real, err := filepath.EvalSymlinks(p); err == nil && !containsPath(prefixes, real) {
			prefixes = append(prefixes, real)
		}
	}
	return exe, prefixes, nil
}

func containsPath(list []string, p string) bool {
	for _, q := range list {
		if q == p {
			return true
		}
	}
	return false
}

// systemDirs are the read-only parts of the host an interpreter needs. Only those that exist are
// bound. Nothing from home directories, the project or run directories is visible.
var systemDirs = []string{"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin"}

var etcFiles = []string{"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
	"/etc/alternatives", "/etc/python3", "/etc/mime.types"}

// forkFriendlyEnv makes the zygote's heap live in transparent huge pages: Python objects come
// from glibc's malloc, whose heap the zygote collapses into 2 MiB pages (zygote.py), so that fork
// copies a few page-middle-directory entries instead of one entry per 4 KiB page. On the VMs
// measured this cut a sympy-sized zygote's fork+exit cost about 2.5×. It is harmless where THP
// is off. glibcTunables keeps that heap in few, large mappings: blocks below 32 MiB stay on the
// heap (by default glibc gives blocks from 128 KiB up their own mappings, too small for a huge
// page: a sympy zygote kept a 940 KiB one, 235 entries for every fork to copy), the heap grows in
// 2 MiB steps and is not trimmed, since each growth after a fork becomes a mapping of its own.
// With it the template's heap measured ~690 small pages beside 25 huge ones, against ~1,400
// before (and ~3,900 when the template still wrote during its calls).
const glibcTunables = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=67108864:" +
	"glibc.malloc.top_pad=2097152"

var forkFriendlyEnv = []string{"PYTHONMALLOC=malloc", "GLIBC_TUNABLES=" + glibcTunables}

// sandboxEnv is the zygote's whole environment inside a sandbox (bwrap or namespaces), besides the
// zygote's source.
var sandboxEnv = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "TMPDIR=/tmp",
	"OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1", "PYTHONDONTWRITEBYTECODE=1"},
	forkFriendlyEnv...)

// bwrapArgs builds the bubblewrap command line that starts the zygote.
func (s *sandbox) bwrapArgs(prefixes []string) []string {
	a := []string{s.bwrap,
		"--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--die-with-parent", "--hostname", "sandbox", "--clearenv",
	}
	for _, kv := range sandboxEnv {
		k, v, _ := strings.Cut(kv, "=")
		a = append(a, "--setenv", k, v)
	}
	if !s.asRoot {
		a = append(a, "--unshare-user")
	}
	created := map[string]bool{"/": true}
	mkParents := func(p string) {
		var parents []string
		for d := filepath.Dir(p); !created[d]; d = filepath.Dir(d) {
			parents = append(parents, d)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			a = append(a, "--perms", "0755", "--dir", parents[i])
			created[parents[i]] = true
		}
	}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(d)
			a = append(a, "--symlink", target, d)
		default:
			a = append(a, "--ro-bind", d, d)
		}
		created[d] = true
	}
	for _, f := range etcFiles {
		if _, err := os.Stat(f); err == nil {
			mkParents(f)
			a = append(a, "--ro-bind", f, f)
		}
	}
	for _, p := range prefixes {
		if underSystem(p) {
			continue
		}
		mkParents(p)
		a = append(a, "--ro-bind", p, p)
		created[p] = true
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev", "--perms", "1777")
	if s.bwrapSize {
		a = append(a, "--size", strconv.Itoa(s.tmpMB<<20))
	}
	a = append(a, "--tmpfs", "/tmp")
	if s.asRoot {
		// The zygote keeps only what it needs to drop each child to its own uid, to end a child's
		// processes and to clean /tmp after a call; children have no capabilities at all.
		a = append(a, "--cap-drop", "ALL")
		for _, c := range []string{"CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_CHOWN"} {
			a = append(a, "--cap-add", c)
		}
	}
	return append(a, "--chdir", "/tmp", "--")
}

func underSystem(p string) bool {
	for _, d := range systemDirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// chooseSandbox picks the sandbox for kind (auto, bwrap, namespaces, seatbelt, none). auto is, on
// macOS, seatbelt; elsewhere bwrap when it is on PATH and can bound /tmp, else gorstar's own
// namespaces when the kernel allows them, else an older bwrap (its /tmp bounded per file only),
// else ErrNoSandbox.
func chooseSandbox(kind, python string) (*sandbox, []string, error) {
	exe, prefixes, err := ResolvePython(python)
	if err != nil {
		return nil, nil, err
	}
	s := &sandbox{python: exe, asRoot: os.Geteuid() == 0, tmpMB: DefaultOptions().TmpMB}
	switch kind {
	case SandboxAuto, "":
		if runtime.GOOS == "darwin" {
			if _, err := os.Stat(sandboxExec); err != nil {
				return nil, nil, fmt.Errorf("%w (macOS: %s: %v)", ErrNoSandbox, sandboxExec, err)
			}
			s.kind, s.asRoot = SandboxSeatbelt, false
			break
		}
		path, err := exec.LookPath("bwrap")
		if err == nil && bwrapHasSize(path) {
			s.kind, s.bwrap, s.bwrapSize = SandboxBwrap, path, true
			break
		}
		s.kind = SandboxNamespaces
		nsErr := s.probeNamespaces(prefixes)
		switch {
		case nsErr == nil:
		case err == nil:
			s.kind, s.bwrap = SandboxBwrap, path
		default:
			return nil, nil, fmt.Errorf("%w (bwrap is not on PATH; namespaces: %v)", ErrNoSandbox, nsErr)
		}
	case SandboxBwrap:
		path, err := exec.LookPath("bwrap")
		if err != nil {
			return nil, nil, usererr.New("exec.sandbox: bwrap not found on PATH: %v", err)
		}
		s.kind, s.bwrap, s.bwrapSize = SandboxBwrap, path, bwrapHasSize(path)
	case SandboxNamespaces:
		s.kind = SandboxNamespaces
		if err := s.probeNamespaces(prefixes); err != nil {
			return nil, nil, usererr.New("exec.sandbox: namespaces are not available here: %v", err)
		}
	case SandboxSeatbelt:
		if runtime.GOOS != "darwin" {
			return nil, nil, usererr.New("exec.sandbox: seatbelt is macOS's sandbox, this is %s", runtime.GOOS)
		}
		if _, err := os.Stat(sandboxExec); err != nil {
			return nil, nil, usererr.New("exec.sandbox: seatbelt: %v", err)
		}
		s.kind, s.asRoot = SandboxSeatbelt, false
	case SandboxNone:
		s.kind = SandboxNone
		s.asRoot = false
	default:
		return nil, nil, usererr.New("exec.sandbox: want auto, bwrap, namespaces, seatbelt or none, got %q", kind)
	}
	return s, prefixes, nil
}

// bwrapHasSize reports whether the bwrap at path can size a tmpfs: its --help lists --size
// (bubblewrap 0.7+), and it does not run setuid root for us, as it then refuses the option.
func bwrapHasSize(path string) bool {
	if fi, err := os.Stat(path); err != nil || (fi.Mode()&os.ModeSetuid != 0 && os.Geteuid() != 0) {
		return false
	}
	out, _ := exec.Command(path, "--help").CombinedOutput()
	return bytes.Contains(out, []byte("--size"))
}

// BwrapAvailable reports whether bubblewrap is on PATH.
func BwrapAvailable() bool {
	_, err := exec.LookPath("bwrap")
	return err == nil
}

// AutoSandbox returns the sandbox exec.sandbox = auto picks on this machine for the interpreter
// python: on macOS "seatbelt"; elsewhere "bwrap", else "namespaces" (gorstar's own); ErrNoSandbox when neither works.
func AutoSandbox(python string) (string, error) {
	s, _, err := chooseSandbox(SandboxAuto, python)
	if err != nil {
		return "", err
	}
	return s.kind, nil
}
