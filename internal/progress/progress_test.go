//go:build linux

package progress

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestPlainLinesWhenNotATerminal(t *testing.T) {
	var buf bytes.Buffer
	b := New(10, "import", Options{Out: &buf, Interval: time.Nanosecond})
	b.Add(3)
	b.Add(7)
	b.Finish()
	b.Finish()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines (two updates, one final), got %q", buf.String())
	}
	if !strings.HasPrefix(lines[2], "import: 10/10 (100%)") {
		t.Fatalf("final line %q", lines[2])
	}
}

// A run that goes on past its plan (SFT's until_eval_loss) raises the total; lines show the new one.
func TestSetTotal(t *testing.T) {
	var buf bytes.Buffer
	b := New(10, "sft", Options{Out: &buf, Interval: time.Nanosecond})
	b.Set(10)
	b.SetTotal(20)
	b.Set(12)
	b.Finish()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "sft: 12/20 (60%)") {
		t.Fatalf("lines %q", lines)
	}
	var nilBar *Bar
	nilBar.SetTotal(5)
}

func TestQuietAndNilAreSilent(t *testing.T) {
	var buf bytes.Buffer
	b := New(10, "x", Options{Out: &buf, Quiet: true})
	b.Add(1)
	b.Describe("y")
	b.Finish()
	if buf.Len() != 0 || b != nil {
		t.Fatalf("quiet bar printed %q", buf.String())
	}
}

func TestThrottled(t *testing.T) {
	var buf bytes.Buffer
	b := New(-1, "work", Options{Out: &buf, Interval: time.Hour})
	for i := 0; i < 1000; i++ {
		b.Add(1)
	}
	b.Finish()
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Fatalf("want only the final line, got %q", buf.String())
	}
}

// A TerminalOnly bar prints nothing off a terminal, and draws on one (a pseudo-terminal here).
func TestTerminalOnly(t *testing.T) {
	var buf bytes.Buffer
	b := New(10, "bench", Options{Out: &buf, Interval: time.Nanosecond, TerminalOnly: true})
	b.Add(5)
	b.Describe("bench sympy")
	b.Finish()
	if buf.Len() != 0 {
		t.Fatalf("printed off a terminal: %q", buf.String())
	}
	master, slave := openPTY(t)
	read := make(chan []byte)
	go func() {
		out, _ := io.ReadAll(master) // ends with EIO once the slave is closed
		read <- out
	}()
	b = New(10, "bench print", Options{Out: slave, TerminalOnly: true})
	b.Add(4)
	b.Finish()
	slave.Close()
	out := <-read
	if !strings.Contains(string(out), "bench print") {
		t.Fatalf("no bar on the terminal: %q", out)
	}
}

// openPTY opens a pseudo-terminal pair, or skips where there is none.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("pseudo-terminal number: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the pseudo-terminal: %v", err)
	}
	return m, s
}
