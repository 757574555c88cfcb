package cmd

import (
	"os"
	"strings"
	"testing"

	"gorstar/config"
	"gorstar/internal/testenv"
	"gorstar/pytool"
)

// needSandbox skips unless exec.sandbox = auto finds a sandbox here: bubblewrap, or else
// gorstar's own namespaces (the tests run on whichever the machine has).
func needSandbox(t *testing.T) {
	t.Helper()
	testenv.Short(t, "starts sandboxed Python")
	testenv.Python3(t)
	if _, err := pytool.AutoSandbox(config.DefaultExec().Python); err != nil {
		testenv.Sandbox(t, err)
	}
}

// light keeps the CLI tests fast: workers import only math. GORSTAR_TEST_SANDBOX (bwrap or
// namespaces) forces the sandbox, to test without bubblewrap on a machine that has it.
var light = lightArgs(os.Getenv("GORSTAR_TEST_SANDBOX"))

func lightArgs(sandbox string) []string {
	args := []string{"--set", `exec.modules=["math"]`}
	if sandbox != "" {
		args = append(args, "--set", "exec.sandbox="+sandbox)
	}
	return args
}

func TestExecRunCommand(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	needSandbox(t)
	r := runCLI(t, append([]string{"exec", "run", "--code", "x = 6 * 7\nx"}, light...)...)
	if r.Code != 0 || r.Stdout != "42\n" {
		t.Fatalf("%+v", r)
	}
	out := decodeJSON(t, runCLI(t, append([]string{"exec", "run", "--json", "--code", "1/0"}, light...)...))
	if out["status"] != "error" || !strings.HasPrefix(out["stderr"].(string), "ZeroDivisionError at line 1") {
		t.Fatalf("%v", out)
	}
	out = decodeJSON(t, runCLI(t, append([]string{"exec", "run", "--json", "--timeout", "300ms", "--code", "while True: pass"}, light...)...))
	if out["status"] != "timeout" {
		t.Fatalf("%v", out)
	}
	for _, args := range [][]string{
		{"exec", "run"},
		{"exec", "run", "--code", "1", "--memory", "lots"},
		{"exec", "run", "--code", "1", "--timeout", "soon"},
		{"exec", "run", "--code", "1", "--sandbox", "docker"},
		{"exec", "run", "/no/such/file.py"},
		{"exec", "bench", "--workload", "nope", "--duration", "1ms", "--workers", "1"},
	} {
		if r := runCLI(t, args...); r.Code != 1 || strings.Count(r.Stderr, "\n") != 1 {
			t.Errorf("%v: want exit 1 and one line, got %+v", args, r)
		}
	}
}

func TestExecBenchCommand(t *testing.T) {
	testenv.Short(t, "a bench run as a test")
	needSandbox(t)
	out := decodeJSON(t, runCLI(t, append([]string{"exec", "bench", "--json", "--workload", "print", "--concurrency", "4",
		"--duration", "300ms", "--workers", "2"}, light...)...))
	for _, k := range []string{"calls", "calls_per_s", "p50_ms", "p90_ms", "p99_ms", "errors", "baseline", "speedup"} {
		if _, ok := out[k]; !ok {
			t.Errorf("bench --json lacks %q: %v", k, out)
		}
	}
	if out["errors"] != 0.0 || out["calls"].(float64) < 1 {
		t.Errorf("bench: %v", out)
	}
	load := decodeJSON(t, runCLI(t, append([]string{"exec", "bench", "--json", "--calls", "300", "--concurrency", "32", "--workers", "2"}, light...)...))
	l := load["load"].(map[string]any)
	if l["calls"] != 300.0 || l["lost"] != 0.0 || l["duplicated"] != 0.0 || l["errors"] != 0.0 {
		t.Errorf("load test: %v", load)
	}
}

// Every sandbox runs code from the command line; none says loudly that nothing is isolated.
func TestExecRunSandboxKinds(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	testenv.Python3(t)
	for _, kind := range []string{"bwrap", "namespaces", "none"} {
		if kind == "bwrap" && !pytool.BwrapAvailable() {
			continue
		}
		r := runCLI(t, append([]string{"exec", "run", "--sandbox", kind, "--code", "6 * 7"}, light...)...)
		if kind == "namespaces" && r.Code == 1 && strings.Contains(r.Stderr, "namespaces are not available") {
			t.Logf("namespaces: %s", r.Stderr)
			continue
		}
		if r.Code != 0 || r.Stdout != "42\n" {
			t.Errorf("--sandbox %s: %+v", kind, r)
		}
		if warned := strings.Contains(r.Stderr, "WARNING") && strings.Contains(r.Stderr, "WITHOUT isolation"); warned != (kind == "none") {
			t.Errorf("--sandbox %s: warned %v: %q", kind, warned, r.Stderr)
		}
	}
}
