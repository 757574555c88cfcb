package cmd

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

func TestCapThreadsWarnsAboveTheCores(t *testing.T) {
	var w bytes.Buffer
	n := runtime.NumCPU()
	if got := capThreads(n, &w, false); got != n || w.Len() != 0 {
		t.Errorf("at the cores: %d, %q", got, w.String())
	}
	if got := capThreads(0, &w, false); got != 0 || w.Len() != 0 {
		t.Errorf("0 (all cores): %d, %q", got, w.String())
	}
	if got := capThreads(100000, &w, false); got != n || !strings.Contains(w.String(), "--threads 100000 is more than the") {
		t.Errorf("above: %d, %q", got, w.String())
	}
}
