package cmd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gorstar/internal/testenv"
)

// The bad-invocation tests run the built binary, as a user would: a fresh process, its real exit
// status and streams. It is built once, on first use, into a temporary directory TestMain removes.

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// gorstarBinary builds the command once per test process and returns its path.
func gorstarBinary(t *testing.T) string {
	t.Helper()
	testenv.Short(t, "builds and runs the gorstar binary")
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "gorstar-bin-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "gorstar")
		out, err := osexec.Command("go", "build", "-o", binPath, "gorstar").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// badCase is one invocation a user may type by mistake, and the one line it must produce.
type badCase struct {
	args  []string
	want  string            // part of the one stderr line
	files map[string]string // files to create in the working directory first ("name/" = a directory)
	stdin string
	code  int // expected exit status; 0 means 1
}

// runBad runs each case in a fresh working directory holding its files plus shared (absolute
// paths the test made for all cases) and checks: the exit status, exactly one line on stderr
// that contains want and no stack trace, nothing on stdout, and no file created, changed or
// removed, in the working directory or in shared.
func runBad(t *testing.T, shared string, cases []badCase) {
	bin := gorstarBinary(t)
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range c.files {
				p := filepath.Join(dir, name)
				if strings.HasSuffix(name, "/") {
					os.MkdirAll(p, 0o755)
					continue
				}
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before, sharedBefore := snapshot(t, dir), snapshot(t, shared)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := osexec.CommandContext(ctx, bin, c.args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "HOME="+dir)
			cmd.Stdin = strings.NewReader(c.stdin)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := cmd.ProcessState.ExitCode()
			if ctx.Err() != nil {
				t.Fatalf("did not end within 2 minutes (err %v); stderr %q", err, stderr.String())
			}
			want := max(c.code, 1)
			if code != want {
				t.Errorf("exit %d, want %d", code, want)
			}
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], c.want) {
				t.Errorf("stderr is not one line containing %q:\n%s", c.want, stderr.String())
			}
			for _, stack := range []string{"goroutine ", "panic", ".go:", "Traceback", "SIGSEGV"} {
				if strings.Contains(stderr.String(), stack) {
					t.Errorf("stderr shows a stack (%q):\n%s", stack, stderr.String())
				}
			}
			if strings.Count(lines[0], "gorstar: ") > 1 {
				t.Errorf("doubled prefix: %s", lines[0])
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout not empty: %q", stdout.String())
			}
			if after := snapshot(t, dir); !slices.Equal(before, after) {
				t.Errorf("files changed:\nbefore %v\nafter  %v", before, after)
			}
			if after := snapshot(t, shared); !slices.Equal(sharedBefore, after) {
				t.Errorf("shared files changed:\nbefore %v\nafter  %v", sharedBefore, after)
			}
		})
	}
}

// snapshot lists every path below dir with its kind and content hash.
func snapshot(t *testing.T, dir string) []string {
	t.Helper()
	if dir == "" {
		return nil
	}
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out = append(out, rel+"/")
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %x", rel, sha256.Sum256(data)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
