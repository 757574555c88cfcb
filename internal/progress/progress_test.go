package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
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
