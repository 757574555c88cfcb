package cmd

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"testing"
)

const badProblems = `{"id":"a","problem":"What is 1+1?","answer":"2"}` + "\n" + `{"id":"b","problem":"What is 2+2?","answer":"4"}` + "\n"

// No command loses a file: an output that is an input, a file where a directory is (or the
// reverse) and a directory the command did not make are refused before any work.
func TestBadOutputPaths(t *testing.T) {
	p := map[string]string{"p.jsonl": badProblems}
	withDir := map[string]string{"p.jsonl": badProblems, "d/": "", "m/x": "keep"}
	runBad(t, "", []badCase{
		{args: []string{"model", "init", "--out", "p.jsonl", "--preset", "tiny"}, files: p, want: "--out p.jsonl: is a file, not a directory (pass --force"},
		{args: []string{"model", "init", "--out", "m", "--preset", "tiny"}, files: withDir, want: "--out m: already exists and is not empty"},
		{args: []string{"model", "init", "--out", ".", "--force"}, files: p, want: "--out .: is the current directory"},
		{args: []string{"data", "import", "--in", "p.jsonl", "--out", "p.jsonl"}, files: p, want: "--out p.jsonl: is also an input"},
		{args: []string{"data", "import", "--in", "p.jsonl", "--out", "./p.jsonl"}, files: p, want: "is also an input"},
		{args: []string{"data", "export", "--in", "p.jsonl", "--out", "p.jsonl"}, files: p, want: "is also an input"},
		{args: []string{"data", "filter", "--in", "p.jsonl", "--out", "p.jsonl", "--dedup"}, files: p, want: "is also an input"},
		{args: []string{"data", "filter", "--in", "p.jsonl", "--out", "e.jsonl", "--decontaminate", "e.jsonl"}, files: map[string]string{"p.jsonl": badProblems, "e.jsonl": badProblems}, want: "is also an input"},
		{args: []string{"data", "split", "--in", "p.jsonl", "--train", "a.jsonl", "--test", "a.jsonl", "--test-size", "1"}, files: p, want: "--test a.jsonl: is also an input"},
		{args: []string{"data", "synth", "--out", "d", "--n", "3"}, files: withDir, want: "--out d: is a directory"},
		{args: []string{"data", "export", "--in", "p.jsonl", "--out", "p.jsonl/x.jsonl"}, files: p, want: "p.jsonl is a file, not a directory"},
		{args: []string{"reward", "grade", "--in", "p.jsonl", "--out", "p.jsonl"}, files: p, want: "is also an input"},
		{args: []string{"model", "logprobs", "--model", "nope", "--text", "hi"}, want: "nope"},
		{args: []string{"data", "stats", "missing.parquet"}, want: "missing.parquet"},
	})
}

// Mistakes on the command line itself: one line on stderr, nothing on stdout, exit 1.
func TestBadCommandLines(t *testing.T) {
	p := map[string]string{"p.jsonl": badProblems}
	runBad(t, "", []badCase{
		{args: []string{"dat"}, want: `unknown command "dat"; did you mean "data"? (commands: train`},
		{args: []string{"data", "statz", "p.jsonl"}, files: p, want: `did you mean "data stats"?`},
		{args: []string{"data", "import", "--in", "p.jsonl"}, files: p, want: "data import: missing required flag --out"},
		{args: []string{"serve"}, want: "serve: missing required flag --model"},
		{args: []string{"--bogus", "config", "show"}, want: "flag provided but not defined: -bogus"},
		{args: []string{"config", "show", "--bogus"}, want: "config show: flag provided but not defined: -bogus"},
		{args: []string{"data", "stats", "a", "b"}, want: "expected one PATH argument, got 2"},
	})
}

