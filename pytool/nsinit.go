//go:build linux

package pytool

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// init turns this process into the namespace sandbox's init when nsInitEnv is set (see
// namespaces.go): it never returns then. It runs before anything else of the package's users.
func init() {
	raw, ok := os.LookupEnv(nsInitEnv)
	if !ok {
		return
	}
	// Capabilities and no_new_privs belong to a thread: set them on the one that calls exec.
	runtime.LockOSThread()
	err := nsInit(raw)
	fmt.Fprintf(os.Stderr, "gorstar namespace sandbox: %v\n", err)
	os.Exit(127)
}

// zygoteCapabilities are all the zygote keeps when it runs as root (no user namespace): enough
// to drop each child to its own uid, end a call's processes and clean /tmp. As bwrap's
// --cap-drop ALL --cap-add … in bwrapArgs.
var zygoteCapabilities = []int{unix.CAP_SETUID, unix.CAP_SETGID, unix.CAP_KILL, unix.CAP_DAC_OVERRIDE,
	unix.CAP_FOWNER, unix.CAP_CHOWN}

// devNodes are the host devices the sandbox's /dev shows.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// nsInit builds the sandbox's root and execs the command; it returns only an error naming the step
// that failed. Mounts, pivot_root and chdir act on the whole process (all its threads).
func nsInit(raw string) error {
	var c nsInitConf
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return fmt.Errorf("read the configuration: %w", err)
	}
	if c.Path == "" || len(c.Argv) == 0 {
		return errors.New("read the configuration: no command")
	}
	// Only ever rearrange the mounts of a fresh namespace, never the host's (someone could run
	// gorstar with the variable set).
	if os.Getpid() != 1 {
		return fmt.Errorf("%s is set but this is not a new pid namespace", nsInitEnv)
	}
	const oldRoot, newRoot = "/oldroot", "/newroot"
	step := func(name string, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
	// A scratch tmpfs becomes the root while the sandbox's root is built, with the host's root at
	// /oldroot: every source is reached there, even one under the host's /tmp.
	if err := step("make / private", unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")); err != nil {
		return err
	}
	if err := step("mount the scratch tmpfs", unix.Mount("tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700")); err != nil {
		return err
	}
	for _, d := range []string{"/tmp" + oldRoot, "/tmp" + newRoot} {
		if err := step("mkdir "+d, os.Mkdir(d, 0o755)); err != nil {
			return err
		}
	}
	if err := step("pivot_root to the scratch tmpfs", unix.PivotRoot("/tmp", "/tmp"+oldRoot)); err != nil {
		return err
	}
	if err := step("chdir /", unix.Chdir("/")); err != nil {
		return err
	}
	if err := step("mount the new root", unix.Mount("tmpfs", newRoot, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755")); err != nil {
		return err
	}
	for _, m := range c.Mounts {
		dst := newRoot + filepath.Clean("/"+m.Path)
		if m.Symlink != "" {
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return fmt.Errorf("symlink %s: %w", m.Path, err)
			}
			if err := os.Symlink(m.Symlink, dst); err != nil {
				return fmt.Errorf("symlink %s: %w", m.Path, err)
			}
			continue
		}
		if err := bindReadOnly(oldRoot+m.Source, dst, m.Dir, true); err != nil {
			return fmt.Errorf("bind %s read-only: %w", m.Path, err)
		}
	}
	if err := mountProc(newRoot + "/proc"); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if err := mountDev(oldRoot+"/dev", newRoot+"/dev"); err != nil {
		return fmt.Errorf("make /dev: %w", err)
	}
	if err := step("mkdir /tmp", os.Mkdir(newRoot+"/tmp", 0o755)); err != nil {
		return err
	}
	if err := step("mount /tmp", unix.Mount("tmpfs", newRoot+"/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=1777,size=%dm", c.TmpMB))); err != nil {
		return err
	}
	// Leave the host: detach its root, then make the new root the root and drop the scratch one
	// (pivot_root(".", ".") stacks the old root on the new one; the unmount takes it off).
	if err := step("detach the host's root", unix.Unmount(oldRoot, unix.MNT_DETACH)); err != nil {
		return err
	}
	if err := step("chdir the new root", unix.Chdir(newRoot)); err != nil {
		return err
	}
	if err := step("pivot_root to the new root", unix.PivotRoot(".", ".")); err != nil {
		return err
	}
	if err := step("detach the scratch root", unix.Unmount(".", unix.MNT_DETACH)); err != nil {
		return err
	}
	if err := step("chdir /", unix.Chdir("/")); err != nil {
		return err
	}
	if err := step("make / read-only", remountReadOnly("/")); err != nil {
		return err
	}
	if err := step("set the hostname", unix.Sethostname([]byte("sandbox"))); err != nil {
		return err
	}
	if err := step("drop capabilities", dropCapabilities(c.AsRoot)); err != nil {
		return err
	}
	if err := step("set no_new_privs", unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)); err != nil {
		return err
	}
	if err := step("chdir /tmp", unix.Chdir("/tmp")); err != nil {
		return err
	}
	env := append([]string(nil), c.Env...)
	if src, ok := os.LookupEnv(zygoteEnv); ok {
		env = append(env, zygoteEnv+"="+src)
	}
	return step("exec "+c.Path, unix.Exec(c.Path, c.Argv, env))
}

