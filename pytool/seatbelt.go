package pytool

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SandboxSeatbelt is macOS's sandbox: each zygote starts under sandbox-exec with a profile
// generated for its worker (seatbeltProfile), since Linux namespaces and bubblewrap do not exist
// there. README.md ("macOS") says what it isolates and what it does not, beside the Linux sandboxes.
const SandboxSeatbelt = "seatbelt"

// sandboxExec is the system's Seatbelt launcher on macOS.
const sandboxExec = "/usr/bin/sandbox-exec"

// seatbeltPaths are what a worker's profile names: its writable directory and what stays unreadable.
type seatbeltPaths struct {
	tmp      string   // the worker's directory: the calls' only writable place, wiped after each call
	python   []string // the interpreter's prefixes, readable even where they lie under a hidden tree
	hidden   []string // trees nothing in the sandbox may read: home directories, other temporary files
	ancestry []string // directories whose own metadata the interpreter needs to resolve its paths
}

// seatbeltQuote renders s as a Seatbelt (TinyScheme) string literal.
func seatbeltQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// seatbeltProfile is the profile of one worker. Everything is denied unless a rule allows it, and a
// later rule overrides an earlier one: reads of the system are allowed, then the hidden trees are
// denied, then the interpreter's prefixes and the worker's directory allowed again. No network
// rule allows anything, so sockets can reach no address and no name service (DNS runs through a
// Mach service, also denied). Processes may fork and exec (a call may run a subprocess), signal
// only processes in the same sandbox, and use POSIX semaphores and shared memory (multiprocessing).
func seatbeltProfile(p seatbeltPaths) string {
	var b strings.Builder
	rule := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	subpaths := func(paths []string) string {
		var s []string
		for _, x := range paths {
			s = append(s, "(subpath "+seatbeltQuote(x)+")")
		}
		return strings.Join(s, " ")
	}
	rule("(version 1)")
	rule("(deny default)")
	rule("(allow process-fork)")
	rule("(allow process-exec)")
	rule("(allow signal (target same-sandbox))")
	rule("(allow process-info* (target same-sandbox))")
	rule("(allow sysctl-read)")
	rule("(allow ipc-posix-sem)")
	rule("(allow ipc-posix-shm)")
	rule("(allow file-read*)")
	if len(p.hidden) > 0 {
		rule("(deny file-read* %s)", subpaths(p.hidden))
	}
	for _, d := range p.ancestry {
		rule("(allow file-read-metadata (literal %s))", seatbeltQuote(d))
	}
	if len(p.python) > 0 {
		rule("(allow file-read* %s)", subpaths(p.python))
	}
	rule("(allow file-read* file-write* (subpath %s))", seatbeltQuote(p.tmp))
	rule("(allow file-write-data (literal \"/dev/null\") (literal \"/dev/zero\"))")
	return b.String()
}

// seatbeltPathsFor lays out a worker's profile: tmp (its directory) writable; home directories,
// the user's own home, the system's shared temporary trees and mounted volumes unreadable, but for
// the interpreter's prefixes (pyenv, Homebrew under a home directory). Seatbelt matches real paths
// (/tmp is /private/tmp on macOS), so every path is resolved first.
func seatbeltPathsFor(tmp string, prefixes []string) (seatbeltPaths, error) {
	real := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return filepath.Clean(p)
	}
	p := seatbeltPaths{tmp: real(tmp)}
	if !filepath.IsAbs(p.tmp) {
		return p, fmt.Errorf("seatbelt: the worker's directory %q is not absolute", tmp)
	}
	hidden := []string{"/Users", "/var/root", "/Volumes", "/private/tmp", "/private/var/folders", os.TempDir()}
	if home, err := os.UserHomeDir(); err == nil {
		hidden = append(hidden, home)
	}
	for _, h := range hidden {
		if r := real(h); !containsPath(p.hidden, r) {
			p.hidden = append(p.hidden, r)
		}
	}
	for _, pre := range prefixes {
		r := real(pre)
		p.python = append(p.python, r)
		for d := filepath.Dir(r); d != "/" && !containsPath(p.ancestry, d); d = filepath.Dir(d) {
			p.ancestry = append(p.ancestry, d)
		}
	}
	for d := filepath.Dir(p.tmp); d != "/" && !containsPath(p.ancestry, d); d = filepath.Dir(d) {
		p.ancestry = append(p.ancestry, d)
	}
	return p, nil
}

// seatbeltArgv is the command line that starts argv (the interpreter and its arguments) under a
// worker's profile.
func seatbeltArgv(tmp string, prefixes, argv []string) ([]string, error) {
	paths, err := seatbeltPathsFor(tmp, prefixes)
	if err != nil {
		return nil, err
	}
	return append([]string{sandboxExec, "-p", seatbeltProfile(paths)}, argv...), nil
}
