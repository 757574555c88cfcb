package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/internal/usererr"
)

func TestReadMetrics(t *testing.T) {
	p := filepath.Join(t.TempDir(), "metrics.jsonl")
	os.WriteFile(p, []byte("{\"step\":1,\"loss\":0.5}\n\n{\"step\":2}\n"), 0o644)
	recs, err := ReadMetrics(p)
	if err != nil || len(recs) != 2 || recs[0]["loss"] != 0.5 || recs[1]["step"] != 2.0 {
		t.Fatalf("got %v, %v", recs, err)
	}
}

func TestReadMetricsBadInput(t *testing.T) {
	p := filepath.Join(t.TempDir(), "metrics.jsonl")
	os.WriteFile(p, []byte("{\"a\":1}\n{oops\n"), 0o644)
	_, err := ReadMetrics(p)
	if err == nil || !usererr.Is(err) || !strings.Contains(err.Error(), "metrics.jsonl:2: invalid JSON") {
		t.Fatalf("bad line: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "absent.jsonl")
	if _, err := ReadMetrics(missing); err == nil || !usererr.Is(err) || err.Error() != missing+": no such file or directory" {
		t.Fatalf("missing file: %v", err)
	}
}
