package rollout

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

func sampleTrajectories() []Trajectory {
	return []Trajectory{
		{ProblemID: "p0", Seed: 9, WeightVersion: 2, PromptIDs: []int32{1, 2, 3}, ResponseIDs: []int32{4, 5, 6},
			LossMask: []bool{true, false, true}, LogProbs: []float32{-0.25, 0, -1.5},
			Turns: []TurnRecord{{Tokens: 1, Code: "print(1)", Status: "ok", DurationMS: 3.5, ToolText: "1"}, {Tokens: 1}},
			Text:  "x\ny", Finish: FinishAnswer, NumTurns: 2, ToolCalls: 1, AnswerTags: 1, GeneratedTokens: 2, Reward: 1, Correct: true, Extracted: "4"},
		{ProblemID: "p1", ProblemIndex: 1, Sample: 1, PromptIDs: []int32{7}, Finish: FinishError, Error: "start: refused"},
	}
}

// The Parquet trace is real Parquet: read back by the Arrow reader, row for row.
func TestWriteParquetReadsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traces.parquet")
	ts := sampleTrajectories()
	if err := WriteParquet(path, ts); err != nil {
		t.Fatal(err)
	}
	f, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pqarrow.NewFileReader(f, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := r.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	if tbl.NumRows() != 2 || tbl.Schema().NumFields() != TraceSchema.NumFields() {
		t.Fatalf("%d rows, %d columns", tbl.NumRows(), tbl.Schema().NumFields())
	}
	for i, f := range TraceSchema.Fields() {
		// Parquet names a list's element and makes it nullable on the way back: compare elements.
		got := tbl.Schema().Field(i)
		gt, wt := got.Type, f.Type
		if gl, ok := gt.(*arrow.ListType); ok {
			if wl, ok := wt.(*arrow.ListType); ok {
				gt, wt = gl.Elem(), wl.Elem()
			}
		}
		if got.Name != f.Name || !arrow.TypeEqual(gt, wt) {
			t.Errorf("column %d is %s %s, want %s %s", i, got.Name, got.Type, f.Name, f.Type)
		}
	}
	col := func(name string) arrow.Array {
		return tbl.Column(tbl.Schema().FieldIndices(name)[0]).Data().Chunk(0)
	}
	resp := col("response_ids").(*array.List)
	ids := resp.ListValues().(*array.Int32)
	start, end := resp.ValueOffsets(0)
	if got := ids.Int32Values()[start:end]; !slices.Equal(got, ts[0].ResponseIDs) {
		t.Errorf("response_ids %v, want %v", got, ts[0].ResponseIDs)
	}
	mask := col("loss_mask").(*array.List).ListValues().(*array.Boolean)
	if mask.Len() != 3 || !mask.Value(0) || mask.Value(1) {
		t.Errorf("loss_mask read back wrong: %v", mask)
	}
	turns := col("turns").(*array.List)
	codes := turns.ListValues().(*array.Struct).Field(1).(*array.String)
	if turns.ListValues().Len() != 2 || codes.Value(0) != "print(1)" {
		t.Errorf("turns read back wrong: %v", turns)
	}
	if fin := col("finish").(*array.String); fin.Value(1) != "error" || col("error").(*array.String).Value(1) != "start: refused" {
		t.Errorf("finish/error read back wrong")
	}
}

func TestWriteJSONLRoundTrips(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traces.jsonl")
	ts := sampleTrajectories()
	if err := WriteJSONL(path, ts); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for i := 0; lines.Scan(); i++ {
		var got Trajectory
		if err := json.Unmarshal(lines.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, ts[i]) {
			t.Errorf("line %d: %+v\nwant %+v", i+1, got, ts[i])
		}
	}
}

// A failed write leaves nothing at the path.
func TestWriteParquetNothingOnFailure(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteParquet(filepath.Join(blocker, "traces.parquet"), sampleTrajectories()); err == nil {
		t.Fatal("writing under a file succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left %d entries behind", len(entries)-1)
	}
}
