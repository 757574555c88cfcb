//go:build linux

package progress

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

// A Clock off a terminal is invisible and silent; on one, it counts finished runs in tenths of a
// second and names the run going.
func TestClock(t *testing.T) {
	var buf bytes.Buffer
	c := NewClock(2, time.Second, "bench", Options{Out: &buf, TerminalOnly: true})
	c.Start("bench print")
	c.Stop()
	c.Finish()
	if c.Visible() || buf.Len() != 0 {
		t.Fatalf("off a terminal: visible %v, printed %q", c.Visible(), buf.String())
	}
	var none *Clock
	none.Start("x")
	none.Stop()
	none.Finish()
	master, slave := openPTY(t)
	read := make(chan []byte)
	go func() {
		out, _ := io.ReadAll(master)
		read <- out
	}()
	c = NewClock(2, time.Second, "bench", Options{Out: slave, TerminalOnly: true})
	if !c.Visible() {
		t.Fatal("invisible on a terminal")
	}
	c.Start("bench sympy")
	c.Stop()
	if c.bar.done != 10 || c.runs != 1 {
		t.Errorf("after one run of 1 s: %d tenths, %d runs", c.bar.done, c.runs)
	}
	c.Finish()
	slave.Close()
	if out := <-read; !strings.Contains(string(out), "bench sympy") {
		t.Errorf("the run not named: %q", out)
	}
}
