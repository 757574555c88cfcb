package data

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"testing"

	"gorstar/chat"
)

func sampleConversations(n int) []chat.Conversation {
	out := make([]chat.Conversation, n)
	for i := range out {
		out[i] = chat.Conversation{ID: fmt.Sprintf("c%d", i), Messages: []chat.Message{
			{Role: "system", Content: "sys <tools>"},
			{Role: "user", Content: fmt.Sprintf("What is %d * 3?", i)},
			{Role: "assistant", Content: "<reason>use python</reason>", ToolCalls: []chat.ToolCall{chat.PythonCall(fmt.Sprintf("print(%d * 3)", i), "")}},
			{Role: "tool", Name: "python", Content: fmt.Sprint(3 * i)},
			{Role: "assistant", Content: fmt.Sprintf(`<answer>\boxed{%d}</answer>`, 3*i)},
		}}
	}
	out[0].Messages = nil // an empty conversation survives too
	// Weights 0 and 1 survive, and no weight stays none.
	for i := 1; i < n; i += 2 {
		out[i].Messages[2].Weight = chat.Weight(0)
		if i%4 == 3 {
			out[i].Messages[4].Weight = chat.Weight(1)
		}
	}
	out[1].Messages[2].ToolCalls = append(out[1].Messages[2].ToolCalls, chat.ToolCall{Name: "other", Arguments: json.RawMessage(`{"x": [1, 2]}`)})
	return out
}

func TestConversationsRoundTrip(t *testing.T) {
	want := sampleConversations(3*readBatchRows + 5)
	for _, name := range []string{"c.parquet", "c.jsonl"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			w, err := CreateConversations(path)
			if err != nil {
				t.Fatal(err)
			}
			if w.pq != nil {
				w.pq.maxRows = smallRowGroups
			}
			for _, c := range want {
				if err := w.Write(c); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := ReadAllConversations(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d rows, want %d", len(got), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(got[i], want[i]) && !(len(got[i].Messages) == 0 && len(want[i].Messages) == 0) {
					t.Fatalf("row %d:\n got %+v\nwant %+v", i, got[i], want[i])
				}
			}
		})
	}
}

