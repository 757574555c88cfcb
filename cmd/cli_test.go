package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// The CLI test harness: every command test runs gorstar in-process through run, the function Main
// calls, so the exit status and both streams are what a user would see.

// cliResult is what one in-process run of the command line produced.
type cliResult struct {
	Stdout, Stderr string
	Code           int
}

// runCLI runs gorstar in-process with args (without the program name) and empty stdin.
func runCLI(t *testing.T, args ...string) cliResult {
	t.Helper()
	return runCLIWith(context.Background(), "", args...)
}

// initTiny runs `gorstar model init --preset tiny` into a fresh directory and returns its path.
func initTiny(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	if r := runCLI(t, "model", "init", "--out", dir, "--preset", "tiny"); r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	return dir
}

// runCLIWith runs gorstar in-process with a context (its end is the user's Ctrl-C) and stdin. It
// takes no *testing.T so a test may run it in a goroutine.
func runCLIWith(ctx context.Context, stdin string, args ...string) cliResult {
	var out, errOut bytes.Buffer
	code := run(ctx, append([]string{"gorstar"}, args...), strings.NewReader(stdin), &out, &errOut)
	return cliResult{Stdout: out.String(), Stderr: errOut.String(), Code: code}
}

// decodeJSON parses a command's --json stdout, failing the test unless it is exactly one object.
func decodeJSON(t *testing.T, r cliResult) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(r.Stdout))
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\nstdout: %q\nstderr: %q", err, r.Stdout, r.Stderr)
	}
	if dec.More() {
		t.Fatalf("stdout has more than one JSON value: %q", r.Stdout)
	}
	return m
}

// freeAddr is a loopback address no one listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
