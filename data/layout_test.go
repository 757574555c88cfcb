package data

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"gorstar/internal/usererr"
)

// The fixtures under testdata/public are laid out as the public evaluation repositories ship
// their sets (column names, value types, file names), with problems written for these tests.
func TestImportPublicLayouts(t *testing.T) {
	cases := []struct {
		file     string
		source   string
		answers  []string
		problem0 string // the first row's problem
		id0      string // the first row's id ("" = the hash of its problem)
	}{
		{"gsm8k/test.jsonl", "gsm8k", []string{"53", "1250", "0.5"},
			"A baker fills 5 trays with 12 rolls each and sells 7 rolls. How many rolls are left?", ""},
		{"math/test.jsonl", "math", []string{"15", `\frac{1}{2}`, "2, -2"}, `What is $\frac{3}{4}$ of 20?`, ""},
		{"math500/test.jsonl", "math500", []string{"15", `\left( \sqrt{2}, \frac{\pi}{4} \right)`},
			`Compute $\dbinom{6}{2}$.`, "test/counting_and_probability/9001.json"},
		{"minerva_math/test.jsonl", "minerva", []string{"100", "3.1e4"},
			`A wave has frequency $50 \mathrm{~Hz}$ and wavelength $2 \mathrm{~m}$. Find its speed in m/s.`, ""},
		{"olympiadbench/test.jsonl", "olympiadbench", []string{"8", "3, -3", "9", "42,84"},
			"Find the smallest positive integer $n$ with $n^2 > 50$.", "9001"},
		{"svamp/test.jsonl", "svamp", []string{"36", "2.5"},
			"There are 4 boxes with 9 crayons in each box. How many crayons are there in all?", "chal-9001"},
		{"asdiv/test.jsonl", "asdiv", []string{"107", "3:4"},
			"A rope is 120 ft long. A piece of 13 ft is cut off. How long is the rope now?", ""},
		{"mawps/test.jsonl", "mawps", []string{"43"},
			"Lee had 70 stamps. He gave some away and has 27 left. How many did he give away ?", ""},
		{"aime24/test.jsonl", "aime24", []string{"24"}, "Find the remainder when $2^{10}$ is divided by $1000$.", "900"},
		{"amc23/test.jsonl", "amc23", []string{"2", "3.5"},
			"Two towns are $60$ km apart; two cyclists ride toward each other at $12$ and $18$ km/h. After how many hours do they meet?", "0"},
		{"aime_2025/data/train.jsonl", "aime25", []string{"9"}, "How many positive divisors does $36$ have?", "2025-I-99"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			got := importOne(t, filepath.Join("testdata", "public", c.file), ImportOptions{})
			checkImported(t, got, c.source, c.answers, c.problem0, c.id0)
		})
	}
	// The second OlympiadBench row's context comes before its question.
	got := importOne(t, "testdata/public/olympiadbench/test.jsonl", ImportOptions{})
	if want := "A square has side length $s = 3$.\n\nCompute its area."; got[2].Problem != want {
		t.Errorf("olympiadbench context: got %q, want %q", got[2].Problem, want)
	}
	// Worked solutions stay in meta (for reference checks): MATH's solution, GSM8K's rationale.
	got = importOne(t, "testdata/public/gsm8k/test.jsonl", ImportOptions{})
	if !strings.Contains(got[0].Meta, `"answer":"The trays hold`) {
		t.Errorf("gsm8k meta lost the rationale: %s", got[0].Meta)
	}
}

func checkImported(t *testing.T, got []Problem, source string, answers []string, problem0, id0 string) {
	t.Helper()
	var gotAnswers []string
	for _, p := range got {
		gotAnswers = append(gotAnswers, p.Answer)
		if p.Source != source {
			t.Errorf("source %q, want %q", p.Source, source)
		}
	}
	if !reflect.DeepEqual(gotAnswers, answers) {
		t.Errorf("answers %q, want %q", gotAnswers, answers)
	}
	if got[0].Problem != problem0 {
		t.Errorf("problem %q, want %q", got[0].Problem, problem0)
	}
	if id0 == "" {
		id0 = StableID(problem0)
	}
	if got[0].ID != id0 {
		t.Errorf("id %q, want %q", got[0].ID, id0)
	}
}

