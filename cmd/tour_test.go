package cmd

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorstar/config"
	"gorstar/internal/testenv"
	"gorstar/pytool"
)

// TestReadmeTour runs the README's tour top to bottom against the built binary, in an empty
// directory, as a new user would: each command must succeed with only the files the commands
// before it made. Servers (a line ending in &), curl and the benches (minutes long; their flags
// are tested elsewhere) are skipped, as is `go build` (the binary is built once for the tests),
// and the tool's lines where no sandbox or no sympy is available.
func TestReadmeTour(t *testing.T) {
	testenv.Short(t, "the README's tour")
	raw, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	commands := tourCommands(t, string(raw))
	if len(commands) < 15 {
		t.Fatalf("found only %d commands in the README's tour", len(commands))
	}
	dir := t.TempDir()
	if err := os.Symlink(gorstarBinary(t), filepath.Join(dir, "gorstar")); err != nil {
		t.Fatal(err)
	}
	toolOK, why := tourToolAvailable()
	ran := 0
	for _, c := range commands {
		switch skip := tourSkip(c); {
		case skip != "":
			t.Logf("skip (%s): %s", skip, c)
			continue
		case strings.Contains(c, "gorstar exec ") && !toolOK:
			t.Logf("skip (%s): %s", why, c)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", c)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+dir)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		cancel()
		if err != nil {
			t.Fatalf("%s\n%v\nstdout: %s\nstderr: %s", c, err, out, stderr.String())
		}
		ran++
	}
	t.Logf("ran %d of the tour's %d commands", ran, len(commands))
}

// tourCommands returns the commands of the first sh block after "## A tour", continuation lines
// joined, blank and comment lines dropped.
func tourCommands(t *testing.T, readme string) []string {
	t.Helper()
	_, after, ok := strings.Cut(readme, "## A tour\n")
	if !ok {
		t.Fatal(`README.md has no "## A tour" section`)
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatal("the tour has no ```sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(block, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if body, cont := strings.CutSuffix(trimmed, "\\"); cont {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(trimmed)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

// tourSkip says why a tour command is not run here, "" to run it.
func tourSkip(c string) string {
	code, _, _ := strings.Cut(c, " #") // the command without its trailing comment
	code = strings.TrimSpace(code)
	switch {
	case strings.HasPrefix(code, "go build"):
		return "the tests build the binary"
	case strings.HasSuffix(code, "&"):
		return "a server"
	case strings.HasPrefix(code, "curl"):
		return "needs the server"
	case strings.Contains(code, " bench"):
		return "a bench, minutes long"
	}
	return ""
}

// tourToolAvailable reports whether the tour's exec lines can run: a sandbox and sympy.
func tourToolAvailable() (bool, string) {
	if _, err := exec.LookPath("python3"); err != nil {
		return false, "no python3"
	}
	if _, err := pytool.AutoSandbox(config.DefaultExec().Python); err != nil {
		return false, "no sandbox here"
	}
	if err := exec.Command("python3", "-c", "import sympy").Run(); err != nil {
		return false, "no sympy"
	}
	return true, ""
}
