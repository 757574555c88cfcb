package data

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gorstar/internal/usererr"
)

func TestImportVerl(t *testing.T) {
	want := []Problem{
		{ID: StableID("What is 6 * 7?"), Problem: "What is 6 * 7?", Answer: "42", Source: "openai/gsm8k", Meta: `{"ability":"math","index":0,"split":"train"}`},
		{ID: StableID("Half of one?"), Problem: "Half of one?", Answer: `\frac{1}{2}`, Source: "aime", Meta: `{"ability":"math","index":1,"split":"train"}`},
		{ID: StableID("Null source, null extra_info"), Problem: "Null source, null extra_info", Answer: "7", Source: "verl", Meta: `{}`},
	}
	writers := map[string]func(t *testing.T, path string){
		"pyarrow-element": func(t *testing.T, p string) { writeVerlParquetLowLevel(t, p, "element", verlRows()) },
		"pyarrow-item":    func(t *testing.T, p string) { writeVerlParquetLowLevel(t, p, "item", verlRows()) },
		"arrow-large":     func(t *testing.T, p string) { writeVerlParquetArrow(t, p, verlRows()) },
	}
	for name, write := range writers {
		for _, format := range []string{"auto", "verl", "parquet"} {
			t.Run(name+"/"+format, func(t *testing.T) {
				dir := t.TempDir()
				in := filepath.Join(dir, "verl.parquet")
				write(t, in)
				out := filepath.Join(dir, "out.parquet")
				res, err := Import(context.Background(), ImportOptions{Inputs: []string{in}, Out: out, Format: format})
				if err != nil {
					t.Fatal(err)
				}
				if res.Rows != 3 || res.Skipped != 2 || res.NoAnswer != 1 || res.NoProblem != 1 {
					t.Errorf("result %+v", res)
				}
				got, err := ReadAllProblems(out)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("got\n%+v\nwant\n%+v", got, want)
				}
			})
		}
	}
}

