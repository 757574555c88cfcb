package train

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gorstar/internal/usererr"
	"gorstar/rollout"
)

// samplesPerGroup is how many trajectories the report shows per stage: enough to see the
// format and a failure, few enough to read.
const samplesPerGroup = 3

// maxTracesScanned bounds how far into a traces file the report looks for varied samples.
const maxTracesScanned = 4096

// sampleGroup is a few trajectories from one traces file.
type sampleGroup struct {
	Title   string
	Samples []sample
}

// sample is one trajectory as the report shows it: its facts and its text cut into highlighted
// segments.
type sample struct {
	rollout.Trajectory
	Segments []segment
	Calls    []string // each tool call's status, in order
}

// segment is a piece of a response: Kind "" for the model's prose, or the tag it sits in
// ("tool_call", "tool_response", "answer").
type segment struct {
	Kind, Text string
}

// highlightTags are the spans the report colours, each with its closing tag.
var highlightTags = []string{"tool_call", "tool_response", "answer"}

// segmentText cuts a response at its tool calls, tool responses and answers; the tags stay in the
// text of their segment. An unclosed tag runs to the end.
func segmentText(text string) []segment {
	var out []segment
	for text != "" {
		at, tag := -1, ""
		for _, t := range highlightTags {
			if i := strings.Index(text, "<"+t+">"); i >= 0 && (at < 0 || i < at) {
				at, tag = i, t
			}
		}
		if at < 0 {
			out = append(out, segment{Text: text})
			break
		}
		if at > 0 {
			out = append(out, segment{Text: text[:at]})
		}
		end := len(text)
		if j := strings.Index(text[at:], "</"+tag+">"); j >= 0 {
			end = at + j + len("</"+tag+">")
		}
		out = append(out, segment{Kind: tag, Text: text[at:end]})
		text = text[end:]
	}
	return out
}

// readSamples picks up to samplesPerGroup trajectories from a traces JSONL file
// (rollout.WriteJSONL): a correct one, an incorrect one and one with a failed tool call when the
// file has them, then the first others. A missing file is no samples.
func readSamples(path string) ([]sample, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, usererr.New("%s: %v", path, pathErr(err))
	}
	defer f.Close()
	var all []rollout.Trajectory
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<26)
	for line := 1; sc.Scan() && line <= maxTracesScanned; line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var t rollout.Trajectory
		if err := json.Unmarshal(sc.Bytes(), &t); err != nil {
			return nil, usererr.New("%s:%d: not a trajectory: %v", path, line, err)
		}
		all = append(all, t)
	}
	if err := sc.Err(); err != nil {
		return nil, usererr.New("%s: %v", path, err)
	}
	var out []sample
	for _, i := range pickVaried(all) {
		out = append(out, newSample(all[i]))
	}
	return out, nil
}

// pickVaried returns the indices of the first correct, first incorrect and first failed-call
// trajectories, topped up with the first others, in file order.
func pickVaried(ts []rollout.Trajectory) []int {
	chosen := map[int]bool{}
	wants := []func(rollout.Trajectory) bool{
		func(t rollout.Trajectory) bool { return t.Correct },
		func(t rollout.Trajectory) bool { return !t.Correct },
		func(t rollout.Trajectory) bool { return t.FailedToolCalls > 0 },
	}
	for _, want := range wants {
		for i, t := range ts {
			if !chosen[i] && want(t) {
				chosen[i] = true
				break
			}
		}
	}
	for i := 0; i < len(ts) && len(chosen) < samplesPerGroup; i++ {
		chosen[i] = true
	}
	idx := make([]int, 0, len(chosen))
	for i := range chosen {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	return idx[:min(len(idx), samplesPerGroup)]
}

func newSample(t rollout.Trajectory) sample {
	s := sample{Trajectory: t, Segments: segmentText(t.Text)}
	for _, turn := range t.Turns {
		if turn.Status != "" {
			s.Calls = append(s.Calls, turn.Status)
		}
	}
	return s
}

// rlSampleFiles lists, per RL stage directory under traces/, its newest step file.
func rlSampleFiles(tracesDir string, stageOrder []string) []struct{ Stage, Path string } {
	var out []struct{ Stage, Path string }
	entries, _ := os.ReadDir(tracesDir)
	var stages []string
	for _, e := range entries {
		if e.IsDir() {
			stages = append(stages, e.Name())
		}
	}
	sort.SliceStable(stages, func(i, j int) bool { return stageRank(stages[i], stageOrder) < stageRank(stages[j], stageOrder) })
	for _, st := range stages {
		files, _ := filepath.Glob(filepath.Join(tracesDir, st, "step-*.jsonl"))
		if len(files) > 0 {
			sort.Strings(files) // zero-padded step numbers sort in step order
			out = append(out, struct{ Stage, Path string }{st, files[len(files)-1]})
		}
	}
	return out
}

// stageRank orders stages as the run did, unknown ones last.
func stageRank(stage string, order []string) int {
	for i, s := range order {
		if s == stage {
			return i
		}
	}
	return len(order)
}
