//go:build linux

package pytool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The namespace sandbox is the fallback when bubblewrap is not installed: gorstar starts itself
// (/proc/self/exe, which is the gorstar binary or a test binary alike) in new mount, pid, net, ipc,
// uts and cgroup namespaces (and a user namespace when not root), with nsInitEnv set. The package's
// init function (nsinit.go) sees the variable, builds the same root bwrapArgs describes, and
// replaces itself with the interpreter.

// nsInitEnv carries the init's configuration (JSON of nsInitConf).
const nsInitEnv = "GORSTAR_NSINIT"

// nsMount is one entry of the sandbox's root, made in order by the init.
type nsMount struct {
	Path    string `json:"path"`              // where it appears inside the sandbox
	Source  string `json:"source,omitempty"`  // the host path bound read-only (symlinks resolved)
	Symlink string `json:"symlink,omitempty"` // or: a symlink with this target
	Dir     bool   `json:"dir,omitempty"`     // the source is a directory
}

// nsInitConf is what the init needs: the root's content, the environment and the command.
type nsInitConf struct {
	Mounts []nsMount `json:"mounts"`
	Env    []string  `json:"env"`
	Path   string    `json:"path"`
	Argv   []string  `json:"argv"`
	AsRoot bool      `json:"as_root"` // keep the zygote's few capabilities (no user namespace)
	TmpMB  int       `json:"tmp_mb"`  // size of /tmp
}

// nsLayout lists the host paths the sandbox shows, as bwrapArgs does: the system directories
// (symlinks kept as symlinks), a few /etc files and the interpreter's prefixes, all read-only.
func (s *sandbox) nsLayout(prefixes []string) ([]nsMount, error) {
	var m []nsMount
	for _, p := range prefixes {
		for _, private := range []string{"/tmp", "/dev", "/proc"} {
			if p == private || strings.HasPrefix(p, private+"/") {
				return nil, fmt.Errorf("the interpreter's prefix %s is under %s, which the sandbox replaces", p, private)
			}
		}
	}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err == nil {
				m = append(m, nsMount{Path: d, Symlink: target})
			}
		default:
			m = append(m, nsMount{Path: d, Source: d, Dir: true})
		}
	}
	bind := func(p string) {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return
		}
		if fi, err := os.Stat(real); err == nil {
			m = append(m, nsMount{Path: p, Source: real, Dir: fi.IsDir()})
		}
	}
	for _, f := range etcFiles {
		bind(f)
	}
	for _, p := range prefixes {
		if !underSystem(p) {
			bind(p)
		}
	}
	return m, nil
}

// nsCommand returns the command that runs path with argv (argv[0] included) in the namespace
// sandbox, with sandboxEnv plus extraEnv as its whole environment.
func (s *sandbox) nsCommand(prefixes []string, path string, argv, extraEnv []string) (*exec.Cmd, error) {
	mounts, err := s.nsLayout(prefixes)
	if err != nil {
		return nil, err
	}
	conf, err := json.Marshal(nsInitConf{Mounts: mounts, Env: sandboxEnv, Path: path, Argv: argv, AsRoot: s.asRoot, TmpMB: s.tmpMB})
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{argv[0]},
		Env: append([]string{nsInitEnv + "=" + string(conf)}, extraEnv...)}
	// Setsid as for bwrap (worker.go): a session of its own, so no controlling terminal.
	attr := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL,
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC |
			syscall.CLONE_NEWUTS}
	if _, err := os.Stat("/proc/self/ns/cgroup"); err == nil {
		attr.Cloneflags |= unix.CLONE_NEWCGROUP
	}
	if !s.asRoot {
		// A user namespace mapping our uid and gid to themselves, as bwrap --unshare-user does. The
		// init gets the two capabilities it needs to build the root as ambient ones (kept across
		// its exec); the interpreter it starts has none.
		uid, gid := os.Getuid(), os.Getgid()
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
	}
	cmd.SysProcAttr = attr
	return cmd, nil
}

// nsProbes caches, per interpreter and privilege, whether the namespace sandbox starts here: the
// kernel's answer does not change while gorstar runs.
var nsProbes sync.Map // string → nsProbe

type nsProbe struct{ err error }

// probeNamespaces starts the interpreter once in the namespace sandbox (about as costly as one
// bare interpreter start) and says why it cannot run there, if it cannot.
func (s *sandbox) probeNamespaces(prefixes []string) error {
	key := fmt.Sprintf("%s\x00%v\x00%s", s.python, s.asRoot, strings.Join(prefixes, "\x00"))
	if v, ok := nsProbes.Load(key); ok {
		return v.(nsProbe).err
	}
	cmd, err := s.nsCommand(prefixes, s.python, []string{zygoteMarker, "-S", "-c", "pass"}, nil)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	if err = cmd.Start(); err == nil {
		pid := cmd.Process.Pid
		timer := time.AfterFunc(time.Minute, func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
		err = cmd.Wait()
		timer.Stop()
	}
	if err != nil {
		msg := strings.Join(strings.Fields(out.String()), " ")
		if msg == "" {
			msg = err.Error()
		}
		err = errors.New(Cut(msg, 300))
	}
	nsProbes.Store(key, nsProbe{err})
	return err
}