// Config values and list syntax: one line naming the key; empty inputs are errors everywhere.
func TestBadConfigAndEmptyInputs(t *testing.T) {
	empty := map[string]string{"e.jsonl": ""}
	runBad(t, "", []badCase{
		{args: []string{"config", "show", "--set", "rl.group_size=x"}, want: `--set rl.group_size: want an integer, got "x"`},
		{args: []string{"config", "show", "--set", "rl.stages.9.steps=1"}, want: `needs an index 0..2 (or 3 to append`},
		{args: []string{"config", "show", "--set", "rl.stages.1.name=stage1"}, want: `"stage1" is also the name of rl.stages.0`},
		{args: []string{"reward", "grade", "--in", "e.jsonl"}, files: empty, want: "e.jsonl: empty"},
		{args: []string{"reward", "grade", "--in", "-"}, want: "-: empty"},
		{args: []string{"data", "stats", "e.jsonl"}, files: empty, want: "e.jsonl"},
		// JSON of the wrong shape is described in JSON's words, not Go's.
		{args: []string{"reward", "grade", "--in", "-"}, stdin: "[1]\n", want: "-:1: expected an object, got a list"},
	})
}

// A bad value from a config file names the file, the line and the key, whether the decoder or
// the validation finds it; the same value from --set names --set or the key alone.
func TestBadConfigValuesNameFileLine(t *testing.T) {
	files := map[string]string{
		"durint.toml": "[exec]\ntimeout = 4\n",
		"durbad.toml": "[exec]\ntimeout = \"4x\"\n",
		"run.toml":    "# a run\n[run]\nseed = 1\n\n[exec]\nworkers = 1\nmemory_mb = -5\n",
		"stages.toml": "[[rl.stages]]\nname = \"a\"\nsteps = 1\nmax_response_tokens = 64\nmax_turns = 1\n" +
			"[[rl.stages]]\nname = \"a\"\nsteps = 1\nmax_response_tokens = 64\nmax_turns = 1\n",
		"inline.toml": "[rl]\nstages = [{name = \"a\", steps = 1, max_response_tokens = 64, max_turns = 0}]\n",
		"roc.toml":    "[rl]\n\n\nroc = \"sometimes\"\n",
	}
	runBad(t, "", []badCase{
		{args: []string{"config", "check", "durint.toml"}, files: files, want: `durint.toml:2: exec.timeout: want a duration like "4s"`},
		{args: []string{"--config", "durint.toml", "config", "show"}, files: files, want: `durint.toml:2: exec.timeout: want a duration`},
		{args: []string{"config", "check", "durbad.toml"}, files: files, want: `durbad.toml:2: exec.timeout: want a duration`},
		{args: []string{"config", "check", "run.toml"}, files: files, want: "run.toml:7: exec.memory_mb: must be ≥ 16, got -5"},
		{args: []string{"--config", "run.toml", "config", "show"}, files: files, want: "run.toml:7: exec.memory_mb: must be ≥ 16, got -5"},
		{args: []string{"config", "show", "--config", "run.toml"}, files: files, want: "run.toml:7: exec.memory_mb"},
		{args: []string{"config", "check", "stages.toml"}, files: files, want: `stages.toml:7: rl.stages.1.name: "a" is also the name of rl.stages.0`},
		{args: []string{"config", "check", "inline.toml"}, files: files, want: "inline.toml:2: rl.stages.0.max_turns: must be ≥ 1, got 0"},
		{args: []string{"--config", "roc.toml", "config", "show"}, files: files, want: `roc.toml:4: rl.roc: must be one of`},
		// The --set value replaced the file's: no file line for it.
		{args: []string{"--config", "run.toml", "--set", "exec.memory_mb=-7", "config", "show"}, files: files, want: "gorstar: exec.memory_mb: must be ≥ 16, got -7"},
	})
}

// A .gz input cut short is a truncated gzip stream, for every command that reads one.
func TestBadTruncatedGzip(t *testing.T) {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	for i := range 200 {
		fmt.Fprintf(w, `{"problem": "What is %d + 1?", "answer": "%d"}`+"\n", i, i+1)
	}
	w.Close()
	cut := map[string]string{"g.jsonl.gz": buf.String()[:buf.Len()/2]}
	runBad(t, "", []badCase{
		{args: []string{"data", "stats", "g.jsonl.gz"}, files: cut, want: "g.jsonl.gz: truncated gzip stream: the file ends after "},
		{args: []string{"data", "import", "--in", "g.jsonl.gz", "--out", "p.parquet"}, files: cut, want: "g.jsonl.gz: truncated gzip stream"},
	})
}
