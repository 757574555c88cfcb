package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"gorstar/internal/atomicfile"
	"gorstar/internal/jsonerr"
	"gorstar/internal/outpath"
	"gorstar/internal/plainjson"
	"gorstar/internal/usererr"
	"gorstar/reward"
)

func rewardCommand() *cli.Command {
	return &cli.Command{
		Name:  "reward",
		Usage: "grade final answers against references (the RL reward and the eval scorer)",
		Subcommands: []*cli.Command{
			{
				Name: "grade",
				Usage: "grade JSONL lines {\"response\": ..., \"answer\": ...} (optional \"truncated\": bool); " +
					"each output line adds \"correct\", \"extracted\" and \"reason\"",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "in", Usage: "input `PAIRS.jsonl` (- for standard input)"},
					&cli.StringFlag{Name: "out", Usage: "output `OUT.jsonl` (default: stdout, unless --json)"},
					&cli.StringFlag{Name: "mode", Usage: "strict or rstar2 (overrides reward.mode)"},
				},
				Action: rewardGrade,
			},
		},
	}
}

// gradeLine is one input line: its fields kept as they were, plus the parsed pair.
type gradeLine struct {
	fields   map[string]json.RawMessage
	response string
	answer   string
	opts     reward.Options
	result   reward.Result
}

func rewardGrade(c *cli.Context) error {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	in := c.String("in")
	if in == "" {
		return usererr.New("reward grade: --in PAIRS.jsonl is required")
	}
	modeName := o.Config.Reward.Mode
	if c.IsSet("mode") {
		modeName = c.String("mode")
	}
	mode, err := reward.ParseMode(modeName)
	if err != nil {
		return usererr.New("reward grade: --mode: %v", err)
	}
	if out := c.String("out"); out != "" {
		if err := outpath.File("--out", out, in); err != nil {
			return err
		}
	}
	lines, bad, err := readGradeLines(c.App.Reader, in, mode)
	if err != nil {
		return err
	}
	reportBadLines(c.App.ErrWriter, bad) // even under --quiet or --json: rows were left out

	bar := o.Progress(int64(len(lines)), "grade")
	start := time.Now()
	gradeAll(lines, o.Threads, bar.Add)
	elapsed := time.Since(start)
	bar.Finish()

	correct := 0
	for _, l := range lines {
		if l.result.Correct {
			correct++
		}
	}
	write := func(w io.Writer) error { return writeGradeLines(w, lines) }
	switch out := c.String("out"); {
	case out != "":
		if err := atomicfile.Write(out, write); err != nil {
			return fmt.Errorf("reward grade: write %s: %w", out, err)
		}
	case !o.JSON:
		if err := write(c.App.Writer); err != nil {
			return fmt.Errorf("reward grade: write stdout: %w", err)
		}
	}
	if o.JSON {
		perS := 0.0
		if elapsed > 0 {
			perS = float64(len(lines)) / elapsed.Seconds()
		}
		return printJSON(c, map[string]any{"n": len(lines), "correct": correct, "per_s": perS, "bad_lines": len(bad)})
	}
	if !o.Quiet {
		fmt.Fprintf(c.App.ErrWriter, "reward: %d/%d correct (mode %s)", correct, len(lines), mode)
		if len(bad) > 0 {
			fmt.Fprintf(c.App.ErrWriter, "; %d bad lines not graded", len(bad))
		}
		fmt.Fprintln(c.App.ErrWriter)
	}
	return nil
}