func TestStats(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.parquet")
	writeProblems(t, path, []Problem{
		{ID: "1", Problem: "a", Answer: "12", Source: "x"},
		{ID: "2", Problem: "bb", Answer: `\frac{1}{2}`, Source: "x"},
		{ID: "3", Problem: "ccc", Answer: "0.25", Source: "y"},
		{ID: "4", Problem: "dddd", Answer: "x^2+1", Source: "y"},
		{ID: "5", Problem: "e", Answer: "blue", Source: "y"},
	})
	st, err := ComputeStats(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows != 5 || st.Table != "problems" || !reflect.DeepEqual(st.Columns, ProblemColumns) ||
		st.Sources["x"] != 2 || st.Sources["y"] != 3 || st.MaxProblemLen != 4 {
		t.Errorf("%+v", st)
	}
	if st.AnswerKinds["integer"] != 1 || st.AnswerKinds["rational"] != 1 || st.AnswerKinds["text"] != 1 {
		t.Errorf("answer kinds %v", st.AnswerKinds)
	}
	verl := filepath.Join(dir, "v.parquet")
	writeVerlParquetLowLevel(t, verl, "element", verlRows())
	st, err = ComputeStats(context.Background(), verl)
	if err != nil || st.Table != "other" || st.Rows != 5 || len(st.Columns) != 5 ||
		st.AnswerKinds["integer"] != 2 || st.AnswerKinds["rational"] != 1 {
		t.Errorf("verl stats %+v %v", st, err)
	}
}

func TestSplit(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	all := sampleProblems(100)
	writeProblems(t, in, all)
	run := func(seed int64, size float64) ([]Problem, []Problem) {
		train, test := filepath.Join(dir, "train.parquet"), filepath.Join(dir, "test.jsonl")
		res, err := Split(context.Background(), SplitOptions{In: in, Train: train, Test: test, TestSize: size, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := ReadAllProblems(train)
		b, _ := ReadAllProblems(test)
		if res.Train != len(a) || res.Test != len(b) {
			t.Fatalf("result %+v, files %d/%d", res, len(a), len(b))
		}
		return a, b
	}
	a1, b1 := run(1, 10)
	if len(a1) != 90 || len(b1) != 10 {
		t.Fatalf("sizes %d %d", len(a1), len(b1))
	}
	ids := map[string]bool{}
	for _, p := range append(append([]Problem{}, a1...), b1...) {
		ids[p.ID] = true
	}
	if len(ids) != 100 {
		t.Errorf("rows lost or duplicated: %d distinct", len(ids))
	}
	if !sort.SliceIsSorted(b1, func(i, j int) bool { return b1[i].ID < b1[j].ID }) {
		t.Errorf("test side not in input order")
	}
	a2, b2 := run(1, 10)
	if !reflect.DeepEqual(a1, a2) || !reflect.DeepEqual(b1, b2) {
		t.Errorf("same seed, different split")
	}
	if _, b3 := run(2, 10); reflect.DeepEqual(b1, b3) {
		t.Errorf("seeds 1 and 2 give the same split")
	}
	if _, b4 := run(1, 0.25); len(b4) != 25 {
		t.Errorf("fraction 0.25 gave %d rows", len(b4))
	}
	for _, size := range []float64{0, 101, 2.5, -1} {
		outDir := t.TempDir()
		_, err := Split(context.Background(), SplitOptions{In: in, Train: filepath.Join(outDir, "a.parquet"), Test: filepath.Join(outDir, "b.parquet"), TestSize: size})
		if err == nil {
			t.Errorf("test size %v: no error", size)
		}
		assertEmptyDir(t, outDir)
	}
}

func TestFilter(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.parquet")
	writeProblems(t, in, []Problem{
		{ID: "1", Problem: "What is the sum of the first ten positive integers, counted carefully?", Answer: "55"},
		{ID: "2", Problem: "WHAT is the sum of the first ten positive integers,   counted carefully!", Answer: "55"},          // duplicate
		{ID: "3", Problem: "Find x.", Answer: `\frac{1}{3}`},                                                                  // not an integer
		{ID: "4", Problem: "Alice has three cats and two dogs. How many legs are there in total in the house?", Answer: "20"}, // in eval
		{ID: "5", Problem: "Compute 2^{10}.", Answer: "2^{10}"},                                                               // integer by value
		{ID: "6", Problem: "Short one", Answer: "1"},                                                                          // whole-text match with eval
	})
	eval := writeFile(t, dir, "eval.jsonl",
		`{"question": "Bob says: alice has three cats and two dogs. How many legs are there?", "answer": "20"}`+"\n"+
			`{"question": "short ONE."}`+"\n")
	out := filepath.Join(dir, "out.jsonl")
	res, err := Filter(context.Background(), FilterOptions{In: in, Out: out, IntegerAnswers: true, Dedup: true,
		Decontaminate: []string{eval}, NGram: 8})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{DropDuplicate: 1, DropNotInteger: 1, DropContaminated: 2}
	if res.Read != 6 || res.Rows != 2 || !reflect.DeepEqual(res.Dropped, want) || res.EvalProblems != 2 {
		t.Errorf("%+v", res)
	}
	got, _ := ReadAllProblems(out)
	if len(got) != 2 || got[0].ID != "1" || got[1].ID != "5" {
		t.Errorf("kept %+v", got)
	}
	// Nothing enabled keeps everything.
	res, err = Filter(context.Background(), FilterOptions{In: in, Out: out})
	if err != nil || res.Rows != 6 || len(res.Dropped) != 0 {
		t.Errorf("no rules: %+v %v", res, err)
	}
}

// A Check sees only what the rules kept, in batches of CheckBatch in input order; its reasons are
// counted and its drops left out; a Check that fails leaves no output.
func TestFilterCheck(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var ps []Problem
	for i := range 7 {
		ps = append(ps, Problem{ID: strconv.Itoa(i), Problem: "Problem number " + strconv.Itoa(i%5), Answer: "1"})
	}
	writeProblems(t, in, ps) // rows 5 and 6 repeat rows 0 and 1
	out := filepath.Join(dir, "out.jsonl")
	var batches [][]string
	check := func(_ context.Context, rows []Problem) ([]string, error) {
		var ids, drop []string
		for _, p := range rows {
			ids = append(ids, p.ID)
			drop = append(drop, map[bool]string{true: "odd"}[p.ID[0]%2 == 1])
		}
		batches = append(batches, ids)
		return drop, nil
	}
	res, err := Filter(context.Background(), FilterOptions{In: in, Out: out, Dedup: true, Check: check, CheckBatch: 2})
	if err != nil {
		t.Fatal(err)
	}
	wantBatches := [][]string{{"0", "1"}, {"2", "3"}, {"4"}}
	if !reflect.DeepEqual(batches, wantBatches) {
		t.Errorf("batches %v, want %v", batches, wantBatches)
	}
	if want := map[string]int{DropDuplicate: 2, "odd": 2}; res.Read != 7 || res.Rows != 3 || !reflect.DeepEqual(res.Dropped, want) {
		t.Errorf("%+v", res)
	}
	got, _ := ReadAllProblems(out)
	if len(got) != 3 || got[0].ID != "0" || got[1].ID != "2" || got[2].ID != "4" {
		t.Errorf("kept %+v", got)
	}
	failing := filepath.Join(dir, "failing.jsonl")
	_, err = Filter(context.Background(), FilterOptions{In: in, Out: failing, CheckBatch: 3,
		Check: func(context.Context, []Problem) ([]string, error) { return nil, errors.New("policy lost") }})
	if err == nil || err.Error() != "policy lost" {
		t.Errorf("error %v", err)
	}
	if _, err := os.Stat(failing); !os.IsNotExist(err) {
		t.Errorf("a failed check left %s: %v", failing, err)
	}
}

func TestExport(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "c.parquet")
	w, _ := CreateConversations(in)
	for _, c := range sampleConversations(5) {
		w.Write(c)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "c.jsonl.gz")
	n, err := Export(context.Background(), in, out, nil)
	if err != nil || n != 5 {
		t.Fatalf("%d %v", n, err)
	}
	got, err := ReadAllConversations(out)
	if err != nil || len(got) != 5 || got[2].Messages[2].ToolCalls[0].Name != "python" {
		t.Errorf("%v %+v", err, got)
	}
	verl := filepath.Join(dir, "v.parquet")
	writeVerlParquetLowLevel(t, verl, "item", verlRows())
	if _, err := Export(context.Background(), verl, filepath.Join(dir, "v.jsonl"), nil); err == nil {
		t.Errorf("exporting a verl file (not a gorstar table) should fail")
	}
}

func TestNormalization(t *testing.T) {
	cases := []struct{ a, b string }{
		{"What is  $\\frac{1}{2}$?", "what is frac 1 2"},
		{"Hello, World!", "hello world"},
	}
	for _, c := range cases {
		if textKey(c.a) != textKey(c.b) {
			t.Errorf("%q and %q should normalize alike: %v", c.a, c.b, normalizedWords(c.a))
		}
	}
	if textKey("a b") == textKey("ab") {
		t.Errorf("word boundaries lost")
	}
	if n := len(ngramHashes("one two three four five", 3)); n != 3 {
		t.Errorf("%d 3-grams of 5 words", n)
	}
}
