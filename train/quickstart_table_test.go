package train

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/config"
)

// quickstartSummary is the summary.json of `go run . train` with the shipped defaults, committed
// so that CI can check the README against it without the run's minutes.
var quickstartSummary = filepath.Join("..", "docs", "quickstart-summary.json")

// The README's quickstart table is the shipped defaults' run: it must be the table WriteTable
// prints for docs/quickstart-summary.json, and that summary's settings must be today's defaults.
// Changing a default (or the kernels' bits) without running the quickstart again fails here.
func TestReadmeQuickstartTable(t *testing.T) {
	raw, err := os.ReadFile(quickstartSummary)
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s: %v", quickstartSummary, err)
	}
	const redo = "run `go run . train`, copy runs/quickstart/summary.json to docs/quickstart-summary.json " +
		"and the table it prints into README.md (CONTRIBUTING.md, \"The quickstart's table\")"
	want, err := config.Default().SHA256()
	if err != nil {
		t.Fatal(err)
	}
	if r.ConfigSHA256 != want {
		t.Fatalf("%s was made with settings %s, the shipped defaults are %s: %s",
			quickstartSummary, r.ConfigSHA256, want, redo)
	}
	if r.DType != "bf16" {
		t.Fatalf("%s was made in %q, README's table states the bf16 run that model.dtype = \"auto\" makes on a CPU with AVX-512 BF16: %s",
			quickstartSummary, r.DType, redo)
	}
	if r.SFTEval == nil || len(r.Stages) != len(config.Default().RL.Stages) {
		t.Fatalf("%s holds %d RL stages (SFT eval: %v), the defaults have %d: %s", quickstartSummary,
			len(r.Stages), r.SFTEval != nil, len(config.Default().RL.Stages), redo)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, r); err != nil {
		t.Fatal(err)
	}
	table := strings.TrimSuffix(buf.String(), "\n")
	table = table[:strings.LastIndexByte(table, '\n')+1] // without the "run …: N s" line

	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	got, ok := readmeQuickstartTable(string(readme))
	if !ok {
		t.Fatal("README.md has no <!-- quickstart-table --> marker followed by a ``` block")
	}
	if got != table {
		t.Fatalf("README.md's quickstart table is not %s's:\nREADME:\n%s\nsummary:\n%s\n%s", quickstartSummary, got, table, redo)
	}
}

// readmeQuickstartTable returns the code block after the quickstart-table marker.
func readmeQuickstartTable(readme string) (string, bool) {
	_, after, ok := strings.Cut(readme, "<!-- quickstart-table")
	if !ok {
		return "", false
	}
	_, block, ok := strings.Cut(after, "```\n")
	if !ok {
		return "", false
	}
	block, _, ok = strings.Cut(block, "```")
	return block, ok
}

func TestReadmeQuickstartTableParsing(t *testing.T) {
	got, ok := readmeQuickstartTable("x\n<!-- quickstart-table: y -->\n```\na\nb\n```\nz")
	if !ok || got != "a\nb\n" {
		t.Fatalf("%q %v", got, ok)
	}
	if _, ok := readmeQuickstartTable("no marker"); ok {
		t.Fatal("found a table without the marker")
	}
}