// readGradeLines reads every line. A line that is not a pair is reported in bad ("file:line:
// what is wrong") and left out; the rest are graded. An input with no gradable line is an error
// naming the first bad line, so a wrong file fails before any output is written.
// A path of "-" reads stdin. An input without a line is an error, as for the data commands.
func readGradeLines(stdin io.Reader, path string, mode reward.Mode) (lines []*gradeLine, bad []string, err error) {
	src := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, usererr.New("reward grade: %v", err)
		}
		defer f.Close()
		src = f
	}
	r := bufio.NewReaderSize(src, 1<<20)
	for n := 1; ; n++ {
		raw, err := r.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, nil, fmt.Errorf("read %s line %d: %w", path, n, err)
		}
		if len(bytes.TrimSpace(raw)) > 0 {
			l, perr := parseGradeLine(raw, mode)
			if perr != nil {
				bad = append(bad, fmt.Sprintf("%s:%d: %v", path, n, perr))
			} else {
				lines = append(lines, l)
			}
		}
		if err == io.EOF {
			switch {
			case len(lines) == 0 && len(bad) > 0:
				more := ""
				if len(bad) > 1 {
					more = fmt.Sprintf(" (and %d more bad lines)", len(bad)-1)
				}
				return nil, nil, usererr.New("%s%s; no line to grade", bad[0], more)
			case len(lines) == 0:
				return nil, nil, usererr.New("%s: empty (no lines to grade)", path)
			}
			return lines, bad, nil
		}
	}
}

// reportBadLines names the lines left out, five at most, one line each.
func reportBadLines(w io.Writer, bad []string) {
	for i, b := range bad {
		if i == 5 {
			fmt.Fprintf(w, "reward grade: %d more bad lines not graded\n", len(bad)-5)
			return
		}
		fmt.Fprintf(w, "reward grade: not graded: %s\n", b)
	}
}

func parseGradeLine(raw []byte, mode reward.Mode) (*gradeLine, error) {
	l := &gradeLine{opts: reward.Options{Mode: mode}}
	if err := json.Unmarshal(raw, &l.fields); err != nil {
		msg, _ := jsonerr.Describe(err)
		return nil, errors.New(msg)
	}
	if l.fields == nil {
		return nil, fmt.Errorf("invalid JSON: want an object, got null")
	}
	for _, f := range []struct {
		name    string
		into    *string
		numeric bool // a number is taken as its text (datasets store some answers as 27.0)
	}{{"response", &l.response, false}, {"answer", &l.answer, true}} {
		v, ok := l.fields[f.name]
		if !ok {
			return nil, fmt.Errorf("missing field %q", f.name)
		}
		if json.Unmarshal(v, f.into) == nil {
			continue
		}
		if text, ok := reward.NumberAnswer(string(v)); ok && f.numeric {
			*f.into = text
			continue
		}
		if f.numeric {
			return nil, fmt.Errorf("field %q: want a string or a number, got %s", f.name, abbreviate(v))
		}
		return nil, fmt.Errorf("field %q: want a string, got %s", f.name, abbreviate(v))
	}
	if v, ok := l.fields["truncated"]; ok {
		if err := json.Unmarshal(v, &l.opts.Truncated); err != nil {
			return nil, fmt.Errorf("field \"truncated\": want true or false, got %s", abbreviate(v))
		}
	}
	return l, nil
}

func abbreviate(v []byte) string {
	if len(v) > 40 {
		return string(v[:40]) + "…"
	}
	return string(v)
}

// gradeAll grades lines on all cores (or --threads of them); reward.Grade is safe for concurrent use.
func gradeAll(lines []*gradeLine, threads int, done func(int)) {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	next := make(chan *gradeLine)
	var wg sync.WaitGroup
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range next {
				l.result = reward.Grade(l.response, l.answer, l.opts)
				done(1)
			}
		}()
	}
	for _, l := range lines {
		next <- l
	}
	close(next)
	wg.Wait()
}

func writeGradeLines(w io.Writer, lines []*gradeLine) error {
	bw := bufio.NewWriter(w)
	enc := plainjson.NewEncoder(bw)
	for _, l := range lines {
		l.fields["correct"] = mustJSON(l.result.Correct)
		l.fields["extracted"] = mustJSON(l.result.Extracted)
		l.fields["reason"] = mustJSON(l.result.Reason)
		if err := enc.Encode(l.fields); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // bools and strings always marshal
	}
	return b
}