func TestImportVerlJSONL(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "verl.jsonl", `{"data_source": "gsm8k", "prompt": [{"role": "system", "content": "s"}, {"role": "user", "content": "Two plus two?"}], "ability": "math", "reward_model": {"ground_truth": "4", "style": "rule"}, "extra_info": {"index": 3}}`+"\n")
	out := filepath.Join(dir, "out.jsonl")
	for _, format := range []string{"auto", "verl"} {
		if _, err := Import(context.Background(), ImportOptions{Inputs: []string{in}, Out: out, Format: format}); err != nil {
			t.Fatal(err)
		}
		got, err := ReadAllProblems(out)
		if err != nil {
			t.Fatal(err)
		}
		want := Problem{ID: StableID("Two plus two?"), Problem: "Two plus two?", Answer: "4", Source: "gsm8k", Meta: `{"ability":"math","index":3}`}
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s: got %+v", format, got)
		}
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestImportJSONLMapping(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "gsm.jsonl", strings.Join([]string{
		`{"question": "Q1", "answer": 12, "level": 3}`,
		``,
		`{"question": "Q2", "answer": "  7 ", "unique_id": "u2", "source": "mine", "meta": {"a": 1}}`,
		`{"question": "", "answer": "1"}`,
		`{"question": "Q4", "answer": null}`,
		`{"question": "Q5"}`,
		`{"question": "Q6", "answer": [1, 2]}`,
	}, "\n"))
	out := filepath.Join(dir, "out.parquet")
	res, err := Import(context.Background(), ImportOptions{Inputs: []string{in}, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 3 || res.Skipped != 3 || res.NoProblem != 1 || res.NoAnswer != 2 {
		t.Errorf("result %+v", res)
	}
	if want := []string{"gsm.jsonl:4: no problem", "gsm.jsonl:5: no answer", "gsm.jsonl:6: no answer"}; len(res.Examples) != 3 || !strings.HasSuffix(res.Examples[0], want[0]) {
		t.Errorf("examples %v", res.Examples)
	}
	got, err := ReadAllProblems(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []Problem{
		{ID: StableID("Q1"), Problem: "Q1", Answer: "12", Source: "gsm", Meta: `{"level":3}`},
		{ID: "u2", Problem: "Q2", Answer: "7", Source: "mine", Meta: `{"a":1}`},
		{ID: StableID("Q6"), Problem: "Q6", Answer: "[1,2]", Source: "gsm", Meta: `{}`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestImportExplicitColumns(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "x.jsonl", `{"q": "What?", "sol": {"final": "5"}, "key": 17}`+"\n")
	out := filepath.Join(dir, "out.jsonl")
	_, err := Import(context.Background(), ImportOptions{Inputs: []string{in}, Out: out,
		Mapping: Mapping{Problem: "q", Answer: "sol.final", ID: "key"}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := ReadAllProblems(out)
	if len(got) != 1 || got[0] != (Problem{ID: "17", Problem: "What?", Answer: "5", Source: "x", Meta: "{}"}) {
		t.Errorf("got %+v", got)
	}
}

// Importing gorstar's own export gives back the same table.
func TestImportCanonicalRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := sampleProblems(50)
	for _, name := range []string{"in.parquet", "in.jsonl"} {
		in := filepath.Join(dir, name)
		writeProblems(t, in, want)
		out := filepath.Join(dir, "out.parquet")
		res, err := Import(context.Background(), ImportOptions{Inputs: []string{in, in}, Out: out})
		if err != nil {
			t.Fatal(err)
		}
		if res.Rows != 100 {
			t.Errorf("%s: rows %d", name, res.Rows)
		}
		got, err := ReadAllProblems(out)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[:50], want) || !reflect.DeepEqual(got[50:], want) {
			t.Errorf("%s: got %+v", name, got[:2])
		}
	}
}

func TestImportBadInput(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.jsonl", `{"problem": "p", "answer": "1"}`+"\n")
	var lines []string
	for i := 0; i < 56; i++ {
		lines = append(lines, `{"problem": "p", "answer": "1"}`)
	}
	lines = append(lines, `{"problem": "p", "answer": }`)
	bad57 := writeFile(t, dir, "bad.jsonl", strings.Join(lines, "\n")+"\n")
	noAnswer := writeFile(t, dir, "noans.jsonl", `{"problem": "p", "solution": "long"}`+"\n")
	blank := writeFile(t, dir, "blank.jsonl", "\n\n  \n")
	empty := writeFile(t, dir, "empty.jsonl", "")
	pq := filepath.Join(dir, "probs.parquet")
	writeProblems(t, pq, sampleProblems(3))
	verlLike := filepath.Join(dir, "v.parquet")
	writeVerlParquetLowLevel(t, verlLike, "element", verlRows())

	cases := []struct {
		name   string
		inputs []string
		format string
		m      Mapping
		want   string
	}{
		{"malformed line", []string{good, bad57}, "", Mapping{}, "bad.jsonl:57: invalid JSON: "},
		{"no answer field", []string{noAnswer}, "", Mapping{}, `noans.jsonl:1: no answer field (tried "answer", "final_answer", "expected_answer", "ground_truth", "reward_model.ground_truth", "target") (fields found: problem, solution)`},
		{"blank file", []string{blank}, "", Mapping{}, "blank.jsonl: no rows"},
		{"empty file", []string{good, empty}, "", Mapping{}, "empty.jsonl: file is empty"},
		{"missing file", []string{good, filepath.Join(dir, "nope.jsonl")}, "", Mapping{}, "nope.jsonl: no such file"},
		{"missing column", []string{pq}, "", Mapping{Answer: "final"}, `probs.parquet: no answer column "final" (columns found: id, problem, answer, source, meta)`},
		{"verl format on plain table", []string{pq}, "verl", Mapping{}, `probs.parquet: no problem column "prompt" (columns found: id, problem, answer, source, meta)`},
		{"missing nested column", []string{verlLike}, "", Mapping{Answer: "reward_model.answer"}, `no answer column "reward_model.answer"`},
		{"bad format", []string{good}, "csv", Mapping{}, "--format must be auto, jsonl, parquet, verl"},
		{"jsonl format on parquet", []string{pq}, "jsonl", Mapping{}, "probs.parquet:1: invalid JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			outDir := t.TempDir()
			_, err := Import(context.Background(), ImportOptions{Inputs: tc.inputs, Out: filepath.Join(outDir, "out.parquet"), Format: tc.format, Mapping: tc.m})
			if err == nil {
				t.Fatal("no error")
			}
			if !usererr.Is(err) {
				t.Errorf("not a user error: %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\ndoes not contain %q", err, tc.want)
			}
			assertEmptyDir(t, outDir)
		})
	}
}

func TestImportJSONLWithBOMAndCRLF(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "win.jsonl", "\xef\xbb\xbf{\"problem\": \"p1\", \"answer\": \"1\"}\r\n{\"problem\": \"p2\", \"answer\": \"2\"}\r\n")
	res, err := Import(context.Background(), ImportOptions{Inputs: []string{in}, Out: filepath.Join(dir, "o.parquet")})
	if err != nil || res.Rows != 2 {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestImportJSONArray(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "math.json", "\xef\xbb\xbf [\n  {\"problem\": \"p1\", \"answer\": \"1\"},\n  {\"problem\": \"p2\", \"solution\": \"x\", \"answer\": null}\n]\n")
	res, err := Import(context.Background(), ImportOptions{Inputs: []string{in}, Out: filepath.Join(dir, "o.parquet")})
	if err != nil || res.Rows != 1 || res.NoAnswer != 1 || len(res.Examples) != 1 || !strings.HasSuffix(res.Examples[0], "math.json element 2: no answer") {
		t.Fatalf("%+v %v", res, err)
	}
	bad := writeFile(t, dir, "bad.json", `[{"problem": "p1", "answer": "1"}, {"problem": oops}]`)
	_, err = Import(context.Background(), ImportOptions{Inputs: []string{bad}, Out: filepath.Join(dir, "o2.parquet")})
	if err == nil || !strings.Contains(err.Error(), "bad.json element 2: invalid JSON") {
		t.Fatalf("got %v", err)
	}
}

func TestImportCanceledLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeProblems(t, in, sampleProblems(3000))
	outDir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Import(ctx, ImportOptions{Inputs: []string{in}, Out: filepath.Join(outDir, "out.parquet")})
	if err != context.Canceled {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	assertEmptyDir(t, outDir)
}