func importOne(t *testing.T, in string, opts ImportOptions) []Problem {
	t.Helper()
	opts.Inputs = []string{in}
	opts.Out = filepath.Join(t.TempDir(), "out.parquet")
	if _, err := Import(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	got, err := ReadAllProblems(opts.Out)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// Hugging Face publishes the same sets as Parquet shards with the same columns.
func TestImportPublicLayoutsParquet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gsm8k", "main")
	path := filepath.Join(dir, "test-00000-of-00001.parquet")
	writeStringTable(t, path, []string{"question", "answer"}, [][]string{
		{"How many legs do 3 cats have?", "Each cat has 4 legs, so 3 * 4 = <<3*4=12>>12.\n#### 12"},
	})
	got := importOne(t, path, ImportOptions{})
	checkImported(t, got, "gsm8k", []string{"12"}, "How many legs do 3 cats have?", "")

	path = filepath.Join(t.TempDir(), "MATH", "data", "test-00000-of-00001.parquet")
	writeStringTable(t, path, []string{"problem", "level", "type", "solution"}, [][]string{
		{"What is $1+1$?", "Level 1", "Algebra", "It is $\\boxed{2}$."},
	})
	got = importOne(t, path, ImportOptions{})
	checkImported(t, got, "math", []string{"2"}, "What is $1+1$?", "")
}

func writeStringTable(t *testing.T, path string, cols []string, rows [][]string) {
	t.Helper()
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c, Type: arrow.BinaryTypes.String, Nullable: true}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	err := WriteParquet(path, arrow.NewSchema(fields, nil), len(rows), func(b *array.RecordBuilder, i int) int {
		for j := range cols {
			b.Field(j).(*array.StringBuilder).Append(rows[i][j])
		}
		return 100
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestImportLayoutFlags(t *testing.T) {
	// --source names every row; --format picks a layout by name.
	got := importOne(t, "testdata/public/math/test.jsonl", ImportOptions{Source: "hendrycks", Format: "minerva"})
	checkImported(t, got, "hendrycks", []string{"15", `\frac{1}{2}`, "2, -2"}, `What is $\frac{3}{4}$ of 20?`, "")
	// Named columns turn recognition off: the file maps as it says.
	got = importOne(t, "testdata/public/gsm8k/test.jsonl", ImportOptions{Mapping: Mapping{Answer: "answer"}})
	if !strings.HasSuffix(got[0].Answer, "#### 53") {
		t.Errorf("with --answer-col the answer is the column as is, got %q", got[0].Answer)
	}

	dir := t.TempDir()
	bad := []struct {
		name, file, content, format, want string
	}{
		{"unmappable", "x.jsonl", `{"text": "2+2?", "gold": "4"}` + "\n", "auto",
			`x.jsonl:1: no problem field (tried "problem", "question", "prompt", "query", "instruction") (fields found: gold, text); map them with --format gsm8k|`},
		{"solution only", "y.jsonl", `{"problem": "2+2?", "solution": "$\\boxed{4}$"}` + "\n", "auto",
			`y.jsonl:1: no answer field (tried "answer",`},
		{"layout without its columns", "z.jsonl", `{"problem": "2+2?", "answer": "4"}` + "\n", "gsm8k",
			`z.jsonl: --format gsm8k needs the columns question, answer; missing question (columns found: answer, problem)`},
		{"unknown format", "w.jsonl", `{"problem": "2+2?", "answer": "4"}` + "\n", "gsm9k",
			`--format must be auto, jsonl, parquet, verl or one of gsm8k, olympiadbench, math500, math, minerva`},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			in := writeFile(t, dir, c.file, c.content)
			_, err := Import(context.Background(), ImportOptions{Inputs: []string{in}, Out: filepath.Join(dir, "o.parquet"), Format: c.format})
			if err == nil || !usererr.Is(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want a user error containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is more than one line: %q", err)
			}
		})
	}
	// A solution-only file maps with one flag.
	in := writeFile(t, dir, "boxed.jsonl", `{"problem": "2+2?", "solution": "so $\\boxed{4}$", "type": "x"}`+"\n")
	got = importOne(t, in, ImportOptions{Format: "math"})
	if got[0].Answer != "4" {
		t.Errorf("--format math on a solution-only file: answer %q", got[0].Answer)
	}
}

func TestSourceName(t *testing.T) {
	for path, want := range map[string]string{
		"aime24/test.jsonl":                           "aime24",
		"/x/math500/data/test-00000-of-00001.parquet": "math500",
		"gsm8k_test.jsonl.gz":                         "gsm8k_test",
		"/data/train.jsonl":                           "train", // nothing above names a set
		"hmmt_feb_2025/train.parquet":                 "hmmt_feb_2025",
	} {
		if got := sourceName(path); got != want {
			t.Errorf("sourceName(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestAnswerText(t *testing.T) {
	for raw, want := range map[string]string{
		`27.0`: "27", `-3`: "-3", `2.5`: "2.5", `"27.0"`: "27.0", `1e3`: "1000", `true`: "true", `"\\frac{1}{2}"`: `\frac{1}{2}`,
	} {
		if got := answerText([]byte(raw)); got != want {
			t.Errorf("answerText(%s) = %q, want %q", raw, got, want)
		}
	}
}