// makeMountPoint creates an empty directory or file at dst, and its parents, unless dst exists.
func makeMountPoint(dst string, dir bool) error {
	if _, err := os.Lstat(dst); err == nil {
		return nil
	}
	if dir {
		return os.MkdirAll(dst, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// bindReadOnly binds src at dst (with what is mounted under src when recursive) and makes every
// mount of it read-only.
func bindReadOnly(src, dst string, dir, recursive bool) error {
	if err := makeMountPoint(dst, dir); err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND)
	if recursive {
		flags |= unix.MS_REC
	}
	if err := unix.Mount(src, dst, "", flags, ""); err != nil {
		return err
	}
	if err := remountReadOnly(dst); err != nil {
		return err
	}
	if !recursive || !dir {
		return nil
	}
	under, err := mountsUnder(dst)
	if err != nil {
		return err
	}
	for _, p := range under {
		if err := remountReadOnly(p); err != nil {
			return err
		}
	}
	return nil
}

// remountReadOnly makes the mount at dst read-only, keeping its other flags (the kernel refuses
// to clear nosuid, nodev, noexec or the atime flags of a mount that came from a more privileged
// namespace).
func remountReadOnly(dst string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dst, &st); err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&f.st != 0 {
			flags |= f.ms
		}
	}
	return unix.Mount("", dst, "", flags, "")
}

// mountsUnder lists the mount points strictly below dir (paths as this process sees them), from
// the host's procfs, which is still reachable under /oldroot while the root is built.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/oldroot/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var under []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		// Spaces, tabs, newlines and backslashes in mount points are written as octal escapes.
		p := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(fields[4])
		if strings.HasPrefix(p, dir+"/") {
			under = append(under, p)
		}
	}
	return under, sc.Err()
}

// mountProc mounts a procfs of the new pid namespace at dst and makes the parts that act on the
// whole machine read-only, as bwrap does.
func mountProc(dst string) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("proc", dst, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return err
	}
	for _, name := range []string{"sys", "sysrq-trigger", "irq", "bus"} {
		p := dst + "/" + name
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if err := bindReadOnly(p, p, fi.IsDir(), false); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// mountDev makes a minimal read-only /dev: the host's null, zero, full, random, urandom and tty,
// the usual /proc/self/fd links, and /dev/shm as a link to /tmp (the calls' only writable
// directory, wiped after every call, so POSIX shared memory works and leaks nothing).
func mountDev(hostDev, dst string) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dst, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755"); err != nil {
		return err
	}
	for _, n := range devNodes {
		if _, err := os.Stat(hostDev + "/" + n); err != nil {
			continue
		}
		if err := makeMountPoint(dst+"/"+n, false); err != nil {
			return err
		}
		if err := unix.Mount(hostDev+"/"+n, dst+"/"+n, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", n, err)
		}
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2", "shm": "/tmp"} {
		if err := os.Symlink(target, dst+"/"+name); err != nil {
			return err
		}
	}
	return remountReadOnly(dst)
}

// dropCapabilities leaves the zygote the few capabilities it needs as root, and none otherwise:
// the bounding set, then the inheritable and ambient sets (as root, exec grants bounding ∪
// inheritable; ambient ones survive an exec by anyone).
func dropCapabilities(asRoot bool) error {
	keep := map[int]bool{}
	if asRoot {
		for _, c := range zygoteCapabilities {
			keep[c] = true
		}
	}
	for c := 0; c < 64; c++ {
		if keep[c] {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if errors.Is(err, unix.EINVAL) {
				break // past the kernel's last capability
			}
			return fmt.Errorf("bounding set, capability %d: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
}
