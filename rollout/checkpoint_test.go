package rollout

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/data"
	"gorstar/internal/checkpoint"
)

// A checkpoint reads back what an earlier run kept, whatever the kill left: a torn last line is
// cut off, and trajectories that do not fit the run (another problem at that index, a sample
// past --samples, a backend failure, a duplicate) are rolled out again.
func TestCheckpointResume(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "t.parquet")
	problems := []data.Problem{{ID: "a"}, {ID: "b"}}
	man := Manifest{Data: "p.jsonl", DataSHA256: "d", Problems: 2, Samples: 2, Seed: 1, Temperature: 1}
	ck, err := OpenCheckpoint(out, man, problems)
	if err != nil {
		t.Fatal(err)
	}
	ck.Add(Trajectory{ProblemID: "b", ProblemIndex: 1, Sample: 1, ResponseIDs: []int32{5, 6}, Finish: FinishAnswer})
	ck.Add(Trajectory{ProblemID: "a", ProblemIndex: 0, Sample: 1, Finish: FinishError}) // not kept
	ck.Add(Trajectory{ProblemID: "a", ProblemIndex: 0, Sample: 0, ResponseIDs: []int32{7}, Finish: FinishNoCall})
	ck.Close()
	_, partial := CheckpointPaths(out)
	f, err := os.OpenFile(partial, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range []Trajectory{
		{ProblemID: "x", ProblemIndex: 1, Sample: 0, Finish: FinishAnswer}, // another problem at index 1
		{ProblemID: "a", ProblemIndex: 0, Sample: 2, Finish: FinishAnswer}, // past --samples
		{ProblemID: "a", ProblemIndex: 0, Sample: 0, Finish: FinishAnswer}, // kept already
	} {
		b, _ := json.Marshal(tr)
		f.Write(append(b, '\n'))
	}
	f.WriteString(`{"problem_id": "b", "problem_ind`) // torn by the kill
	f.Close()

	ck, err = OpenCheckpoint(filepath.Join(dir, "t.parquet"), man, problems)
	if err != nil {
		t.Fatal(err)
	}
	if len(ck.Done) != 2 {
		t.Fatalf("resumed %d trajectories, want 2: %+v", len(ck.Done), ck.Done)
	}
	for _, c := range []struct {
		i, j    int
		pending bool
	}{{0, 0, false}, {0, 1, true}, {1, 0, true}, {1, 1, false}} {
		if ck.Pending(c.i, c.j) != c.pending {
			t.Errorf("Pending(%d, %d) = %v", c.i, c.j, !c.pending)
		}
	}
	all := ck.Merge([]Trajectory{{ProblemIndex: 1, Sample: 0}, {ProblemIndex: 0, Sample: 1}})
	for k, want := range [][2]int{{0, 0}, {0, 1}, {1, 0}, {1, 1}} {
		if all[k].ProblemIndex != want[0] || all[k].Sample != want[1] {
			t.Errorf("merged %d is (%d, %d), want %v", k, all[k].ProblemIndex, all[k].Sample, want)
		}
	}
	b, _ := os.ReadFile(partial)
	if strings.Contains(string(b), "problem_ind\"") || !strings.HasSuffix(string(b), "\n") {
		t.Errorf("the torn line was not cut off: %q", b)
	}
	if err := ck.Failed(os.ErrDeadlineExceeded); !strings.Contains(err.Error(), "the 2 finished trajectories are kept in "+partial) {
		t.Errorf("Failed: %v", err)
	}
	if err := ck.Finish(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{partial, checkpoint.PartialManifest(partial)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("Finish left %s: %v", p, err)
		}
	}
	var got Manifest
	manPath, _ := CheckpointPaths(out)
	if b, err := os.ReadFile(manPath); err != nil || json.Unmarshal(b, &got) != nil || got.DataSHA256 != "d" {
		t.Errorf("no manifest beside the traces after Finish: %q, %v", b, err)
	}
}

// A checkpoint made under another manifest is refused with one line naming the field; one that
// holds nothing is removed, with its manifest, when the run fails, and the manifest of the traces
// an earlier run finished is left as it was.
func TestCheckpointRefusesOtherManifest(t *testing.T) {
	out := filepath.Join(t.TempDir(), "t.parquet")
	manPath, partial := CheckpointPaths(out)
	if err := os.WriteFile(manPath, []byte("an earlier run's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	problems := []data.Problem{{ID: "a"}}
	man := Manifest{Data: "p.jsonl", DataSHA256: "d", Problems: 1, Samples: 2, Temperature: 1, Model: "m", ModelSHA256: "h"}
	ck, err := OpenCheckpoint(out, man, problems)
	if err != nil {
		t.Fatal(err)
	}
	ck.Close()
	moved := man
	moved.Data, moved.Model = "elsewhere/p.jsonl", "elsewhere/m" // paths may move
	if ck, err = OpenCheckpoint(out, moved, problems); err != nil {
		t.Fatalf("moved files: %v", err)
	}
	ck.Close()
	other := man
	other.Temperature = 0.6
	_, err = OpenCheckpoint(out, other, problems)
	if err == nil || !strings.Contains(err.Error(), "temperature (was 1, now 0.6)") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v, want one line naming the temperature", err)
	}
	other = man
	other.ModelSHA256 = "h2"
	if _, err = OpenCheckpoint(out, other, problems); err == nil || !strings.Contains(err.Error(), "model_sha256") {
		t.Fatalf("err = %v, want a refusal naming the model's hash", err)
	}
	ck, err = OpenCheckpoint(out, man, problems)
	if err != nil {
		t.Fatal(err)
	}
	ck.Discard()
	for _, p := range []string{checkpoint.PartialManifest(partial), partial} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("an empty checkpoint's %s is still there: %v", p, err)
		}
	}
	if b, _ := os.ReadFile(manPath); string(b) != "an earlier run's\n" {
		t.Errorf("the earlier traces' manifest became %q", b)
	}
}

// Write merges the resumed trajectories into the run's, counts them all and writes both files.
func TestCheckpointWrite(t *testing.T) {
	dir := t.TempDir()
	out, jsonl := filepath.Join(dir, "t.parquet"), filepath.Join(dir, "t.jsonl")
	problems := []data.Problem{{ID: "a"}, {ID: "b"}}
	man := Manifest{Data: "p.jsonl", DataSHA256: "d", Problems: 2, Samples: 1, Seed: 1, Temperature: 1}
	ck, err := OpenCheckpoint(out, man, problems)
	if err != nil {
		t.Fatal(err)
	}
	ck.Add(Trajectory{ProblemID: "b", ProblemIndex: 1, ResponseIDs: []int32{5}, Finish: FinishAnswer, Correct: true})
	ck.Close()
	if ck, err = OpenCheckpoint(out, man, problems); err != nil || len(ck.Done) != 1 {
		t.Fatalf("resume: %v, %d done", err, len(ck.Done))
	}
	sum, err := ck.Write(out, jsonl, []Trajectory{{ProblemID: "a", ResponseIDs: []int32{7}, Finish: FinishNoCall}},
		Summary{Trajectories: 1, DecodeTokensPerS: 12, Seconds: 3})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Trajectories != 2 || sum.Correct != 1 || sum.Resumed != 1 || sum.DecodeTokensPerS != 12 || sum.Seconds != 3 {
		t.Errorf("summary %+v", sum)
	}
	b, err := os.ReadFile(jsonl)
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); err != nil || len(lines) != 2 || !strings.Contains(lines[0], `"problem_id":"a"`) {
		t.Errorf("jsonl %q: %v", b, err)
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("no traces: %v", err)
	}
}
