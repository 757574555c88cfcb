package data

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gorstar/chat"
	"gorstar/internal/usererr"
)

func sampleProblems(n int) []Problem {
	out := make([]Problem, n)
	for i := range out {
		out[i] = Problem{
			ID:      fmt.Sprintf("p%05d", i),
			Problem: fmt.Sprintf("What is %d + %d? <b>ünïcode</b> & \"quotes\"\nsecond line", i, i+1),
			Answer:  fmt.Sprint(2*i + 1),
			Source:  "test",
			Meta:    fmt.Sprintf(`{"i":%d}`, i),
		}
	}
	out[0].Meta = "{}"
	return out
}

// smallRowGroups makes Parquet writers cut a row group every 500 rows, so tests cross row-group
// and read-batch boundaries without writing big files.
const smallRowGroups = 500

func writeProblems(t *testing.T, path string, ps []Problem) {
	t.Helper()
	w, err := CreateProblems(path)
	if err != nil {
		t.Fatal(err)
	}
	if w.pq != nil {
		w.pq.maxRows = smallRowGroups
	}
	defer w.Abort()
	for _, p := range ps {
		if err := w.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestProblemsRoundTrip(t *testing.T) {
	// More rows than one row group holds, so reading crosses row-group and batch boundaries.
	want := sampleProblems(3*readBatchRows + 17)
	for _, name := range []string{"p.parquet", "p.jsonl", "p.jsonl.gz"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			writeProblems(t, path, want)
			got, err := ReadAllProblems(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("read %d rows, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("row %d: got %+v, want %+v", i, got[i], want[i])
				}
			}
		})
	}
}

func TestProblemsParquetRowGroups(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.parquet")
	writeProblems(t, path, sampleProblems(2*smallRowGroups+5))
	f, err := openParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	if got := f.raw.NumRowGroups(); got != 3 {
		t.Errorf("row groups = %d, want 3", got)
	}
	if got := f.columnNames(); !reflect.DeepEqual(got, ProblemColumns) {
		t.Errorf("columns = %v", got)
	}
}

func TestProblemWriterAbortLeavesNothing(t *testing.T) {
	for _, name := range []string{"p.parquet", "p.jsonl"} {
		dir := t.TempDir()
		path := filepath.Join(dir, name)
		w, err := CreateProblems(path)
		if err != nil {
			t.Fatal(err)
		}
		if w.pq != nil {
			w.pq.maxRows = smallRowGroups
		}
		for _, p := range sampleProblems(smallRowGroups + 10) { // a row group is already on disk
			if err := w.Write(p); err != nil {
				t.Fatal(err)
			}
		}
		w.Abort()
		assertEmptyDir(t, dir)
	}
}

func TestProblemWriterKeepsOldFileOnAbort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.parquet")
	writeProblems(t, path, sampleProblems(3))
	w, err := CreateProblems(path)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(Problem{ID: "x", Problem: "new", Answer: "1"})
	w.Abort()
	got, err := ReadAllProblems(path)
	if err != nil || len(got) != 3 {
		t.Fatalf("old file damaged: %d rows, %v", len(got), err)
	}
}

func assertEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left behind: %s", e.Name())
	}
}

func TestOpenProblemsBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	wrongCols := filepath.Join(dir, "convs.parquet")
	wc, _ := CreateConversations(wrongCols)
	wc.Write(chat.Conversation{ID: "a", Messages: []chat.Message{{Role: "user", Content: "hi"}}})
	if err := wc.Close(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nope.parquet"), "nope.parquet: no such file"},
		{"empty", write("empty.parquet", ""), "empty.parquet: file is empty"},
		{"empty jsonl", write("empty.jsonl", ""), "empty.jsonl: file is empty"},
		{"not parquet", write("text.parquet", "hello world, not parquet"), "text.parquet: not a readable Parquet file"},
		{"directory", dir, "is a directory"},
		{"wrong table", wrongCols, `convs.parquet: no problems column "problem" (columns found: id, messages)`},
		{"bad json", write("bad.jsonl", "{\"problem\": \"a\"}\n\n{\"problem\": oops}\n"), "bad.jsonl:3: invalid JSON: "},
		{"not object", write("arr.jsonl", "[1, 2]\n"), "arr.jsonl:1: expected a JSON object, got an array"},
		{"no problem", write("np.jsonl", `{"question": "q", "answer": "1"}`), `np.jsonl:1: missing field "problem" (fields found: answer, question)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadAllProblems(tc.path)
			if err == nil {
				t.Fatal("no error")
			}
			if !usererr.Is(err) {
				t.Errorf("not a user error: %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestProblemReaderEOF(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.parquet")
	writeProblems(t, path, sampleProblems(2))
	r, err := OpenProblems(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Rows() != 2 {
		t.Errorf("Rows = %d", r.Rows())
	}
	for i := 0; i < 2; i++ {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := r.Next(); !errors.Is(err, io.EOF) {
			t.Fatalf("after the end: %v", err)
		}
	}
}
